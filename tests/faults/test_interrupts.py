"""Interrupts and deaths of the controller, with real processes: SIGTERM behaves as Ctrl-C,
repeated Ctrl-C never discards data on disk, and after SIGKILL every process the controller
started is gone within 5 s and `sixnines report` analyses what was recorded. The same during
the analysis: the Spark job, its JVM and its Python workers end with the controller."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sixnines.formats.chunks import message_files, read_index
from sixnines.formats.layout import LOCK_FILE
from sixnines.spark_jobs.analyze import analyze_run
from tests.faults.processes import Sixnines, command_line, pid_logging_to, still_alive_after

pytestmark = pytest.mark.integration

BOUND_S = 5.0  # every process gone this long after the controller
SIDECAR = "sixnines.spark_jobs.sidecar"


def scenario(tmp_path: Path, broker: str = "builtin", driver: str = "tcp",
             rate: str = "2000", duration: str = "60s", consumers: int = 1) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"""
name: faults
systems: [{{name: sut, driver: {driver}, broker: {broker}}}]
workload: {{message_size: 64, rate: {rate}, duration: {duration}, warmup: 0s, drain: 2s,
           consumers: {consumers}}}
""")
    return path


def run_dir_of(tmp_path: Path) -> Path:
    return next((tmp_path / "out").glob("faults/*/01-sut"))


def results_of(run_dir: Path) -> str:
    """The results directory as the controller names it (relative to where it ran)."""
    return str(Path(*run_dir.parent.parts[-3:]))


def started(tmp_path: Path, controller: Sixnines, timeout_s: float = 90) -> Path:
    """The run directory, once its agents have been told to start (the manifest says)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for manifest in (tmp_path / "out").glob("faults/*/01-sut/manifest.json"):
            try:
                if "started_at_ns" in json.loads(manifest.read_text()):
                    return manifest.parent
            except ValueError:
                pass
        assert controller.process.poll() is None, controller.stderr
        time.sleep(0.1)
    raise AssertionError(f"the run did not start:\n{controller.stderr}")


def recording(run_dir: Path, agents: tuple[str, ...] = ("producer-0", "consumer-0"),
              chunks: int = 1, timeout_s: float = 90) -> dict[str, int]:
    """Once each of `agents` has closed `chunks` chunks (its index lists them: a second of
    records each at most): the rows each index lists then. What "mid-run" means to a test,
    however busy the machine: the agents are measuring, and something is on disk."""
    deadline = time.monotonic() + timeout_s
    while True:
        listed = {agent: read_index(run_dir / "agents" / agent) for agent in agents}
        if all(len(index) >= chunks for index in listed.values()):
            return {agent: sum(chunk["rows"] for chunk in index)
                    for agent, index in listed.items()}
        assert time.monotonic() < deadline, f"no {chunks} chunk(s) within {timeout_s} s: " \
                                            f"{ {a: len(i) for a, i in listed.items()} }"
        time.sleep(0.1)


def manifest_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def rows(path: Path) -> int:
    return pq.ParquetFile(path).metadata.num_rows


def assert_data_on_disk_accounted(run_dir: Path) -> None:
    """Every agent whose files are on disk is in the manifest with them, verified, and
    with the counts its files hold."""
    manifest = manifest_of(run_dir)
    for entry in manifest["agents"]:
        messages = message_files(run_dir / "agents" / entry["id"])
        if not messages:
            continue
        assert entry["status"] in ("ok", "partial"), entry
        assert all(entry["artifacts"][path.name]["verified"] for path in messages), entry
        count = sum(rows(path) for path in messages)
        assert count > 0
        assert count == (entry["sent"] if entry["role"] == "producer" else entry["received"])


def test_sigterm_mid_run_behaves_as_ctrl_c(tmp_path):
    controller = Sixnines("run", str(scenario(tmp_path)), "--output", "out", cwd=tmp_path)
    run_dir = started(tmp_path, controller)
    recording(run_dir)
    tree = controller.snapshot()
    assert any(SIDECAR in command_line(pid) for pid in tree)  # the run's analysis sidecar
    controller.process.send_signal(signal.SIGTERM)
    code, out, err = controller.finish()
    assert code == 143, err
    assert "terminated (SIGTERM)" in err and f"sixnines report {results_of(run_dir)}" in err
    assert "Traceback" not in err
    assert out.strip() == results_of(run_dir)
    manifest = manifest_of(run_dir)
    assert manifest["status"] == "partial"
    assert "terminated (SIGTERM)" in manifest["problems"]
    assert_data_on_disk_accounted(run_dir)
    assert {e["role"] for e in manifest["agents"] if e["status"] != "missing"} == {
        "producer", "consumer"}
    assert still_alive_after(tree, 2) == {}


def messages(folder: Path) -> set[tuple[int, int]]:
    """(producer id, seq) of every record of an agent's files (its chunks)."""
    table = pq.read_table(message_files(folder), columns=["producer_id", "seq"])
    return set(zip(table["producer_id"].to_pylist(), table["seq"].to_pylist(), strict=True))


@pytest.mark.parametrize(("broker", "how"), [
    ("builtin", signal.SIGINT), ("builtin", signal.SIGTERM),
    ("{recipe: rabbitmq}", signal.SIGTERM)], ids=["ctrl-c", "sigterm", "rabbitmq-sigterm"])
def test_an_interrupt_loses_only_messages_not_yet_sent(tmp_path, spark, broker, how):
    """The producers stop first; the consumers are then told how many were sent and take
    what was still on its way: each holds every message sent, and the analysis counts
    none lost and none unknown."""
    driver = {"builtin": "tcp"}.get(broker, broker[9:-1])
    controller = Sixnines("run", str(scenario(tmp_path, broker, driver, consumers=2)),
                          "--output", "out", cwd=tmp_path)
    run_dir = started(tmp_path, controller, timeout_s=180)
    listed = recording(run_dir, ("producer-0",))
    tree = controller.snapshot()
    controller.process.send_signal(how)
    code, _, err = controller.finish()
    assert code == {signal.SIGINT: 130, signal.SIGTERM: 143}[how], err
    assert "Traceback" not in err
    assert still_alive_after(tree, BOUND_S) == {}
    manifest = manifest_of(run_dir)
    assert manifest["status"] == "partial"
    agents = run_dir / "agents"
    sent = messages(agents / "producer-0")
    assert len(sent) >= listed["producer-0"] > 0
    for consumer in ("consumer-0", "consumer-1"):
        entry = next(e for e in manifest["agents"] if e["id"] == consumer)
        assert (entry["status"], entry.get("cut_short")) == ("ok", None), entry
        assert messages(agents / consumer) == sent  # each got every message sent
    summary = analyze_run(spark, run_dir)
    print(f"{broker} {how.name}: {len(sent):,} sent, summary {summary['delivered']:,} "
          f"delivered, {summary['lost']} lost, {summary['unknown']} unknown")
    assert (summary["sent"], summary["delivered"], summary["lost"], summary["unknown"]) == (
        len(sent), 2 * len(sent), 0, 0)


def test_ctrl_c_three_times_keeps_every_file_on_disk(tmp_path, spark):
    """The second and third Ctrl-C land while the run winds down: they may shorten the
    waiting, never turn recorded data into "missing" agents. The consumer is then stopped
    without waiting for what was on its way: that is unknown, never lost."""
    controller = Sixnines("run", str(scenario(tmp_path, rate="20k")), "--output", "out",
                          cwd=tmp_path)
    run_dir = started(tmp_path, controller)
    recording(run_dir)
    tree = controller.snapshot()
    for _ in range(3):
        controller.process.send_signal(signal.SIGINT)
        time.sleep(0.2)
    code, _, err = controller.finish()
    assert code == 130, err
    assert "Traceback" not in err and f"sixnines report {results_of(run_dir)}" in err
    manifest = manifest_of(run_dir)
    assert manifest["status"] == "partial"
    assert_data_on_disk_accounted(run_dir)
    consumer = next(e for e in manifest["agents"] if e["role"] == "consumer")
    assert consumer["received"] > 0
    assert still_alive_after(tree, 2) == {}
    summary = analyze_run(spark, run_dir)
    sent = len(messages(run_dir / "agents" / "producer-0"))
    print(f"Ctrl-C three times: {sent:,} sent, {summary['unknown']:,} unknown")
    assert (summary["sent"], summary["lost"]) == (sent, 0)
    assert summary["delivered"] + summary["unknown"] == sent
    assert summary["delivered"] == len(messages(run_dir / "agents" / "consumer-0"))
    assert summary["hlog_agrees"] is True


def with_environment(name: str, value: str) -> set[int]:
    """Processes whose environment sets `name` to `value` (daemons that left the tree)."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"{name}={value}".encode() in environ and entry.name.isdigit():
            found.add(int(entry.name))
    return found


@pytest.mark.parametrize("broker", ["builtin", "{recipe: redis}", "{recipe: rabbitmq}"])
def test_sigkill_of_the_controller_leaves_nothing_running_and_report_recovers(
        tmp_path, broker):
    """RabbitMQ's epmd leaves the broker's process group (it daemonises): the recipe's stop
    command, which the guard holds, must still run."""
    driver = {"builtin": "tcp"}.get(broker, broker[9:-1])
    controller = Sixnines("run", str(scenario(tmp_path, broker, driver)), "--output", "out",
                          cwd=tmp_path)
    run_dir = started(tmp_path, controller, timeout_s=180)
    recording(run_dir)
    tree = controller.snapshot()
    assert len(tree) >= 4  # guard, broker, producer, consumer (and a monitor)
    assert any(SIDECAR in command_line(pid) for pid in tree)
    ports = manifest_of(run_dir)["broker"].get("ports", {})
    if "epmd" in ports:
        tree |= with_environment("ERL_EPMD_PORT", str(ports["epmd"]))
        assert any("epmd" in command_line(pid) for pid in tree)
    controller.process.kill()
    controller.finish()
    assert still_alive_after(tree, BOUND_S) == {}
    assert manifest_of(run_dir)["status"] == "running"  # what the controller left

    report = Sixnines("report", str(run_dir.parent), cwd=tmp_path)
    code, _, err = report.finish(timeout_s=300)
    assert code == 1, err  # partial
    assert "recovered from the files its agents wrote" in err and "Traceback" not in err
    manifest = manifest_of(run_dir)
    assert manifest["status"] == "partial"
    assert any("controller stopped before the run ended" in p for p in manifest["problems"])
    assert_data_on_disk_accounted(run_dir)
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["status"] == "partial"
    assert summary["received"] > 0 and summary["latency_us"]["count"] > 0
    assert not (run_dir / "manifest.json.partial").exists()
    # its agents stopped together when their input closed or the guard's SIGTERM came,
    # whichever they noticed first: what the consumer had not yet received when it stopped
    # is unknown, never lost
    consumer = next(e for e in manifest["agents"] if e["role"] == "consumer")
    assert consumer["cut_short"] in ("stopped early (control channel closed)",
                                     "stopped early (terminated (SIGTERM))")
    print(f"{broker}: controller SIGKILLed, {summary['sent']:,} sent, "
          f"{summary['unknown']:,} unknown")
    assert summary["lost"] == 0
    assert summary["delivered"] + summary["unknown"] == summary["sent"]


def test_the_controller_killed_with_its_agents_leaves_their_chunks_to_analyse(tmp_path):
    """A machine crash: the controller and its agents SIGKILLed at once write no
    done.json; `sixnines report` analyses the chunks each agent's index lists (their
    writers finish them), and counts nothing lost."""
    controller = Sixnines("run", str(scenario(tmp_path)), "--output", "out", cwd=tmp_path)
    run_dir = started(tmp_path, controller)
    listed = recording(run_dir, chunks=2)
    tree = controller.snapshot()
    agents = {name: pid_logging_to(run_dir / "agents" / name / "agent.log")
              for name in ("producer-0", "consumer-0")}
    for pid in (controller.process.pid, *agents.values()):
        os.kill(pid, signal.SIGKILL)
    controller.finish()
    assert still_alive_after(tree, BOUND_S) == {}
    assert (run_dir / LOCK_FILE).is_file()  # left by the dead controller: it binds nobody
    folders = {name: run_dir / "agents" / name for name in agents}
    assert not any((folder / "done.json").exists() for folder in folders.values())
    chunks = {name: len(read_index(folder)) for name, folder in folders.items()}
    sent, got = (messages(folders[name]) for name in agents)
    assert min(chunks.values()) >= 2 and len(sent) >= listed["producer-0"] > 0

    report = Sixnines("report", results_of(run_dir), cwd=tmp_path)
    code, _, err = report.finish(timeout_s=300)
    assert code == 1, err  # partial
    assert "Traceback" not in err
    manifest = manifest_of(run_dir)
    assert manifest["status"] == "partial"
    for name, count in chunks.items():
        assert (f"{name} on host local: wrote no account of its run (done.json); the "
                f"{count:,} chunks its index lists are analysed") in manifest["problems"]
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    sent |= got  # what the consumer kept of the producer's last second counts as sent
    print(f"killed together: {len(sent):,} sent, {len(got):,} received, "
          f"{summary['unknown']:,} unknown")
    assert summary["status"] == "partial"
    assert (summary["sent"], summary["received"], summary["lost"]) == (len(sent), len(got), 0)
    assert summary["delivered"] + summary["unknown"] == len(sent)


def test_report_and_collect_refuse_a_run_still_going(tmp_path):
    """While its controller lives a run is its own: `report` and `collect` say so in one
    line (exit 2) and leave its manifest alone; once it has ended, `report` takes it."""
    controller = Sixnines("run", str(scenario(tmp_path)), "--output", "out", cwd=tmp_path)
    run_dir = started(tmp_path, controller)
    for command in ("report", "collect"):
        for target in (results_of(run_dir), str(run_dir.relative_to(tmp_path))):
            done = subprocess.run([sys.executable, "-m", "sixnines", command, target],
                                  cwd=tmp_path, capture_output=True, text=True, timeout=120)
            assert done.returncode == 2, done.stderr
            assert done.stderr.strip() == (
                f"{run_dir.relative_to(tmp_path)}: the run is still going: its controller "
                f"(pid {controller.process.pid}) holds it until the run ends; try again "
                "then"), done.stderr
    assert manifest_of(run_dir)["status"] == "running"
    assert not (run_dir / "report").exists() or not any((run_dir / "report").iterdir())
    controller.process.send_signal(signal.SIGTERM)
    code, _, err = controller.finish()
    assert code == 143, err
    assert manifest_of(run_dir)["status"] == "partial"
    assert not (run_dir / LOCK_FILE).exists()
    report = Sixnines("report", results_of(run_dir), cwd=tmp_path)
    code, _, err = report.finish(timeout_s=300)
    assert code == 1 and "Traceback" not in err, err  # partial: it was interrupted


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["ctrl-c", "sigterm", "sigkill"])
def test_an_interrupted_analysis_dies_with_the_controller(tmp_path, how):
    controller = Sixnines("run", str(scenario(tmp_path, duration="1s")), "--output", "out",
                          cwd=tmp_path, env={"SIXNINES_FOLLOW": "0"})  # Spark after the run
    controller.wait_for("analysing", timeout_s=120)
    controller.wait_for_descendant("java", timeout_s=60)
    tree = controller.snapshot()
    os.kill(controller.process.pid, how)
    code, out, err = controller.finish()
    assert still_alive_after(tree, BOUND_S) == {}
    if how == signal.SIGKILL:
        return
    results = results_of(run_dir_of(tmp_path))
    assert code == {signal.SIGINT: 130, signal.SIGTERM: 143}[how], err
    assert "during the analysis" in err and f"sixnines report {results}" in err
    assert "Traceback" not in err
    assert out.strip() == str(results)
    assert manifest_of(run_dir_of(tmp_path))["status"] == "ok"  # recorded whole
