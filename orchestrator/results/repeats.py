"""A scenario's repeated cases (`repeat: N`): each case's repeats merged into one
distribution, and how far the repeats spread — summary.json's `repeats`.

Merging takes the path the analysis takes to merge a run's agents: each repeat's HDR
buckets (its report/histograms.json) are added (spark_jobs.histograms.Buckets.merged) and
the figures taken from the sum (spark_jobs.summarize.metric_summary), so the merged p99 is
the p99 of every message of every repeat — never an average of the repeats' p99s (docs/
design.md rule 5). The spread is the other half: per figure, the repeats' min, lower median
and max, and the band between them, the run-to-run noise one run cannot show and
`sixnines compare` then allows for.
"""

from __future__ import annotations

from pathlib import Path
from statistics import fmean

from sixnines.formats.document import Document
from sixnines.formats.layout import HISTOGRAMS_FILE, REPORT_DIR
from sixnines.formats.load import METRICS, run_load
from sixnines.formats.run_files import RefusedPath, file_under
from sixnines.formats.run_histograms import HistogramsRefused, read_histograms
from sixnines.formats.status import OK, worst
from sixnines.formats.summary import (
    RATES_SPREAD,
    LatencyPairs,
    RepeatedCase,
    RunSummary,
    Spread,
    Warmup,
)
from sixnines.formats.vocabulary import Metric
from sixnines.orchestrator.results.store import FIGURE_KEYS
from sixnines.spark_jobs.histograms import Buckets
from sixnines.spark_jobs.summarize import MetricCounts, metric_summary, out_of_range

COUNTS = ("sent", "received", "delivered", "lost", "unknown", "duplicated", "reordered",
          "unexpected")
RATES = ("send_rate", "receive_rate")
#: Each metric's figures' field in a summary, by the metric's name.
FIELDS = {metric.value: metric.summary_field for metric in Metric}


def repeated_cases(results_dir: Path, summaries: list[RunSummary]) -> list[RepeatedCase]:
    """Every case the runs repeat, in the order each first ran; none when no run is a
    repeat. A repeat is found by its summary's `repeat` (system and case), not its id."""
    cases: dict[tuple[str | None, str], list[RunSummary]] = {}
    for summary in summaries:
        if summary.repeat is not None:
            cases.setdefault((summary.system, summary.repeat.case), []).append(summary)
    return [_case(results_dir, system, case, runs) for (system, case), runs in cases.items()]


def case_id(system: str | None, case: str) -> str:
    """How a case is named where its repeats are one: "tcp-message_size=64"."""
    return "-".join(part for part in (system or "", case) if part)


def _case(results_dir: Path, system: str | None, case: str, runs: list[RunSummary]
          ) -> RepeatedCase:
    analysed = [run for run in runs if run.sent is not None]
    histograms, left_out = _histograms(results_dir, analysed)
    merged = _merged(case_id(system, case), runs, analysed, histograms)
    merged.notes = [f"{run_id}: not merged: {why}" for run_id, why in left_out]
    return RepeatedCase(system=system, case=case, runs=[run.run_id or "" for run in runs],
                        merged_from=[run.run_id or "" for run in analysed
                                     if run.run_id in histograms],
                        merged=merged, spread=_spread(analysed))


def _histograms(results_dir: Path, analysed: list[RunSummary]
                ) -> tuple[dict[str | None, dict], list[tuple[str | None, str]]]:
    """Each analysed repeat's histograms by run id, when its file holds the distribution
    its summary was taken from; the others with why they are left out."""
    found, left_out = {}, []
    for run in analysed:
        try:
            path = file_under(results_dir, run.run_id or "", REPORT_DIR, HISTOGRAMS_FILE)
            histograms = read_histograms(path)
        except FileNotFoundError:
            left_out.append((run.run_id, f"no {REPORT_DIR}/{HISTOGRAMS_FILE} (analysed "
                                         "before it was kept: `sixnines report` again)"))
            continue
        except (OSError, RefusedPath, HistogramsRefused) as error:
            left_out.append((run.run_id, str(error)))
            continue
        differing = [name for name, histogram in histograms.items()
                     if int(histogram["counts"].sum()) != _count(run, name)]
        if differing:
            left_out.append((run.run_id, f"its {HISTOGRAMS_FILE} does not hold the figures "
                                         f"of its summary ({', '.join(differing)})"))
            continue
        found[run.run_id] = histograms
    return found, left_out


def _count(run: RunSummary, metric: str) -> int | None:
    """The count of the run's figures of `metric` (None: no such metric)."""
    field = FIELDS.get(metric)
    return None if field is None else run.figures(field).count


def _merged(run_id: str, runs: list[RunSummary], analysed: list[RunSummary],
            histograms: dict[str | None, dict]) -> RunSummary:
    """The case as one run (formats.summary.RepeatedCase.merged), every field given so it
    is written whole, as an analysed run's summary is."""
    first = runs[0]
    merged = RunSummary(
        run_id=run_id, system=first.system, params=first.params, load=run_load(first),
        broker=first.broker, durability=first.durability,
        status=worst(*(run.status for run in runs)),
        problems=[f"{run.run_id}: {run.status}" for run in runs if run.status != OK])
    if analysed:
        for name in COUNTS:
            setattr(merged, name, sum(getattr(run, name) or 0 for run in analysed))
        for name in RATES:
            rates = [getattr(run, name) for run in analysed if getattr(run, name) is not None]
            setattr(merged, name, fmean(rates) if rates else None)
        merged.warmup = Warmup(**_summed([run.warmup for run in analysed]))
        merged.latency_pairs = LatencyPairs(**_summed([run.latency_pairs for run in analysed]))
        metrics: dict[str, MetricCounts] = {
            metric: Buckets.merged(parts).metric() for metric in Metric
            if (parts := [Buckets(**found[metric]) for found in histograms.values()
                          if metric in found])}
        for metric in Metric:
            setattr(merged, metric.summary_field,
                    metric_summary(metrics.get(metric) or MetricCounts()))
        merged.out_of_range = out_of_range(metrics)
    return RunSummary.model_validate(merged.model_dump(mode="json", by_alias=True))


def _summed(documents: list[Document]) -> dict[str, int]:
    """Each count field of `documents` (of one model) summed."""
    return {name: sum(getattr(document, name) for document in documents)
            for name in type(documents[0]).model_fields}


def _spread(analysed: list[RunSummary]) -> dict[str, dict[str, Spread]]:
    """Per figure, how the repeats' values spread: the latency metrics their load
    measures, and the rates."""
    if not analysed:
        return {}
    spread = {}
    for metric in METRICS[run_load(analysed[0])]:
        field = metric.summary_field
        spread[field] = _spread_of({key: [run.figures(field).figure(key) for run in analysed]
                                    for key in FIGURE_KEYS})
    spread[RATES_SPREAD] = _spread_of({name: [getattr(run, name) for run in analysed]
                                       for name in RATES})
    return spread


def _spread_of(values: dict[str, list[float | None]]) -> dict[str, Spread]:
    """Each key's Spread over the values it has (keys without one are left out)."""
    found = {}
    for key, given in values.items():
        present = sorted(value for value in given if value is not None)
        if not present:
            continue
        low, high = present[0], present[-1]
        found[key] = Spread(repeats=len(present), min=low,
                            median=present[(len(present) - 1) // 2], max=high,
                            band_pct=100 * (high / low - 1) if low > 0 else None)
    return found
