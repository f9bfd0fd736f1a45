"""`sixnines run` as a user runs it: real CLI, broker and agent processes, sockets, Spark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sixnines.formats.chunks import read_index
from sixnines.formats.hdr import PERCENTILE_KEYS
from sixnines.formats.layout import CHUNK_INDEX, CPU_FILE, HLOG_FILE
from sixnines.orchestrator.results.store import find_run_dirs

pytestmark = pytest.mark.integration

RATE, DURATION_S = 2000, 2
SCENARIO = f"""
name: e2e
systems:
  - {{name: tcp, driver: tcp, broker: builtin}}
  - {{name: zmq, driver: zmq, broker: builtin}}
workload:
  mode: [one-way, round-trip]
  message_size: 100
  rate: {RATE}
  duration: {DURATION_S}s
  warmup: 500ms
  producers: 2
  consumers: 2
output: ignored-because-of---output
"""
FIGURES = {*PERCENTILE_KEYS, "max", "mean", "count"}


def sixnines(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sixnines", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    work = tmp_path_factory.mktemp("e2e")
    (work / "e2e.yaml").write_text(SCENARIO)
    done = sixnines("run", "e2e.yaml", "--output", str(work / "out"), cwd=work)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1]), done


def test_prints_the_results_directory_and_the_contract(results):
    results_dir, done = results
    summary = json.loads((results_dir / "summary.json").read_text())
    assert summary["scenario"] == "e2e"
    assert [run["system"] for run in summary["runs"]] == ["tcp", "tcp", "zmq", "zmq"]
    for run in summary["runs"]:
        assert {"run_id", "system", "params", "status", "sent", "received", "lost",
                "duplicated", "reordered", "send_rate", "receive_rate"} <= set(run)
        for metric in ("latency_us", "service_time_us", "send_lag_us"):
            assert set(run[metric]) >= FIGURES
        assert run["run_id"] in done.stderr  # the console table
    page = results_dir / "report" / "index.html"  # the HTML report, beside summary.csv
    assert page.is_file() and str(page) in done.stderr
    assert (results_dir / "summary.csv").is_file()


def test_every_message_is_accounted_for(results):
    results_dir, _ = results
    for run in json.loads((results_dir / "summary.json").read_text())["runs"]:
        assert run["status"] == "ok", run["problems"]
        sent = RATE * DURATION_S
        # one-way fans out to both consumers; round trip answers each request once
        received = sent * (2 if run["params"]["mode"] == "one-way" else 1)
        assert (run["sent"], run["received"]) == (sent, received), run["run_id"]
        assert run["lost"] == run["duplicated"] == run["reordered"] == 0
        assert run["send_rate"] == pytest.approx(RATE, rel=0.02)
        assert run["latency_us"]["count"] == received
        assert run["send_lag_us"]["count"] == sent
        assert run["hlog_agrees"] is True
        latency = run["latency_us"]
        ladder = [latency[key] for key in (*PERCENTILE_KEYS, "max")]
        assert ladder == sorted(ladder) and ladder[0] > 0
        # latency from the intended time includes the send lag: never below service time
        assert latency["p50"] >= run["service_time_us"]["p50"]


def test_each_run_directory_holds_verified_artifacts(results):
    results_dir, _ = results
    run_dirs = find_run_dirs(results_dir)
    assert len(run_dirs) == 4
    for run_dir in run_dirs:
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["status"] == "ok"
        roles = sorted(agent["role"] for agent in manifest["agents"])
        mode = manifest["params"]["mode"]
        assert roles == (["consumer"] * 2 + ["producer"] * 2 if mode == "one-way"
                         else ["requester"] * 2)
        for agent in manifest["agents"]:
            files = set(agent["artifacts"])
            # chunks, each listed: about one a second a connection (streaming, the
            # default), a requester's of its requests and of its replies
            chunks = read_index(run_dir / "agents" / agent["id"])
            assert len(chunks) >= (4 if agent["role"] == "requester" else 2)  # 2 s runs
            assert sum(c["rows"] for c in chunks) == agent["sent"] + agent["received"]
            assert files == {HLOG_FILE, CPU_FILE, CHUNK_INDEX, *(c["file"] for c in chunks)}
            assert all(file["verified"] for file in agent["artifacts"].values())
            assert agent["clock"]["uncertainty_ns"] >= 0
            assert agent["versions"]["sixnines"]
        for metric in ("latency", "service_time", "send_lag"):
            text = (run_dir / "report" / f"{metric}.hgrm").read_text()
            assert "Percentile" in text and "#[Max" in text


def test_report_reruns_the_analysis_with_the_same_figures(results, tmp_path):
    results_dir, _ = results
    before = json.loads((results_dir / "summary.json").read_text())
    done = sixnines("report", str(results_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    after = json.loads((results_dir / "summary.json").read_text())
    assert after == before


CHUNKED = """
name: chunked
systems: [{{name: tcp, driver: tcp, broker: builtin}}]
workload: {{mode: {mode}, message_size: 64, rate: 1000, duration: 4s, warmup: 1s,
           consumers: 2}}
"""


@pytest.mark.parametrize("mode", ["one-way", "round-trip"])
def test_a_run_longer_than_its_agents_buffers_is_recorded_whole(tmp_path, mode):
    """Chunks of 500 rows (SIXNINES_CHUNK_ROWS): each agent's buffers hold a small part of
    the run, which still completes with every message counted from every chunk (a
    requester's requests and replies each in chunks of their own)."""
    (tmp_path / "chunked.yaml").write_text(CHUNKED.format(mode=mode))
    done = subprocess.run([sys.executable, "-m", "sixnines", "run", "chunked.yaml",
                           "--output", "out"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "SIXNINES_CHUNK_ROWS": "500"})
    assert done.returncode == 0, done.stderr
    results_dir = tmp_path / done.stdout.strip().splitlines()[-1]
    [run] = json.loads((results_dir / "summary.json").read_text())["runs"]
    sent = 5000  # warm-up included: the analysis leaves it out by time
    receivers = 2 if mode == "one-way" else 1  # a requester receives its own replies
    assert run["status"] == "ok", run["problems"]
    assert (run["sent"], run["received"]) == (4000, receivers * 4000)
    assert (run["lost"], run["duplicated"], run["hlog_agrees"]) == (0, 0, True)
    assert run["send_lag_us"]["count"] == 4000
    assert run["latency_us"]["count"] == receivers * 4000
    [run_dir] = find_run_dirs(results_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for agent in manifest["agents"]:
        chunks = read_index(run_dir / "agents" / agent["id"])
        # a producer sends them all, each consumer receives them all, a requester both
        rows = sent * (2 if agent["role"] == "requester" else 1)
        assert sum(c["rows"] for c in chunks) == rows == agent["sent"] + agent["received"]
        assert max(c["rows"] for c in chunks) <= 500 and len(chunks) >= rows // 500
        assert agent["recording"]["chunks"] == len(chunks)
        assert {c["file"] for c in chunks} < set(agent["artifacts"])
        assert all(file["verified"] for file in agent["artifacts"].values())
