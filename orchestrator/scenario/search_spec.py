"""`rate: {search: max, …}`: a workload that asks for the highest rate a system sustains
under a latency objective (docs/design.md, "Capacity search"), as the scenario writes it.

Each probe of a search is an ordinary open-loop run at one rate. A probe's percentiles
must rest on enough samples: `probe_duration` lengthens a probe so that every objective
percentile p has at least SAMPLES_BEYOND / (1 − p) samples, and a search whose lowest
rate would need a probe longer than PROBE_LIMIT_NS is refused when the scenario is read.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    model_validator,
)

from sixnines.formats.hdr import PERCENTILE_KEYS, PERCENTILES, PercentileKey
from sixnines.orchestrator.scenario import units, written
from sixnines.orchestrator.scenario.fields import MAX_WAIT_NS, SECOND_NS, NumericRate, Rate, RunTime
from sixnines.orchestrator.scenario.shapes import SHAPE_KEYS, Shape

#: Samples beyond an objective percentile a probe must have: p99 rests on 1,000 samples,
#: 10 of them above it.
SAMPLES_BEYOND = 10
#: The longest a probe may be lengthened to for its samples.
PROBE_LIMIT_NS = 600 * SECOND_NS
#: At least this many runs at the final rate, all passing, confirm a capacity.
MIN_CONFIRMATIONS = 3
MAX_SEARCH_RUNS = 1000
#: Narrowest and widest `precision`, as shares.
MIN_PRECISION, MAX_PRECISION = 0.001, 0.5


def _threshold(value: object) -> int:
    ns = units.parse_duration(value)
    if ns <= 0:
        raise ValueError("must be longer than 0")
    if ns > MAX_WAIT_NS:
        raise ValueError(f"must be at most {units.format_duration(MAX_WAIT_NS)}")
    return ns


def _precision(value: object) -> float:
    """A share, written "5%" or 0.05."""
    text = str(value).strip()
    try:
        share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError("must be a percentage such as 5%") from None
    if not MIN_PRECISION <= share <= MAX_PRECISION:
        raise ValueError("must be between 0.1% and 50%")
    return share


Threshold = Annotated[int, BeforeValidator(_threshold),
                      written.duration(MAX_WAIT_NS, above=True, examples=("1ms", "10ms"))]
Precision = Annotated[float, BeforeValidator(_precision),
                      written.share(MIN_PRECISION, MAX_PRECISION)]
Objective = dict[PercentileKey, Threshold]


class RateSearch(BaseModel):
    """The highest rate the system sustains: no loss, every `objective` percentile of
    latency (recv − intended) met, receivers keeping up with the senders and latency not
    rising through the run. Found by a geometric ramp from `from` (doubling up to `to`),
    then bisection until the rates that pass and fail are within `precision`, then
    `confirm` runs at the rate found, all of which must pass."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              populate_by_name=True)

    search: Literal["max"]
    """What to find: max, the highest sustainable rate."""
    objective: Annotated[Objective, Field(min_length=1)]
    """Latency percentile → the most it may be, e.g. {p99: 1ms, p99.99: 10ms}."""
    low: Annotated[NumericRate, Field(alias="from")]
    """The first rate probed, msg/s in total."""
    high: Annotated[NumericRate, Field(alias="to")]
    """The highest rate probed."""
    precision: Precision = 0.05
    """Bisection stops when the lowest failing rate is within this share above the
    highest passing one."""
    confirm: Annotated[int, Field(strict=True, ge=MIN_CONFIRMATIONS, le=100)] = 3
    """Runs at the rate found, all passing (the probe that found it counts)."""
    max_runs: Annotated[int, Field(strict=True, ge=1, le=MAX_SEARCH_RUNS)] = 40
    """The most probes the search may make."""
    max_time: RunTime | None = None
    """The longest the search may take (probes are not started past it)."""

    @model_validator(mode="after")
    def _ordered(self) -> RateSearch:
        if self.high <= self.low:
            raise ValueError(f"`to` ({self.high:,.0f} msg/s) must be above `from` "
                             f"({self.low:,.0f} msg/s)")
        return self

    def samples_needed(self) -> int:
        """Samples every objective percentile needs (its SAMPLES_BEYOND beyond it)."""
        tails = [1 - PERCENTILES[PERCENTILE_KEYS.index(key)] / 100 for key in self.objective]
        return math.ceil(SAMPLES_BEYOND / min(tails))

    def probe_duration(self, duration_ns: int, rate: float) -> int:
        """A probe's measured time at `rate`: the workload's, or longer for its samples."""
        needed = math.ceil(self.samples_needed() / rate * SECOND_NS)
        return max(duration_ns, needed)

    def label(self) -> str:
        """The objective as people write it: "p99 ≤ 1ms, p99.99 ≤ 10ms"."""
        return ", ".join(f"{key} ≤ {units.format_duration(ns)}"
                         for key, ns in self.objective.items())


def _rate_kind(value: Any) -> str:
    if isinstance(value, RateSearch):
        return "rate_search"
    if isinstance(value, dict):
        searching = "search" in value or (not SHAPE_KEYS & set(value) and \
            {"objective", "from", "to"} & set(value))
        return "rate_search" if searching else "rate_shape"
    return "rate_shape" if isinstance(value, BaseModel) else "fixed_rate"


#: A workload's rate: msg/s, max (throughput mode), a capacity search or a rate shape.
RateOrSearch = Annotated[
    Annotated[Rate, Tag("fixed_rate")] | Annotated[RateSearch, Tag("rate_search")]
    | Annotated[Shape, Tag("rate_shape")],
    Discriminator(_rate_kind),
]


def search_problems(search: RateSearch, duration_ns: int | None) -> list[str]:
    """What makes a search impossible before it starts: its first probe would need to be
    longer than PROBE_LIMIT_NS for the objective's samples."""
    if duration_ns is None:
        return []
    longest = search.probe_duration(duration_ns, search.low)
    if longest <= PROBE_LIMIT_NS:
        return []
    lowest = math.ceil(search.samples_needed() / (PROBE_LIMIT_NS / SECOND_NS))
    return [f"the objective needs {search.samples_needed():,} samples per probe: at `from` "
            f"({search.low:,.0f} msg/s) a probe would take {longest / SECOND_NS:,.0f} s "
            f"(limit {PROBE_LIMIT_NS / SECOND_NS:.0f} s); raise `from` to at least "
            f"{lowest:,} msg/s or drop the highest percentile"]
