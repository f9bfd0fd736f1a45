"""Measurement rule 3 across real clocks: one test-bed host runs its monotonic clock 7 s
ahead (a time namespace), as a separate machine would. The controller must find that
offset over the control channel within the uncertainty it claims, start every agent at
the same instant despite it, and the analysis must keep cross-clock deliveries out of
latency unless asked, and then correct them by the offsets and report the bound."""

from __future__ import annotations

import io
import json
import textwrap

import pytest
from rich.console import Console

from sixnines.agents.facts import clock_domain
from sixnines.orchestrator.controller import run_scenario
from sixnines.orchestrator.scenario.model import load_scenario
from sixnines.spark_jobs.analyze import analyze_run
from tests.integration.testbed import testbed

pytestmark = pytest.mark.integration

SKEW_S = 7
NS = 1_000_000_000


@pytest.fixture(scope="module")
def bed():
    with testbed(2, skew={"h2": SKEW_S}) as made:
        yield made


def run_once(bed, tmp_path, spark, cross_host_latency: bool) -> tuple[dict, dict]:
    path = tmp_path / "scenario.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: clocks
        systems: [{{name: tcp, driver: tcp}}]
        workload: {{message_size: 128, rate: 1000, duration: 2s, warmup: 0s,
                    producers: 2, consumers: 2}}
        inventory: {bed.inventory}
        placement: {{broker: h1, agents: [h1, h2],
                     cross_host_latency: {str(cross_host_latency).lower()}}}
        output: {tmp_path / "runs"}
        """))
    console = Console(file=io.StringIO(), width=200)
    outcome = run_scenario(load_scenario(path), path, output=None, spark_master=None,
                           console=console)
    assert outcome.statuses == ["ok"], console.file.getvalue()
    (run_dir,) = [m.parent for m in outcome.results_dir.glob("*/manifest.json")]
    return json.loads((run_dir / "manifest.json").read_text()), analyze_run(spark, run_dir)


def test_the_offset_is_found_and_every_agent_starts_at_one_instant(bed, tmp_path, spark):
    manifest, summary = run_once(bed, tmp_path, spark, cross_host_latency=False)
    ours = clock_domain()
    for agent in manifest["agents"]:
        clock = agent["clock"]
        if agent["host"] == "h1":
            assert clock["domain"] == ours and clock["offset_ns"] == 0
            assert clock["same_clock_as_controller"]
        else:
            assert clock["domain"] != ours and not clock["same_clock_as_controller"]
            assert abs(clock["estimated_offset_ns"] - SKEW_S * NS) <= clock["uncertainty_ns"]
            assert clock["uncertainty_ns"] < 50_000_000
        # the start instant each agent was given is the controller's, in the agent's clock
        assert agent["t0_ns"] == manifest["started_at_ns"] + clock["offset_ns"]
    # fan-out over two clocks: half the deliveries cross them and are left out of latency
    # (the warm-up is judged on each producer's own clock: nothing is lost to the offset)
    assert summary["lost"] == 0 and summary["received"] == 4000
    assert summary["latency_pairs"] == {"same_clock": 2000, "cross_clock": 0, "excluded": 2000}
    assert summary["latency_us"]["count"] == 2000
    assert not any("holds" in problem for problem in summary["problems"])  # hlog check
    assert summary["clock_bound_ns"] is None
    assert any("cross_host_latency" in warning for warning in summary["warnings"])


def test_cross_host_latency_is_corrected_and_reported_with_its_bound(bed, tmp_path, spark):
    manifest, summary = run_once(bed, tmp_path, spark, cross_host_latency=True)
    assert summary["latency_pairs"] == {"same_clock": 2000, "cross_clock": 2000, "excluded": 0}
    bound = summary["clock_bound_ns"]
    skewed = [a["clock"] for a in manifest["agents"] if a["host"] == "h2"]
    assert 0 < bound <= max(c.get("domain_uncertainty_ns", c["uncertainty_ns"])
                            for c in skewed) * 2
    # corrected, the cross-clock latencies are loopback latencies, not ±7 s (the bound
    # is half the skew: a stalled machine may add a second to the max, never seven)
    latency = summary["latency_us"]
    assert latency["count"] == 4000
    assert 0 < latency["p50"] < 50_000 and latency["max"] < SKEW_S * 1e6 / 2
