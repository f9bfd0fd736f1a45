"""What the capacity tests share: a search as a scenario writes it, and a probe's summary
as the analysis gives it."""

from __future__ import annotations

from sixnines.formats.summary import Figures, RunSummary
from sixnines.orchestrator.scenario.search_spec import RateSearch

SECOND = 1_000_000_000


def spec(**fields) -> RateSearch:
    return RateSearch.model_validate({"search": "max", "objective": {"p99": "1ms"},
                                      "from": "1k", "to": "1M", **fields})


def summary(p99_us: float = 200.0, count: int = 10_000, **fields) -> RunSummary:
    """An analysed probe at 10,000 msg/s that passes a p99 ≤ 1 ms objective."""
    base = dict(run_id="r", status="ok", params={"mode": "one-way", "consumers": 1,
                                                 "rate": 10_000.0},
                sent=count, lost=0, unknown=0, send_rate=10_000.0, receive_rate=10_000.0,
                latency_us=Figures(p50=50.0, p99=p99_us, count=count),
                send_lag_us=Figures(p99=5.0, count=count))
    return RunSummary(**{**base, **fields})
