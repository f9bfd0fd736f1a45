"""What each fault of a run cost (summary.json `faults`, formats.summary.FaultFigures),
from the run's counts per interval (spark_jobs.intervals) and the faults' times in its
manifest; docs/design.md, "Faults: intervals, band and recovery", defines every figure.

A fault's timeline, in intervals of the grid from the measured start (a stretch [a, b)
takes the intervals from the one holding a up to the one holding b):
- before: the measured time before it struck, at most BEFORE_NS, from the measured
  start or the end of the fault before, up to IN_FLIGHT_INTERVALS before the interval
  holding its start (those hold the messages in flight when it hit: it delays them too,
  and they belong to neither stretch);
- during: from when it struck (the signal sent: SIGSTOP and SIGKILL act at once, while
  `effective` is when the controller saw them done, tens of ms later for a reaped process)
  to its end (undone, or a restarted broker accepting connections again); for a fault
  without an end, to the next fault or the end of the measured time;
- after: from its end to the next fault's taking effect or the end of the measured time.

The band: BAND_FACTOR times the BAND_QUANTILE of the per-interval max latency over the
pre-fault window, at least BAND_FLOOR_NS above it. Recovered: at the start of the first
RECOVERY_INTERVALS consecutive intervals with timed messages whose max latency is inside
the band (intervals without a timed message neither count nor break the run; fewer are
enough when the next fault or the end of the measured time comes within
RECOVERY_INTERVALS of the first), searched from the interval holding the fault's end (or,
without an end, the one after its start's).

A fault's accounting (lost, unknown, duplicated, reordered) takes the in-flight intervals
and `during`: a message in flight when a broker is killed is lost by the fault.

The backlog at the end of an interval: the messages intended by then that arrived (first
deliveries) less the receipts by then (duplicates aside); lost ones are counted as lost,
not as a backlog that never drains. Drained: at the end of the first interval, after
its peak, where it is back to its highest level in the pre-fault window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sixnines.formats.manifest import FaultRecord, Manifest
from sixnines.formats.summary import FaultDelivery, FaultFigures, FaultWindow
from sixnines.spark_jobs import delivery
from sixnines.spark_jobs.intervals import NO_LATENCY, IntervalCounts, log_bin_high

BEFORE_NS = 10_000_000_000
BAND_QUANTILE = 0.99
BAND_FACTOR = 2.0
BAND_FLOOR_NS = 1_000_000
RECOVERY_INTERVALS = 10
#: the intervals just before a fault's, left out of its pre-fault window: they hold the
#: messages in flight when it hit, which it delays too
IN_FLIGHT_INTERVALS = 1
PERCENTILES = {"p50_us": 0.5, "p90_us": 0.9, "p99_us": 0.99, "p99.9_us": 0.999}


@dataclass(frozen=True)
class Timeline:
    """A fault's stretches as interval indices [first, end): before (from the first whole
    interval after the fault before), during, after; the interval its recovery is searched
    from; where the run's receipts end (the drain)."""

    before: tuple[int, int]
    during: tuple[int, int]
    after: tuple[int, int]
    since: int
    run_end: int


def _interval(ns: int, width: int) -> int:
    return ns // width


def _ended(record: FaultRecord) -> int | None:
    """When the fault ended, absolute ns (None: it has no end)."""
    return record.undone_ns if record.undone_ns is not None else record.restarted_ns


def _struck(record: FaultRecord) -> int:
    """When a fault that took effect struck, absolute ns: its signal sent (module doc)."""
    assert record.effective_ns is not None
    return record.issued_ns if record.issued_ns is not None else record.effective_ns


def _ended_or_started(record: FaultRecord) -> int:
    """When a fault that took effect stopped disturbing what follows: its end, else its
    start."""
    end = _ended(record)
    return end if end is not None else _struck(record)


def timeline(records: list[FaultRecord], index: int, origin: int, width: int,
             measured_ns: int, bins: int) -> Timeline:
    """The stretches of records[index] (it took effect), times counted from `origin` (the
    measured start, absolute ns on the controller's clock)."""
    record = records[index]
    effective = _struck(record) - origin
    end = _ended(record)
    later = [_struck(r) - origin for r in records[index + 1:] if r.effective_ns is not None]
    boundary = min([measured_ns, *later])
    earlier = [_ended_or_started(r) - origin for r in records[:index]
               if r.effective_ns is not None]
    before_from = max([0, effective - BEFORE_NS, *earlier])
    first = _interval(effective, width)
    opens = -(-before_from // width)
    before = (opens, max(opens, first - IN_FLIGHT_INTERVALS))
    last = _interval(boundary, width)
    if end is None:  # its start's interval holds messages it did not touch
        return Timeline(before, (first, max(last, first + 1)), (last, last), first + 1, bins)
    stop = _interval(end - origin, width) + 1
    return Timeline(before, (first, stop), (stop, max(last, stop)), stop - 1, bins)


def window_figures(counts: IntervalCounts, span: tuple[int, int], width: int
                   ) -> FaultWindow:
    """The latency of the messages intended in intervals [first, end)."""
    first, end = span
    bins, found = counts.histogram(first, end)
    total = int(found.sum())
    figures: dict[str, float | None] = dict.fromkeys([*PERCENTILES, "max_us"])
    if total:
        highest = int(counts.latency_max[first:end].max())
        cumulative = np.cumsum(found)
        for key, p in PERCENTILES.items():
            at = int(np.searchsorted(cumulative, np.ceil(p * total)))
            figures[key] = min(float(log_bin_high(bins[at])), highest) / 1000
        figures["max_us"] = highest / 1000
    return FaultWindow.model_validate({"from_s": first * width / 1e9,
                                       "to_s": end * width / 1e9, "count": total,
                                       **figures})


def band_ns(counts: IntervalCounts, span: tuple[int, int]) -> float | None:
    """The pre-fault band (module doc) over intervals [first, end); None without a timed
    message there."""
    maxima = counts.latency_max[span[0]:span[1]]
    maxima = maxima[maxima != NO_LATENCY]
    if not len(maxima):
        return None
    usual = float(np.quantile(maxima, BAND_QUANTILE, method="higher"))
    return max(BAND_FACTOR * usual, usual + BAND_FLOOR_NS)


def recovered_at(counts: IntervalCounts, since: int, until: int, band: float) -> int | None:
    """The first interval at or after `since` starting RECOVERY_INTERVALS consecutive
    timed intervals inside the band, or, within RECOVERY_INTERVALS of `until`, all the
    timed ones left (module doc); None when none does."""
    timed = np.flatnonzero(counts.counts["timed"][since:until] > 0) + since
    inside = counts.latency_max[timed] <= band
    streak = 0
    for position, ok in enumerate(inside):
        streak = streak + 1 if ok else 0
        if not ok:
            continue
        start = int(timed[position - streak + 1])
        last = position == len(inside) - 1
        if streak == RECOVERY_INTERVALS or (last and until - start < RECOVERY_INTERVALS):
            return start
    return None


def window_delivery(counts: IntervalCounts, span: tuple[int, int],
                    expected: delivery.Expected, acknowledged: bool = False
                    ) -> FaultDelivery:
    """The run's accounting (spark_jobs.delivery.counts) of the messages intended in
    intervals [first, end); with `acknowledged` (producers recorded what the system
    acknowledged), the acknowledged ones lost: each consumer's copy of an acknowledged
    send not first-delivered, less every miss that may be unknown (`late`)."""
    part = {name: int(values[span[0]:span[1]].sum()) for name, values in counts.counts.items()}
    consumers = expected.consumers or 0
    broken = consumers * part["acknowledged"] - part["acknowledged_delivered"] - part["late"]
    found = delivery.counts(
        expected, delivery.Tally(sent=part["sent"], requests=part["requests"],
                       reordered=part["reordered"]),
        delivery.Matched(unique=part["unique"], duplicated=part["duplicated"],
                         late=part["late"], lost_acknowledged=max(broken, 0)))
    figures: dict[str, int | None] = {name: found[name] for name in FaultDelivery.model_fields}
    if not acknowledged:
        figures["lost_acknowledged"] = None
    return FaultDelivery.model_validate(figures)


def _backlog(counts: IntervalCounts, timeline_of: Timeline, end_ns: int, width: int
             ) -> dict[str, float | int | None]:
    """The backlog from when the fault took effect on, above the pre-fault level, and how
    long after `end_ns` (from the measured start) it came back to that level (module doc:
    of the messages that arrived)."""
    backlog = np.cumsum(counts.counts["unique"]) - np.cumsum(counts.counts["received"])
    before = backlog[timeline_of.before[0]:timeline_of.before[1]]
    level = int(before.max()) if len(before) else 0
    rest = backlog[timeline_of.during[0]:timeline_of.run_end]
    if not len(rest):
        return {"backlog": None, "drained_s": None}
    peak = int(np.argmax(rest))
    built = max(int(rest[peak]) - level, 0)
    back = np.flatnonzero(rest[peak:] <= level)
    if not built or not len(back):
        return {"backlog": built, "drained_s": 0.0 if not built else None}
    done = (timeline_of.during[0] + peak + int(back[0]) + 1) * width
    return {"backlog": built, "drained_s": max(done - end_ns, 0) / 1e9}


def _dip(counts: IntervalCounts, timeline_of: Timeline, width: int
         ) -> dict[str, float | None]:
    """The lowest receive rate of an interval from the fault on, and the pre-fault mean."""
    received = counts.counts["received"]
    first, end = timeline_of.during[0], max(timeline_of.after[1], timeline_of.during[1])
    stretch = received[first:end]
    before = received[timeline_of.before[0]:timeline_of.before[1]]
    per_s = 1e9 / width
    lowest = int(np.argmin(stretch)) if len(stretch) else None
    return {"rate_before_msg_s": float(before.mean()) * per_s if len(before) else None,
            "dip_msg_s": float(stretch[lowest]) * per_s if lowest is not None else None,
            "dip_at_s": (first + lowest) * width / 1e9 if lowest is not None else None}


def _identity(record: FaultRecord) -> dict[str, object]:
    return {"index": record.index, "action": record.action, "target": record.target,
            "outcome": record.outcome, "at_s": record.at_ns / 1e9, "note": record.note}


def fault_figures(manifest: Manifest, counts: IntervalCounts | None, width: int,
                  expected: delivery.Expected) -> list[FaultFigures] | None:
    """Every fault's figures (None: the run has no faults)."""
    records = manifest.faults
    if not records:
        return None
    duration = manifest.workload.duration_ns
    if counts is None or manifest.started_at_ns is None or not duration:
        return [FaultFigures.model_validate(
            {**_identity(record), "note": "no figures: the run has no measured timeline"})
            for record in records]
    origin = manifest.started_at_ns + manifest.workload.warmup_ns
    acknowledged = delivery.acknowledged(manifest) is not None
    return [_one(records, index, origin, counts, width, duration, expected, acknowledged)
            for index in range(len(records))]


def _one(records: list[FaultRecord], index: int, origin: int, counts: IntervalCounts,
         width: int, duration: int, expected: delivery.Expected, acknowledged: bool
         ) -> FaultFigures:
    record = records[index]
    if record.effective_ns is None:
        return FaultFigures.model_validate(
            {**_identity(record), "note": record.note or "it never took effect"})
    stretches = timeline(records, index, origin, width, duration, len(counts.latency_max))
    end = _ended(record)
    end_ns = (end if end is not None else _struck(record)) - origin
    during = window_figures(counts, stretches.during, width)
    in_flight = min(stretches.before[1], stretches.during[0])
    accounted = window_delivery(counts, (in_flight, stretches.during[1]), expected,
                                acknowledged)
    band = band_ns(counts, stretches.before)
    back = (recovered_at(counts, stretches.since, max(stretches.after[1],
                                                       stretches.during[1]), band)
            if band is not None else None)
    notes = [] if band is not None else ["no timed message before it: no band, no recovery"]
    return FaultFigures.model_validate({
        **_identity(record),
        "effective_s": (record.effective_ns - origin) / 1e9,
        "end_s": (end - origin) / 1e9 if end is not None else None,
        "interval_ms": width / 1e6,
        "before": window_figures(counts, stretches.before, width), "during": during,
        "after": window_figures(counts, stretches.after, width),
        "max_in_window_us": during.max_us,
        "band_us": band / 1000 if band is not None else None,
        "recovered": None if band is None else back is not None,
        "recovered_s": max(back * width - end_ns, 0) / 1e9 if back is not None else None,
        **_dip(counts, stretches, width),
        **_backlog(counts, stretches, end_ns, width),
        "delivery": accounted,
        "note": "; ".join([*([record.note] if record.note else []), *notes]) or None})
