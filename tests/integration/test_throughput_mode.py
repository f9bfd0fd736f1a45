"""Throughput mode (`rate: max`, `messages: N`) as a user runs it: the real CLI, the builtin
tcp relay and a redis-server from its recipe, agents, Spark, the report, compare and the
catalog; an open-loop case beside it in the same scenario."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sixnines.formats.lag import LagCause

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed"),
]

MESSAGES, OPEN_RATE = 20_000, 2000
SCENARIO = f"""
name: flood
systems:
  - {{name: tcp, driver: tcp, broker: builtin}}
  - {{name: redis, driver: redis, broker: {{recipe: redis}}}}
workload: {{message_size: 100, warmup: 0s, drain: 5s}}
cases:
  - {{name: max, rate: max, messages: {MESSAGES}}}
  - {{name: fixed, rate: {OPEN_RATE}, duration: 1s}}
"""


def sixnines(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sixnines", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def flood(tmp_path_factory) -> tuple[Path, dict[str, dict]]:
    work = tmp_path_factory.mktemp("flood")
    (work / "flood.yaml").write_text(SCENARIO)
    done = sixnines("run", "flood.yaml", "--output", str(work / "out"), cwd=work)
    assert done.returncode == 0, done.stderr
    results = Path(done.stdout.strip().splitlines()[-1])
    runs = json.loads((results / "summary.json").read_text())["runs"]
    return results, {run["run_id"]: run for run in runs}


def saturated(runs: dict[str, dict]) -> list[dict]:
    return [run for run in runs.values() if run["params"]["rate"] == "max"]


def test_every_message_is_sent_and_received_as_fast_as_the_system_takes(flood):
    _, runs = flood
    assert [run["system"] for run in saturated(runs)] == ["tcp", "redis"]
    for run in saturated(runs):
        assert run["status"] == "ok", run["problems"]
        assert run["load"] == "saturation"
        assert (run["sent"], run["received"], run["lost"], run["duplicated"]) == (
            MESSAGES, MESSAGES, 0, 0)
        # the whole count went out in well under the second a 2,000 msg/s schedule would
        # need for 2,000 of them: far beyond any fixed rate this scenario asks for
        assert run["send_rate"] > 10 * OPEN_RATE and run["receive_rate"] > 10 * OPEN_RATE
        assert MESSAGES / run["receive_rate"] < MESSAGES / OPEN_RATE / 10
        # a receiver reading many messages per timestamp still has its throughput in
        # (almost) every window: only those with its first read's messages are undefined
        receiver = run["throughput"]["receiver_msg_s"]
        undefined = run["throughput"]["zero_span_windows"]["receiver"]
        assert receiver["count"] > 0 and undefined < receiver["count"] / 10
        assert run["throughput"]["bytes_per_s"]["receiver"] > 0
        assert run["density_us"] is not None
        assert not [w for w in run["warnings"] if w.startswith((*LagCause, "time cap"))]


def test_saturation_latency_is_the_only_latency_of_a_saturation_run(flood):
    results, runs = flood
    for run in saturated(runs):
        for metric in ("latency_us", "service_time_us", "send_lag_us"):
            assert run[metric]["count"] == 0 and run[metric]["p50"] is None, metric
        saturation = run["saturation_latency_us"]
        assert saturation["count"] == run["received"]
        assert 0 < saturation["p50"] <= saturation["max"]
        assert run["hlog_agrees"] is True  # the agents' logs hold saturation_latency too
        report = results / run["run_id"] / "report"
        assert (report / "saturation_latency.hgrm").is_file()
        assert not (report / "latency.hgrm").exists()
    for run in runs.values():
        if run["params"]["rate"] != "max":
            assert run["load"] == "open-loop" and run["latency_us"]["count"] == OPEN_RATE
            assert run["saturation_latency_us"]["count"] == 0


def test_reports_label_it_saturation_latency(flood):
    results, _ = flood
    page = (results / "report" / "index.html").read_text()
    assert "saturation latency" in page and 'id="fig-nines-saturation_latency"' in page
    with open(results / "summary.csv", newline="", encoding="utf-8") as rows:
        loads = {row["run_id"]: (row["load"], row["saturation_latency_count"])
                 for row in csv.DictReader(rows)}
    assert {load for load, _ in loads.values()} == {"saturation", "open-loop"}
    assert all(count == str(MESSAGES) for load, count in loads.values() if load == "saturation")


def test_compare_never_matches_a_saturation_run_with_an_open_loop_one(flood):
    results, runs = flood
    flooded, fixed = (next(run_id for run_id in runs if run_id.startswith(f"0{n}-tcp"))
                      for n in (1, 2))
    done = sixnines("compare", str(results / fixed), str(results / flooded), "--json",
                    cwd=results)
    assert done.returncode == 2 and done.stdout == "", done.stderr  # nothing in common
    assert "nothing in common to compare: no run of B matches one of A" in done.stderr
    same = sixnines("compare", str(results), str(results), "--json", cwd=results)
    assert same.returncode == 0, same.stderr
    metrics = {pair["run_a"]: {figure["metric"] for figure in pair["figures"]}
               for pair in json.loads(same.stdout)["pairs"]}
    assert "saturation_latency_us" in metrics[flooded] and "latency_us" in metrics[fixed]
