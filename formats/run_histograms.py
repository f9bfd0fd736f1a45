"""A run's `report/histograms.json`: each metric's HDR buckets as the analysis merged them
over the run's agents, with the exact aggregates beside them — what the run's figures were
taken from. Kept so that the repeats of a case add up bucket by bucket into one
distribution (docs/design.md rule 5: histograms add, percentiles never average).

    {"metrics": {"latency": {"indices": [...], "counts": [...], "sums": [...],
                             "total": 1.2e9, "max": 80211, "negative": 0, "too_large": 0},
                 "service_time": {...}, ...}}

`indices` are HDR bucket indices (formats.hdr's layout) of the buckets holding values,
ascending; `counts` how many values each holds and `sums` their raw sum (ns); `total` all
values summed (ns), `max` the exact largest (ns), `negative` and `too_large` the values
clipped into range. The fields are spark_jobs.histograms.Buckets' (FIELDS).

Read back from a results directory that may come from anywhere, so the file is bounded
before it is parsed and every list is checked (lengths, order, range, finite numbers): a
file that is not what the analysis writes is refused, never half used.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from sixnines.formats.atomic import write_atomically
from sixnines.formats.hdr import COUNTS_LEN
from sixnines.formats.json_input import read_json

FIELDS = ("indices", "counts", "sums", "total", "max", "negative", "too_large")
#: Four metrics of at most COUNTS_LEN buckets, three numbers each.
MAX_BYTES = 16 * 1024 * 1024

Histogram = dict[str, Any]


class HistogramsRefused(ValueError):
    """A histograms.json that is not what the analysis writes; `str()` names the file."""


def write_histograms(path: Path, metrics: Mapping[str, Histogram]) -> Path:
    """The file, whole or not at all (formats.atomic: WriteFailure names it)."""
    return write_atomically(path, histograms_text(metrics))


def histograms_text(metrics: Mapping[str, Histogram]) -> str:
    """The file's text: each metric's FIELDS, arrays as lists."""
    document = {name: {key: _plain(histogram[key]) for key in FIELDS}
                for name, histogram in metrics.items()}
    return json.dumps({"metrics": document}, separators=(",", ":"), allow_nan=False) + "\n"


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value.item() if isinstance(value, np.generic) else value


def read_histograms(path: Path) -> dict[str, Histogram]:
    """Each metric's FIELDS (indices and counts as int64 arrays, sums as float64), or
    HistogramsRefused naming the file and what is wrong (OSError when it cannot be read)."""
    try:
        body = read_json(path, MAX_BYTES)
    except ValueError as error:
        raise HistogramsRefused(f"{path}: {error}") from None
    metrics = body.get("metrics") if isinstance(body, dict) else None
    if not isinstance(metrics, dict):
        raise HistogramsRefused(f"{path}: not a run's histograms (no `metrics` object)")
    found = {}
    for name, histogram in metrics.items():
        try:
            found[name] = _checked(histogram)
        except (TypeError, ValueError) as error:
            raise HistogramsRefused(f"{path}: metrics.{name[:40]}: {error}") from None
    return found


def _checked(histogram: Any) -> Histogram:
    if not isinstance(histogram, dict) or set(histogram) != set(FIELDS):
        raise ValueError(f"must hold exactly {', '.join(FIELDS)}")
    indices, counts, sums = (histogram[key] for key in FIELDS[:3])
    if not all(isinstance(part, list) for part in (indices, counts, sums)) \
            or not len(indices) == len(counts) == len(sums):
        raise ValueError("indices, counts and sums must be lists of one length")
    if not all(_whole(value) for value in (*indices, *counts)):
        raise ValueError("indices and counts must be whole numbers")
    if any(not 0 <= index < COUNTS_LEN for index in indices) \
            or any(b <= a for a, b in pairwise(indices)):
        raise ValueError(f"indices must ascend within 0 … {COUNTS_LEN - 1}")
    if any(count < 1 for count in counts):
        raise ValueError("a listed bucket holds at least one value")
    total, highest = histogram["total"], histogram["max"]
    if not all(_finite(value) for value in (*sums, total)):
        raise ValueError("sums and total must be finite numbers")
    if (highest is None) != (not counts) or (highest is not None and not _whole(highest)):
        raise ValueError("max must be a whole number, null only when nothing was measured")
    if not all(_whole(histogram[key]) and histogram[key] >= 0 for key in FIELDS[-2:]):
        raise ValueError("negative and too_large must be counts")
    return {"indices": np.array(indices, dtype=np.int64),
            "counts": np.array(counts, dtype=np.int64),
            "sums": np.array(sums, dtype=np.float64), "total": float(total), "max": highest,
            "negative": histogram["negative"], "too_large": histogram["too_large"]}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)
