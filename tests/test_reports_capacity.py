"""The capacity search in the report (orchestrator.reports.capacity): its plot and table."""

from __future__ import annotations

from sixnines.formats.summary import CapacityProbe, CapacityResult
from sixnines.orchestrator.reports import capacity


def test_the_plot_shows_every_probe_by_rate_with_its_verdict_and_the_objective():
    def probe(rate: float, verdict: str, p99: float) -> CapacityProbe:
        return CapacityProbe(run_id=f"r-{rate}", rate=rate, confirming=False, verdict=verdict,
                             reasons=[] if verdict == "pass" else ["p99 over"], status="ok",
                             send_rate=rate, receive_rate=rate,
                             latency_us={"p50": 10.0, "p99": p99, "p99.9": 2 * p99,
                                         "p99.99": 3 * p99})
    result = CapacityResult(system="s", point="01-s", finding="confirmed", capacity_msg_s=2e3,
                            note="2,000 msg/s", objective_us={"p99": 500.0}, precision=0.05,
                            probes=[probe(1e3, "pass", 100.0), probe(4e3, "fail", 900.0),
                                    probe(2e3, "pass", 300.0), probe(2e3, "pass", 320.0)])
    figure = capacity.figure(result)
    lines = {line.name: line for line in figure.lines}
    assert list(lines["p99"].xs) == [1e3, 2e3, 2e3, 4e3]  # joined in rate order
    assert list(lines["p99"].ys) == [100.0, 300.0, 320.0, 900.0]
    assert (list(lines["fail (p99)"].xs), lines["fail (p99)"].style) == ([4e3], "markers")
    assert len(lines["pass (p99)"].xs) == 3
    assert list(lines["objective p99"].ys) == [500.0, 500.0] and lines["objective p99"].dashed
    assert (figure.x.scale, figure.y.scale) == ("log", "log")
    table = capacity.table(result)
    assert table.count("<tr>") == 5 and "p99 over" in table
