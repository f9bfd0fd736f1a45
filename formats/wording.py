"""Figures and workload parameters as people write them: `duration 5 s`, `message_size
1 KB`, `rate 1,000 msg/s`, throughput in MB/s, rather than the JSON the files hold
(`duration_ns=5000000000, messages=null`). Every output a reader sees (console tables,
the HTML report, compare's notes) words them here, so they agree.

Sizes are binary, as the scenario reads them (1 KB = 1,024 B: `message_size: 1KB`), and
so is MB/s (1,048,576 bytes a second), so a message rate times the size a run shows is
the MB/s it shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

#: Binary multiples, largest first: what `message_size: 1KB` means.
SIZE_UNITS = (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024))
#: A nanosecond count's unit, largest first.
TIME_UNITS = (("s", 10**9), ("ms", 10**6), ("µs", 10**3))
MEGABYTE = 1024**2
#: Parameters that hold a size in bytes, and those that hold a count (thousands separated).
SIZE_PARAMS = ("message_size",)
COUNT_PARAMS = ("messages",)
NS_SUFFIX = "_ns"


def _number(value: float) -> str:
    """A figure with at most four significant digits, no trailing zeros: 1, 1.5, 9.766."""
    return f"{value:.4g}" if abs(value) < 10_000 else f"{value:,.0f}"


def size_text(size: float) -> str:
    """Bytes as the scenario writes them: 64 B, 1 KB, 1.5 KB, 4 MB."""
    for unit, factor in SIZE_UNITS:
        if size >= factor:
            return f"{_number(size / factor)} {unit}"
    return f"{_number(size)} B"


def duration_text(ns: float) -> str:
    """Nanoseconds as a person says them: 5 s, 500 ms, 250 µs, 80 ns."""
    for unit, factor in TIME_UNITS:
        if abs(ns) >= factor:
            return f"{_number(ns / factor)} {unit}"
    return f"{_number(ns)} ns" if ns else "0 s"


def rate_text(rate: object) -> str:
    """Messages per second: 1,000 msg/s, 2,500.5 msg/s; `max` (throughput mode) as it is."""
    if isinstance(rate, int | float) and not isinstance(rate, bool):
        return f"{rate:,.0f} msg/s" if float(rate).is_integer() else f"{rate:,.1f} msg/s"
    return str(rate)


def megabytes_text(bytes_per_s: float | None) -> str:
    """Bytes a second in MB/s (binary, as sizes are): 977, 61.0, 0.061; "-" for none."""
    if bytes_per_s is None:
        return "-"
    value = bytes_per_s / MEGABYTE
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def value_text(name: str, value: object) -> str:
    """One parameter's value in the words of its kind: a size, a duration (`*_ns`), a
    rate, a count; text and the rest as a scenario file writes them (true, not True)."""
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if numeric and name in SIZE_PARAMS:
        return size_text(value)  # type: ignore[arg-type]
    if numeric and name.endswith(NS_SUFFIX):
        return duration_text(value)  # type: ignore[arg-type]
    if name == "rate":
        return rate_text(value)
    if name == "shape" and isinstance(value, dict):  # formats.shape.RateShape
        return str(value.get("label"))
    if name == "backlog" and isinstance(value, dict):  # formats.backlog.BacklogPlan
        return backlog_text(value)
    if name in SIZE_PARAMS and isinstance(value, dict) and len(value) == 1:
        return distribution_text(value)
    if numeric and name in COUNT_PARAMS:
        return f"{value:,}"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def distribution_text(written: Mapping[str, object]) -> str:
    """A size distribution as params keep it (orchestrator.scenario.sizes, one key) in
    words: "64 B 0.7, 1 KB 0.25, 64 KB 0.05", "uniform 64 B…4 KB", "lognormal median
    512 B, p99 16 KB", "sizes of FILE"."""
    ((kind, given),) = written.items()
    if kind == "weighted" and isinstance(given, Mapping):
        return ", ".join(f"{size_text(int(size))} {weight:g}" for size, weight in given.items())
    if kind == "uniform" and isinstance(given, list | tuple) and len(given) == 2:
        return f"uniform {size_text(given[0])}…{size_text(given[1])}"
    if kind == "lognormal" and isinstance(given, list | tuple) and len(given) == 2:
        return f"lognormal median {size_text(given[0])}, p99 {size_text(given[1])}"
    if kind == "file":
        return f"sizes of {given}"
    return json.dumps(dict(written), default=str)


def backlog_text(plan: Mapping[str, object]) -> str:
    """A backlog plan in words ("4000 messages, drained within 1 s"); its build is
    "N messages", "NB" (bytes) or "Nns" (a time)."""
    build, bound = str(plan.get("build")), plan.get("drain_within_ns")
    if build.endswith("ns") and build[:-2].isdigit():
        build = duration_text(int(build[:-2]))
    elif build.endswith("B") and build[:-1].isdigit():
        build = size_text(int(build[:-1]))
    within = duration_text(bound) if isinstance(bound, int) else "?"
    return f"{build}, drained within {within}"


def param_name(name: str) -> str:
    """A parameter's name as the scenario file spells it: duration, not duration_ns."""
    return name.removesuffix(NS_SUFFIX)


def param_text(name: str, value: object) -> str:
    """`duration 5 s`, `message_size 1 KB`, `producers 3`."""
    return f"{param_name(name)} {value_text(name, value)}"


def params_text(params: Mapping[str, object], names: Iterable[str] | None = None,
                separator: str = ", ") -> str:
    """The parameters (all, or those of `names` present) in words; those left unset (null:
    `messages` in a timed run) are left out, as the scenario leaves them out."""
    chosen = params if names is None else [name for name in names if name in params]
    return separator.join(param_text(name, params[name]) for name in chosen
                          if params[name] is not None)
