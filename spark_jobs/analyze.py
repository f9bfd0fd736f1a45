"""Analyse run directories into report/summary.json, report/series.json and report/<metric>.hgrm.

    python -m spark_jobs.analyze [--master local[*]] [--window M] RUN_DIR [RUN_DIR ...]

All run dirs share one Spark session (its start-up costs ~10 s). Per run: one job each for
the accounting, the rates, the clock pairs, the HDR bucket counts, the exact medians, the
stream extents, the latency curve and the throughput window pass; only one-row results, one
row per agent or stream, bucket rows and ≤ 2,000-point curves come back to the driver.
`--window M` is the number of messages the overhead and throughput of a stream are taken
over; without it, the run's own (the scenario's `throughput_window`, recorded in its
manifest; 100 for manifests without one). Exit status: 0 all analysed, 1 some run failed
(the others still get their reports; the failed one's JSON line carries "error"), 2 bad
usage or a run dir without a manifest.

`load` in summary.json (spark_jobs.load): "open-loop" for a run on a schedule, "saturation"
for throughput mode (`rate: max`: no schedule, a message count sent as fast as the system
takes). A saturation run's headline is throughput (`send_rate`, `receive_rate`,
`throughput`, `density_us`); its intended times are its send times, so its only latency is
`saturation_latency_us` = recv − sent, and `latency_us`, `service_time_us` and
`send_lag_us` stay empty (count 0), as `saturation_latency_us` does in an open-loop run.
Only the run's own metrics get a .hgrm (saturation: saturation_latency.hgrm), and its
warnings say when the time cap (`duration`) ended sending before every message went out.

Per-metric fields of summary.json (`latency_us`, `service_time_us`, `send_lag_us`,
`saturation_latency_us`, in µs): p50 … p99.9999 and max (HdrHistogram's figures, never
above the exact max), `mean`, `lower_median` (the ⌈n/2⌉-th smallest value, a sample),
`robust_deviation` (mean |x − lower_median|), both exact while the median is below ~134 ms
(HDR resolution beyond, see distribution.robust_centre), and `count`; all null with count 0
when nothing was timed.

Per-message fields (spark_jobs.series for the definitions):

- `throughput`: {"window": M, "sender_msg_s": {...}, "receiver_msg_s": {...},
  "bytes_per_s": {"sender": x, "receiver": y}, "zero_span_windows": {"sender": n, ...}}.
  sender_msg_s / receiver_msg_s hold the per-metric figures above, in msg/s, of
  ST_n = M / (O_n − O_{n−M}) over every sender stream and RT_n likewise over every receiver
  stream (percentiles and lower median at 3 significant digits). zero_span_windows: windows
  left out because their M messages carry one timestamp (batches stamped once), so count
  = messages − M per stream − these. bytes_per_s: each stream's message rate times its mean
  size, summed.
- `density_us`: the mean interval between consecutive receipts of a receiver stream, over
  all of them; null with no stream of two receipts.
- `humps`: {"count": modes, "modes_us": [...]}: the distinct modes of the latency
  distribution (distribution.humps gives the rule); count > 1 adds the warning "latency is
  multi-modal: modes at … µs".

report/series.json, every list at most 2,000 long:

- `window`: M.
- `load`: as in summary.json.
- `latency`, `service_time`, `saturation_latency`: {"n", "min_us", "mean_us", "max_us"}:
  per bucket of the schedule (message order), the index of its first message and the
  min / mean / max; the other load's lists are empty.
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

CPU fields of summary.json (spark_jobs.cpu has the definitions, agents.cpu the sampling):

- `cpu`: {"sender": {...}, "receiver": {...}, "broker": {...} or null, "interval_ms": the
  sample interval, "notes": [...]}. Each side holds `us_per_message` (the per-metric
  figures above, in µs of CPU per message: one value per measured sample interval of one
  process, Δcpu / Δmessages), `cores` (CPU seconds per wall-clock second over the measured
  intervals, summed over the side's agents) and `empty_intervals` (measured intervals
  without messages, left out of us_per_message). sender: producers and requesters (per
  message sent; a requester's per request, reply included); receiver: consumers and
  responders; null without such agents. broker: the broker's process tree sampled on its
  host by the monitor, per message received by all consumers in the interval (each fan-out
  delivery; in round trip, per request); null when sixnines did not start the broker or
  its monitor left no samples. `notes` says why, and holds the monitor's troubles, which
  never make a run partial.

Clock fields of summary.json (docs/design.md rule 3, see frames.with_clock_pairs):

- `latency_pairs`: {"same_clock": n, "cross_clock": n, "excluded": n}, the measured
  deliveries by how their producer's and receiver's clocks pair up. same_clock: one clock
  domain (a requester is its own receiver), timed as recorded. cross_clock: different
  domains, included only when the manifest says `cross_host_latency: true`, each end moved
  onto the controller's clock by its host's measured offset. excluded: not in latency or
  service time (a warning says how many and how to opt in), still in the accounting
  (received, lost, duplicated, reordered). same_clock + cross_clock = latency_us.count.
- `clock_bound_ns`: how far any cross-clock latency or service time may be off: the largest
  producer + receiver offset uncertainty among the cross_clock deliveries; null when none.
- `hlog_agrees` compares only the hlog tags holding what Spark computed: a receiver with
  cross_clock or excluded deliveries logged them raw, so its latency and service_time tags
  are not compared, and a problem line says so (null when nothing was compared).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from agents.schema import HLOG_FILE
from spark_jobs import cpu, distribution, frames, series, summarize
from spark_jobs.load import HEADLINE, METRICS, load_of, saturation_warnings
from spark_jobs.session import spark_session

log = logging.getLogger("sixnines.analyze")

MANIFEST = "manifest.json"
REPORT_DIR = "report"
SUMMARY = "summary.json"
SERIES = "series.json"


def _missing_notes(manifest: dict[str, Any], loaded: dict[str, tuple[str, Path]],
                   run_dir: Path) -> tuple[list[str], dict[str, tuple[str, Path]]]:
    """Notes for agents without messages/hlog, and the agents whose hlog can be checked."""
    notes: list[str] = []
    hlogs: dict[str, tuple[str, Path]] = {}
    for agent in manifest.get("agents", []):
        agent_id, role = agent["id"], agent.get("role")
        if role not in frames.ROLES:
            continue
        status = agent.get("status", "unknown")
        if agent_id not in loaded:
            notes.append(f"agent {agent_id} ({role}, status {status}): messages.parquet "
                         "missing; its messages are not analysed")
            continue
        hlog = run_dir / "agents" / agent_id / HLOG_FILE
        if hlog.is_file():
            hlogs[agent_id] = (role, hlog)
        else:
            notes.append(f"agent {agent_id} ({role}, status {status}): {HLOG_FILE} missing; "
                         "hlog check skipped for it")
    return notes, hlogs


def analyze_run(spark: SparkSession, run_dir: Path, window: int | None = None
                ) -> dict[str, Any]:
    """Analyse one run dir, write its report files and return the summary (window: M, the
    messages a stream's overhead and throughput are taken over; None: the manifest's)."""
    run_dir = Path(run_dir)
    manifest = json.loads((run_dir / MANIFEST).read_text())
    window = window or manifest.get("throughput_window", series.DEFAULT_WINDOW)
    workload = manifest.get("workload", {})
    load = load_of(manifest.get("params", {}))
    warmup_s = int(workload.get("warmup_ns", 0)) / 1e9
    for stale in (SUMMARY, SERIES):  # never leave a stale one behind
        (run_dir / REPORT_DIR / stale).unlink(missing_ok=True)
    loaded = frames.message_paths(run_dir, manifest)
    notes, hlogs = _missing_notes(manifest, loaded, run_dir)

    df = frames.load_messages(spark, run_dir, manifest)
    # every connection of every consumer agent receives every message (fan-out)
    connections = int(workload.get("connections", 1))
    consumers = connections * sum(role == "consumer" for role, _ in loaded.values())
    counts = frames.accounting(df, consumers).first().asDict()
    rate = frames.rates(df).first().asDict()
    clocks = frames.RunClocks.from_manifest(manifest)
    measured = frames.measured(df)
    pairs = summarize.clock_pairs(frames.clock_pair_counts(measured, clocks).toArrow())
    values = frames.metric_values(measured, clocks, load)
    buckets = frames.bucket_counts(values, keys=("agent_id", "metric")).toArrow()
    metrics, per_agent = summarize.gather(buckets)
    metrics = series.with_median_detail(values, metrics)
    per_message = series.per_message(measured, clocks, manifest, window, load)
    histogram = distribution.log_histogram(metrics[HEADLINE[load]].counts)
    humps = distribution.humps(*histogram)
    usage = cpu.analyse(run_dir, manifest)

    agrees, hlog_notes = summarize.hlog_agreement(hlogs, per_agent, warmup_s, pairs.off_clock,
                                                  load)
    if agrees is None and not hlog_notes:
        hlog_notes.append("no hlog to check against the messages")
    notes += hlog_notes
    notes += summarize.out_of_range_notes(metrics)
    notes += series.notes(per_message)
    if counts["unexpected"]:
        notes.append(f"{counts['unexpected']} received messages match no sent message")

    figures = summarize.summary_figures(metrics)
    summary: dict[str, Any] = {
        "run_id": manifest.get("run_id"),
        "system": manifest.get("system"),
        "params": manifest.get("params", {}),
        "load": load,
        "broker": {key: manifest.get("broker", {}).get(key)
                   for key in ("kind", "recipe", "version", "note")},
        "status": manifest.get("status"),
        "problems": [*manifest.get("problems", []), *notes],
        **{key: int(counts[key]) for key in
           ("sent", "received", "lost", "duplicated", "reordered", "unexpected")},
        "warmup": {"sent": int(counts["warmup_sent"]),
                   "received": int(counts["warmup_received"])},
        "send_rate": rate["send_rate"],
        "receive_rate": rate["receive_rate"],
        **figures,
        "latency_pairs": pairs.totals,
        "clock_bound_ns": pairs.bound_ns,
        "hlog_agrees": agrees,
        **series.summary_fields(per_message, humps),
        "cpu": usage.summary(),
        "warnings": [*summarize.saturation_warnings(figures, rate["send_rate"],
                                                    manifest.get("params", {})),
                     *saturation_warnings(counts, manifest.get("params", {})),
                     *summarize.clock_warnings(pairs, clocks.cross_host),
                     *series.humps_warnings(humps, load)],
    }
    report = run_dir / REPORT_DIR
    report.mkdir(exist_ok=True)
    for name in METRICS[load]:  # the other load's metrics are empty
        summarize.write_hgrm(report / f"{name}.hgrm", metrics[name])
    document = {**series.series_json(per_message, metrics, histogram, humps),
                "cpu": usage.series()}
    (report / SERIES).write_text(json.dumps(document, allow_nan=False) + "\n")
    (report / SUMMARY).write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return summary


def _check(run_dirs: list[Path]) -> None:
    missing = [str(d) for d in run_dirs if not (Path(d) / MANIFEST).is_file()]
    if missing:
        raise FileNotFoundError(f"no {MANIFEST} in: {', '.join(missing)}")


def _analyze_logged(spark: SparkSession, run_dir: Path, window: int | None
                    ) -> dict[str, Any]:
    began = time.monotonic()
    log.info("analysing %s", run_dir)
    summary = analyze_run(spark, run_dir, window)
    log.info("%s done in %.1f s", run_dir, time.monotonic() - began)
    return summary


def analyze_runs(run_dirs: list[Path], master: str = "local[*]",
                 window: int | None = None) -> list[dict[str, Any]]:
    """Analyse each run dir in one Spark session (an active one is reused, not stopped)."""
    run_dirs = [Path(d) for d in run_dirs]
    _check(run_dirs)
    spark = spark_session(master)
    return [_analyze_logged(spark, run_dir, window) for run_dir in run_dirs]


def _window(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of messages ≥ 1: {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.analyze", description=__doc__
                                     .splitlines()[0])
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    parser.add_argument("--window", type=_window, metavar="M",
                        help="messages per overhead/throughput window (default: each run's "
                        f"own, else {series.DEFAULT_WINDOW})")
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(message)s")
    log.setLevel(logging.INFO)
    try:
        _check(args.run_dirs)
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    failed = 0
    results = []
    try:
        spark = spark_session(args.master)
        for run_dir in args.run_dirs:
            try:
                _analyze_logged(spark, run_dir, args.window)
            except Exception as error:  # one broken run must not cost the others' reports
                log.exception("%s: analysis failed", run_dir)
                failed += 1
                results.append({"run_dir": str(run_dir), "error": f"{type(error).__name__}: "
                                f"{error}"})
                continue
            results.append({"run_dir": str(run_dir),
                            "summary": str(run_dir / REPORT_DIR / SUMMARY)})
    finally:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
    for result in results:
        print(json.dumps(result), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
