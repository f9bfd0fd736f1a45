"""A run's analysis kept up to date while the run goes (docs/design.md, "Analysis while
the run goes"): each agent's chunks are folded into both per-agent passes as they close
(agent_pass.FirstFold, SecondFold), so at the run's end only its last chunks are left to
read, and the figures are those the whole analysis (run_merge.figures) gives of the same
files.

Both passes are folds over an agent's batches in file order. What the second needs of
the whole run is made incremental:
- the curves' axes are the planned ones (run_merge.planned), known before any record;
- a receipt of a message not yet known sent waits (delivery_pass.Matching, pending) until
  the sends known grow, and is unexpected only once they are final;
- the exact median counts the values of a spread around the median known so far
  (`spread`), in stretches: a new stretch of an agent's files starts with a new spread
  when the median moves out of the last, and at the end only the stretches whose spread
  missed the final median's bucket are read again for it.
A run without planned axes, or whose analysis context changed by its end (an agent died
or cut its records short, a clock was measured again), is not followed: `finish` says so
and the caller analyses it whole.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from sixnines.spark_jobs import histograms, run_merge
from sixnines.spark_jobs.agent_pass import FirstFold, FirstPass, RunPlan, SecondFold, SecondPass
from sixnines.spark_jobs.agent_rows import AgentFiles, batches
from sixnines.spark_jobs.summarize import MetricCounts, read_log

#: The spread counted exactly around the median known so far: a quarter of its value
#: either side, at least SPREAD_MIN_NS (a send lag's median of 0.5 µs moves by more than a
#: quarter), at most SPREAD_MAX_NS wide in all. Reading an agent again costs far more than
#: counting a wider spread as it goes.
SPREAD_SHIFT = 2
SPREAD_MIN_NS = 1 << 16
SPREAD_MAX_NS = 1 << 22

log = logging.getLogger(__name__)


def spread(metrics: dict[str, MetricCounts]) -> dict[str, tuple[int, int]]:
    """Each metric's values counted exactly while the run goes: its median bucket so far
    (run_merge.medians), widened."""
    widened = {}
    for name, (low, high) in run_merge.medians(metrics).items():
        margin = min(max(high >> SPREAD_SHIFT, SPREAD_MIN_NS), SPREAD_MAX_NS // 2)
        widened[name] = (max(low - margin, 0), high + margin)
    return widened


class RunFollower:
    """One run's passes, fed its agents' closed chunks as they close (`feed`), finished
    with its final manifest and files (`finish`)."""

    def __init__(self, run: run_merge.AnalysedRun) -> None:
        self.run = run
        self.planned = run_merge.planned(run.manifest)
        self.context = run_merge.context(0, run)
        self.fed: dict[str, list[str]] = {}
        self.first: dict[str, FirstFold] = {}
        self.second: dict[str, SecondFold] = {}

    @property
    def followable(self) -> bool:
        return self.planned is not None

    def _files(self, agent_id: str, paths: Sequence[str]) -> AgentFiles:
        index = next(i for i, agent in enumerate(self.run.manifest.agents)
                     if agent.id == agent_id)
        agent = self.run.manifest.agents[index]
        return AgentFiles(self.context, index, agent_id, str(agent.role), tuple(paths),
                          run_merge.agent_clock(agent))

    def feed(self, chunks: Mapping[str, Sequence[Path | str]], final: bool = False) -> int:
        """Folds each agent's chunks not fed before (`chunks`: agent_id → its closed chunks
        in order, those fed before first); how many it folded. `final`: these are the
        run's last, so the sends known are all there are."""
        new = {}
        for agent_id, given in chunks.items():
            paths, done = [str(path) for path in given], self.fed.get(agent_id, [])
            if paths[:len(done)] != done:
                raise ValueError(f"{agent_id}: chunks fed before are not where they were")
            if len(paths) > len(done):
                new[agent_id] = self._files(agent_id, paths[len(done):])
                self.fed[agent_id] = paths
        if not new and not final:
            return 0
        for agent_id, files in new.items():
            first = self.first.setdefault(agent_id, FirstFold(files))
            for rows in batches(files):
                first.add(rows)
        merged = run_merge.merge_first([fold.result() for fold in self.first.values()])
        plan = run_merge.plan(merged, run_merge.axes(self.run, merged.extents))
        medians, plan = plan.medians, replace(plan, medians=spread(merged.metrics))
        for fold in self.second.values():
            fold.replan(plan)
        for agent_id, files in new.items():
            fold = self.second.setdefault(agent_id, SecondFold(files, plan))
            if not all(_within(bounds, fold.counted[-1].ranges.get(name))
                       for name, bounds in medians.items()):
                fold.count_in(plan.medians)  # the median moved: a spread around it now
            fold.counted[-1].paths.extend(files.paths)
            for rows in batches(files):
                fold.add(rows, final)
        for fold in self.second.values():
            fold.matching.settle(plan.sent, final)
        return sum(len(files.paths) for files in new.values())

    def finish(self, run: run_merge.AnalysedRun
               ) -> run_merge.RunFigures | run_merge.DamagedRun | None:
        """The run's figures, its remaining chunks folded in (`run`: as it ended); None when
        it cannot be followed to its end (the module doc): analyse it whole."""
        if (run_merge.planned(run.manifest) != self.planned or self.planned is None
                or run_merge.context(0, run) != self.context
                or any(agent.ended_early and agent.id in run.hlogs
                       for agent in run.manifest.agents)):
            return None
        try:
            self.feed({agent_id: paths for agent_id, (_, paths) in run.messages.items()},
                      final=True)
        except ValueError:
            return None
        agents = run_merge.agent_files([run])
        first = [self._first(agent) for agent in agents]
        if problems := run_merge.damage(first):
            return run_merge.DamagedRun(problems)
        merged = run_merge.merge_first(first)
        run_axes = run_merge.axes(run, merged.extents)
        plan = run_merge.plan(merged, run_axes)
        watched = run_merge.watched_receivers(run, agents, first)
        second = [self._second(agent, plan, watched) for agent in agents]
        return run_merge.assembled(run, first, merged, run_axes, second)

    def _first(self, agent: AgentFiles) -> FirstPass:
        log = (read_log(agent.hlog, agent.run.warmup_ns / 1e9, agent.died)
               if agent.hlog is not None else None)
        return replace(self.first[agent.agent_id].result(log), started_ns=agent.started_ns)

    def _second(self, agent: AgentFiles, plan: RunPlan,
                watched: dict[int, run_merge.WatchedReceiver]) -> SecondPass:
        """An agent's second pass: its fold, the run's final sends settled, with the values
        of each final median bucket (its stretches of files that did not count them all
        read again for them)."""
        fold = self.second[agent.agent_id]
        fold.agent = agent  # all its files now (a watched receiver's are read whole)
        fold.replan(plan)
        fold.matching.settle(plan.sent, final=True)
        parts = []
        for counted in fold.counted:
            again = {name: bounds for name, bounds in plan.medians.items()
                     if name in counted.had and not _within(bounds, counted.ranges.get(name))}
            parts.append({name: _inside(values, plan.medians[name])
                          for name, values in counted.detail.items()
                          if name in plan.medians and name not in again})
            if again:
                log.info("%s: %d chunk(s) read again for the final median of %s",
                         agent.agent_id, len(counted.paths), ", ".join(again))
                files = replace(agent, paths=tuple(counted.paths))
                parts += [histograms.median_detail(rows, agent.run.load, again)
                          for rows in batches(files)]
        return replace(fold.result(watched.get(agent.agent_index)),
                       detail=histograms.merged_detail(parts))


def _within(bounds: tuple[int, int], counted: tuple[int, int] | None) -> bool:
    return counted is not None and counted[0] <= bounds[0] and bounds[1] <= counted[1]


def _inside(detail: tuple[np.ndarray, np.ndarray], bounds: tuple[int, int]
            ) -> tuple[np.ndarray, np.ndarray]:
    values, counts = detail
    keep = (values >= bounds[0]) & (values <= bounds[1])
    return values[keep], counts[keep]

