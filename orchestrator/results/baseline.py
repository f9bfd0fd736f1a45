"""`sixnines compare --baseline ROOT --last N RUN_B`: a reference that moves with the nights.

One fixed reference ages: the machine, the broker and the load drift, and a single night's
luck becomes the bar every later night is held to. Here the reference A is the last N
passing nights under ROOT, pooled.

The nights. Results directories under ROOT (orchestrator.results.catalog) of RUN_B's
scenario, analysed, every run ok (a night with a partial, failed or corrupt run speaks of
that night, not of the system's level), recorded no later than RUN_B (judging an old night
again sees what was known then), RUN_B itself excluded; the newest N of them.

Pooling. Runs are matched across the nights as `compare` matches A with B (system, load,
the parameters swept within a night), and their distributions add, as histograms do: each
night's latency (its report's .hgrm, else its summary's percentiles: compare.Tail) gives
the share of its samples above any value, and the pooled share above v is
Σ count·share(v) / Σ count over the nights, taken at every value any night's distribution
holds. The pooled percentiles are read off that and rest on all the nights' samples
together; the max is the largest night's, the mean the count-weighted mean.

The band. A pooled percentile rests on N times the samples, so sampling alone moves it
less; but nights differ by more than sampling (the machine's other load, placement and
cache luck, a broker's warm-up). So each percentile's band in A is its pooled sampling
band widened, on each side, to reach every night's own figure: at least
log(highest night / pooled) above and log(pooled / lowest night) below. B is then a
regression only beyond the range the nights spanned by more than the usual tolerance
(compare's rule: the bands in quadrature, at least --threshold and 5 µs). Figures a night
rests on too few samples for still widen the band; they never narrow it.

Throughput is the nights' mean send and receive rate, with compare's relative floor;
lost, unknown and duplicated are the most any night had; warnings are every night's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from sixnines.formats.hdr import PERCENTILE_KEYS
from sixnines.formats.load import latency_of
from sixnines.formats.status import OK
from sixnines.formats.summary import Figures, RunSummary
from sixnines.orchestrator.results.catalog import (
    Entry,
    entry_for,
    find_results_dirs,
    is_results_dir,
    recorded_at,
)
from sixnines.orchestrator.results.compare import (
    ACCOUNTING,
    RATES,
    CompareError,
    Side,
    Tail,
    load_side,
    run_key,
    swept_keys,
    tail_samples,
)


@dataclass
class PooledTail(Tail):
    """The pooled distribution of several nights: its sampling band widened to cover
    each night's own figure (`spread`: log ratios below and above, by percentile)."""
    spread: dict[str, tuple[float, float]] = field(default_factory=dict)

    def half_widths(self, key: str) -> tuple[float, float]:
        down, up = super().half_widths(key)
        below, above = self.spread.get(key, (0.0, 0.0))
        return max(down, below), max(up, above)


def load_baseline(root: Path, last: int, judged: Path) -> Side:
    """A: the last `last` passing nights under `root` before `judged`, pooled;
    CompareError when there is none."""
    nights = passing_nights(root, last, judged)
    sides = [load_side(night) for night in nights]
    swept = swept_keys(*(side.runs for side in sides))
    groups: dict[str, list[tuple[RunSummary, Tail]]] = {}
    for side in sides:  # newest first: a group's first run names the pooled one
        for run in side.runs:
            groups.setdefault(run_key(run, swept), []).append((run, side.tail(run)))
    runs: list[RunSummary] = []
    tails: dict[str | None, Tail] = {}
    for members in groups.values():
        run, tail = pool(members)
        if run.run_id in tails:  # the scenario changed between nights: keep both apart
            run = run.model_copy(update={"run_id": f"{run.run_id} #{len(runs)}"})
        runs.append(run)
        tails[run.run_id] = tail
    return Side(root, runs, single=False, tails=tails, nights=[str(n) for n in nights])


def passing_nights(root: Path, last: int, judged: Path) -> list[Path]:
    """The newest `last` nights under `root` the module docstring describes. Results
    directories are ordered by their names' stamps (catalog.recorded_at) and read newest
    first until `last` pass: a year of nights costs a directory listing, not a year of
    summaries."""
    if not root.is_dir():
        raise CompareError(f"{root}: no such directory")
    judged_entry = entry_for(judged) if is_results_dir(judged) else None
    dated = [(recorded_at(path), str(path), path) for path in find_results_dirs(root)]
    nights: list[Path] = []
    for when, _, path in sorted(dated, reverse=True):
        if len(nights) == last:
            break
        if _same(path, judged) or (judged_entry is not None and when > judged_entry.when):
            continue
        entry = entry_for(path)
        if _passing(entry) and (judged_entry is None or entry.scenario == judged_entry.scenario):
            nights.append(path)
    if not nights:
        scenario = f" of scenario {judged_entry.scenario}" if judged_entry else ""
        raise CompareError(f"{root}: no passing night{scenario} before {judged} (analysed, "
                           "every run ok): nothing to compare it with")
    return nights


def _passing(entry: Entry) -> bool:
    return entry.analysed and bool(entry.statuses) and set(entry.statuses) == {OK}


def _same(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()


def pool(members: list[tuple[RunSummary, Tail]]) -> tuple[RunSummary, PooledTail]:
    """One case's runs of several nights (newest first, each with its distribution) as
    one run: the pooled distribution, figures and band the module docstring describes."""
    newest = members[0][0]
    metric = latency_of(newest)[0]
    nights = [run.figures(metric) for run, _ in members]
    tail = _pooled_tail([tail for _, tail in members])
    figures = _pooled_figures(tail, nights)
    tail.spread = {key: _spread(figures.figure(key), nights, key) for key in PERCENTILE_KEYS}
    update = {metric: figures, "status": OK,
              "warnings": list(dict.fromkeys(w for run, _ in members for w in run.warnings))}
    update |= {name: _mean([getattr(run, name) for run, _ in members]) for name in RATES}
    update |= {name: _most([getattr(run, name) for run, _ in members]) for name in ACCOUNTING}
    return newest.model_copy(update=update), tail


def _pooled_tail(tails: list[Tail]) -> PooledTail:
    """Histograms add: the share above each value any night holds, weighted by counts."""
    tails = [tail for tail in tails if tail.count and tail.points]
    count = sum(tail.count for tail in tails)
    values = sorted({value for tail in tails for _, value in tail.points})
    shares = [sum(tail.count * tail.share_above(value) for tail in tails) / count
              for value in values]
    return PooledTail(count, list(zip(shares, values, strict=True)),
                      coarse=any(tail.coarse for tail in tails))


def _pooled_figures(tail: PooledTail, nights: list[Figures]) -> Figures:
    if not tail.count:
        return Figures()
    weighted = [(night.count, night.mean) for night in nights if night.mean is not None]
    counted = sum(count for count, _ in weighted)
    return Figures.model_validate({
        **{key: tail.value_at(tail_samples(key, tail.count) / tail.count)
           for key in PERCENTILE_KEYS},
        "max": _most([night.max for night in nights]),
        "mean": sum(count * mean for count, mean in weighted) / counted if counted else None,
        "count": tail.count})


def _spread(pooled: float | None, nights: list[Figures], key: str) -> tuple[float, float]:
    """How far below and above the pooled figure (log ratios) the nights' own lie."""
    values = [value for night in nights if (value := night.figure(key)) is not None
              and value > 0]
    if not pooled or not values:
        return 0.0, 0.0
    return max(0.0, math.log(pooled / min(values))), max(0.0, math.log(max(values) / pooled))


def _mean(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) / len(known) if known else None


def _most(values: list[float | None]) -> float | None:
    return max((value for value in values if value is not None), default=None)
