"""`sixnines compare` and `sixnines runs` on real results: one tiny scenario run twice
through the CLI (real relay, agents, Spark analysis)."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sixnines.formats.lag import LagCause

pytestmark = pytest.mark.integration

SCENARIO = """
name: twice
systems:
  - {name: tcp, driver: tcp, broker: builtin}
workload:
  mode: one-way
  message_size: 100
  rate: 2000
  duration: 1s
  warmup: 500ms
output: out
"""
LAGGED = tuple(LagCause)  # senders behind their schedule, whoever's doing it was


def sixnines(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sixnines", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def run_once(work: Path) -> Path:
    """The scenario run through the CLI in `work`; its results directory."""
    (work / "twice.yaml").write_text(SCENARIO)
    done = sixnines("run", "twice.yaml", cwd=work)
    assert done.returncode == 0, done.stderr
    return work / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path, Path]:
    work = tmp_path_factory.mktemp("twice")
    return work, run_once(work), run_once(work)


def test_two_runs_of_the_same_scenario_stay_quiet(two_runs, tmp_path):
    work, a, b = two_runs
    runs = [json.loads((d / "summary.json").read_text())["runs"][0] for d in (a, b)]
    if any(warning.startswith(LAGGED) for run in runs for warning in run["warnings"]):
        pytest.skip("the machine was too busy: a sender fell behind its schedule, so the "
                    "runs measured the load on the machine, not the system")
    done = sixnines("compare", str(a), str(b), cwd=work)
    if done.returncode != 0:
        # A shared machine can shift a whole run (p50 77 → 121 µs seen back to back in CI):
        # that is the machine changing, which compare rightly reports. The claim tested is
        # that sampling noise alone never flags, so one more pair gets to show a steady
        # machine, and both reports are kept for the failure message.
        c = run_once(tmp_path)
        again = sixnines("compare", str(b), str(c), cwd=work)
        assert again.returncode == 0, f"{done.stderr}\nthen b against a third run:\n{again.stderr}"
        done = again
    assert "1 run(s) compared, 0 regressed" in done.stderr


def test_an_injected_regression_in_real_results_is_flagged(two_runs, tmp_path):
    work, a, _ = two_runs
    worse = tmp_path / "worse"
    shutil.copytree(a, worse)
    body = json.loads((worse / "summary.json").read_text())
    body["runs"][0]["receive_rate"] *= 0.7
    (worse / "summary.json").write_text(json.dumps(body))
    done = sixnines("compare", str(a), str(worse), "--json", cwd=work)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["regression"] is True
    assert result["pairs"][0]["findings"][0].startswith("receive_rate ")


def test_the_catalog_lists_both_newest_first_and_the_csv_is_written(two_runs):
    work, a, b = two_runs
    done = sixnines("runs", "--json", cwd=work / "out")  # scenario output is not ./runs
    assert done.returncode == 2 and "no such directory" in done.stderr
    done = sixnines("runs", "out", "--json", cwd=work)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [entry["path"] for entry in listed] == [str(b.relative_to(work)),
                                                   str(a.relative_to(work))]
    assert all(entry["analysed"] and entry["scenario"] == "twice" for entry in listed)
    with open(a / "summary.csv", newline="") as rows:
        (row,) = list(csv.DictReader(rows))
    assert row["system"] == "tcp" and row["message_size"] == "100"
    assert float(row["latency_p99_us"]) > 0 and int(row["latency_count"]) == 2000
