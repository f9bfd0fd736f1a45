"""Human units in scenario files: sizes ("1KB"), durations ("500ms") and rates ("20k").

Parsing is exact (decimal strings go through `Fraction`, so "1.5KB" is 1536 bytes, not a
rounded float) and strict: anything unrecognised is a `ValueError` whose message shows the
accepted forms. Range checks (size >= header, rate > 0) belong to the scenario model.

Text is bounded (`MAX_TEXT`, and three-digit exponents) before `Fraction` sees it, which
would otherwise compute `10**999999999` for "1e999999999".

Where a value leaves its unit to be guessed, or writes one another tool reads otherwise (a
bare duration is seconds, "1KB" is 1,024 bytes, "2m" is minutes, "20k" is 20,000),
`size_reading`, `duration_reading` and `rate_reading` say how it was read, so that
`sixnines validate` can show it.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from sixnines.orchestrator.scenario.problems import shown

#: Longest value written as text ("1.5 KiB", "20k msg/s", "500 ms" need a dozen).
MAX_TEXT = 32

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"

_SIZE = re.compile(rf"\s*({_NUMBER})\s*([A-Za-z]*)\s*")
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1024,
    "kib": 1024,
    "mb": 1024**2,
    "mib": 1024**2,
    "gb": 1024**3,
    "gib": 1024**3,
}

_DURATION = re.compile(rf"\s*({_NUMBER})\s*([A-Za-zµμ]*)\s*")
_DURATION_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # MICRO SIGN
    "μs": 1_000,  # GREEK SMALL LETTER MU
    "ms": 1_000_000,
    "": 1_000_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}

_RATE = re.compile(rf"\s*({_NUMBER}(?:[eE][+-]?\d{{1,3}})?)\s*([kKM]?)\s*(?:(?:msg\s*)?/\s*s)?\s*")
_RATE_UNITS = {"": 1, "k": 1_000, "K": 1_000, "M": 1_000_000}

#: The same forms as JSON Schema patterns (ECMA-262, which reads them as Python does here),
#: for editors to check a scenario against (scenario.written); tests/test_scenario_schema.py
#: holds them to the parsers over a corpus of values.
_PATTERN_NUMBER = r"[+-]?(\d+(\.\d*)?|\.\d+)"
SIZE_PATTERN = rf"^\s*{_PATTERN_NUMBER}\s*([bB]|[kKmMgG][iI]?[bB])?\s*$"
DURATION_PATTERN = rf"^\s*{_PATTERN_NUMBER}\s*([nNuUµμΜmM]?[sS]|[mMhH])?\s*$"
RATE_PATTERN = (rf"^\s*{_PATTERN_NUMBER}([eE][+-]?\d{{1,3}})?\s*[kKM]?\s*((msg\s*)?/\s*s)?"
                r"\s*$")


def _exact(value: object) -> Fraction | None:
    """A real (non-bool, finite) number as a Fraction; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return Fraction(value)


def _text(value: object) -> str | None:
    """`value` if it is a string short enough to parse; None if it is no string."""
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise ValueError(f"{shown(value)} is too long for a value "
                         f"(at most {MAX_TEXT} characters)")
    return value if isinstance(value, str) else None


def parse_size(value: object) -> int:
    """Bytes from 64, "64", "512B", "1KB", "1.5 KiB", "4MB" (K/M/G are powers of 1024)."""
    error = ValueError(f"{shown(value)} is not a size: use e.g. 64, 512B, 1KB, 4MiB")
    number = _exact(value)
    if number is None:
        text = _text(value)
        if text is None or not (match := _SIZE.fullmatch(text)):
            raise error
        unit = _SIZE_UNITS.get(match[2].lower())
        if unit is None:
            raise error
        number = Fraction(match[1]) * unit
    if number.denominator != 1:
        raise ValueError(f"{shown(value)} is not a whole number of bytes")
    return int(number)


def parse_duration(value: object) -> int:
    """Nanoseconds from 10 (seconds), "2.5", "10s", "500ms", "250us", "100ns", "2m", "1h".

    Sub-nanosecond remainders are rounded to the nearest nanosecond."""
    number = _exact(value)
    if number is not None:
        return round(number * 1_000_000_000)
    text = _text(value)
    if text is not None and (match := _DURATION.fullmatch(text)):
        unit = _DURATION_UNITS.get(match[2].lower())
        if unit is not None:
            return round(Fraction(match[1]) * unit)
    raise ValueError(f"{shown(value)} is not a duration: use e.g. 10s, 500ms, 2m")


def parse_rate(value: object) -> float:
    """Messages per second from 2000, "20k", "1.5M", "500/s", "20k msg/s" (k = 1e3, M = 1e6).

    A number beyond a float's range ("1e999") is inf, for the model's bound to refuse."""
    number = _exact(value)
    text = _text(value) if number is None else None
    if text is not None and (match := _RATE.fullmatch(text)):
        number = Fraction(match[1]) * _RATE_UNITS[match[2]]
    if number is None:
        raise ValueError(f"{shown(value)} is not a rate: use e.g. 2000, 20k, 1.5M, 500/s")
    try:
        return float(number)
    except OverflowError:
        return math.inf


def size_reading(value: object) -> str | None:
    """How `parse_size` read `value` when its unit means 1,000 elsewhere ("1KB" →
    "1,024 B (KB read as KiB)"); None for bytes and the binary units, which are plain."""
    match = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if match is None or match[2].lower() not in ("kb", "mb", "gb"):
        return None
    return f"{parse_size(value):,} B ({match[2]} read as {match[2][0].upper()}iB)"


def duration_reading(value: object) -> str | None:
    """How `parse_duration` read `value` when it gives no unit (seconds) or minutes as
    `m` (not milli-): 5 → "5 s (no unit: seconds)"; None for any other unit, and for 0."""
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    bare = _exact(value) is not None or (match is not None and match[2] == "")
    minutes = match is not None and match[2].lower() == "m"
    if not (bare or minutes) or parse_duration(value) == 0:  # 0 is 0 in any unit
        return None
    return f"{_seconds(parse_duration(value))} ({'no unit: seconds' if bare else 'm: minutes'})"


def rate_reading(value: object) -> str | None:
    """How `parse_rate` read `value` with a k or M: "20k" → "20,000 msg/s"; None for a
    plain number of messages per second."""
    match = _RATE.fullmatch(value) if isinstance(value, str) else None
    if match is None or not match[2]:
        return None
    rate = parse_rate(value)
    return f"{rate:,.0f} msg/s" if rate.is_integer() else f"{rate:,} msg/s"


def _seconds(ns: int) -> str:
    """Nanoseconds in seconds, every digit kept: 2_500_000_000 → "2.5 s"."""
    whole, rest = divmod(ns, 1_000_000_000)
    return f"{whole:,}{f'.{rest:09d}'.rstrip('0') if rest else ''} s"


def _largest_unit(value: int, units: tuple[tuple[str, int], ...], base: str) -> str:
    """`value` in the largest of `units` (name, factor; largest first) dividing it exactly."""
    for name, factor in units:
        if value >= factor and value % factor == 0:
            return f"{value // factor}{name}"
    return f"{value}{base}"


def format_size(size: int) -> str:
    """A size as `parse_size` reads it back: 67108864 -> "64MiB"."""
    return _largest_unit(size, (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)), "B")


def format_duration(ns: int) -> str:
    """A duration as `parse_duration` reads it back: 3600000000000 -> "1h"."""
    factors = (("h", 3600 * 10**9), ("m", 60 * 10**9), ("s", 10**9), ("ms", 10**6),
               ("us", 10**3))
    return _largest_unit(ns, factors, "ns")


def format_rate(rate: int) -> str:
    """A whole rate as `parse_rate` reads it back: 100000000 -> "100M"."""
    return _largest_unit(rate, (("M", 10**6), ("k", 10**3)), "")
