"""Analyse run directories into report/summary.json and report/<metric>.hgrm.

    python -m spark_jobs.analyze [--master local[*]] RUN_DIR [RUN_DIR ...]

All run dirs share one Spark session (its start-up costs ~10 s). Per run: one job each for
the accounting, the rates, the clock pairs and the HDR bucket counts; only one-row results,
one row per agent and bucket rows come back to the driver. Exit status: 0 all analysed,
1 some run failed (the others still get their reports; the failed one's JSON line carries
"error"), 2 bad usage or a run dir without a manifest.

Clock fields of summary.json (DESIGN.md rule 3, see frames.with_clock_pairs):

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
from spark_jobs import frames, summarize
from spark_jobs.session import spark_session

log = logging.getLogger("sixnines.analyze")

MANIFEST = "manifest.json"
REPORT_DIR = "report"
SUMMARY = "summary.json"


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


def analyze_run(spark: SparkSession, run_dir: Path) -> dict[str, Any]:
    """Analyse one run dir, write its report files and return the summary."""
    run_dir = Path(run_dir)
    manifest = json.loads((run_dir / MANIFEST).read_text())
    workload = manifest.get("workload", {})
    warmup_s = int(workload.get("warmup_ns", 0)) / 1e9
    (run_dir / REPORT_DIR / SUMMARY).unlink(missing_ok=True)  # never leave a stale one behind
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
    values = frames.metric_values(measured, clocks)
    buckets = frames.bucket_counts(values, keys=("agent_id", "metric")).toArrow()
    metrics, per_agent = summarize.gather(buckets)

    agrees, hlog_notes = summarize.hlog_agreement(hlogs, per_agent, warmup_s, pairs.off_clock)
    if agrees is None and not hlog_notes:
        hlog_notes.append("no hlog to check against the messages")
    notes += hlog_notes
    notes += summarize.out_of_range_notes(metrics)
    if counts["unexpected"]:
        notes.append(f"{counts['unexpected']} received messages match no sent message")

    figures = summarize.summary_figures(metrics)
    summary: dict[str, Any] = {
        "run_id": manifest.get("run_id"),
        "system": manifest.get("system"),
        "params": manifest.get("params", {}),
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
        "warnings": [*summarize.saturation_warnings(figures, rate["send_rate"],
                                                    manifest.get("params", {})),
                     *summarize.clock_warnings(pairs, clocks.cross_host)],
    }
    report = run_dir / REPORT_DIR
    report.mkdir(exist_ok=True)
    for name, metric in metrics.items():
        summarize.write_hgrm(report / f"{name}.hgrm", metric)
    (report / SUMMARY).write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return summary


def _check(run_dirs: list[Path]) -> None:
    missing = [str(d) for d in run_dirs if not (Path(d) / MANIFEST).is_file()]
    if missing:
        raise FileNotFoundError(f"no {MANIFEST} in: {', '.join(missing)}")


def _analyze_logged(spark: SparkSession, run_dir: Path) -> dict[str, Any]:
    began = time.monotonic()
    log.info("analysing %s", run_dir)
    summary = analyze_run(spark, run_dir)
    log.info("%s done in %.1f s", run_dir, time.monotonic() - began)
    return summary


def analyze_runs(run_dirs: list[Path], master: str = "local[*]") -> list[dict[str, Any]]:
    """Analyse each run dir in one Spark session (an active one is reused, not stopped)."""
    run_dirs = [Path(d) for d in run_dirs]
    _check(run_dirs)
    spark = spark_session(master)
    return [_analyze_logged(spark, run_dir) for run_dir in run_dirs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.analyze", description=__doc__
                                     .splitlines()[0])
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
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
                _analyze_logged(spark, run_dir)
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
