"""Capacity searches run for real (`sixnines run` of `rate: {search: max, …}` on the
builtin brokers): every verdict agrees with its probe's own figures, the search ends as
its probes say, the results carry its capacity section and plot, and an analysis again
keeps it; a rate one producer cannot keep is called generator-bound, never the system's
capacity."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from sixnines.formats.layout import REPORT_DIR, SERIES_FILE
from sixnines.formats.summary import CapacityResult, ResultsSummary, RunSummary
from sixnines.orchestrator.capacity.search import Searcher
from sixnines.orchestrator.capacity.verdict import Verdict, VerdictKind, judge
from sixnines.orchestrator.scenario.search_spec import RateSearch
from tests.faults.processes import Sixnines

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def search(tmp_path: Path, workload: str, cases: str = "",
           system: str = "{name: relay, driver: tcp}") -> tuple[int, str, ResultsSummary, Path]:
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: cap
        systems: [{system}]
        workload: {workload}
        output: out
        """) + textwrap.dedent(cases))
    code, _, err = Sixnines("run", str(path), cwd=tmp_path).finish(timeout_s=600)
    results = next((tmp_path / "out" / "cap").iterdir())
    summary = ResultsSummary.model_validate_json((results / "summary.json").read_text())
    return code, err, summary, results


def replayed(result: CapacityResult) -> tuple[list[float], str]:
    """The rates the pure search (orchestrator.capacity.search) asks for, fed the verdicts the
    probes of `result` had, and how it ends: what the search must have done."""
    searcher = Searcher(RateSearch.model_validate({
        "search": "max", "from": result.probes[0].rate, "to": 4000,
        "objective": {key: f"{round(us * 1000)}ns" for key, us in result.objective_us.items()},
        "precision": result.precision}))
    rates = []
    for probe in result.probes:
        rates.append(searcher.next_rate(runs_left=len(result.probes)))
        searcher.record(probe.rate, Verdict(VerdictKind(probe.verdict)))
    assert searcher.next_rate(runs_left=1) is None
    return rates, str(searcher.finding)


def test_verdicts_follow_each_probe_s_own_figures(tmp_path):
    """A loose objective passes its way up to `to` and is confirmed there; one no system
    meets fails `from`, again on its re-run, and ends the search below it."""
    code, err, summary, results = search(
        tmp_path, "{message_size: 64, warmup: 1s, duration: 1s, drain: 1s}", """\
        cases:
          - {name: loose, rate: {search: max, objective: {p99: 100ms}, from: 1k, to: 4k}}
          - {name: impossible, rate: {search: max, objective: {p50: 1us}, from: 1k, to: 4k}}
        """)
    assert code == 0, err
    loose, impossible = summary.capacity
    # [1000, 2000, 4000, 4000, 4000], at least 4,000, on a quiet machine; a stall of a busy
    # one may fail a probe and send the search below (confirmed under 4,000): either way the
    # search took each step its verdicts called for
    assert [p.rate for p in loose.probes][:2] == [1000, 2000]
    assert replayed(loose) == ([p.rate for p in loose.probes], loose.finding)
    assert loose.finding in ("at-least", "confirmed") and loose.capacity_msg_s >= 2000
    assert [p.confirming for p in loose.probes[-2:]] == [True, True]
    assert (impossible.finding, impossible.capacity_msg_s) == ("below", None)
    assert [(p.verdict, p.confirming) for p in impossible.probes] == [("fail", False),
                                                                      ("fail", True)]
    assert all("p50" in p.reasons[0] for p in impossible.probes)
    for result in summary.capacity:
        spec = RateSearch.model_validate({"search": "max", "from": 1, "to": 2,
                                          "objective": {key: f"{round(us * 1000)}ns" for
                                                        key, us in result.objective_us.items()}})
        for probe in result.probes:
            run = results / probe.run_id
            own = RunSummary.model_validate_json((run / "report" / "summary.json").read_text())
            curve = json.loads((run / REPORT_DIR / SERIES_FILE).read_text())["latency"]["mean_us"]
            assert judge(own, curve, spec, probe.rate).kind == probe.verdict
            assert probe.latency_us["p50"] == own.latency_us.p50
            key, limit = next(iter(result.objective_us.items()))
            assert (own.latency_us.figure(key) <= limit) == (probe.verdict == "pass")
    assert {run.run_id for run in summary.runs} == {
        p.run_id for r in summary.capacity for p in r.probes}
    assert "capacity relay (01-relay-loose): at least 4,000 msg/s" in err
    page = (results / "report" / "index.html").read_text()
    assert 'id="capacity"' in page and "latency against offered load" in page
    assert (results / "report" / "capacity-01-relay-loose.gp").is_file()
    # analysed again, the results keep what the search decided as it ran
    code, _, err = Sixnines("report", str(results), cwd=tmp_path).finish(timeout_s=600)
    assert code == 0, err
    again = ResultsSummary.model_validate_json((results / "summary.json").read_text())
    assert again.capacity == summary.capacity


def test_a_rate_one_producer_cannot_keep_is_generator_bound(tmp_path):
    """3 million messages a second through zmq, whose PUB socket drops rather than blocks
    (the system cannot push back on the sender): one producer's loop cannot keep that, on
    the probe and on its re-run."""
    _, err, summary, _ = search(
        tmp_path, "{message_size: 64, warmup: 1s, duration: 1s, drain: 2s, producers: 1, "
        "rate: {search: max, objective: {p99: 1s}, from: 3M, to: 6M}}",
        system="{name: zmq, driver: zmq}")
    (result,) = summary.capacity
    assert result.finding == "generator-bound", result
    assert [p.verdict for p in result.probes] == ["generator-bound", "generator-bound"]
    assert "generator-bound at 3,000,000 msg/s" in result.note
    assert re.search(r"needs at least [2-9]\d* producers for that rate \(it has 1;",
                     result.note), result.note
    assert "not the system's capacity" in result.note
    assert "capacity zmq (01-zmq): generator-bound at 3,000,000 msg/s" in err
