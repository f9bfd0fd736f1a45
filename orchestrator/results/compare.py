"""`sixnines compare RUN_A RUN_B`: what changed between two sets of results, and whether any
of it is a regression a nightly job should fail on.

Runs are matched by system and by the parameters swept in either set (run ids and stamps
differ between sets; a parameter that changed for every run is shown as a note, not used to
match). Two single run directories of one system and load are compared with each other,
whatever their run ids and parameters.

The regression rule. A latency figure differing between A and B is only news when the
difference is larger than the noise both measurements carry:

1. *Is it backed by enough samples?* A percentile p from n samples rests on the
   k = n·(1 − p) samples above it. With k < 10 in either run (fewer than 10/(1 − p)
   samples: p99.99 and beyond from 20,000 messages; the max, which nothing lies above,
   always) the figure is "not comparable": shown, never flagged.
2. *How far could sampling alone move it?* The count of samples above the percentile is
   Poisson-like: k ± √k. The percentile's band is what the run's own distribution holds
   at k ∓ 4√k samples above (the distribution-free confidence interval of a quantile,
   read off the run's report/latency.hgrm). A percentile on a steep stretch (a p99.9 at
   the knee where VM stalls start) gets a wide band, a flat median a narrow one. Without
   the .hgrm (a summary.json copied alone) the band is interpolated log-log between the
   summary's percentiles, whose decade spacing hides knees: the wider side is used both
   ways, times 1.5. Checked on synthetic stall mixtures, bimodal and power-law
   distributions at 2k, 20k and 200k samples: no false flag, either way, in 2,700 pairs of
   samples of one distribution (with the .hgrm or the ladder alone), while a doubled
   slow-path tail at 20k samples is caught at p99 in 3 pairs of 4 (1 of 2 with the
   ladder alone), and at 200k samples always.
3. *Tolerance.* For B above A: A's upper band and B's lower band (as log ratios) added in
   quadrature (the other two for B below A), but never less than the relative floor
   (`--threshold`, default 10%: the run-to-run variation sampling does not capture, from
   other load on the machine, cache and placement luck). A latency regression is B above A
   by more than the tolerance *and* by more than 5 µs (the absolute floor: 3 µs → 4 µs is
   scheduler jitter, not a slower system). The same the other way is "improved".

4. *Measured run-to-run noise.* Results of a scenario with `repeat: N` hold, per case, its
   repeats merged into one distribution and each figure's spread across them
   (orchestrator.results.repeats). Such a case is compared as one run, its merged figures,
   and the relative floor of each figure is then the noise the repeats measured instead of
   `--threshold`: the larger of A's and B's repeat-to-repeat bands (max / min − 1 of the
   repeats' figure), the most two runs of the same case on the same machine differed on
   it. A side without repeats lends none; with neither, `--threshold` stays the floor. A
   merged case has no .hgrm of its own, so its sampling band comes from its ladder (the
   wider rule above). Few repeats see little of the machine's drift: two repeats' band is
   a lower estimate of it, so a nightly job wants three or more.

5. *The same experiment.* Matched runs whose workload differs (message_size 1 KB → 4 KB, a
   rate, producers: a parameter changed for every run, so not used to match) measured
   different things: their figures are shown with the verdict "not the same experiment",
   never "improved" or "regression", and a note says what differs; their status and
   accounting are still checked (a lost message is lost in any experiment). So are runs
   measured with different durability (formats.durability: `acks=1` against `acks=all`,
   an fsync every second against none): their labels differ, and the note says so; a run
   recorded before durability was, against one with it, is compared with a note saying
   its durability is unknown. What only
   changes how long or how much is measured (MEASUREMENT_ONLY: duration, warm-up, drain,
   a message count, the seed) is a note alone. When no run matches at all (a RabbitMQ
   result against a NATS one; two run directories of different systems or loads), the
   results have nothing in common (`Comparison.nothing_in_common`): `compare` says so and
   exits 2, bad input, rather than reporting every run as missing.

Throughput (send_rate, receive_rate) is a count of thousands of messages over a fixed
duration: its sampling noise is small, so only the relative floor applies (the repeats'
band of the rate when measured); a drop beyond it is a regression. Also regressions: a
status getting worse (ok → partial → failed → corrupt, formats.status; a corrupt run's
files failed their checks, so it has no figure to compare), more messages lost, of unknown
fate (receivers that died) or duplicated than in A, and a run of A missing from B. Runs
only in B, a status getting better and new warnings are reported as notes.

B itself may be broken: no runs, a run failed or corrupt, or a run (or a repeat) unsteady
(`judged_run_broken`). It is still compared, but a nightly job must not read that as a
slower system: `compare` exits 3 instead of 1. A may also be the last passing nights
pooled (orchestrator.results.baseline), and the comparison written as JUnit checks
(orchestrator.results.compare_checks).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from sixnines.formats.errors import BadInput
from sixnines.formats.hgrm import MAX_HGRM_BYTES
from sixnines.formats.layout import MANIFEST_FILE, REPORT_DIR, SUMMARY_FILE, hgrm_file
from sixnines.formats.load import HEADLINE, LATENCY, latency_of, run_load
from sixnines.formats.run_files import RefusedPath, file_under, read_bounded
from sixnines.formats.status import FAILED, rank
from sixnines.formats.summary import RATES_SPREAD, Figures, ResultsSummary, RunSummary, Spread
from sixnines.formats.vocabulary import Metric
from sixnines.formats.wording import param_name, params_text, value_text
from sixnines.orchestrator.results.store import FIGURE_KEYS
from sixnines.orchestrator.results.summaries import read_results_summary, read_run_summary
from sixnines.orchestrator.terminal import markup

ABSOLUTE_FLOOR_US = 5.0
MIN_TAIL_SAMPLES = 10
SIGMAS = 4.0
LADDER_MARGIN = 1.5
LATENCY_FIELDS = {field: label for field, label in LATENCY.values()}
RATES = ("send_rate", "receive_rate")
ACCOUNTING = ("lost", "unknown", "duplicated")
#: Parameters that change how long or how much is measured, not what: a change is a note.
MEASUREMENT_ONLY = ("duration_ns", "warmup_ns", "drain_ns", "messages", "seed")
#: The verdict of every figure of a pair whose workload differs (rule 5).
NOT_SAME = "not the same experiment"


class CompareError(BadInput):
    """Bad input: a directory that is missing or holds no analysed results."""


def tail_samples(key: str, count: int) -> float:
    """How many samples lie above percentile `key` (none above the max)."""
    return 0.0 if key == "max" else count * (1 - float(key[1:]) / 100)


@dataclass
class Tail:
    """A run's latency distribution as points (tail fraction: the share of samples above
    the value, value µs): fine-grained from its latency.hgrm, else the summary's percentile
    ladder. It only serves to judge how far sampling noise can move a percentile."""
    count: int
    points: list[tuple[float, float]]
    coarse: bool = False  # the summary's ladder, not a .hgrm

    @classmethod
    def from_figures(cls, figures: Figures) -> Tail:
        count = figures.count
        floor = 1 / count if count else 1.0
        points = [(max(tail_samples(key, count) / count, floor) if count else 1.0,
                   figures.figure(key)) for key in FIGURE_KEYS]
        return cls(count, [(t, v) for t, v in points if v is not None and v > 0], coarse=True)

    @classmethod
    def from_hgrm(cls, path: Path) -> Tail | None:
        """The run's latency.hgrm; None when it is missing, not a regular file, larger than
        any HdrHistogram prints (MAX_HGRM_BYTES), damaged (not text) or holds no
        distribution: the summary's ladder then serves."""
        try:
            return cls.from_text(read_bounded(path, MAX_HGRM_BYTES).decode("utf-8"))
        except (OSError, ValueError):  # RefusedPath and UnicodeDecodeError among them
            return None

    @classmethod
    def from_text(cls, text: str) -> Tail | None:
        """The percentile distribution HdrHistogram prints: value, percentile, total count,
        1/(1 − percentile), one line each, around header and footer lines."""
        rows = []
        for line in text.splitlines():
            fields = line.split()
            with contextlib.suppress(ValueError, IndexError, OverflowError):
                value = float(fields[0])
                if math.isfinite(value):
                    rows.append((value, int(float(fields[2]))))
        if not rows or rows[-1][1] <= 0:
            return None
        count = rows[-1][1]
        return cls(count, [(max(count - total, 1) / count, value) for value, total in rows
                           if value > 0])

    def value_at(self, tail: float) -> float | None:
        """The value with a share `tail` of the samples above it, interpolated log-log
        between the points (straight lines there for a power-law tail)."""
        xs, ys = self._log_log
        if not xs:
            return None
        return float(np.exp(np.interp(math.log(tail), xs, ys)))

    @cached_property
    def _log_log(self) -> tuple[list[float], list[float]]:
        """The points as (log tail fraction, log value), the highest value of each tail
        fraction, in order: computed once, however many percentiles are read off them."""
        highest: dict[float, float] = {}
        for t, value in self.points:
            highest[math.log(t)] = max(value, highest.get(math.log(t), 0.0))
        xs = sorted(highest)
        return xs, [math.log(highest[x]) for x in xs]

    def share_above(self, value: float) -> float:
        """The share of the samples above `value`: value_at's inverse, interpolated
        log-log between the points and held at the first and last beyond them (a tail
        with points)."""
        lowest: dict[float, float] = {}
        for t, point in self.points:
            lowest[math.log(point)] = min(t, lowest.get(math.log(point), 1.0))
        xs = sorted(lowest)
        return float(np.exp(np.interp(math.log(value), xs, [math.log(lowest[x]) for x in xs])))

    def half_widths(self, key: str) -> tuple[float, float]:
        """How far below and above (log ratios) the percentile would sit had SIGMAS
        standard deviations more or fewer samples (Poisson: √k of k) fallen above it.

        The ladder's points lie a decade apart: a knee between two of them (the share of
        messages hit by VM stalls) is invisible there, so a coarse tail takes the wider
        side for both and widens it by LADDER_MARGIN (in synthetic stall mixtures that
        kept two samples of one distribution from differing beyond it)."""
        above = tail_samples(key, self.count)
        tail, spread = above / self.count, SIGMAS / math.sqrt(above)
        centre = self.value_at(tail)
        lower = self.value_at(min(tail * (1 + spread), 1.0))
        upper = self.value_at(max(tail * (1 - spread), 1 / self.count))
        if not (centre and lower and upper):
            return 0.0, 0.0
        down, up = math.log(centre / lower), math.log(upper / centre)
        if self.coarse:
            down = up = LADDER_MARGIN * max(down, up)
        return down, up


#: A run's measured spread: summary field (or RATES_SPREAD) → figure → Spread.
Spreads = dict[str, dict[str, Spread]]


@dataclass
class Side:
    """One argument of `compare`: where it is, its runs' summaries (a repeated case as its
    merged run), and whether it was a single run directory."""
    path: Path
    runs: list[RunSummary]
    single: bool
    tails: dict[str | None, Tail] = field(default_factory=dict)  # by run id, from .hgrm files
    spreads: dict[str | None, Spreads] = field(default_factory=dict)  # by merged run id
    nights: list[str] = field(default_factory=list)  # the nights pooled into it (baseline)
    repeats: list[RunSummary] = field(default_factory=list)  # a repeated case's, one by one

    def tail(self, run: RunSummary) -> Tail:
        return run_tail(run, self.tails)


def run_tail(run: RunSummary, tails: dict[str | None, Tail]) -> Tail:
    """The run's fine-grained distribution (from `tails`, by run id: `hgrm_tails`) when its
    .hgrm holds the same samples as its summary, else the summary's ladder."""
    figures = run.metric(latency_of(run)[0])
    tail = tails.get(run.run_id)
    if tail is not None and figures is not None and tail.count == figures.count:
        return tail
    return Tail.from_figures(figures or Figures())


#: Where a figure's relative floor came from: the repeats' measured spread, or --threshold.
REPEATS, THRESHOLD = "repeats", "threshold"


@dataclass
class ComparedFigure:
    metric: str  # "latency_us", "saturation_latency_us" or the rate's name
    key: str  # p50 … max, or the rate's name
    a: float | None
    b: float | None
    change_pct: float | None
    tolerance_pct: float | None
    verdict: str  # same, regression, improved, not comparable
    floor_pct: float | None = None  # the run-to-run floor of the tolerance
    floor_from: str = THRESHOLD  # REPEATS or THRESHOLD


@dataclass
class Pair:
    system: str | None
    match: dict  # the parameters the runs were matched on
    run_a: str | None
    run_b: str | None
    status_a: str | None
    status_b: str | None
    figures: list[ComparedFigure] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # the regressions, in words
    notes: list[str] = field(default_factory=list)
    differs: list[str] = field(default_factory=list)  # what makes it another experiment
    durability_a: str | None = None  # the runs' durability labels (None: not recorded)
    durability_b: str | None = None

    @property
    def same_experiment(self) -> bool:
        return not self.differs

    @property
    def regression(self) -> bool:
        return bool(self.findings)


@dataclass
class Comparison:
    a: str
    b: str
    threshold_pct: float
    pairs: list[Pair]
    only_in_a: list[dict[str, Any]]
    only_in_b: list[dict[str, Any]]
    baseline_nights: list[str] = field(default_factory=list)  # A pooled from these nights

    @property
    def regression(self) -> bool:
        """A regressed pair, or a run of A that B no longer has (coverage lost)."""
        return bool(self.only_in_a) or any(pair.regression for pair in self.pairs)

    def nothing_in_common(self) -> str | None:
        """Why A and B cannot be compared at all (rule 5): no run of B matches one of A;
        None when some run does."""
        if self.pairs:
            return None
        return (f"no run of B matches one of A (by system, load and swept parameters): A "
                f"holds {_systems(self.only_in_a)}, B {_systems(self.only_in_b)}")

    def as_json(self) -> dict:
        pairs = [{**asdict(pair), "regression": pair.regression,
                  "same_experiment": pair.same_experiment} for pair in self.pairs]
        baseline = {"baseline_nights": self.baseline_nights} if self.baseline_nights else {}
        return {"a": self.a, "b": self.b, **baseline, "threshold_pct": self.threshold_pct,
                "absolute_floor_us": ABSOLUTE_FLOOR_US, "regression": self.regression,
                "pairs": pairs, "only_in_a": self.only_in_a, "only_in_b": self.only_in_b}


def load_side(path: Path) -> Side:
    """The runs of a results directory (its summary.json) or of one run directory (its
    report/summary.json); CompareError, with what to do, when there is none."""
    if not path.is_dir():
        raise CompareError(f"{path}: no such directory")
    if (results := _summary_under(path, SUMMARY_FILE)).is_file():
        summary = read_results_summary(results)
        runs = compared_runs(summary)
        return Side(path, runs, single=False, tails=hgrm_tails(path, runs, in_run_folders=True),
                    spreads={case.merged.run_id: case.spread for case in summary.repeats},
                    repeats=[run for run in summary.runs if run.repeat is not None])
    if (run := _summary_under(path, REPORT_DIR, SUMMARY_FILE)).is_file():
        one = read_run_summary(run)
        return Side(path, [one], single=True, tails=hgrm_tails(path, [one], in_run_folders=False))
    recorded = (path / MANIFEST_FILE).is_file() or any(
        (child / MANIFEST_FILE).is_file() for child in path.iterdir() if child.is_dir())
    hint = (f"recorded but not analysed: run `sixnines report {path}` first" if recorded
            else "not a results directory (runs/<scenario>/<stamp>/) nor a run directory")
    raise CompareError(f"{path}: no {SUMMARY_FILE}; {hint}")


def compared_runs(summary: ResultsSummary) -> list[RunSummary]:
    """The runs of a results summary as compared: each repeated case as its merged run
    (its repeats not one by one), then the runs of no repeated case."""
    return [*(case.merged for case in summary.repeats),
            *(run for run in summary.runs if run.repeat is None)]


def _summary_under(path: Path, *names: str) -> Path:
    """A summary.json of the directory given; CompareError when it is a link leading out
    of that directory (formats.run_files.file_under), which is not read."""
    try:
        return file_under(path, *names)
    except RefusedPath as refused:
        raise CompareError(str(refused)) from None


def hgrm_tails(root: Path, runs: list[RunSummary], in_run_folders: bool
           ) -> dict[str | None, Tail]:
    """Each run's distribution from the .hgrm of its latency (saturation latency in
    throughput mode), by run id: `root`/<run id>/report/ of a results directory, or
    `root`/report/ of one run directory. A run id is a name from a file, so it is taken
    only as a plain name, and only what stays inside `root` is read
    (formats.run_files.file_under)."""
    tails = {}
    for run in runs:
        names = (REPORT_DIR, hgrm_name(run))
        try:
            path = file_under(root, *((run.run_id or "", *names) if in_run_folders else names))
        except RefusedPath:
            continue
        if (tail := Tail.from_hgrm(path)) is not None:
            tails[run.run_id] = tail
    return tails


def swept_keys(*sides: list[RunSummary]) -> list[str]:
    """The parameters that vary between the runs of either side: what tells runs apart."""
    swept = set()
    for runs in sides:
        names = {name for run in runs for name in run.params}
        swept |= {name for name in names
                  if len({_canonical(run.params.get(name)) for run in runs}) > 1}
    return sorted(swept)


def hgrm_name(run: RunSummary) -> str:
    """latency.hgrm, or saturation_latency.hgrm for a throughput-mode run."""
    return hgrm_file(HEADLINE[run_load(run)])


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True)


def run_key(run: RunSummary, swept: list[str]) -> str:
    """What makes two runs the same case: one system, one load, the same values of the
    `swept` parameters."""
    return _canonical([run.system, run_load(run), {name: run.params.get(name) for name in swept}])


def match_runs(a: list[RunSummary], b: list[RunSummary], swept: list[str]
               ) -> tuple[list[tuple[RunSummary, RunSummary]], list[RunSummary],
                          list[RunSummary]]:
    """Pairs of runs with one system, one load (saturation latency is never compared with
    open-loop latency) and the same values of the `swept` parameters, and the runs left on
    each side. Runs sharing a key on one side pair up in order."""
    waiting: dict[str, list[RunSummary]] = {}
    for run in b:
        waiting.setdefault(run_key(run, swept), []).append(run)
    pairs, only_a = [], []
    for run in a:
        candidates = waiting.get(run_key(run, swept))
        if candidates:
            pairs.append((run, candidates.pop(0)))
        else:
            only_a.append(run)
    only_b = [run for runs in waiting.values() for run in runs]
    return pairs, only_a, only_b


def run_to_run_floor(threshold_pct: float, spreads: tuple[Spread | None, Spread | None]
                     ) -> tuple[float, str]:
    """The relative floor of a figure's tolerance (%) and where it came from: the larger
    of the two sides' measured repeat-to-repeat bands when either has one (rule 4 of the
    module docstring), else `threshold_pct`."""
    measured = [spread.band_pct for spread in spreads
                if spread is not None and spread.band_pct is not None and spread.repeats > 1]
    return (max(measured), REPEATS) if measured else (threshold_pct, THRESHOLD)


def latency_figure(a: Figures, b: Figures, key: str, threshold_pct: float,
                   tails: tuple[Tail, Tail] | None = None,
                   metric: str = Metric.LATENCY.summary_field,
                   spreads: tuple[Spread | None, Spread | None] = (None, None)) -> ComparedFigure:
    """One percentile of A and B (of `metric`) judged by the rule in the module docstring;
    `tails` (of A and B) default to the summaries' ladders, `spreads` (A's and B's
    repeats' spread of this figure) to none measured."""
    value_a, value_b = a.figure(key), b.figure(key)
    floor_pct, source = run_to_run_floor(threshold_pct, spreads)
    if value_a is None or value_b is None or value_a <= 0 or value_b <= 0 or \
            min(tail_samples(key, a.count), tail_samples(key, b.count)) < MIN_TAIL_SAMPLES:
        return ComparedFigure(metric, key, value_a, value_b, _change(value_a, value_b), None,
                              "not comparable", floor_pct, source)
    tail_a, tail_b = tails or (Tail.from_figures(a), Tail.from_figures(b))
    (down_a, up_a), (down_b, up_b) = tail_a.half_widths(key), tail_b.half_widths(key)
    shift = math.log(value_b / value_a)
    # B above A: A could have been higher, B lower; the other way round for B below A
    noise = math.hypot(up_a, down_b) if shift >= 0 else math.hypot(down_a, up_b)
    tolerance = max(math.log1p(floor_pct / 100), noise)
    verdict = "same"
    if abs(shift) > tolerance and abs(value_b - value_a) > ABSOLUTE_FLOOR_US:
        verdict = "regression" if shift > 0 else "improved"
    return ComparedFigure(metric, key, value_a, value_b, _change(value_a, value_b),
                  100 * math.expm1(tolerance), verdict, floor_pct, source)


def rate_figure(a: RunSummary, b: RunSummary, key: str, threshold_pct: float,
                spreads: tuple[Spread | None, Spread | None] = (None, None)) -> ComparedFigure:
    """A throughput figure (send_rate or receive_rate) of two runs."""
    return rate_change(getattr(a, key), getattr(b, key), key, threshold_pct, spreads)


def rate_change(value_a: float | None, value_b: float | None, key: str, threshold_pct: float,
                spreads: tuple[Spread | None, Spread | None] = (None, None), *,
                higher_is_better: bool = True) -> ComparedFigure:
    """A throughput figure from A to B: a drop beyond the relative floor (the repeats' band
    of the rate when measured) is a regression; for a time (`higher_is_better` false), a
    rise beyond it."""
    floor_pct, source = run_to_run_floor(threshold_pct, spreads)
    change = _change(value_a, value_b)
    if change is None:
        return ComparedFigure(key, key, value_a, value_b, None, None, "not comparable", floor_pct,
                      source)
    verdict = "same"
    if abs(change) > floor_pct:
        verdict = "regression" if (change < 0) == higher_is_better else "improved"
    return ComparedFigure(key, key, value_a, value_b, change, floor_pct, verdict, floor_pct, source)


def _change(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or a <= 0 else 100 * (b - a) / a


def compare_pair(a: RunSummary, b: RunSummary, swept: list[str], threshold_pct: float,
                 tails: tuple[Tail, Tail] | None = None,
                 spreads: tuple[Spreads, Spreads] = ({}, {})) -> Pair:
    """A and B figure by figure; `spreads`: each side's repeats' spread, when a repeated
    case's merged run."""
    pair = Pair(a.system, {name: a.params.get(name) for name in swept}, a.run_id, b.run_id,
                a.status, b.status, durability_a=_durability(a), durability_b=_durability(b))
    metric = latency_of(a)[0]  # matched runs share their load

    def spread(group: str, key: str) -> tuple[Spread | None, Spread | None]:
        return spreads[0].get(group, {}).get(key), spreads[1].get(group, {}).get(key)

    latency_a, latency_b = a.figures(metric), b.figures(metric)
    pair.figures = [latency_figure(latency_a, latency_b, key, threshold_pct, tails, metric,
                                   spread(metric, key)) for key in FIGURE_KEYS]
    pair.figures += [rate_figure(a, b, key, threshold_pct, spread(RATES_SPREAD, key))
                     for key in RATES]
    pair.figures += step_figures(a, b, threshold_pct)
    pair.figures += backlog_figures(a, b, threshold_pct)
    pair.differs = _differences(a, b)
    if pair.differs:  # rule 5: shown, not judged
        pair.figures = [replace(figure, verdict=NOT_SAME) for figure in pair.figures]
    pair.findings = [*_status_findings(pair), *_accounting_findings(a, b),
                     *([] if pair.differs else _backlog_findings(a, b)),
                     *(_figure_finding(f) for f in pair.figures if f.verdict == "regression")]
    pair.notes = _notes(a, b, pair)
    return pair


#: The latency percentiles compared step by step (their tails rest on each step's samples).
STEP_KEYS = ("p50", "p99", "p99.9")


def same_steps(a: RunSummary, b: RunSummary) -> bool:
    """Whether both runs followed the same steps (rates and lengths alike)."""
    def steps(run: RunSummary) -> list[tuple[float, float, float]]:
        return [(step.rate, step.start_s, step.duration_s) for step in run.steps or []]
    return bool(a.steps) and steps(a) == steps(b)


def step_figures(a: RunSummary, b: RunSummary, threshold_pct: float) -> list[ComparedFigure]:
    """Runs of the same steps, step by step: each step's latency percentiles (by the rule
    in the module docstring, on the step's own samples) and its receive rate; none for
    other runs (`_notes` says so when a side has steps)."""
    if not same_steps(a, b):
        return []
    found = []
    for number, (step_a, step_b) in enumerate(zip(a.steps or [], b.steps or [], strict=True),
                                              start=1):
        where = f" at step {number}"
        found += [replace(latency_figure(step_a.latency_us, step_b.latency_us, key,
                                         threshold_pct), key=key + where) for key in STEP_KEYS]
        found.append(rate_change(step_a.receive_rate, step_b.receive_rate,
                                 f"receive_rate{where}", threshold_pct))
    return found


#: A backlog's figures as compared (their names in the table, the JSON and JUnit).
DRAIN_RATE, DRAIN_TIME = "backlog drain rate", "backlog time to drain"
#: The finding of a backlog that drained in A and not in B (its first words).
NOT_DRAINED = "backlog drained"


def backlog_figures(a: RunSummary, b: RunSummary, threshold_pct: float
                    ) -> list[ComparedFigure]:
    """Runs that both built a backlog: the rate its consumers drained it at (a drop beyond
    the relative floor is a regression) and the time it took them (a rise beyond it is);
    a side that never drained has no time, so that figure is not comparable and
    `_backlog_findings` judges it. None for other runs; runs of other backlogs are not the
    same experiment (their params differ), so these are shown, not judged."""
    if a.backlog is None or b.backlog is None:
        return []
    return [rate_change(a.backlog.drain_rate, b.backlog.drain_rate, DRAIN_RATE, threshold_pct),
            rate_change(a.backlog.drained_in_s, b.backlog.drained_in_s, DRAIN_TIME,
                        threshold_pct, higher_is_better=False)]


def _backlog_findings(a: RunSummary, b: RunSummary) -> list[str]:
    """A backlog A drained within its bound and B did not: the verdict itself got worse,
    whatever the rates say."""
    if a.backlog is None or b.backlog is None or not a.backlog.drained or b.backlog.drained:
        return []
    return [f"{NOT_DRAINED} in {_seconds(a.backlog.drained_in_s)} s → not within "
            f"{b.backlog.drain_within_s:g} s ({b.backlog.verdict})"]


def _status_findings(pair: Pair) -> list[str]:
    if rank(pair.status_b) > rank(pair.status_a):
        return [f"status {pair.status_a} → {pair.status_b}"]
    return []


def _accounting_findings(a: RunSummary, b: RunSummary) -> list[str]:
    """More messages lost, unknown or duplicated: every message must be accounted for, so
    no tolerance."""
    counts = [(name, getattr(a, name) or 0, getattr(b, name) or 0) for name in ACCOUNTING]
    return [f"{name} {in_a:,} → {in_b:,}" for name, in_a, in_b in counts if in_b > in_a]


def label(figure: ComparedFigure) -> str:
    """'latency p99', 'saturation latency p99' or the rate's name."""
    latency = LATENCY_FIELDS.get(figure.metric)
    return f"{latency} {figure.key}" if latency else figure.key


def unit(figure: ComparedFigure) -> str:
    if figure.metric in LATENCY_FIELDS:
        return "µs"
    return "s" if figure.metric == DRAIN_TIME else "msg/s"


def finding_of(pair: Pair, check: str) -> str | None:
    """The pair's finding about `check` ("status", "lost", "unknown", "duplicated",
    NOT_DRAINED: the words each finding starts with), None when that check passed."""
    return next((finding for finding in pair.findings if finding.startswith(f"{check} ")),
                None)


def _figure_finding(figure: ComparedFigure) -> str:
    name = label(figure)
    return (f"{name} {_figure_value(figure, figure.a)} → {_figure_value(figure, figure.b)} "
            f"({figure.change_pct:+.1f}%, tolerance {figure.tolerance_pct:.0f}%)")


def _changes(a: RunSummary, b: RunSummary, *, experiment: bool) -> list[str]:
    """The parameters that differ between the runs, in words ("message_size 1 KB → 4 KB"):
    those of the workload (`experiment`), or the MEASUREMENT_ONLY ones."""
    params_a, params_b = a.params, b.params
    return [
        f"{param_name(name)} {_said(name, params_a.get(name))} → "
        f"{_said(name, params_b.get(name))}"
        for name in sorted({*params_a, *params_b})
        if (name not in MEASUREMENT_ONLY) == experiment
        and _canonical(params_a.get(name)) != _canonical(params_b.get(name))]


def _differences(a: RunSummary, b: RunSummary) -> list[str]:
    """What makes B's run another experiment than A's (rule 5): its workload, or its
    durability when both runs recorded it; none: the same one."""
    labels = _durability(a), _durability(b)
    durability = [f"durability {labels[0]} → {labels[1]}"] \
        if None not in labels and labels[0] != labels[1] else []
    return [*_changes(a, b, experiment=True), *durability]


def _durability(run: RunSummary) -> str | None:
    return run.durability.label if run.durability is not None else None


def _unknown_durability(pair: Pair) -> list[str]:
    """A note when one run recorded its durability and the other did not: whether they
    measured the same thing cannot be told."""
    if (pair.durability_a is None) == (pair.durability_b is None):
        return []
    side, known = ("A", pair.durability_b) if pair.durability_a is None \
        else ("B", pair.durability_a)
    return [f"durability unknown in {side} (recorded without it), {known} in the other: "
            "whether they measured the same durability cannot be told"]


def _said(name: str, value: object) -> str:
    return "unset" if value is None else value_text(name, value)


def _notes(a: RunSummary, b: RunSummary, pair: Pair) -> list[str]:
    """What a reader should know but a nightly job should not fail on."""
    notes = []
    if rank(pair.status_b) < rank(pair.status_a):
        notes.append(f"status {pair.status_a} → {pair.status_b}")
    if pair.differs:
        notes.append(f"{NOT_SAME}: {'; '.join(pair.differs)}: figures shown, not judged")
    notes += _changes(a, b, experiment=False)
    notes += _unknown_durability(pair)
    if (a.steps or b.steps) and not same_steps(a, b):
        notes.append("per-step figures not compared: the runs did not follow the same steps")
    if a.backlog is not None and b.backlog is not None and not a.backlog.drained \
            and b.backlog.drained:
        notes.append(f"{NOT_DRAINED} in B ({_seconds(b.backlog.drained_in_s)} s), not in A "
                     f"within {a.backlog.drain_within_s:g} s")
    known = {_kind(warning) for warning in a.warnings}
    notes += [f"new warning: {warning}" for warning in b.warnings
              if _kind(warning) not in known]
    return notes


def _kind(warning: str) -> str:
    """What a warning is about, without its figures ("generator saturated: send lag p99 is
    4,020 µs …" → "generator saturated"): the same warning with other figures is not new."""
    return warning.split(":", 1)[0]


def compare(a: Side, b: Side, threshold_pct: float) -> Comparison:
    """Every run of A against its match in B."""
    swept = swept_keys(a.runs, b.runs)
    if a.single and b.single and run_load(a.runs[0]) == run_load(b.runs[0]) and \
            a.runs[0].system == b.runs[0].system:
        pairs: list[tuple[RunSummary, RunSummary]] = list(zip(a.runs, b.runs, strict=True))
        only_a: list[RunSummary] = []
        only_b: list[RunSummary] = []
    else:
        pairs, only_a, only_b = match_runs(a.runs, b.runs, swept)
    return Comparison(str(a.path), str(b.path), threshold_pct,
                      [compare_pair(run_a, run_b, swept, threshold_pct,
                                    (a.tail(run_a), b.tail(run_b)),
                                    (a.spreads.get(run_a.run_id, {}),
                                     b.spreads.get(run_b.run_id, {})))
                       for run_a, run_b in pairs],
                      [_identity(run) for run in only_a], [_identity(run) for run in only_b],
                      a.nights)


#: Runs listed by name in `judged_run_broken`'s reason; the rest are counted.
MAX_NAMED = 5


def judged_run_broken(runs: list[RunSummary], repeats: Sequence[RunSummary] = ()
                      ) -> str | None:
    """Why the results being judged cannot be judged, None when they can: they hold no
    runs, or a run failed (it recorded nothing to measure) or is corrupt (its files failed
    their checks; an unknown status counts as failed, formats.status), or a run — or a
    repeat of a case compared merged (`repeats`) — was unsteady (its own seconds' p99
    disagreed: formats.summary.Steadiness; its figures stand for no steady state).
    `compare` then exits 3 whatever else it found: a broken night is not a slower
    system."""
    if not runs:
        return "it holds no runs"
    broken = [run for run in runs if rank(run.status) >= rank(FAILED)]
    if broken:
        return _named([f"{run.run_id} ({run.status})" for run in broken], len(runs),
                      "failed or corrupt")
    each = [*runs, *repeats]
    unsteady = [str(run.run_id) for run in each
                if run.steadiness is not None and run.steadiness.unsteady]
    if unsteady:
        return _named(unsteady, len(each), "unsteady (each one's seconds disagreed on p99)")
    return None


def _named(names: list[str], of: int, what: str) -> str:
    """'2 of 6 run(s) WHAT: a, b', naming at most MAX_NAMED."""
    listed = ", ".join(names[:MAX_NAMED])
    more = f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
    return f"{len(names)} of {of} run(s) {what}: {listed}{more}"


def _identity(run: RunSummary) -> dict[str, Any]:
    """A run in the comparison's JSON (`only_in_a`, `only_in_b`)."""
    return {"run_id": run.run_id, "system": run.system, "params": run.params,
            "status": run.status}


def _seconds(value: float | None) -> str:
    """A time in seconds to 3 significant digits (a drain of 0.0123 s is not 0.0)."""
    return "-" if value is None else f"{value:.3g}"


def _figure_value(figure: ComparedFigure, value: float | None) -> str:
    return _seconds(value) if unit(figure) == "s" else _number(value)


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if abs(value) < 10_000 else f"{value:,.0f}"


VERDICT_STYLE = {"regression": "bold red", "improved": "green", "not comparable": "dim",
                 NOT_SAME: "yellow"}


def pair_table(pair: Pair) -> Table:
    """One matched run: A, B, change and tolerance for every latency percentile and rate."""
    matched = markup(params_text(pair.match, separator="  "))
    colour = "red" if pair.regression else "green"
    table = Table(title=f"{markup(_system(pair))}  {matched}\n"
                        f"A {markup(pair.run_a)} ({markup(pair.status_a)})   "
                        f"B {markup(pair.run_b)} ({markup(pair.status_b)})   [{colour}]"
                        f"{'REGRESSION' if pair.regression else 'no regression'}[/]",
                  title_justify="left")
    for header in ("", "A", "B", "change", "tolerance", ""):
        table.add_column(header, justify="left" if header == "" else "right")
    for figure in pair.figures:
        name = f"{label(figure)} {unit(figure)}"
        change = "-" if figure.change_pct is None else f"{figure.change_pct:+.1f}%"
        tolerance = "-" if figure.tolerance_pct is None else f"{figure.tolerance_pct:.0f}%"
        style = VERDICT_STYLE.get(figure.verdict, "")
        verdict = "" if figure.verdict == "same" else f"[{style}]{figure.verdict}[/]"
        table.add_row(name, _figure_value(figure, figure.a), _figure_value(figure, figure.b),
                      change, tolerance, verdict)
    captions = []
    if any(figure.verdict == "not comparable" for figure in pair.figures):
        captions.append(f"not comparable: fewer than {MIN_TAIL_SAMPLES}/(1-p) samples behind "
                        "the figure in A or B; shown, never flagged")
    if any(figure.floor_from == REPEATS for figure in pair.figures):
        captions.append("tolerance at least the run-to-run band the repeats measured (max/min "
                        "- 1 of their figure, the larger of A's and B's), not --threshold")
    if captions:
        table.caption = "\n".join(captions)
        table.caption_justify = "left"
    return table


def _system(pair: Pair) -> str:
    """The pair's system with its durability: "kafka (acks=all, rf=1)", both sides' labels
    when they differ ("kafka (A acks=1, rf=1; B acks=all, rf=1)")."""
    a, b = pair.durability_a, pair.durability_b
    if a == b:
        return f"{pair.system} ({a})" if a is not None else str(pair.system)
    return f"{pair.system} (A {a or 'durability unknown'}; B {b or 'durability unknown'})"


def _name(run: dict) -> str:
    return f"{run['run_id']} ({run['system']})"


def _systems(runs: list[dict[str, Any]]) -> str:
    """The systems of runs (`only_in_a`, `only_in_b`), each once: "rabbitmq, nats"."""
    names = list(dict.fromkeys(str(run["system"]) for run in runs))
    return ", ".join(names) if names else "no runs"


def print_comparison(comparison: Comparison, console: Console) -> None:
    if comparison.baseline_nights:
        console.print(f"A: {markup(comparison.a)}, pooled from the last "
                      f"{len(comparison.baseline_nights)} passing night(s): "
                      f"{markup(', '.join(comparison.baseline_nights))}", highlight=False,
                      soft_wrap=True)  # paths to copy, whole
    for pair in comparison.pairs:
        console.print(pair_table(pair))
        for finding in pair.findings:
            console.print(f"  [bold red]✗ {markup(finding)}[/]", highlight=False)
        for note in pair.notes:
            console.print(f"  [yellow]! {markup(note)}[/]", highlight=False)
    for run in comparison.only_in_a:
        console.print(f"[bold red]✗ only in A: {markup(_name(run))}[/]",
                      highlight=False)
    for run in comparison.only_in_b:
        console.print(f"[yellow]! only in B: {markup(_name(run))}[/]",
                      highlight=False)
    regressed = sum(pair.regression for pair in comparison.pairs)
    other = sum(not pair.same_experiment for pair in comparison.pairs)
    verdict = "[bold red]regression[/]" if comparison.regression else "[green]no regression[/]"
    console.print(f"{len(comparison.pairs)} run(s) compared, {regressed} regressed, "
                  + (f"{other} not the same experiment, " if other else "") +
                  f"{len(comparison.only_in_a)} only in A, {len(comparison.only_in_b)} only "
                  f"in B: {verdict} (threshold {comparison.threshold_pct:g}%, floor "
                  f"{ABSOLUTE_FLOOR_US:g} µs)", highlight=False)
