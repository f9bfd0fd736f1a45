"""Per run: its files checked before any record is read, and its report files
(report/summary.json, report/series.json, report/<metric>.hgrm) written from the figures
its agents' passes gave (spark_jobs.run_merge). Nothing here imports Spark: the sidecar
(spark_jobs.sidecar) uses it in a process without pyspark, and the Spark command line
(spark_jobs.analyze) gives `analyze_all` its scheduler.

Before any task reads anything, each run's files are checked (formats.integrity: the
manifest's checksums, cut-short or undecodable files); each agent's hlog is parsed whole,
but for the last line a kill cut from a dead agent's, by its first-pass task. A run with
a file failing a check is refused whole: its summary.json has status `corrupt`, a problem
line per file naming it and what is wrong, and no figure (formats.status orders the
statuses); one with a damaged hlog is refused after the first pass and takes no part in
the second. Spark starts only when a run passes them. Every report file is written
whole or not at all (formats.atomic), summary.json last, and files of an earlier analysis
are removed first, so no figure outlives a new verdict. Runs analysed together whose
analysis fails are tried each alone, so a broken run costs only its own report.

summary.json: formats.summary documents every field (its JSON Schema is
docs/summary.schema.json). An agent that died is analysed from the chunks its index lists
(spark_jobs.delivery says what they count for). Deliveries of unknown fate (`unknown`:
at consumers that died, after their last chunk or without one), or hlogs disagreeing with
the raw records (`hlog_agrees` false), make the run at least `partial`. A saturation run
(`load`, formats.load: `rate: max`) gets the .hgrm of its own metric only
(saturation_latency.hgrm), and its warnings say when the time cap (`duration`) ended
sending before every message went out.

report/series.json, every list at most 2,000 long:

- `window`: M.
- `load`: as in summary.json.
- `latency`, `service_time`, `saturation_latency`: {"n", "t_s", "min_us", "mean_us",
  "max_us"}: per bucket of the schedule (message order), the index of its first message,
  the bucket's intended time (seconds since the run's start; empty without a planned
  schedule) and the min / mean / max; the other load's lists are empty.
- `sender_throughput`, `receiver_throughput`: {"t_s", "msg_s"}: seconds since the run's
  start (bucket centres) and the summed throughput of the side's streams there (each
  stream's 1 / mean overhead in the bucket).
- `histogram`: {"edges_us", "counts"}: latency in 20 log bins a decade (len(edges) =
  len(counts) + 1), empty bins dropped at the ends (saturation latency in a saturation run).
  `humps` as in summary.json.
- `nines`: {"p": [0, 0.5, …, 0.999999], "latency_us": [...], "service_time_us": [...],
  "saturation_latency_us": [...]}: the value at each p (p = 0: the smallest; nulls for
  the other load's metrics).
- `cpu`: {side: {"t_s", "us_per_message"}} for each side with samples: CPU µs per message
  over the run (bins of the sample interval, after the warm-up).
- `timeline` (a run with faults, a rate shape or a backlog only): {"t_s", "p50_us",
  "p99_us", "max_us", "received_msg_s"}: per interval of the measured time and the drain
  (spark_jobs.intervals; consecutive ones pooled past 2,000), its start in seconds from
  the measured start, the latency of the messages intended in it (nulls where none was
  timed) and the receipts per second in it (spark_jobs.timeline).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sixnines.formats import integrity
from sixnines.formats.atomic import WriteFailure, write_atomically
from sixnines.formats.chunks import recorded_chunks
from sixnines.formats.lag import lag_warnings
from sixnines.formats.layout import (
    HISTOGRAMS_FILE,
    HLOG_FILE,
    SERIES_FILE,
    SUMMARY_FILE,
    hgrm_file,
)
from sixnines.formats.load import HEADLINE, METRICS, load_of
from sixnines.formats.manifest import AgentEntry, Manifest, Workload
from sixnines.formats.run_files import agent_file, report_folder
from sixnines.formats.run_histograms import histograms_text
from sixnines.formats.status import CORRUPT, OK, PARTIAL, worst
from sixnines.formats.summary import (
    Broker,
    Figures,
    LatencyPairs,
    RunSummary,
    StepFigures,
    Warmup,
)
from sixnines.formats.vocabulary import RECORDING, Metric, Role
from sixnines.spark_jobs import (
    agent_rows,
    cpu,
    delivery,
    distribution,
    faults,
    histograms,
    run_merge,
    series,
    summarize,
    timeline,
)
from sixnines.spark_jobs.backlog_pass import BacklogPart, backlog_figures
from sixnines.spark_jobs.key_figures import keys_summary
from sixnines.spark_jobs.load import saturation_warnings

#: The analysis' log, whatever schedules its tasks (the Spark command line's stderr).
log = logging.getLogger("sixnines.analyze")



RECORDS = "per-message records it reported"  # what an absent agent left none of
NOT_ANALYSED = ("not analysed: a file that fails its check never feeds a figure; restore it "
                "from a copy, or run again")


@dataclass(frozen=True)
class Checked:
    """A run dir after the checks made before any task reads it (formats.integrity).

    damaged: one line per file failing them; the run is then refused whole and the other
    fields stay empty (the manifest too, when it is what failed). Otherwise messages
    (agent_id → (role, its message files)), hlogs (agent_id → its hlog, read by the first
    pass), notes on missing hlogs and on chunk files not read.
    """

    run_dir: Path
    manifest: Manifest | None
    damaged: list[str] = field(default_factory=list)
    messages: dict[str, tuple[Role, list[Path]]] = field(default_factory=dict)
    hlogs: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> Manifest:
        """The manifest of a run its checks let through (None only in a damaged one)."""
        if self.manifest is None:
            raise ValueError(f"{self.run_dir}: its manifest failed its checks")
        return self.manifest


def _hlog_paths(messages: dict[str, tuple[Role, list[Path]]], run_dir: Path
                ) -> tuple[list[str], dict[str, Path]]:
    """The hlogs of the agents with messages, and a note for each such agent without one."""
    notes: list[str] = []
    hlogs: dict[str, Path] = {}
    for agent_id, (role, _) in messages.items():
        hlog = agent_file(run_dir, agent_id, HLOG_FILE)
        if hlog.is_file():
            hlogs[agent_id] = hlog
        else:
            notes.append(f"agent {agent_id} ({role}): {HLOG_FILE} missing; hlog check "
                         "skipped for it")
    return notes, hlogs


#: What the kept chunks of an agent that died mean, by role (spark_jobs.delivery).
DIED_MEANING = {
    Role.CONSUMER: "deliveries it misses that may have come after its last chunk are "
                   "unknown, older ones lost",
    Role.PRODUCER: "what receivers got from it after its last chunk counts as sent; what it "
                   "sent after that and nobody received is in no count",
    Role.REQUESTER: "replies it got to requests after its last request chunk count as sent "
                    "and delivered; replies it misses that may have come after its last "
                    "chunk are unknown, older ones lost",
}
RELAY_DIED = ("died mid-run: requests it may have received after the latest one it "
              "answered are unknown, older unanswered ones lost")


def _died_notes(run_dir: Path, manifest: Manifest,
                messages: dict[str, tuple[Role, list[Path]]], logged_s: dict[str, float]
                ) -> list[str]:
    """What is read of each sending or receiving agent that died: the chunks its index
    lists are analysed, its hlog as far as it was written (`logged_s`: seconds from its
    start). A responder that died leaves no records: what its death means for the requests
    is said."""
    notes = []
    for agent in manifest.agents:
        if agent.died and agent.role == Role.RESPONDER:
            notes.append(f"agent {agent.id} ({agent.role}, status {agent.status}) "
                         + RELAY_DIED)
        if not (agent.died and agent.role in RECORDING):
            continue
        kept = recorded_chunks(run_dir, agent)
        if agent.id in messages:
            rows = sum(line["rows"] for _, line in kept.listed)
            meaning = DIED_MEANING.get(agent.role)
            hlog = (f"; its {HLOG_FILE} checked over its first {logged_s[agent.id]:,.0f} s, "
                    "as far as it was written" if agent.id in logged_s else "")
            notes.append(f"agent {agent.id} ({agent.role}, status {agent.status}) died "
                         f"mid-run: the {len(kept.listed):,} chunks its index lists are "
                         f"analysed ({rows:,} records{hlog})"
                         + (f": {meaning}" if meaning else ""))
    return notes


def _unread_notes(run_dir: Path, manifest: Manifest) -> list[str]:
    """A note naming each chunk file in an agent's folder that is not read: its index (and,
    when it reported, its manifest entry) does not list it (formats.chunks)."""
    notes = []
    for agent in manifest.agents:
        listed = ("in its chunk index (closed as it died)" if agent.died else
                  "among the chunks its index and its manifest entry list" if agent.artifacts
                  else "in its chunk index")
        notes += [f"agent {agent.id}: {path.name} is not {listed}: not analysed"
                  for path in recorded_chunks(run_dir, agent).unlisted]
    return notes


def _cut_short_notes(manifest: Manifest, messages: dict[str, tuple[Role, list[Path]]]
                     ) -> list[str]:
    """What the records of each agent that reported but cut them short count for: as a
    dead agent's kept chunks (spark_jobs.delivery)."""
    return [f"agent {agent.id} ({agent.role}): its records end before the run did "
            f"({agent.cut_short}): {DIED_MEANING[agent.role]}" for agent in manifest.agents
            if agent.cut_short is not None and not agent.died and agent.id in messages
            and agent.role in DIED_MEANING]


def check_run(run_dir: Path) -> Checked:
    """Check a run dir's manifest and files (plain Python; its hlogs are read by the
    first pass, spark_jobs.run_merge, and a damaged one refuses the run then)."""
    run_dir = Path(run_dir)
    try:
        manifest = integrity.read_manifest(run_dir)
    except integrity.Damaged as refusal:
        return Checked(run_dir, None, refusal.problems)
    damaged = integrity.problems(run_dir, manifest)
    if damaged:
        return Checked(run_dir, manifest, damaged)
    messages = agent_rows.message_paths(run_dir, manifest)
    notes, hlogs = _hlog_paths(messages, run_dir)
    return Checked(run_dir, manifest, damaged, messages, hlogs,
                   [*notes, *_unread_notes(run_dir, manifest)])


def _absent(manifest: Manifest, messages: dict[str, tuple[Role, list[Path]]]
            ) -> list[AgentEntry]:
    """Manifest entries of sending or receiving agents whose records are not analysed: they
    left none (killed before closing a chunk, or not streaming)."""
    return [agent for agent in manifest.agents
            if agent.role in RECORDING and agent.id not in messages]


def _copies(agent: AgentEntry, workload: Workload) -> int:
    """How many times a consumer agent expects each message (spark_jobs.delivery.copies)."""
    return delivery.copies(workload, agent.connections or workload.connections)


def _absent_notes(absent: list[AgentEntry], workload: Workload, sent: int) -> list[str]:
    """Why the messages of agents without data are in no count, or are `unknown`."""
    notes = []
    for agent in absent:
        who = f"agent {agent.id} ({agent.role}, status {agent.status or 'unknown'})"
        if agent.role == Role.CONSUMER:
            unknown = _copies(agent, workload) * sent
            notes.append(f"{who} left no {RECORDS}: the {unknown:,} deliveries expected "
                         "there are unknown (not lost: nothing says whether they arrived)")
        elif agent.role == Role.REQUESTER:
            notes.append(f"{who} left no {RECORDS}: its requests and their replies are "
                         f"in no count (it reported sending {agent.sent:,} before it stopped)")
        else:
            notes.append(f"{who} left no {RECORDS}: its messages are in no count; "
                         "what consumers got from it is counted as unexpected")
    return notes


def acknowledged_lost_line(count: int) -> str:
    """What a run says when the system lost messages it had acknowledged."""
    return f"the broker acknowledged {count} messages it never delivered"


def _status(manifest: Manifest, counts: dict[str, Any], agrees: bool | None,
            drained_out: list[str], absent: list[AgentEntry]) -> str | None:
    """The manifest's status, made partial when the data show more than the run knew:
    deliveries of unknown fate, a drain that ran out while the system still held
    messages, hlogs that disagree with the raw records, or an agent that died or left no
    records (a manifest saying `ok` then was edited)."""
    doubtful = counts["unknown"] > 0 or bool(drained_out) or agrees is False or \
        bool(absent) or any(agent.died for agent in manifest.agents)
    return worst(manifest.status, PARTIAL if doubtful else OK)


def clear_report(run_dir: Path) -> None:
    """Remove what an earlier analysis wrote: no figure may outlive a new verdict."""
    report = report_folder(run_dir)
    for name in (SUMMARY_FILE, SERIES_FILE, HISTOGRAMS_FILE,
                 *(hgrm_file(metric) for metric in Metric)):
        (report / name).unlink(missing_ok=True)


def _write_report(run_dir: Path, files: dict[str, str]) -> None:
    """All of a run's report files or none: each whole or not at all (formats.atomic),
    summary.json last, and those written removed again when one fails (a full disk:
    WriteFailure names that file)."""
    report = report_folder(run_dir)
    try:
        report.mkdir(exist_ok=True)
    except OSError as error:
        raise WriteFailure(report, error) from error
    try:
        for name, text in files.items():
            write_atomically(report / name, text)
    except WriteFailure:
        clear_report(run_dir)
        raise


def _broker(manifest: Manifest) -> Broker:
    """The broker as summary.json tells it (of all the manifest records)."""
    record = manifest.broker
    return Broker(kind=record.kind, recipe=record.recipe, version=record.version,
                  note=record.note)


def refused(checked: Checked) -> RunSummary:
    """The summary of a run whose files fail their checks: status corrupt, the files and
    what is wrong with each in its problems, no figure."""
    manifest = checked.manifest
    known = dict(run_id=checked.run_dir.name, system=None, params={}) if manifest is None \
        else dict(run_id=manifest.run_id, system=manifest.system, params=manifest.params,
                  repeat=manifest.repeat, load=load_of(manifest.params), broker=_broker(manifest),
                  durability=manifest.durability)
    summary = RunSummary(**known, status=CORRUPT,
                         problems=[*(manifest.problems if manifest else []),
                                   *checked.damaged, NOT_ANALYSED], warnings=[])
    _write_report(checked.run_dir, {SUMMARY_FILE: summary.text()})
    return summary


def _expected(checked: Checked) -> delivery.Expected:
    """What a run's accounting needs besides its rows: every consumer agent receives every
    message (`_copies` of it); those of agents without data are absent."""
    manifest = checked.passed
    workload = manifest.workload
    consumers = sum(_copies(agent, workload) for agent in manifest.agents
                    if agent.role == Role.CONSUMER and agent.id in checked.messages)
    silent = sum(_copies(agent, workload)
                 for agent in _absent(manifest, checked.messages) if agent.role == Role.CONSUMER)
    return delivery.Expected(consumers, silent, delivery.Dead.of(manifest, checked.messages))


def run_of(checked: Checked, window: int | None) -> run_merge.AnalysedRun:
    manifest = checked.passed
    return run_merge.AnalysedRun(manifest, checked.messages,
                                 window or manifest.throughput_window, load_of(manifest.params),
                                 _expected(checked), checked.hlogs)



def report(checked: Checked, figured: run_merge.RunFigures) -> RunSummary:
    """A run's summary and report files from its figures (plain Python), written."""
    run_dir, manifest = checked.run_dir, checked.passed
    workload = manifest.workload
    load = load_of(manifest.params)
    counts, rate, pairs = figured.counts, figured.rate, figured.pairs
    metrics, per_message = figured.metrics, figured.per_message
    absent = _absent(manifest, checked.messages)
    histogram = distribution.log_histogram(metrics[HEADLINE[load]].counts)
    humps = distribution.humps(*histogram)
    usage = cpu.analyse(run_dir, manifest)

    logged = {agent_id: (checked.messages[agent_id][0], counts)
              for agent_id, counts in figured.logs.items()}
    agrees, skipped, differing = summarize.hlog_agreement(logged, figured.per_agent,
                                                          pairs.off_clock, load)
    if agrees is None and not skipped:
        skipped.append("no hlog to check against the messages")
    if agrees is False:
        differing.append("the agents' hlogs disagree with their raw records (above): the "
                         "files do not hold one measurement; the figures are the raw "
                         "records'")
    problems = [*_absent_notes(absent, workload, int(counts["sent"] - counts["requests"])),
                *_died_notes(run_dir, manifest, checked.messages, figured.log_ends_s),
                *_cut_short_notes(manifest, checked.messages), *figured.drained_out,
                *checked.notes, *differing]
    problems += summarize.out_of_range_notes(metrics)
    if counts["unexpected"]:
        problems.append(f"{counts['unexpected']} received messages match no sent message")
    lost_acknowledged = int(counts["lost_acknowledged"]) \
        if delivery.acknowledged(manifest) is not None else None
    if lost_acknowledged:
        problems.append(acknowledged_lost_line(lost_acknowledged))
    facts = [*(f"agent {agent_id}: its start instant is unknown; hlog check skipped"
               for agent_id in figured.unplaced),
             *skipped, *series.notes(per_message),
             *([manifest.fill.describe()] if manifest.fill is not None else [])]

    figures = summarize.summary_figures(metrics)
    grid = run_merge.interval_grid(manifest)
    width = grid.width_ns if grid is not None else 0
    summary = RunSummary(
        run_id=manifest.run_id, system=manifest.system, params=manifest.params,
        repeat=manifest.repeat, load=load, broker=_broker(manifest),
        durability=manifest.durability, fill=manifest.fill, sizes=manifest.sizes,
        keys=keys_summary(manifest, int(counts["key_reordered"]),
                          *_hot_and_others(figured.by_key)),
        status=_status(manifest, counts, agrees, figured.drained_out, absent),
        problems=[*manifest.problems, *problems], notes=facts,
        **{key: int(counts[key]) for key in
           ("sent", "received", "delivered", "lost", "unknown", "duplicated", "reordered",
            "unexpected")},
        lost_acknowledged=lost_acknowledged,
        warmup=Warmup(sent=int(counts["warmup_sent"]),
                      received=int(counts["warmup_received"])),
        send_rate=rate["send_rate"], receive_rate=rate["receive_rate"],
        **figures, out_of_range=summarize.out_of_range(metrics),
        latency_pairs=LatencyPairs(**pairs.totals), clock_bound_ns=pairs.bound_ns,
        hlog_agrees=agrees,
        behind_s=summarize.behind_s(metrics[Metric.SEND_LAG], rate["send_rate"],
                                    manifest.params.get("producers", 1)),
        **series.summary_fields(per_message, humps), steadiness=figured.steadiness,
        steps=step_figures(manifest, figured.steps),
        **backlog_fields(manifest, figured.backlog),
        cpu=usage.summary(), cpu_placement=manifest.cpu_placement,
        faults=faults.fault_figures(manifest, figured.intervals, width, _expected(checked)))
    summary.warnings = [*lag_warnings(summary), *saturation_warnings(counts, manifest.params),
                        *summarize.clock_warnings(pairs, manifest.cross_host_latency),
                        *series.humps_warnings(humps, load)]
    document = {**series.series_json(per_message, metrics, histogram, humps),
                "cpu": usage.series(), **timeline.document(figured.intervals, width)}
    _write_report(run_dir, {  # the other load's metrics are empty: no .hgrm for them
        **{hgrm_file(name): summarize.hgrm_text(metrics[name]) for name in METRICS[load]},
        HISTOGRAMS_FILE: histograms_text({name: vars(histograms.Buckets.of_metric(metrics[name]))
                                          for name in METRICS[load]}),
        SERIES_FILE: _json(document), SUMMARY_FILE: summary.text()})
    return summary


def _hot_and_others(by_key: dict[str, summarize.MetricCounts] | None
                    ) -> tuple[Figures | None, Figures | None]:
    """The hottest key's headline figures and the other keys' (None where none came)."""
    by_key = by_key or {}
    return tuple(summarize.metric_summary(by_key[name]) if name in by_key else None
                 for name in ("hot", "others"))  # type: ignore[return-value]


def step_figures(manifest: Manifest, steps: list[run_merge.StepCounts] | None
                 ) -> list[StepFigures] | None:
    """Each step's figures, its rates over its length (None: the run has no steps)."""
    shape = manifest.workload.shape
    if shape is None or steps is None:
        return None
    found = []
    for index, step in zip(shape.steps, steps, strict=True):
        segment = shape.segments[index]
        length_s = (segment.end_ns - segment.start_ns) / 1e9
        found.append(StepFigures(
            rate=segment.rate, start_s=(segment.start_ns - manifest.workload.warmup_ns) / 1e9,
            duration_s=length_s, sent=step.sent, received=step.received,
            send_rate=step.sent / length_s, receive_rate=step.received / length_s,
            latency_us=summarize.metric_summary(step.metrics.get(Metric.LATENCY,
                                                                 summarize.MetricCounts())),
            send_lag_us=summarize.metric_summary(step.metrics.get(Metric.SEND_LAG,
                                                                  summarize.MetricCounts()))))
    return found


def backlog_fields(manifest: Manifest, part: BacklogPart | None) -> dict[str, Any]:
    """The summary's `backlog` of a run that built one (nothing otherwise: the field is
    absent, not null)."""
    plan = manifest.workload.backlog
    if plan is None or part is None:
        return {}
    consumers = sum(agent.role == Role.CONSUMER for agent in manifest.agents)
    return {"backlog": backlog_figures(plan, part, consumers, manifest.workload.warmup_ns)}


def _json(document: dict[str, Any]) -> str:
    return json.dumps(document, allow_nan=False) + "\n"


Outcome = RunSummary | Exception  # a run's summary, or why its analysis failed


def _figure(schedule: run_merge.Scheduler, runs: list[Checked], window: int | None
            ) -> list[run_merge.RunFigures | run_merge.DamagedRun]:
    """The per-agent passes over every run's records at once: two scheduled rounds (Spark
    jobs) whatever the number of runs, only small per-agent results coming back
    (spark_jobs.run_merge)."""
    return run_merge.figures(schedule, [run_of(checked, window) for checked in runs])


#: The scheduler of the agents' tasks, asked for only when a run passed its checks (what
#: starts Spark for the command line, spark_jobs.analyze).
Schedulers = Callable[[], run_merge.Scheduler]


def analyze_all(schedulers: Schedulers, run_dirs: list[Path], window: int | None
                ) -> list[Outcome]:
    """Check every run dir (one failing its checks is refused: status corrupt), then
    analyse those that passed in one pass; when that pass fails, each alone, so one
    broken run costs only its own report. The scheduler is asked for only when a run
    passed its checks."""
    began = time.monotonic()
    outcomes: dict[int, Outcome] = {}
    passed: dict[int, Checked] = {}
    for index, run_dir in enumerate(run_dirs):
        try:
            clear_report(run_dir)
            checked = check_run(run_dir)
            if checked.damaged:
                outcomes[index] = refused(checked)
                log.error("%s: not analysed: %s", run_dir, "; ".join(checked.damaged))
            else:
                passed[index] = checked
        except Exception as error:  # a report it cannot clear or write: its own failure
            outcomes[index] = error
    if passed:
        log.info("analysing %d run(s) together", len(passed))
        outcomes |= _figured_and_reported(schedulers, passed, window)
    log.info("%d run(s) done in %.1f s", len(run_dirs), time.monotonic() - began)
    return [outcomes[index] for index in range(len(run_dirs))]


def _figured_and_reported(schedulers: Schedulers, passed: dict[int, Checked],
                          window: int | None) -> dict[int, Outcome]:
    runs = list(passed.values())
    figured = _figured_each(schedulers(), runs, window)
    outcomes: dict[int, Outcome] = {}
    for (index, checked), found in zip(passed.items(), figured, strict=True):
        try:
            if isinstance(found, run_merge.DamagedRun):
                outcomes[index] = refused(replace(checked, damaged=found.problems))
                log.error("%s: not analysed: %s", checked.run_dir, "; ".join(found.problems))
            else:
                outcomes[index] = (found if isinstance(found, Exception)
                                   else report(checked, found))
        except Exception as error:  # a full disk: WriteFailure names the file
            outcomes[index] = error
    return outcomes


def _figured_each(schedule: run_merge.Scheduler, runs: list[Checked], window: int | None
                  ) -> list[run_merge.RunFigures | run_merge.DamagedRun | Exception]:
    """Each run's figures, from one pass over all; when that pass fails, from a pass over
    each alone (a run that fails alone too: its error)."""
    if len(runs) > 1:
        try:
            return list(_figure(schedule, runs, window))
        except Exception:
            log.exception("the runs analysed together failed: each alone now")
    return [_figured_alone(schedule, checked, window) for checked in runs]


def _figured_alone(schedule: run_merge.Scheduler, checked: Checked, window: int | None
                   ) -> run_merge.RunFigures | run_merge.DamagedRun | Exception:
    try:
        return _figure(schedule, [checked], window)[0]
    except Exception as error:
        log.exception("%s: analysis failed", checked.run_dir)
        return error
