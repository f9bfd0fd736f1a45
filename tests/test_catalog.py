"""`sixnines runs` (orchestrator/results/catalog.py) over synthetic results directories: analysed,
recorded only, stamped by the controller or named by hand."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from sixnines.formats.layout import MANIFEST_FILE, SUMMARY_FILE
from sixnines.orchestrator.cli import EXIT_BAD_INPUT, EXIT_OK, main
from sixnines.orchestrator.results.catalog import catalog, find_results_dirs


def summary(run_id: str, system: str, status: str = "ok", p50: float = 70.0) -> dict:
    return {"run_id": run_id, "system": system, "params": {"message_size": 64},
            "status": status, "receive_rate": 2000.0,
            "latency_us": {"p50": p50, "p99": 150.0, "max": 3500.0, "count": 20_000}}


def recorded(results: Path, runs: dict[str, str], created_at: float = 1.7e9) -> Path:
    """A results directory as `run` leaves it: scenario.yaml and run dirs with manifests."""
    results.mkdir(parents=True)
    (results / "scenario.yaml").write_text("name: x\n")
    for run_id, status in runs.items():
        (results / run_id / "agents").mkdir(parents=True)
        manifest = {"scenario": results.parent.name, "run_id": run_id, "status": status,
                    "created_at": created_at, "agents": []}
        (results / run_id / MANIFEST_FILE).write_text(json.dumps(manifest))
    return results


def analysed(results: Path, runs: list[dict]) -> Path:
    recorded(results, {run["run_id"]: run["status"] for run in runs})
    body = {"scenario": results.parent.name, "runs": runs}
    (results / SUMMARY_FILE).write_text(json.dumps(body))
    return results


def populate(root: Path) -> dict[str, Path]:
    return {
        "old": analysed(root / "alpha" / "20261120-100000",
                        [summary("01-tcp", "tcp"), summary("02-zmq", "zmq", "partial", 121.2)]),
        "unanalysed": recorded(root / "alpha" / "20261121-090000",
                               {"01-tcp": "ok", "02-zmq": "failed"}),
        "newest": analysed(root / "beta" / "20261122-080000-2", [summary("01-tcp", "tcp")]),
        "by_hand": recorded(root / "beta" / "nightly", {"01-tcp": "running"},
                            created_at=datetime(2026, 11, 21, 12).timestamp()),
    }


def runs(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["runs", *map(str, args)])
    return code, out.getvalue(), err.getvalue()


def test_results_directories_are_found_by_their_contents(tmp_path):
    made = populate(tmp_path)
    (tmp_path / "alpha" / "notes").mkdir()  # not results: nothing there
    (tmp_path / ".cache" / "x" / "20261101-000000").mkdir(parents=True)
    assert sorted(find_results_dirs(tmp_path)) == sorted(made.values())
    assert find_results_dirs(made["old"]) == [made["old"]]  # the root may be one itself


def test_newest_first_with_status_counts_and_headlines(tmp_path):
    made = populate(tmp_path)
    entries = catalog(tmp_path)
    assert [entry.path for entry in entries] == [made["newest"], made["by_hand"],
                                                 made["unanalysed"], made["old"]]
    old = entries[-1]
    assert old.scenario == "alpha" and old.when == datetime(2026, 11, 20, 10)
    assert dict(old.statuses) == {"ok": 1, "partial": 1}
    assert old.headlines[1] == {"run_id": "02-zmq", "system": "zmq", "durability": None,
                                "status": "partial",
                                "load": "open-loop",
                                "p50_us": 121.2, "p99_us": 150.0, "max_us": 3500.0,
                                "receive_rate": 2000.0, "receive_bytes_per_s": 128_000.0}
    unanalysed = entries[2]
    assert not unanalysed.analysed and unanalysed.headlines == []
    assert dict(unanalysed.statuses) == {"ok": 1, "failed": 1}  # from the manifests
    assert entries[1].when == datetime(2026, 11, 21, 12)  # no stamp: the first run's start


def test_the_console_list(tmp_path):
    made = populate(tmp_path)
    code, out, text = runs(tmp_path)
    assert code == EXIT_OK and out == ""
    text = " ".join(text.split())
    for expected in ("alpha/20261120-100000", "2026-11-20 10:00:00", "1 ok 1 partial",
                     "02-zmq", "121.2", "3,500.0", "2,000.0",
                     f"not analysed: run `sixnines report {made['unanalysed']}`"):
        assert expected in text, expected
    assert text.index("beta/20261122-080000-2") < text.index("alpha/20261120-100000")


def test_the_list_fits_an_80_column_terminal(tmp_path):
    """Through the real command, as a terminal 80 columns wide sets COLUMNS: no line
    longer, and every figure whole on its line (64 B at 2,000 msg/s is 0.122 MB/s)."""
    populate(tmp_path)
    done = subprocess.run([sys.executable, "-m", "sixnines", "runs", str(tmp_path)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == EXIT_OK, done.stderr
    lines = done.stderr.splitlines()  # but the commands to copy, kept whole on purpose
    assert max(len(line) for line in lines if "sixnines report" not in line) <= 80, \
        done.stderr
    row = next(line for line in lines if "02-zmq" in line)
    assert row.split()[1:] == ["partial", "121.2", "150.0", "3,500.0", "2,000.0", "0.122"]


def test_json_for_scripts(tmp_path):
    made = populate(tmp_path)
    code, out, _ = runs(tmp_path, "--json")
    assert code == EXIT_OK
    listed = {entry["path"]: entry for entry in json.loads(out)}
    old, unanalysed = listed[str(made["old"])], listed[str(made["unanalysed"])]
    assert (old["date"], old["runs"], old["status"]) == (
        "2026-11-20T10:00:00", 2, {"ok": 1, "partial": 1})
    assert old["headlines"][0]["p99_us"] == 150.0 and "hint" not in old
    assert unanalysed["hint"] == f"sixnines report {made['unanalysed']}"


def test_an_unreadable_summary_is_listed_as_not_analysed(tmp_path):
    results = recorded(tmp_path / "alpha" / "20261120-100000", {"01-tcp": "ok"})
    (results / SUMMARY_FILE).write_text("{not json")
    (entry,) = catalog(tmp_path)
    assert not entry.analysed and dict(entry.statuses) == {"ok": 1}


def test_nothing_there_and_a_missing_directory(tmp_path):
    code, _, text = runs(tmp_path)
    assert code == EXIT_OK and f"no results under {tmp_path}" in text
    code, _, text = runs(tmp_path / "nowhere")
    assert code == EXIT_BAD_INPUT and "no such directory" in text


def test_the_default_is_runs_in_the_current_directory(tmp_path, monkeypatch):
    analysed(tmp_path / "runs" / "alpha" / "20261120-100000", [summary("01-tcp", "tcp")])
    monkeypatch.chdir(tmp_path)
    code, out, _ = runs("--json")
    assert code == EXIT_OK
    assert [entry["path"] for entry in json.loads(out)] == ["runs/alpha/20261120-100000"]


def test_a_throughput_mode_run_headlines_its_rate_not_a_latency(tmp_path):
    flooded = {**summary("02-tcp-max", "tcp"), "load": "saturation", "receive_rate": 512_345.0,
               "saturation_latency_us": {"p50": 900.0, "p99": 2000.0, "max": 9000.0}}
    analysed(tmp_path / "x" / "20260101-120000", [summary("01-tcp", "tcp"), flooded])
    (entry,) = catalog(tmp_path)
    open_loop, saturated = entry.headlines
    assert (open_loop["load"], open_loop["p50_us"]) == ("open-loop", 70.0)
    assert saturated["load"] == "saturation" and saturated["receive_rate"] == 512_345.0
    assert saturated["p50_us"] is None and saturated["max_us"] is None
    code, _, text = runs(tmp_path)
    assert code == EXIT_OK and "512,345" in text and "rate: max" in text
