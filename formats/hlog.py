"""HdrHistogram interval logs (standard v1.3 text format) for per-second latency history.

An agent writes one tagged histogram per (interval, metric) after the run, so any
HdrHistogram implementation (Java HistogramLogReader, HdrHistogram_py, hdr_plot, ...) can
read and merge them. The `hdrhistogram` package's writer emits format 1.2 without tags and
its `output_start_time` is broken, so the text is written here; only the compressed
base64 payload comes from `HdrHistogram.encode()`. Bucketing is vectorised (one bincount
per group of intervals), never `record_value` per message.
"""

from __future__ import annotations

import os
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


def _check_tag(tag: str) -> str:
    if not _TAG.fullmatch(tag):
        raise ValueError(f"hlog tag {tag!r} must match [A-Za-z0-9_]+")
    return tag


class IntervalLog:
    """An interval log written as the run goes: each `add` (one closed chunk's values)
    appends the intervals that are complete, so memory holds only the last few intervals'
    counts whatever the run's length.

    An interval is complete once values `lateness_ns` past its end have been added (a
    receiver's messages arrive roughly in intended order, not exactly). A value that comes
    later still, for an interval already written, goes into an extra line for that
    interval at once: readers that merge intervals (ours sums them per tag) count it, and
    no line is ever rewritten. Values outside 1 ns .. 1 h are clipped and counted
    (`out_of_range`, which the caller must report).
    """

    def __init__(self, path: str | PathLike, *, start_epoch_s: float, warmup_ns: int,
                 interval_ns: int = INTERVAL_NS, comment: str | None = None,
                 lateness_ns: int = 0) -> None:
        if interval_ns <= 0 or warmup_ns < 0:
            raise ValueError("interval_ns must be > 0 and warmup_ns >= 0")
        if comment is not None and ("\n" in comment or "\r" in comment):
            raise ValueError("hlog comment must be a single line")
        self.warmup_ns, self.interval_ns, self.lateness_ns = warmup_ns, interval_ns, lateness_ns
        self.before = -(-warmup_ns // interval_ns)  # intervals that start inside the warm-up
        self.open: dict[int, dict[str, np.ndarray]] = {}  # interval -> tag -> counts
        self.written = 0  # intervals below this one are in the file
        self.out_of_range: dict[str, dict[str, int]] = {}
        start = datetime.fromtimestamp(start_epoch_s, tz=UTC).isoformat(timespec="milliseconds")
        lines = [
            "#[Histogram log format version 1.3]",
            f"#[StartTime: {start_epoch_s:.3f} (seconds since epoch), {start}]",
            f"#[BaseTime: {start_epoch_s:.3f} (seconds since epoch)]",
        ]
        if comment is not None:
            lines.append(f"#[{comment}]")
        lines += [f"#[Values in nanoseconds; warm-up ends at {warmup_ns / 1e9:.3f} s after "
                  "StartTime]", LEGEND]
        self.file = open(path, "w", encoding="ascii", newline="\n")  # noqa: SIM115
        self._write(lines)

    def interval_of(self, offsets: np.ndarray) -> np.ndarray:
        """The interval of each offset (ns since t0; earlier ones go to the first), as
        cut so that the warm-up's end is always an interval boundary: whole intervals up
        to it, the last one shortened, then whole intervals from it (a reader drops the
        warm-up exactly by whole intervals)."""
        inside = offsets // self.interval_ns
        after = self.before + (offsets - self.warmup_ns) // self.interval_ns
        return np.maximum(np.where(offsets < self.warmup_ns, inside, after), 0)

    def _by_interval(self, offsets: np.ndarray, values: np.ndarray) -> dict[int, np.ndarray]:
        """{interval: its values}. Offsets in order (a schedule's, nearly always) are cut
        at the few interval ends they cross, by binary search; others are sorted by
        interval first (dividing every offset was 2/3 of a chunk's interval-log cost)."""
        if not np.any(offsets[1:] < offsets[:-1]):
            first, last = self.interval_of(offsets[[0, -1]]).tolist()
            ends = [sum(self.span(k)) for k in range(first, last)]
            cuts = [0, *np.searchsorted(offsets, ends).tolist(), len(values)]
            return {k: values[lo:hi] for k, lo, hi in zip(range(first, last + 1), cuts[:-1],
                                                          cuts[1:], strict=True) if hi > lo}
        intervals = self.interval_of(offsets)
        order = np.argsort(intervals, kind="stable")
        intervals, values = intervals[order], values[order]
        found, first_row = np.unique(intervals, return_index=True)
        ends = [*first_row[1:].tolist(), len(values)]
        return {k: values[lo:hi] for k, lo, hi in zip(
            found.tolist(), first_row.tolist(), ends, strict=True)}

    def span(self, interval: int) -> tuple[int, int]:
        """(start, length) of an interval in ns since t0."""
        if interval < self.before:
            start = interval * self.interval_ns
            return start, min(start + self.interval_ns, self.warmup_ns) - start
        return self.warmup_ns + (interval - self.before) * self.interval_ns, self.interval_ns

    def add(self, series: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """Count one chunk's values: {tag: (offsets, values)}, per message its intended
        time minus t0 and its int64 ns value (tags may cover different messages); then
        write what is complete. Intervals are taken in order and written as soon as the
        chunk shows them complete, so a whole run added at once holds one at a time."""
        located: dict[str, dict[int, np.ndarray]] = {}
        latest = None
        for tag in sorted(series):
            offsets = np.asarray(series[tag][0], dtype=np.int64)
            values = np.asarray(series[tag][1], dtype=np.int64)
            if values.shape != offsets.shape:
                raise ValueError(f"metric {_check_tag(tag)!r}: {values.shape} values, "
                                 f"{offsets.shape} offsets")
            values, negative, too_large = hdr.clip(values)
            report = self.out_of_range.setdefault(_check_tag(tag),
                                                  {"negative": 0, "too_large": 0})
            report["negative"] += negative
            report["too_large"] += too_large
            if not len(offsets):
                continue
            latest = max(int(offsets.max()), -1 if latest is None else latest)
            located[tag] = self._by_interval(offsets, values)
        if latest is None:
            return
        complete = int(self.interval_of(np.array([latest - self.lateness_ns]))[0])
        lines: list[str] = []
        for k in sorted(set().union(*located.values())):
            for tag, by_interval in located.items():
                if k not in by_interval:
                    continue
                counts = np.bincount(hdr.bucket_indices(by_interval[k]),
                                     minlength=hdr.COUNTS_LEN)
                if k < self.written:  # later than its interval's line: a line of its own
                    lines.append(self._line(tag, k, counts))
                elif tag in (held := self.open.setdefault(k, {})):
                    held[tag] += counts
                else:
                    held[tag] = counts
            lines += self._flush(min(k, complete))
        lines += self._flush(complete)
        self._write(lines)

    def close(self) -> dict[str, dict[str, int]]:
        """Write every interval still open and close the file; returns the out-of-range
        report per tag ({"negative", "too_large"})."""
        self._write(self._flush(max(self.open, default=-1) + 1))
        self.file.close()
        return self.out_of_range

    def sync(self) -> None:
        """Make what is written durable (a kill of the process alone loses nothing written)."""
        os.fsync(self.file.fileno())

    def _flush(self, below: int) -> list[str]:
        lines = []
        for k in sorted(k for k in self.open if k < below):
            held = self.open.pop(k)
            lines += [self._line(tag, k, held[tag]) for tag in sorted(held)]
        self.written = max(self.written, below)
        return lines

    def _line(self, tag: str, interval: int, counts: np.ndarray) -> str:
        start_ns, length_ns = self.span(interval)
        max_ms = int(hdr.highest_equivalent(hdr.max_index(counts))) / MAX_VALUE_UNIT_RATIO
        payload = hdr.to_hdrh(counts).encode().decode("ascii")
        return f"Tag={tag},{start_ns / 1e9:.3f},{length_ns / 1e9:.3f},{max_ms:.3f},{payload}"

    def _write(self, lines: list[str]) -> None:
        if lines:
            self.file.write("\n".join(lines) + "\n")
            self.file.flush()


def write_hlog(path: str | PathLike, *, start_epoch_s: float,
               series: dict[str, tuple[np.ndarray, np.ndarray]], warmup_ns: int,
               interval_ns: int = INTERVAL_NS, comment: str | None = None
               ) -> dict[str, dict[str, int]]:
    """A whole interval log at once: one tagged interval histogram per (interval, metric)
    with at least one value (`IntervalLog` says how values are cut and clipped).
    BaseTime = StartTime = start_epoch_s, so stamps are seconds since t0."""
    log = IntervalLog(path, start_epoch_s=start_epoch_s, warmup_ns=warmup_ns,
                      interval_ns=interval_ns, comment=comment)
    try:
        log.add(series)
    finally:
        report = log.close()
    return report


@dataclass(frozen=True, eq=False)
class Interval:
    """One interval line: its nonzero counts at their indices (formats.hdr's layout). Kept
    sparse: an agent's whole log is read at once, and as dense arrays an hour of a
    consumer's two tags held 1.9 GB (7,200 × 33,792 counters), sparse ~80 MB."""

    tag: str  # "" for an untagged line written by another tool
    start_s: float  # seconds since StartTime
    length_s: float
    indices: np.ndarray
    values: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        """The dense hdr counts array (len COUNTS_LEN)."""
        counts = np.zeros(hdr.COUNTS_LEN, dtype=np.int64)
        counts[self.indices] = self.values
        return counts


@dataclass(frozen=True)
class HlogFile:
    start_epoch_s: float | None
    intervals: list[Interval]

    @property
    def end_s(self) -> float:
        """Where its intervals end, in seconds since StartTime: how far the log of an
        agent that died was written (IntervalLog writes intervals in order; a late value's
        line is for an interval already written)."""
        return max((item.start_s + item.length_s for item in self.intervals), default=0.0)


_START = re.compile(r"#\[StartTime: *([\d.]+)")
_BASE = re.compile(r"#\[BaseTime: *([\d.]+)")


class HlogError(SixninesError, ValueError):
    """An interval log that cannot be read; `str()` names the file, the line and why."""


def read_hlog(path: str | PathLike, cut_short_end: bool = False) -> HlogFile:
    """Parse an interval log (ours or any v1.x writer's) into hdr counts per interval.

    Timestamps follow Java's HistogramLogReader: relative to BaseTime if given, else
    absolute unless more than a year before StartTime. Histograms of another layout
    (not 1 ns units at 3 digits) are refused rather than silently rebucketed. A damaged
    file (cut short, bits flipped: base64, zlib and HdrHistogram decoding each fail their
    own way) raises HlogError naming the file and the line. `cut_short_end`: its writer
    was killed as it appended (an agent that died), so a damaged last line without its
    newline is where the kill cut it, and is left out.
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
                try:
                    tag, stamp, length, counts = _interval_line(line, path, number)
                except HlogError:
                    if cut_short_end and not raw.endswith("\n"):
                        continue
                    raise
                if origin is None:
                    origin = stamp if start is None else start
                if base is None:
                    base = origin if stamp < origin - 365 * 24 * 3600.0 else 0.0
                intervals.append(Interval(tag, base + stamp - origin, length, *counts))
        except UnicodeDecodeError as error:
            raise HlogError(f"{path}: not text ({error})") from error
    return HlogFile(start, intervals)


def _interval_line(line: str, path: str | PathLike, number: int
                   ) -> tuple[str, float, float, tuple[np.ndarray, np.ndarray]]:
    """(tag, start stamp, length, (indices, counts) of its nonzero counts) of one line.
    The payload is decoded by the hdrhistogram package, which raises what its codecs
    raise (binascii, zlib, its own Hdr*Exception, IndexError …) on damaged data: any of
    them means a damaged line."""
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
    indices, counts = hdr.nonzero_of_hdrh(histogram)
    if int(counts.sum()) != histogram.get_total_count():
        raise HlogError(f"{path}: line {number}: histogram holds values beyond "
                        f"{hdr.HIGHEST} ns")
    return tag, stamp_s, length_s, (indices, counts)


def _kind(error: Exception) -> str:
    """"zlib.error", "binascii.Error", "ValueError": which decoder gave up."""
    kind = type(error)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def _measured(item: Interval, warmup_s: float) -> bool:
    """An interval counts when its midpoint is past warmup_s: stamps carry 1 ms precision,
    and IntervalLog puts the warm-up end on a boundary, so this is exact."""
    return item.start_s + item.length_s / 2 >= warmup_s


def measured_counts(hlog: HlogFile, warmup_s: float) -> dict[str, np.ndarray]:
    """Counts per tag summed over the intervals after the warm-up (zeros if none)."""
    totals: dict[str, np.ndarray] = {}
    for item in hlog.intervals:
        total = totals.setdefault(item.tag, np.zeros(hdr.COUNTS_LEN, dtype=np.int64))
        if _measured(item, warmup_s):
            total[item.indices] += item.values
    return totals


def measured_intervals(hlog: HlogFile, warmup_s: float, tags: frozenset[str]
                       ) -> dict[str, list[Interval]]:
    """The intervals after the warm-up of each of `tags` the log holds, in file order."""
    found: dict[str, list[Interval]] = {}
    for item in hlog.intervals:
        if item.tag in tags and _measured(item, warmup_s):
            found.setdefault(item.tag, []).append(item)
    return found
