"""Analysis scaling: one synthesised 100-agent run analysed (spark_jobs.run_merge), embedded
(`local[*]`) and on a 2-worker standalone cluster, side by side in one invocation.

The run is written exactly as `sixnines run` leaves it (manifest.json as the controller
finalises it, per agent messages.parquet and latency.hlog through `agents.artifacts`), so
the timed step is the real one: `python -m sixnines.spark_jobs.analyze --master M RUN_DIR`, the
process `sixnines report` starts, end to end (JVM and session start included).

Shape (fan-out, our default model): 50 producers and 50 consumers (`--agents`), each
consumer receiving
every producer's messages, planned by `orchestrator.plan.agents.plan_agents`; a fixed-rate
schedule (intended = t0 + phase + i/rate), 10 s of warm-up, then `--minutes` measured.
At `--scale 1` every producer sends 20 msg/s (1,000 msg/s in all, so each consumer
receives 1,000 msg/s); with the default 10 minutes the run spans 610 s:

    producer rows  = 50 producers x 20 msg/s x 610 s  =    610,000
    consumer rows  = 50 consumers x 610,000 messages  = 30,500,000 (minus a few lost)
    total          ~ 31.1 M rows

`--scale` multiplies the rate (and the rows): `--scale 50` is 1,000 msg/s a producer,
2.5 M deliveries/s, ~1.56 G rows, for a real cluster. The values: send lag ~3 µs
(log-normal) with a Pareto tail into milliseconds, service time ~95 µs (log-normal) with
rare 1-10 ms outliers, each (producer, consumer) stream FIFO like a TCP connection, and a
delivery lost with probability 2e-6 (~60 at scale 1). Every agent shares one clock domain,
so every latency is same-clock and every hlog tag is compared: the most work the analysis
can have for these rows.

Generation holds one agent's rows at a time (what that agent itself held) and draws them a
producer stream at a time; the directory is cached under benchmarks/out/ keyed by the
parameters (manifest.json, written last, marks it complete), so re-runs only analyse (a
smoke run's goes to a temporary directory). The cluster (master + 2 workers, 1 core each)
is started on loopback from pyspark's own spark-class and stopped afterwards, also on
failure.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/bench_analysis_scale.py \
        [--scale 1] [--minutes 10] [--agents 50] [--worker-memory 3g] [--out DIR] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import common
import numpy as np
import pyspark

from sixnines.agents.artifacts import write_all
from sixnines.agents.facts import host_facts, versions
from sixnines.agents.schedule import intended_offsets
from sixnines.formats.hlog import measured_counts, read_hlog
from sixnines.formats.integrity import read_manifest
from sixnines.formats.layout import AGENTS_DIR, HLOG_FILE, MANIFEST_FILE, REPORT_DIR, SUMMARY_FILE
from sixnines.formats.manifest import AgentEntry, Artifact, BrokerRecord, Clock
from sixnines.formats.vocabulary import Metric, Role
from sixnines.orchestrator.plan.agents import AgentPlan, plan_agents
from sixnines.orchestrator.run.clocks import PINGS
from sixnines.orchestrator.run.manifest import new_manifest, write_manifest
from sixnines.orchestrator.scenario.hosts import Placement
from sixnines.orchestrator.scenario.matrix import expand
from sixnines.orchestrator.scenario.model import parse_scenario

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out" / "analysis-scale"
SPARK_HOME = Path(pyspark.__file__).parent
DEPLOY = "org.apache.spark.deploy"
FORMAT = 1  # bump when the synthesised data changes, so cached directories are not reused

AGENTS_PER_ROLE = 50  # producers, and as many consumers
RATE_PER_PRODUCER = 20.0  # msg/s at --scale 1
WARMUP_S = 10
MESSAGE_SIZE = 256
LOSS = 2e-6  # per delivery
LAG_MEDIAN_NS, LAG_SIGMA = 3_000, 0.5
LAG_TAIL_SHARE, LAG_TAIL_NS, LAG_TAIL_ALPHA, LAG_TAIL_CAP_NS = 1e-3, 20_000, 1.5, 5_000_000
SERVICE_MEDIAN_NS, SERVICE_SIGMA = 95_000, 0.25
OUTLIER_SHARE, OUTLIER_NS = 1e-5, (1_000_000, 10_000_000)
WORKERS = 2


# -- synthesis ---------------------------------------------------------------------------

def scenario_text(scale: float, minutes: int, agents: int) -> str:
    """The scenario whose one run is synthesised (planned as the controller would)."""
    rate = agents * RATE_PER_PRODUCER * scale
    return f"""
name: analysis-scale
systems: [{{name: tcp, driver: tcp, broker: builtin}}]
workload: {{mode: one-way, message_size: {MESSAGE_SIZE}, rate: {rate}, schedule: fixed,
           duration: {minutes}m, warmup: {WARMUP_S}s, producers: {agents},
           consumers: {agents}}}
"""


def send_lags(rng: np.random.Generator, n: int) -> np.ndarray:
    """A few µs, and one in a thousand thrown into a Pareto tail (a descheduled sender)."""
    lag = rng.lognormal(np.log(LAG_MEDIAN_NS), LAG_SIGMA, n)
    tail = rng.random(n) < LAG_TAIL_SHARE
    lag[tail] += np.minimum(LAG_TAIL_NS * (rng.pareto(LAG_TAIL_ALPHA, int(tail.sum())) + 1),
                            LAG_TAIL_CAP_NS)
    return lag.astype(np.int64)


def service_times(rng: np.random.Generator, n: int) -> np.ndarray:
    """~95 µs through the broker, with rare millisecond stalls."""
    service = rng.lognormal(np.log(SERVICE_MEDIAN_NS), SERVICE_SIGMA, n)
    stalled = rng.random(n) < OUTLIER_SHARE
    service[stalled] += rng.uniform(*OUTLIER_NS, int(stalled.sum()))
    return service.astype(np.int64)


def producer_columns(plan: AgentPlan, t0_ns: int, warmup_ns: int,
                     rng: np.random.Generator) -> dict[str, np.ndarray | None]:
    """A producer's messages.parquet columns: its schedule, sent when the lag allows (a
    sender never sends two messages out of order, hence the running maximum)."""
    intended = t0_ns + intended_offsets("fixed", plan.rate, plan.sends, plan.phase_ns)
    sent = np.maximum.accumulate(intended + send_lags(rng, plan.sends))
    return {"producer_id": np.full(plan.sends, plan.first_id, np.int32),
            "seq": np.arange(plan.sends, dtype=np.int64),
            "size": np.full(plan.sends, MESSAGE_SIZE, np.int32),
            "intended_ns": intended, "sent_ns": sent, "recv_ns": None, "consumer_id": None,
            "rx_index": None, "warmup": intended < t0_ns + warmup_ns}


def receipts(producer: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One consumer's receipts of one producer's stream, minus the lost ones. FIFO per
    stream (a TCP connection): a stalled message holds up the ones behind it."""
    n = len(producer["seq"])
    recv = np.maximum.accumulate(producer["sent_ns"] + service_times(rng, n))
    kept = np.ones(n, dtype=bool)
    kept[rng.choice(n, rng.binomial(n, LOSS), replace=False)] = False
    return {"producer_id": producer["producer_id"][kept], "seq": producer["seq"][kept],
            "intended_ns": producer["intended_ns"][kept], "sent_ns": producer["sent_ns"][kept],
            "recv_ns": recv[kept]}


def consumer_columns(plan: AgentPlan, producers: list[dict], t0_ns: int, warmup_ns: int,
                     rng: np.random.Generator) -> dict[str, np.ndarray | None]:
    """A consumer's messages.parquet columns: every producer's stream, in receive order."""
    streams = [receipts(producer, rng) for producer in producers]
    rows = {name: np.concatenate([s[name] for s in streams]) for name in streams[0]}
    order = np.argsort(rows["recv_ns"], kind="stable")
    rows = {name: values[order] for name, values in rows.items()}
    n = len(order)
    return {**rows, "size": np.full(n, MESSAGE_SIZE, np.int32),
            "consumer_id": np.full(n, plan.first_id, np.int32),
            "rx_index": np.arange(n, dtype=np.int64),
            "warmup": rows["intended_ns"] < t0_ns + warmup_ns}


def hlog_series(role: str, columns: dict, t0_ns: int) -> dict[str, tuple]:
    """The interval-log series the agent role writes from its rows (agents/roles.py)."""
    offsets = columns["intended_ns"] - t0_ns
    if role == Role.PRODUCER:
        return {Metric.SEND_LAG: (offsets, columns["sent_ns"] - columns["intended_ns"])}
    return {Metric.LATENCY: (offsets, columns["recv_ns"] - columns["intended_ns"]),
            Metric.SERVICE_TIME: (offsets, columns["recv_ns"] - columns["sent_ns"])}


def clock_entry(domain: str, rng: np.random.Generator) -> Clock:
    """An agent's clock as the controller records it for an agent on its own host."""
    return Clock(domain=domain, estimated_offset_ns=int(rng.integers(-20_000, 20_000)),
                 uncertainty_ns=int(rng.integers(30_000, 70_000)), pings=PINGS, offset_ns=0,
                 domain_uncertainty_ns=0, same_clock_as_controller=True)


def agent_entry(plan: AgentPlan, columns: dict, files: dict, out_of_range: dict,
                t0_ns: int, domain: str, rng: np.random.Generator) -> AgentEntry:
    """The agent's manifest entry, shaped as a run records it (orchestrator.run.record)."""
    rows = len(columns["seq"])
    return AgentEntry(
        id=plan.agent_id, role=plan.role, host=plan.host, first_id=plan.first_id,
        connections=plan.connections, rate=plan.rate, planned_sends=plan.sends,
        clock=clock_entry(domain, rng), sent=rows if plan.role == "producer" else 0,
        received=rows if plan.role == "consumer" else 0, exit_code=0,
        pid=int(rng.integers(1000, 99_999)), host_facts=host_facts(), versions=versions(),
        status="ok", t0_ns=t0_ns,
        artifacts={name: Artifact(**facts, verified=True) for name, facts in files.items()},
        out_of_range=out_of_range)


def write_agent(run_dir: Path, plan: AgentPlan, columns: dict, t0_ns: int, warmup_ns: int,
                run_id: str) -> tuple[dict, dict]:
    """Both artifact files through the agents' own writer; (files, out_of_range)."""
    files, out_of_range, unwritten = write_all(
        run_dir / AGENTS_DIR / plan.agent_id, columns, hlog_series(plan.role, columns, t0_ns),
        t0_ns=t0_ns, warmup_ns=warmup_ns, label=f"{run_id} {plan.agent_id} ({plan.role})")
    if unwritten:
        raise SystemExit("; ".join(unwritten))
    return files, out_of_range


def synthesise(run_dir: Path, scale: float, minutes: int, seed: int, agents: int) -> None:
    """Write the whole run directory; manifest.json last."""
    point = expand(parse_scenario(scenario_text(scale, minutes, agents)))[0]
    manifest = new_manifest(point, "analysis-scale").model_copy(update=dict(
        placement=Placement().model_dump(mode="json"), cross_host_latency=False, hosts={},
        broker=BrokerRecord(system="tcp", kind="builtin", address="127.0.0.1:0", host="local",
                            note="synthesised by bench_analysis_scale.py")))
    warmup_ns = point.workload.warmup_ns
    t0_ns = time.perf_counter_ns()
    domain = manifest.controller["host"]["clock_domain"]
    rng = np.random.default_rng(seed)
    plans = plan_agents(point.workload)
    producers, entries = [], {}
    for plan in sorted(plans, key=lambda p: p.role != "producer"):  # producers first
        if plan.role == "producer":
            columns = producer_columns(plan, t0_ns, warmup_ns, rng)
            producers.append(columns)
        else:
            columns = consumer_columns(plan, producers, t0_ns, warmup_ns, rng)
        files, out_of_range = write_agent(run_dir, plan, columns, t0_ns, warmup_ns,
                                          point.run_id)
        entries[plan.agent_id] = agent_entry(plan, columns, files, out_of_range, t0_ns,
                                             domain, rng)
        print(f"  {plan.agent_id}: {len(columns['seq']):,} rows", file=sys.stderr, end="\r")
    manifest = manifest.model_copy(update=dict(
        agents=[entries[plan.agent_id] for plan in plans],  # the controller's order
        status="ok", started_at_ns=t0_ns, ended_at=time.time()))
    write_manifest(run_dir, manifest)


def cached_run(out: Path, scale: float, minutes: int, seed: int, agents: int) -> Path:
    """The synthesised run directory for these parameters in `out`, generated on first
    use."""
    shape = "" if agents == AGENTS_PER_ROLE else f"-{agents}agents"
    run_dir = out / f"v{FORMAT}-scale{scale:g}-{minutes}min-seed{seed}{shape}" / "01-tcp"
    if (run_dir / MANIFEST_FILE).is_file():
        print(f"cached: {run_dir}", file=sys.stderr)
        return run_dir
    shutil.rmtree(run_dir, ignore_errors=True)  # an interrupted generation
    started = time.perf_counter()
    synthesise(run_dir, scale, minutes, seed, agents)
    print(f"synthesised {run_dir} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return run_dir


def run_facts(run_dir: Path) -> dict:
    """Rows, agents and bytes on disk of the run, from its manifest."""
    agents = read_manifest(run_dir).agents
    return {"rows": sum(a.sent + a.received for a in agents), "agents": len(agents),
            "bytes": sum(f.bytes or 0 for a in agents for f in a.artifacts.values())}


# -- the standalone cluster --------------------------------------------------------------

def spark_env() -> dict[str, str]:
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}


def spark_class(args: list[str], log: Path) -> subprocess.Popen:
    """A Spark daemon in its own process group (so it can be stopped with its JVM)."""
    with open(log, "wb") as out:
        # pip installs spark-class without its executable bit: run it through bash
        return subprocess.Popen(["bash", str(SPARK_HOME / "bin" / "spark-class"), *args],
                                env=spark_env(), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def alive_workers(ui_port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as answer:
        return json.load(answer)["aliveworkers"]


def await_workers(ui_port: int, count: int, master_log: Path, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        with suppress(OSError, ValueError):
            if alive_workers(ui_port) >= count:
                return
        if time.monotonic() > deadline:
            raise SystemExit(f"{count} Spark workers not up in {timeout_s:.0f} s; "
                             f"see {master_log}")
        time.sleep(0.5)


def stop(process: subprocess.Popen) -> None:
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)


@contextmanager
def standalone_cluster(work: Path, workers: int, memory: str) -> Iterator[str]:
    """A master and `workers` one-core workers on loopback; yields the master URL."""
    work.mkdir(parents=True, exist_ok=True)
    port, ui = common.free_port(), common.free_port()
    url = f"spark://127.0.0.1:{port}"
    processes = [spark_class([f"{DEPLOY}.master.Master", "--host", "127.0.0.1", "--port",
                              str(port), "--webui-port", str(ui)], work / "master.log")]
    try:
        for k in range(workers):
            processes.append(spark_class(
                [f"{DEPLOY}.worker.Worker", url, "--host", "127.0.0.1", "--cores", "1",
                 "--memory", memory, "--webui-port", str(common.free_port()),
                 "--work-dir", str(work / f"worker-{k}")], work / f"worker-{k}.log"))
        await_workers(ui, workers, work / "master.log")
        yield url
    finally:
        for process in reversed(processes):
            stop(process)


# -- measuring ---------------------------------------------------------------------------

def timed_analysis(run_dir: Path, master: str, env: dict[str, str], log: Path
                   ) -> tuple[float, dict]:
    """Seconds of `python -m sixnines.spark_jobs.analyze` end to end, and the summary it wrote."""
    argv = [sys.executable, "-m", "sixnines.spark_jobs.analyze", "--master", master, str(run_dir)]
    started = time.perf_counter()
    with open(log, "ab") as err:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=err, env=env, cwd=ROOT,
                              text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"analysis on {master} failed (exit {done.returncode}); see {log}")
    return seconds, json.loads((run_dir / REPORT_DIR / SUMMARY_FILE).read_text())


def hlog_seconds(run_dir: Path, warmup_s: float) -> float:
    """CPU seconds reading and decoding the agents' hlogs for the agreement check costs
    (in the first-pass tasks, spread over the cores). One hlog per role is timed and
    multiplied by that role's count: CPU time, unlike the wall clock, holds on a shared
    machine."""
    total = 0.0
    for role in ("producer", "consumer"):
        paths = sorted((run_dir / AGENTS_DIR).glob(f"{role}-*/{HLOG_FILE}"))
        started = time.process_time()
        measured_counts(read_hlog(paths[0]), warmup_s)
        total += (time.process_time() - started) * len(paths)
    return total


def unequal(a: object, b: object, path: str = "") -> list[tuple[str, object, object]]:
    """Every leaf where two summaries differ, as (dotted path, a, b)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [found for key in sorted(a.keys() | b.keys())
                for found in unequal(a.get(key), b.get(key), f"{path}.{key}".lstrip("."))]
    return [] if a == b else [(path, a, b)]


def rounding(a: object, b: object) -> bool:
    """Two floats one rounding apart: a sum of doubles taken in another order (per-agent
    rates add up in whatever order the partitions arrive)."""
    return isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-12)


def compare(embedded: dict, on_cluster: dict) -> tuple[bool, str]:
    """(same figures, a line saying how the two summaries compare)."""
    found = unequal(embedded, on_cluster)
    real = [f"{path}: {a!r} vs {b!r}" for path, a, b in found if not rounding(a, b)]
    if real:
        return False, "summaries DIFFER: " + "; ".join(real)
    if found:
        return True, ("summaries identical but for the last digits of "
                      + ", ".join(f"{path} ({a!r} vs {b!r})" for path, a, b in found))
    return True, "summaries identical"


def load() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


def print_table(rows: int, results: list[tuple[str, int, float, str]]) -> None:
    """Rows/s (per core) end to end and the ratio to the first (baseline) line."""
    base = results[0][2]
    print(f"{'engine':<34} {'cores':>5} {'seconds':>8} {'rows/s':>9} {'rows/s/core':>11} "
          f"{'x embedded':>10}  load 1/5/15 before")
    for name, cores, seconds, before in results:
        print(f"{name:<34} {cores:>5} {seconds:>8.1f} {rows / seconds:>9,.0f} "
              f"{rows / seconds / cores:>11,.0f} {seconds / base:>10.2f}  {before}")


def measure(run_dir: Path, worker_memory: str, work: Path
            ) -> tuple[list[tuple[str, int, float, str]], dict, dict]:
    """Embedded first (the baseline), then the cluster; (timings, both summaries)."""
    env = spark_env()
    before = load()
    embedded_s, embedded = timed_analysis(run_dir, "local[*]", env, work / "embedded.log")
    results = [("embedded local[*]", os.cpu_count() or 1, embedded_s, before)]
    with standalone_cluster(work / "cluster", WORKERS, worker_memory) as url:
        cluster_env = {**env, "PYSPARK_PYTHON": sys.executable,  # workers need sixnines
                       "PYSPARK_SUBMIT_ARGS":
                       f"--conf spark.executor.memory={worker_memory} pyspark-shell"}
        before = load()
        cluster_s, on_cluster = timed_analysis(run_dir, url, cluster_env, work / "cluster.log")
    results.append((f"standalone, {WORKERS} workers x 1 core {worker_memory}", WORKERS,
                    cluster_s, before))
    return results, embedded, on_cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the rate")
    parser.add_argument("--minutes", type=int, default=10, help="measured minutes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--agents", type=int, default=AGENTS_PER_ROLE,
                        help="producers, and as many consumers")
    parser.add_argument("--worker-memory", default="3g",
                        help="each worker's memory, also its executor's")
    parser.add_argument("--out", type=Path, default=OUT, help="where the run is cached")
    args = common.arguments(parser, {"scale": 0.05, "minutes": 1, "agents": 2,
                                     "worker_memory": "1g", "out": None}, argv)
    with common.directory(args.out) as out:
        return analyse(out, args)


def analyse(out: Path, args: argparse.Namespace) -> int:
    """The run of `args` (synthesised into `out` if not there) analysed embedded and on
    the cluster, side by side; 0 when both summaries agree."""
    run_dir = cached_run(out, args.scale, args.minutes, args.seed, args.agents)
    facts = run_facts(run_dir)
    print(f"run: {facts['agents']} agents, {facts['rows']:,} rows, "
          f"{facts['bytes'] / 2**20:,.0f} MiB on disk ({run_dir})")
    hlog_s = hlog_seconds(run_dir, WARMUP_S)
    work = out / "logs"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    results, embedded, on_cluster = measure(run_dir, args.worker_memory, work)

    print_table(facts["rows"], results)
    print(f"of each: reading the {facts['agents']} hlogs for the agreement check, "
          f"~{hlog_s:.0f} CPU s in the first-pass tasks (one hlog per role timed)")
    same, how = compare(embedded, on_cluster)
    latency = embedded[Metric.LATENCY.summary_field]
    print(how)
    print(f"sent {embedded['sent']:,} received {embedded['received']:,} "
          f"lost {embedded['lost']:,} hlog_agrees {embedded['hlog_agrees']}; "
          f"latency p50 {latency['p50']} µs max {latency['max']}")
    print(f"load average 1/5/15 at the end: {load()} ({os.cpu_count()} cores)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
