"""CPU placement as a run really applies it (docs/design.md, "CPU placement"): while a
`sixnines run` measures, the producer's loop thread (with the Python threads sharing its
GIL) runs on a CPU of its own and no other process of the run (the controller, the
consumer, the chunk writers, the builtin broker and its monitor) may run there;
`loop_cpus: shared` leaves it all to the kernel. Read from /proc while the run goes. And
loops that cannot have a CPU of their own are named as the cause of their send lag."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sixnines.agents.affinity import threads_of
from tests.faults.processes import Sixnines, command_line, descendants, pid_logging_to

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                       reason="placement needs a CPU to spare beside the loop"),
]

SCENARIO = """
name: cpus
systems: [{{name: tcp, driver: tcp, broker: builtin}}]
workload: {{rate: 20k, duration: 4s, warmup: 0s, message_size: 64}}
output: {output}
loop_cpus: {loop_cpus}
"""
STREAMING = {"SIXNINES_CHUNK_ROWS": "8192"}  # so the producer and consumer have writers


def start_run(tmp_path: Path, loop_cpus: str) -> Sixnines:
    scenario = tmp_path / "cpus.yaml"
    scenario.write_text(SCENARIO.format(output=tmp_path / "runs", loop_cpus=loop_cpus))
    return Sixnines("run", str(scenario), "--no-analysis", cwd=tmp_path, env=STREAMING)


def producer_log(tmp_path: Path, timeout_s: float = 60) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        logs = list((tmp_path / "runs").glob("cpus/*/*/agents/producer-0/agent.log"))
        if logs:
            return logs[0]
        time.sleep(0.1)
    raise AssertionError("the producer never started")


def producer_pid(run: Sixnines, log: Path, timeout_s: float = 60) -> int:
    deadline = time.monotonic() + timeout_s
    while (pid := pid_logging_to(log)) is None:
        assert run.process.poll() is None and time.monotonic() < deadline, run.stderr
        time.sleep(0.05)
    return pid


def cpus_of(tid: int) -> set[int]:
    try:
        return os.sched_getaffinity(tid)
    except OSError:  # ended meanwhile
        return set()


def manifest_of(tmp_path: Path) -> dict:
    return json.loads(next((tmp_path / "runs").glob("cpus/*/*/manifest.json")).read_text())


def misplaced(run: Sixnines, producer: int) -> tuple[int | None, dict[str, list[int]], int]:
    """The producer's loop CPU (None until it has one), what else of the run has a thread
    there (its own native threads included, its Python threads going with the loop), and
    how many other processes of the run have threads."""
    loop = cpus_of(producer)
    if len(loop) != 1:
        return None, {}, 0
    (loop_cpu,) = loop
    others = {run.process.pid, *descendants(run.process.pid)} - {producer}
    found = {f"producer thread {tid}": sorted(cpus) for tid in threads_of(producer)
             if loop_cpu in (cpus := cpus_of(tid)) and cpus != {loop_cpu}}
    found |= {command_line(pid): sorted(cpus_of(tid)) for pid in others
              for tid in threads_of(pid) if loop_cpu in cpus_of(tid)}
    return loop_cpu, found, len([pid for pid in others if threads_of(pid)])


@pytest.mark.timeout(180)
def test_the_producer_loop_has_its_cpu_and_nothing_else_of_the_run_runs_there(tmp_path):
    run = start_run(tmp_path, "dedicated")
    producer = producer_pid(run, producer_log(tmp_path))
    deadline = time.monotonic() + 60
    while True:  # placed as each process's `start` arrives, however busy the machine
        loop_cpu, trespassers, busy = misplaced(run, producer)
        # controller, broker, monitor, consumer, two writers (and guards)
        if loop_cpu is not None and not trespassers and busy >= 5:
            break
        assert run.process.poll() is None and time.monotonic() < deadline, \
            f"on the loop's CPU {loop_cpu}: {trespassers} ({busy} other processes)"
        time.sleep(0.02)
    code, _, stderr = run.finish()
    assert code == 0, stderr
    manifest = manifest_of(tmp_path)
    producer_entry = next(a for a in manifest["agents"] if a["id"] == "producer-0")
    assert producer_entry["loop_cpu"] == loop_cpu
    assert manifest["cpu_placement"] and f"CPU {loop_cpu}" in manifest["cpu_placement"][0]
    assert len(os.sched_getaffinity(0)) > 1  # this process was never touched


@pytest.mark.timeout(180)
def test_shared_loop_cpus_leave_placement_to_the_kernel(tmp_path):
    everywhere = os.sched_getaffinity(0)
    run = start_run(tmp_path, "shared")
    producer = producer_pid(run, producer_log(tmp_path))
    seen = set()
    while run.process.poll() is None:
        seen |= {frozenset(cpus_of(tid)) for tid in threads_of(producer)} - {frozenset()}
        time.sleep(0.05)
    code, _, stderr = run.finish()
    assert code == 0, stderr
    assert seen == {frozenset(everywhere)}
    manifest = manifest_of(tmp_path)
    assert not manifest.get("cpu_placement")
    assert all(agent.get("loop_cpu") is None for agent in manifest["agents"])


CROWDED = """
name: crowded
systems: [{name: tcp, driver: tcp, broker: builtin}]
workload: {rate: 5k, producers: 2, duration: 3s, warmup: 1s, message_size: 64}
output: out
"""


def on_one_cpu(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`sixnines ARGS` confined to one CPU, as under `taskset -c N`: two producers there
    have no CPU of their own."""
    cpu = min(os.sched_getaffinity(0))
    return subprocess.run([sys.executable, "-m", "sixnines", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=300,
                          preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))


def test_loops_without_a_cpu_of_their_own_are_named_as_the_cause_not_the_system(tmp_path):
    """Two producers on one CPU: validate says so, the run says so as it starts, and the
    send lag their loops show is the placement's in summary.json and on the console —
    never "system pushed back" (which the loops' low CPU share alone once read as)."""
    (tmp_path / "crowded.yaml").write_text(CROWDED)
    said = "host local: 2 busy loop(s) on 1 CPU(s): no CPU of their own"
    checked = on_one_cpu("validate", "crowded.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert f"CPUs: run 01-tcp: {said}" in checked.stdout + checked.stderr

    done = on_one_cpu("run", "crowded.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert f"! CPUs oversubscribed: {said}" in err.split("  ok")[0]  # as the run starts
    (run,) = json.loads(next((tmp_path / "out" / "crowded").glob("*/summary.json"))
                        .read_text())["runs"]
    assert any(said in note for note in run["cpu_placement"])
    placement = [w for w in run["warnings"] if w.startswith("CPUs oversubscribed: ")]
    assert len(placement) == 1 and said in placement[0], run["warnings"]
    assert not any(w.startswith(("system pushed back", "generator saturated"))
                   for w in run["warnings"]), run["warnings"]
    assert "system pushed back" not in err
    page = (next((tmp_path / "out" / "crowded").glob("*/report/index.html"))
            .read_text(encoding="utf-8"))
    assert "CPUs oversubscribed: " in page and said in page
