"""Running a capacity search's probes (orchestrator.capacity.probes) with a stand-in for the
runs: the search's time budget."""

from __future__ import annotations

from sixnines.orchestrator.capacity.probes import run_search
from tests.capacity_cases import SECOND, summary
from tests.integration.support import points


def test_a_search_starts_no_probe_that_could_not_end_within_its_time(tmp_path):
    """Probes of 3 s warm-up + 5 s + 2 s drain, each taking 60 s of the clock here: a
    search allowed 3 minutes makes 3 and reports its budget spent."""
    (point,) = points("""
name: cap
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, warmup: 3s, duration: 5s, drain: 2s,
           rate: {search: max, objective: {p99: 1ms}, from: 1k, to: 1M, max_time: 3m}}
""")
    now = [0.0]
    ran = []

    def run_and_analyse(probe):
        now[0] += 60
        ran.append(probe)
        rate = probe.workload.rate
        return tmp_path, summary(send_rate=rate, receive_rate=rate,
                                 params={"mode": "one-way", "consumers": 1, "rate": rate})

    result = run_search(point, run_and_analyse, clock=lambda: now[0])
    assert [probe.workload.rate for probe in ran] == [1000, 2000, 4000]
    assert ran[0].run_id == "01-tcp-probe01-rate=1k"
    assert ran[0].workload.duration_ns == 5 * SECOND  # enough samples: not lengthened
    assert (result.finding, result.capacity_msg_s) == ("budget", 4000)
    assert "not confirmed" in result.note
