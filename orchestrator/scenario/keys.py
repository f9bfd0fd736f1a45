"""`keys:`, the message keys a workload draws, as a scenario writes them.

`none` (the default), `{count: N}` (N keys, uniform) or `{count: N, zipf: S}` (Zipf with
exponent S over N keys). One canonical text per value (formats.keys.KeySpace.text), so
that it sweeps, names runs and records in the manifest's params like any other field.
"""

from __future__ import annotations

import math

from sixnines.formats.keys import MAX_KEYS, NONE, KeySpace
from sixnines.orchestrator.scenario.problems import shown

FORMS = "none, {count: N} (uniform) or {count: N, zipf: S} (Zipf with exponent S)"
MAX_ZIPF = 10.0


def parse_keys(value: object) -> str:
    """`value` as written, in its canonical text; ValueError naming the accepted forms."""
    if value is None or (isinstance(value, str) and value.strip().lower() == NONE):
        return NONE
    if isinstance(value, str) and "=" in value:
        try:
            value = dict(part.split("=", 1) for part in value.replace(" ", "").split(","))
        except ValueError:
            raise ValueError(f"must be {FORMS} (got {shown(value)})") from None
    if not isinstance(value, dict) or "count" not in value or set(value) - {"count", "zipf"}:
        raise ValueError(f"must be {FORMS} (got {shown(value)})")
    return KeySpace(_count(value["count"]), _zipf(value.get("zipf"))).text()


def _count(given: object) -> int:
    count = _number(given)
    if not (count.is_integer() and 1 <= count <= MAX_KEYS):
        raise ValueError(f"count: must be a whole number of keys, 1 to {MAX_KEYS} "
                         f"(got {shown(given)})")
    return int(count)


def _zipf(given: object) -> float | None:
    if given is None:
        return None
    exponent = _number(given)
    if not 0 < exponent <= MAX_ZIPF:
        raise ValueError(f"zipf: must be an exponent above 0, at most {MAX_ZIPF:g}, e.g. "
                         f"1.1 (got {shown(given)})")
    return exponent


def _number(given: object) -> float:
    try:
        return float(given) if not isinstance(given, bool) else math.nan  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
