"""`repeat: 2` over two systems, as a user runs it: real CLI, builtin brokers and agents.
The repeats run interleaved (their manifests' start instants say A B A B), each case's
repeats merge into the distribution of all their messages (checked against the agents'
own interval logs, added up independently of the merge), the spread across repeats is
in summary.json, on the console and on the page, and `compare` takes it as each figure's
run-to-run noise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sixnines.formats import hdr
from sixnines.formats.hlog import measured_counts, read_hlog
from sixnines.formats.integrity import read_manifest
from sixnines.formats.layout import AGENTS_DIR, HLOG_FILE, PAGE_FILE, REPORT_DIR, SUMMARY_FILE
from sixnines.formats.vocabulary import Role

pytestmark = pytest.mark.integration

RATE, DURATION_S = 1000, 1
SCENARIO = f"""
name: repeats
systems:
  - {{name: tcp, driver: tcp, broker: builtin}}
  - {{name: zmq, driver: zmq, broker: builtin}}
workload: {{message_size: 64, rate: {RATE}, duration: {DURATION_S}s, warmup: 200ms,
            drain: 1s}}
repeat: 2
"""
CASES = ("tcp", "zmq")  # nothing swept: a case is its system


def sixnines(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The real CLI, its console as wide as a log's (the repeats' tables are checked)."""
    return subprocess.run([sys.executable, "-m", "sixnines", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "132"})


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, dict]:
    work = tmp_path_factory.mktemp("repeats")
    (work / "repeats.yaml").write_text(SCENARIO)
    done = sixnines("run", "repeats.yaml", "--output", str(work / "out"), cwd=work)
    assert done.returncode == 0, done.stderr
    results_dir = Path(done.stdout.strip().splitlines()[-1])
    return results_dir, done, json.loads((results_dir / SUMMARY_FILE).read_text())


def test_repeats_run_interleaved_across_systems(results):
    results_dir, _, summary = results
    manifests = [read_manifest(results_dir / run["run_id"]) for run in summary["runs"]]
    started = sorted(manifests, key=lambda manifest: manifest.started_at_ns)
    assert [(m.system, m.repeat.number) for m in started] == [
        ("tcp", 1), ("zmq", 1), ("tcp", 2), ("zmq", 2)]
    assert [m.run_id for m in started] == [
        "01-tcp-repeat=1", "02-zmq-repeat=1", "03-tcp-repeat=2", "04-zmq-repeat=2"]
    assert all(m.status == "ok" for m in manifests)
    assert [run["repeat"]["number"] for run in summary["runs"]] == [1, 1, 2, 2]


def _logged_latency(run_dirs: list[Path]) -> np.ndarray:
    """The consumers' latency buckets of every run, added from their own interval logs."""
    total = np.zeros(hdr.COUNTS_LEN, dtype=np.int64)
    for run_dir in run_dirs:
        manifest = read_manifest(run_dir)
        for agent in manifest.agents:
            if agent.role == Role.CONSUMER:
                log = read_hlog(run_dir / AGENTS_DIR / agent.id / HLOG_FILE)
                total += measured_counts(log, manifest.workload.warmup_ns / 1e9)["latency"]
    return total


def test_each_case_merges_its_repeats_histograms(results):
    results_dir, _, summary = results
    runs = {run["run_id"]: run for run in summary["runs"]}
    assert [case["merged"]["run_id"] for case in summary["repeats"]] == list(CASES)
    for case in summary["repeats"]:
        repeats = [runs[run_id] for run_id in case["runs"]]
        assert case["merged_from"] == case["runs"] and len(repeats) == 2
        merged = case["merged"]
        assert merged["status"] == "ok"
        for count in ("sent", "received", "delivered", "lost"):
            assert merged[count] == sum(run[count] for run in repeats), count
        for metric in ("latency_us", "service_time_us", "send_lag_us"):
            assert merged[metric]["count"] == sum(run[metric]["count"] for run in repeats)
        assert merged["latency_us"]["count"] == RATE * DURATION_S * 2
        assert merged["latency_us"]["max"] == max(run["latency_us"]["max"] for run in repeats)
        logged = _logged_latency([results_dir / run_id for run_id in case["runs"]])
        assert int(logged.sum()) == merged["latency_us"]["count"]
        expected = np.minimum(hdr.percentile_values(logged), merged["latency_us"]["max"] * 1000)
        for key, value in zip(hdr.PERCENTILE_KEYS, expected / 1000, strict=True):
            assert merged["latency_us"][key] == pytest.approx(value), key


def test_the_spread_across_repeats_is_recorded_and_shown(results):
    results_dir, done, summary = results
    runs = {run["run_id"]: run for run in summary["runs"]}
    for case in summary["repeats"]:
        repeats = [runs[run_id] for run_id in case["runs"]]
        p99 = case["spread"]["latency_us"]["p99"]
        values = sorted(run["latency_us"]["p99"] for run in repeats)
        assert (p99["repeats"], p99["min"], p99["median"], p99["max"]) == (
            2, values[0], values[0], values[1])
        assert p99["band_pct"] == pytest.approx(100 * (values[1] / values[0] - 1))
        assert case["spread"]["rates"]["send_rate"]["repeats"] == 2
        merged = case["merged"]
        assert merged["durability"]["label"] == "none"  # tcp and zmq store nothing
        assert f"{merged['run_id']}  {merged['system']} (none)  ok  2 of 2 repeats merged" \
            in done.stderr
    assert "band %" in done.stderr
    page = (results_dir / REPORT_DIR / PAGE_FILE).read_text()
    assert '<section id="repeats">' in page and all(case in page for case in CASES)


def test_compare_takes_the_spread_as_run_to_run_noise(results):
    results_dir, _, summary = results
    done = sixnines("compare", str(results_dir), str(results_dir), "--json",
                    cwd=results_dir)
    assert done.returncode == 0, done.stderr
    pairs = json.loads(done.stdout)["pairs"]
    assert [pair["run_a"] for pair in pairs] == list(CASES)  # cases, not single repeats
    for pair, case in zip(pairs, summary["repeats"], strict=True):
        for figure in pair["figures"]:
            group = "rates" if figure["metric"] == figure["key"] else figure["metric"]
            band = case["spread"][group][figure["key"]]["band_pct"]
            assert (figure["floor_from"], figure["floor_pct"]) == ("repeats", band), figure
