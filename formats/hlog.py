"""HdrHistogram interval logs (standard v1.3 text format) for per-second latency history.

An agent writes one tagged histogram per (interval, metric) after the run, so any
HdrHistogram implementation (Java HistogramLogReader, HdrHistogram_py, hdr_plot, ...) can
read and merge them. The `hdrhistogram` package's writer emits format 1.2 without tags and
its `output_start_time` is broken, so the text is written here; only the compressed
base64 payload comes from `HdrHistogram.encode()`. Bucketing is vectorised (one bincount
per group of intervals), never `record_value` per message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from os import PathLike

import numpy as np
from hdrh.histogram import HdrHistogram

from sixnines.formats import hdr
from sixnines.formats.errors import SixninesError

INTERVAL_NS = 1_000_000_000
MAX_VALUE_UNIT_RATIO = 1e6  # Interval_Max column in ms for ns values (HdrHistogram convention)
LEGEND = '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'
_TAG = re.compile(r"[A-Za-z0-9_]+")
_CHUNK_BINS = 1 << 22  # bincount bins per pass: bounds memory for hour-long runs (32 MB)


def interval_edges(warmup_ns: int, end_ns: int, interval_ns: int = INTERVAL_NS) -> np.ndarray:
    """Interval boundaries (ns since t0) with the warm-up end always one of them.

    0, every interval_ns below warmup_ns, warmup_ns, then warmup_ns + k * interval_ns up to
    and including the first edge >= end_ns (at least one interval), so a reader can drop
    the warm-up exactly by whole intervals.
    """
    if interval_ns <= 0 or warmup_ns < 0:
        raise ValueError("interval_ns must be > 0 and warmup_ns >= 0")
    end_ns = max(int(end_ns), 1)
    before = np.arange(0, warmup_ns, interval_ns, dtype=np.int64)
    after_count = max(-(-(end_ns - warmup_ns) // interval_ns), 0) + 1
    after = warmup_ns + interval_ns * np.arange(after_count, dtype=np.int64)
    edges = np.concatenate([before, after])
    return edges[: int(np.searchsorted(edges, end_ns, side="left")) + 1]


def _check_tag(tag: str) -> str:
    if not _TAG.fullmatch(tag):
        raise ValueError(f"hlog tag {tag!r} must match [A-Za-z0-9_]+")
    return tag


def write_hlog(path: str | PathLike, *, start_epoch_s: float,
               series: dict[str, tuple[np.ndarray, np.ndarray]], warmup_ns: int,
               interval_ns: int = INTERVAL_NS, comment: str | None = None
               ) -> dict[str, dict[str, int]]:
    """Write one tagged interval histogram per (interval, metric) with at least one value.

    `series` maps a tag to (offsets, values): per message, its intended send time minus t0
    (earlier ones go to the first interval) and its int64 ns value. Tags may cover different
    messages (a request without a reply has a send lag but no latency). Values outside
    1 h / below 0 are clipped into range and counted; the returned
    {tag: {"negative", "too_large"}} must be reported by the caller.
    BaseTime = StartTime = start_epoch_s, so stamps are seconds since t0.
    """
    tags = sorted(_check_tag(tag) for tag in series)
    if comment is not None and ("\n" in comment or "\r" in comment):
        raise ValueError("hlog comment must be a single line")
    report: dict[str, dict[str, int]] = {}
    prepared: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    end_ns = 1
    for tag in tags:
        offsets = np.asarray(series[tag][0], dtype=np.int64)
        values = np.asarray(series[tag][1], dtype=np.int64)
        if values.shape != offsets.shape:
            raise ValueError(f"metric {tag!r}: {values.shape} values, {offsets.shape} offsets")
        values, negative, too_large = hdr.clip(values)
        report[tag] = {"negative": negative, "too_large": too_large}
        if len(offsets) > 1 and np.any(offsets[1:] < offsets[:-1]):
            order = np.argsort(offsets, kind="stable")  # schedule order is usual; sort if not
            offsets, values = offsets[order], values[order]
        prepared[tag] = (offsets, values)
        if len(offsets):
            end_ns = max(end_ns, int(offsets[-1]) + 1)

    edges = interval_edges(warmup_ns, end_ns, interval_ns)
    n_intervals = len(edges) - 1
    located: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for tag, (offsets, values) in prepared.items():
        interval = np.maximum(np.searchsorted(edges, offsets, side="right") - 1, 0)
        bounds = np.searchsorted(interval, np.arange(n_intervals + 1), side="left")
        located[tag] = (interval, values, bounds)

    start = datetime.fromtimestamp(start_epoch_s, tz=UTC).isoformat(timespec="milliseconds")
    lines = [
        "#[Histogram log format version 1.3]",
        f"#[StartTime: {start_epoch_s:.3f} (seconds since epoch), {start}]",
        f"#[BaseTime: {start_epoch_s:.3f} (seconds since epoch)]",
    ]
    if comment is not None:
        lines.append(f"#[{comment}]")
    lines += [f"#[Values in nanoseconds; warm-up ends at {warmup_ns / 1e9:.3f} s after StartTime]",
              LEGEND]
    per_pass = max(_CHUNK_BINS // hdr.COUNTS_LEN, 1)
    for first in range(0, n_intervals, per_pass):
        last = min(first + per_pass, n_intervals)
        pass_counts = {}
        for tag, (interval, values, bounds) in located.items():
            lo, hi = int(bounds[first]), int(bounds[last])
            keys = (interval[lo:hi] - first) * hdr.COUNTS_LEN + hdr.bucket_indices(values[lo:hi])
            pass_counts[tag] = np.bincount(keys, minlength=(last - first) * hdr.COUNTS_LEN
                                           ).reshape(last - first, hdr.COUNTS_LEN)
        for i in range(first, last):
            start_s, length_s = edges[i] / 1e9, (edges[i + 1] - edges[i]) / 1e9
            for tag in tags:
                bounds = located[tag][2]
                if bounds[i] == bounds[i + 1]:
                    continue
                counts = pass_counts[tag][i - first]
                max_ms = int(hdr.highest_equivalent(hdr.max_index(counts))) / MAX_VALUE_UNIT_RATIO
                payload = hdr.to_hdrh(counts).encode().decode("ascii")
                lines.append(f"Tag={tag},{start_s:.3f},{length_s:.3f},{max_ms:.3f},{payload}")
    with open(path, "w", encoding="ascii", newline="\n") as out:
        out.write("\n".join(lines) + "\n")
    return report


@dataclass(frozen=True)
class Interval:
    tag: str  # "" for an untagged line written by another tool
    start_s: float  # seconds since StartTime
    length_s: float
    counts: np.ndarray  # hdr counts array (len COUNTS_LEN)


@dataclass(frozen=True)
class HlogFile:
    start_epoch_s: float | None
    intervals: list[Interval]


_START = re.compile(r"#\[StartTime: *([\d.]+)")
_BASE = re.compile(r"#\[BaseTime: *([\d.]+)")


class HlogError(SixninesError, ValueError):
    """An interval log that cannot be read; `str()` names the file, the line and why."""


def read_hlog(path: str | PathLike) -> HlogFile:
    """Parse an interval log (ours or any v1.x writer's) into hdr counts per interval.

    Timestamps follow Java's HistogramLogReader: relative to BaseTime if given, else
    absolute unless more than a year before StartTime. Histograms of another layout
    (not 1 ns units at 3 digits) are refused rather than silently rebucketed. A damaged
    file (cut short, bits flipped: base64, zlib and HdrHistogram decoding each fail their
    own way) raises HlogError naming the file and the line.
    """
    start: float | None = None
    base: float | None = None
    origin: float | None = None  # StartTime, or the first stamp when there is none
    intervals: list[Interval] = []
    with open(path, encoding="utf-8") as source:
        try:
            for number, raw in enumerate(source, start=1):
                line = raw.strip()
                if (match := _START.match(line)) is not None:
                    start = float(match.group(1))
                elif (match := _BASE.match(line)) is not None:
                    base = float(match.group(1))
                if not line or line.startswith(("#", '"')):
                    continue
                tag, stamp, length, counts = _interval_line(line, path, number)
                if origin is None:
                    origin = stamp if start is None else start
                if base is None:
                    base = origin if stamp < origin - 365 * 24 * 3600.0 else 0.0
                intervals.append(Interval(tag, base + stamp - origin, length, counts))
        except UnicodeDecodeError as error:
            raise HlogError(f"{path}: not text ({error})") from error
    return HlogFile(start, intervals)


def _interval_line(line: str, path: str | PathLike, number: int
                   ) -> tuple[str, float, float, np.ndarray]:
    """(tag, start stamp, length, counts) of one interval line. The payload is decoded by
    the hdrhistogram package, which raises what its codecs raise (binascii, zlib, its own
    Hdr*Exception, IndexError …) on damaged data: any of them means a damaged line."""
    tag = ""
    if line.startswith("Tag="):
        tag, _, line = line[4:].partition(",")
    try:
        stamp, length, _max, payload = line.split(",", 3)
        histogram = HdrHistogram.decode(payload)
        stamp_s, length_s = float(stamp), float(length)
    except Exception as error:
        raise HlogError(f"{path}: line {number}: damaged interval "
                        f"({_kind(error)}: {error})") from error
    if histogram.unit_magnitude != 0 or histogram.sub_bucket_count != hdr.SUB_BUCKET_COUNT:
        raise HlogError(f"{path}: line {number}: histogram layout differs from 1 ns at "
                        "3 digits")
    counts = hdr.from_hdrh(histogram)
    if int(counts.sum()) != histogram.get_total_count():
        raise HlogError(f"{path}: line {number}: histogram holds values beyond "
                        f"{hdr.HIGHEST} ns")
    return tag, stamp_s, length_s, counts


def _kind(error: Exception) -> str:
    """"zlib.error", "binascii.Error", "ValueError": which decoder gave up."""
    kind = type(error)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def measured_counts(hlog: HlogFile, warmup_s: float) -> dict[str, np.ndarray]:
    """Counts per tag summed over the intervals after the warm-up (zeros if none).

    An interval counts when its midpoint is past warmup_s: stamps carry 1 ms precision,
    and interval_edges puts the warm-up end on a boundary, so this is exact.
    """
    totals: dict[str, np.ndarray] = {}
    for item in hlog.intervals:
        total = totals.setdefault(item.tag, np.zeros(hdr.COUNTS_LEN, dtype=np.int64))
        if item.start_s + item.length_s / 2 >= warmup_s:
            total += item.counts
    return totals
