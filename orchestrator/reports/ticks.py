"""Axis ticks and number labels.

report.js holds the same rules for the x axis (it redraws the ticks after a zoom); a change
here belongs there too.
"""

from __future__ import annotations

import math

from sixnines.orchestrator.reports.model import Scale


def number(value: float) -> str:
    """Compact label: 1.5k, 20M; small values keep three significant digits."""
    magnitude = abs(value)
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if magnitude >= factor:
            return f"{value / factor:.3g}{suffix}"
    return f"{value:.3g}"


def percent(nines: float, step: float = 1.0) -> str:
    """The percentile at −log10(1 − p) = nines, with the digits that tell ticks `step`
    apart: 0 → 0%, 1 → 90%, 3 → 99.9%, 6 → 99.9999%; 3.5 → 99.97% (step 0.5)."""
    digits = max(0, math.ceil(nines - 1e-9) - 2) + max(0, math.ceil(-math.log10(step) - 1e-9) - 1)
    text = f"{100 * (1 - 10 ** -nines):.{min(digits, 9)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}%"


def linear(lo: float, hi: float, most: int = 8) -> list[float]:
    """Multiples of 1, 2 or 5 × 10^k within [lo, hi], at most `most` of them."""
    span = hi - lo
    if span <= 0:
        return [lo]
    base = 10 ** math.floor(math.log10(span / most))
    step = next(base * m for m in (1, 2, 5, 10) if span / (base * m) <= most)
    first = math.ceil(lo / step - 1e-9)
    return [round(k * step, 12) for k in range(first, math.floor(hi / step + 1e-9) + 1)]


def logarithmic(lo: float, hi: float) -> list[float]:
    """Powers of ten (every k-th one over a wide range, with 2× and 5× over a narrow one);
    linear ticks inside a single decade, where powers of ten would leave none."""
    lo_exp, hi_exp = math.log10(lo), math.log10(hi)
    exps = range(math.floor(lo_exp), math.ceil(hi_exp) + 1)
    if hi_exp - lo_exp < 3:
        mantissas: tuple[int, ...] = (1, 2, 5)
    else:
        mantissas = (1,)
    every = max(1, math.ceil((hi_exp - lo_exp) / 8))
    ticks = [m * 10.0 ** e for e in exps if e % every == 0 for m in mantissas]
    ticks = [t for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]
    return ticks if len(ticks) >= 2 else linear(lo, hi)


def ticks(scale: Scale, lo: float, hi: float) -> list[tuple[float, str]]:
    """(value, label) pairs for an axis showing [lo, hi] in data units."""
    if scale == "log":
        return [(v, number(v)) for v in logarithmic(lo, hi)]
    values = linear(lo, hi)
    if scale == "nines":
        step = values[1] - values[0] if len(values) > 1 else 1.0
        return [(v, percent(v, step)) for v in values]
    return [(v, number(v)) for v in values]
