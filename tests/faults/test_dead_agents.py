"""An agent SIGKILLed mid-run keeps what it closed, and the analysis uses it.

Producers, consumers and requesters stream their records in chunks (SIXNINES_CHUNK_ROWS)
and the monitor rewrites its CPU samples as it goes, so a kill costs about a second of data: each
test measures that gap, from the kill to the last record kept. The run is partial; a dead
consumer's misses that may have arrived after its last chunk are `unknown`, apart from
loss (the builtin tcp relay loses nothing, so lost is 0); what receivers got from a dead
producer after its last chunk is sent and delivered, not unexpected. Every expected figure
is derived here from the files themselves, on the local launcher, on an SSH test-bed host
and through Kafka; the dead agent's hlog is checked as far as it was written, and `sixnines
report` shows delivered, lost and unknown apart. A requester is its own consumer when it
dies; a responder that dies leaves the requests it could not answer unknown, not lost.
Nothing the run started outlives it.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from sixnines.formats.chunks import read_index
from sixnines.formats.integrity import sha256_of
from sixnines.formats.layout import CHUNK_INDEX, chunk_name
from sixnines.orchestrator.controller import run_scenario
from sixnines.orchestrator.run.runner import RunSettings
from sixnines.orchestrator.scenario.model import load_scenario
from sixnines.spark_jobs.analyze import analyze_run
from tests.faults.processes import (
    Sixnines,
    command_line,
    parents,
    pid_logging_to,
    pids_logging_under,
    still_alive_after,
    writer_logging_to,
)
from tests.faults.support import sixnines
from tests.faults.test_interrupts import manifest_of, started
from tests.integration.support import RecordingView, execute, one_system, points
from tests.integration.testbed import Testbed, netns_pids, pids_in_namespaces, testbed

pytestmark = pytest.mark.integration

CHUNK_ROWS = str(1 << 19)
KILL_AFTER_S = 2.0  # from the start message: sending starts 0.5 s in
#: late enough for a few intervals of the hlog to be written (each once records 5 s past
#: its end are), which the analysis checks as far as they go
LATE_KILL_S = 10.0
GAP_LIMIT_S = 1.5  # the goal is about a second; the slack is this shared machine's
ONE_WAY = """
name: dies
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 1000, duration: 4s, warmup: 0s, producers: 2,
           consumers: 2, connections: 2}
"""
LONGER = ONE_WAY.replace("duration: 4s", "duration: 12s")
ROUND_TRIP = """
name: dies
systems: [{name: tcp, driver: tcp}]
workload: {mode: round-trip, message_size: 64, rate: 1000, duration: 12s, warmup: 0s,
           producers: 2}
"""
#: through a broker, so a responder agent relays the requests (drain short: after the
#: responder's death no reply comes, and the requesters wait that long for them)
RELAYED = one_system("nats", "{recipe: nats}",
                     "{mode: round-trip, message_size: 64, rate: 1000, duration: 6s, "
                     "warmup: 0s, drain: 1s, producers: 2}", "{subject: dies}", name="dies")
MESSAGE = ["producer_id", "seq"]


def run_killing(scenario: str, agent: str, run_dir: Path, after_s: float = KILL_AFTER_S,
                settings: RunSettings | None = None, process=pid_logging_to
                ) -> tuple[dict, int, int]:
    """A real run whose `agent` is SIGKILLed `after_s` after the start message (or another
    of its processes: `process`, found from its agent.log); (manifest, its pid, the
    instant of the kill on the agents' clock). Every process the run started is gone once
    it returns."""
    view, killed, started = RecordingView(), [], []

    def kill() -> None:
        while view.at_ns is None:
            time.sleep(0.01)
        started.extend(pids_logging_under(run_dir))
        time.sleep(after_s)
        pid = process(run_dir / "agents" / agent / "agent.log")
        killed.append((pid, time.perf_counter_ns()))
        os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    manifest = execute(points(scenario)[0], run_dir, view, settings)
    killer.join(5)
    assert killed, f"{agent} was not found to kill"
    assert started and still_alive_after(set(started), 2.0) == {}
    return manifest, *killed[0]


def entry(manifest: dict, agent: str) -> dict:
    return next(a for a in manifest["agents"] if a["id"] == agent)


def kept_records(folder: Path) -> pd.DataFrame:
    """The records of the chunks a dead agent's index lists, each checked against its
    line (size, sha256, rows)."""
    chunks = read_index(folder)
    assert chunks
    for chunk in chunks:
        path = folder / chunk["file"]
        assert (sha256_of(path), path.stat().st_size) == (chunk["sha256"], chunk["bytes"])
        assert pq.read_metadata(path).num_rows == chunk["rows"]
    return pq.read_table([folder / chunk["file"] for chunk in chunks]).to_pandas()


def records(run_dir: Path, agent: str) -> pd.DataFrame:
    """Every chunk of an agent that reported (each verified by the controller)."""
    return pq.read_table(sorted((run_dir / "agents" / agent).glob("messages-*.parquet"))
                         ).to_pandas()


def report_gap(role: str, killed_ns: int, last_ns: int, rows: int) -> float:
    gap_s = (killed_ns - last_ns) / 1e9
    print(f"\n{role} SIGKILLed: {rows:,} records kept, the last {gap_s:.3f} s before the kill")
    return gap_s


def logged_seconds(summary: dict, agent: str) -> int:
    """The seconds of a dead agent's hlog the analysis checked, from its problem line."""
    (line,) = [problem for problem in summary["problems"]
               if problem.startswith(f"agent {agent} (") and " died mid-run: " in problem]
    return int(re.search(r"latency\.hlog checked over its first ([\d,]+) s", line)[1])


def unknown_at(dead: pd.DataFrame, sent: pd.DataFrame) -> int:
    """The rule of docs/design.md, from the files: a message a dead consumer misses (over
    all its connections, which divide the messages) is unknown when sent at or after (its
    last kept receive time − the longest recv − sent of its receipts from that
    producer), or after the newest it kept from that producer."""
    lateness = (dead.recv_ns - dead.sent_ns).groupby(dead.producer_id).max()
    newest = dead.groupby("producer_id").sent_ns.max()
    horizon = pd.concat([dead.recv_ns.max() - lateness, newest], axis=1).min(axis=1)
    late = sent[sent.sent_ns >= sent.producer_id.map(horizon)]
    got = dead.drop_duplicates(MESSAGE).merge(late[MESSAGE], on=MESSAGE)
    return len(late) - len(got)


@pytest.fixture(scope="module")
def dead_consumer(tmp_path_factory) -> tuple[Path, dict, int]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SIXNINES_CHUNK_ROWS", CHUNK_ROWS)
        run_dir = tmp_path_factory.mktemp("dead-consumer") / "run"
        manifest, pid, killed_ns = run_killing(LONGER, "consumer-1", run_dir, LATE_KILL_S)
    assert entry(manifest, "consumer-1")["pid"] == pid
    return run_dir, manifest, killed_ns


def test_a_dead_consumer_s_kept_chunks_are_delivered_and_its_tail_unknown(dead_consumer,
                                                                         spark):
    run_dir, manifest, killed_ns = dead_consumer
    assert entry(manifest, "consumer-1")["status"] == "failed"
    dead = kept_records(run_dir / "agents" / "consumer-1")
    gap_s = report_gap("consumer", killed_ns, dead.recv_ns.max(), len(dead))
    assert 0 < gap_s < GAP_LIMIT_S
    sent = pd.concat([records(run_dir, f"producer-{n}") for n in (0, 1)])
    alive = records(run_dir, "consumer-0")
    unknown = unknown_at(dead, sent)
    summary = analyze_run(spark, run_dir)
    print(f"consumer SIGKILLed: {len(sent):,} sent, {unknown:,} deliveries unknown")
    assert summary["status"] == "partial"
    assert (summary["sent"], summary["received"]) == (len(sent), len(alive) + len(dead))
    assert 0 < summary["unknown"] == unknown < len(sent)
    assert summary["lost"] == 0
    assert summary["delivered"] + summary["unknown"] == 2 * len(sent)  # 2 consumers
    assert summary["hlog_agrees"] is True
    assert logged_seconds(summary, "consumer-1") >= 2  # its hlog too, as far as written


def test_sixnines_report_shows_delivered_lost_and_unknown_apart(dead_consumer, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(dead_consumer[0], run_dir, ignore=shutil.ignore_patterns("report"))
    sent = pd.concat([records(run_dir, f"producer-{n}") for n in (0, 1)])
    unknown = unknown_at(kept_records(run_dir / "agents" / "consumer-1"), sent)
    done = sixnines("report", run_dir)
    assert done.returncode == 1, done.stderr  # a partial run
    console = " ".join(done.stderr.split())  # the tables, however their titles wrapped
    assert (f"delivered {2 * len(sent) - unknown:,} lost 0 unknown {unknown:,} "
            "duplicated 0") in console


def test_a_chunk_failing_its_index_checksum_is_never_analysed(dead_consumer, tmp_path,
                                                              spark):
    run_dir = tmp_path / "run"
    shutil.copytree(dead_consumer[0], run_dir, ignore=shutil.ignore_patterns("report"))
    chunk = run_dir / "agents" / "consumer-1" / read_index(
        run_dir / "agents" / "consumer-1")[0]["file"]
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(data)
    summary = analyze_run(spark, run_dir)
    assert summary["status"] == "corrupt" and "sent" not in summary
    assert any(problem.startswith(f"{chunk}: content does not match its sha256 in its chunk "
                                  "index") for problem in summary["problems"])


def test_a_chunk_its_index_does_not_list_is_named_and_ignored(dead_consumer, tmp_path,
                                                              spark):
    run_dir = tmp_path / "run"
    shutil.copytree(dead_consumer[0], run_dir, ignore=shutil.ignore_patterns("report"))
    folder = run_dir / "agents" / "consumer-1"
    listed = read_index(folder)
    stray = folder / chunk_name(len(listed) + 1)  # renamed into place, its line unwritten
    shutil.copyfile(folder / listed[0]["file"], stray)
    summary = analyze_run(spark, run_dir)
    assert summary["received"] == len(records(run_dir, "consumer-0")) + len(
        kept_records(folder))
    assert (f"agent consumer-1: {stray.name} is not in its chunk index (closed as it died): "
            "not analysed") in summary["problems"]


def test_a_consumer_whose_writer_was_killed_leaves_what_it_missed_unknown(tmp_path, spark,
                                                                         monkeypatch):
    """The consumer's loop ends when its writer process is gone ("records from then on are
    not kept"): it reports, but its records end there. What it missed after them is not
    the system's loss: unknown, by the horizon of a dead consumer; its hlog is checked as
    far as it was written."""
    monkeypatch.setenv("SIXNINES_CHUNK_ROWS", CHUNK_ROWS)
    run_dir = tmp_path / "run"
    manifest, _, killed_ns = run_killing(LONGER, "consumer-1", run_dir, LATE_KILL_S,
                                         process=writer_logging_to)
    cut = entry(manifest, "consumer-1")
    assert cut["status"] == "partial"
    assert cut["cut_short"].startswith("WriterGone: the writer process ended during the run")
    kept = records(run_dir, "consumer-1")
    gap_s = report_gap("consumer's writer", killed_ns, kept.recv_ns.max(), len(kept))
    assert 0 < gap_s < GAP_LIMIT_S
    sent = pd.concat([records(run_dir, f"producer-{n}") for n in (0, 1)])
    alive = records(run_dir, "consumer-0")
    unknown = unknown_at(kept, sent)
    summary = analyze_run(spark, run_dir)
    print(f"consumer's writer SIGKILLed: {len(sent):,} sent, {len(kept):,} kept, "
          f"{unknown:,} unknown")
    assert summary["status"] == "partial"
    assert (summary["sent"], summary["received"]) == (len(sent), len(alive) + len(kept))
    assert (summary["lost"], summary["unknown"]) == (0, unknown)
    assert 0 < unknown < len(sent)
    assert summary["delivered"] + summary["unknown"] == 2 * len(sent)
    assert summary["hlog_agrees"] is True
    assert any(problem.startswith("agent consumer-1 (consumer): its records end before the "
                                  "run did (WriterGone: ") for problem in summary["problems"])


def test_a_dead_producer_s_later_messages_are_delivered_not_unexpected(tmp_path, spark,
                                                                      monkeypatch):
    monkeypatch.setenv("SIXNINES_CHUNK_ROWS", CHUNK_ROWS)
    run_dir = tmp_path / "run"
    manifest, _, killed_ns = run_killing(LONGER, "producer-1", run_dir, LATE_KILL_S)
    dead = entry(manifest, "producer-1")
    assert dead["status"] == "failed"
    kept = kept_records(run_dir / "agents" / "producer-1")
    gap_s = report_gap("producer", killed_ns, kept.sent_ns.max(), len(kept))
    assert 0 < gap_s < GAP_LIMIT_S
    got = pd.concat([records(run_dir, f"consumer-{n}") for n in (0, 1)])
    ids = range(dead["first_id"], dead["first_id"] + 2)
    later = got[got.producer_id.isin(ids)].drop_duplicates(MESSAGE).merge(
        kept[MESSAGE], on=MESSAGE, how="left", indicator=True).query("_merge == 'left_only'")
    sent = len(records(run_dir, "producer-0")) + len(kept) + len(later)
    summary = analyze_run(spark, run_dir)
    print(f"producer SIGKILLed: {len(later):,} of its messages known only to receivers")
    assert len(later) > 0  # it sent on after its last chunk
    assert summary["status"] == "partial"
    assert (summary["sent"], summary["received"]) == (sent, len(got))
    assert (summary["delivered"], summary["lost"], summary["unknown"],
            summary["unexpected"], summary["duplicated"]) == (2 * sent, 0, 0, 0, 0)
    assert summary["hlog_agrees"] is True
    assert logged_seconds(summary, "producer-1") >= 2  # its hlog too, as far as written


def test_a_dead_monitor_leaves_the_run_partial_and_its_samples_so_far(tmp_path, spark,
                                                                     monkeypatch):
    monkeypatch.setenv("SIXNINES_CHUNK_ROWS", CHUNK_ROWS)
    run_dir = tmp_path / "run"
    settings = RunSettings("test", cpu_sample_ns=100_000_000)
    manifest, _, killed_ns = run_killing(ONE_WAY, "monitor", run_dir, settings=settings)
    assert manifest["monitor"]["status"] == "failed"
    assert manifest["status"] == "partial"
    samples = pq.read_table(run_dir / "agents" / "monitor" / "cpu.parquet").to_pandas()
    gap_s = report_gap("monitor", killed_ns, samples.t_ns.max(), len(samples))
    assert 0 < gap_s < GAP_LIMIT_S
    sent = sum(len(records(run_dir, f"producer-{n}")) for n in (0, 1))
    summary = analyze_run(spark, run_dir)
    assert summary["status"] == "partial"
    assert any(problem.startswith("the broker CPU monitor died during the run")
               for problem in summary["problems"])
    assert (summary["sent"], summary["delivered"], summary["lost"], summary["unknown"]) == (
        sent, 2 * sent, 0, 0)
    assert summary["cpu"]["broker"] is not None  # from the samples it kept


def _remote_monitor(bed: Testbed) -> int:
    """The pid of the monitor on the bed's one host (the only agent process there: the
    run's agents are on this machine)."""
    (pid,) = [pid for pid in netns_pids(bed.prefix)[bed.namespace(bed.hosts[0])]
              if "-m sixnines.agents" in command_line(pid)]
    return pid


def test_a_monitor_killed_on_an_ssh_host_keeps_its_samples_through_collect(tmp_path):
    """The broker and its monitor on an SSH host, the monitor SIGKILLed mid-run and then
    the controller: the host holds only the cpu.parquet the monitor kept rewriting (no
    done.json, no chunk index). `sixnines collect` takes it for the monitor's, fetches it
    (and removes the host's copy, the same byte for byte), and `sixnines report` figures
    the broker's CPU from it."""
    with testbed(1) as bed:
        path = tmp_path / "s.yaml"
        path.write_text(LONGER.replace("name: dies", "name: faults").replace(
            "name: tcp,", "name: sut,") + f"inventory: {bed.inventory}\n"
            "placement: {broker: h1}\ncpu_sample: 100ms\n")
        controller = Sixnines("run", str(path), "--output", "out", "--no-analysis",
                              cwd=tmp_path)
        try:
            run_dir = started(tmp_path, controller)
            remote = Path(manifest_of(run_dir)["monitor"]["files_at"]["dir"])
            deadline = time.monotonic() + 60
            while not (remote / "cpu.parquet").is_file() or \
                    pq.read_metadata(remote / "cpu.parquet").num_rows < 5:
                assert time.monotonic() < deadline, controller.stderr
                time.sleep(0.1)
            os.kill(_remote_monitor(bed), signal.SIGKILL)
            killed_ns = time.perf_counter_ns()  # one machine: the host's clock too
            time.sleep(1)
            tree = controller.snapshot()
            controller.process.kill()
            controller.finish()
            listeners = {int((bed.dir / host.name / "sshd.pid").read_text())
                         for host in bed.hosts}
            assert still_alive_after(
                tree | set(pids_in_namespaces(bed.netns_inodes)) - listeners, 5.0) == {}
        finally:
            controller.process.kill()
        try:
            assert sorted(child.name for child in remote.iterdir()) == ["cpu.parquet"]
            left = (remote / "cpu.parquet").read_bytes()
            collect = sixnines("collect", run_dir)
            assert collect.returncode == 0, collect.stderr
            assert "monitor" in collect.stderr, collect.stderr
            assert not remote.exists()
        finally:  # the run's folders on the host (collect removes only the files)
            shutil.rmtree(remote.parents[2], ignore_errors=True)
    kept = run_dir / "agents" / "monitor" / "cpu.parquet"
    assert kept.read_bytes() == left
    monitor = json.loads((run_dir / "manifest.json").read_text())["monitor"]
    assert monitor["status"] == "missing" and monitor.get("files_at") is None
    assert any("the samples its cpu.parquet kept up to then are analysed" in note
               for note in monitor["notes"]), monitor
    samples = pq.read_table(kept).to_pandas()
    gap_s = report_gap("monitor on an SSH host", killed_ns, samples.t_ns.max(), len(samples))
    assert 0 < gap_s < GAP_LIMIT_S
    report = sixnines("report", run_dir)
    assert report.returncode == 1, report.stderr  # partial: its controller died
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["cpu"]["broker"] is not None, summary["cpu"]  # from the samples kept


def test_a_dead_kafka_consumer_of_several_partitions_is_unknown_not_lost(tmp_path, spark,
                                                                        monkeypatch):
    """Kafka with several partitions hands a consumer its partitions' messages in its own
    interleaving (each sender writes one partition, so order holds only per producer):
    the horizon rule, per producer and on time, not sequence, still finds nothing lost.
    (Reordering within a producer's stream: tests/test_delivery.py.)"""
    monkeypatch.setenv("SIXNINES_CHUNK_ROWS", CHUNK_ROWS)
    workload = ("{message_size: 64, rate: 1000, duration: 4s, warmup: 0s, drain: 5s, "
                "producers: 2, consumers: 2}")
    scenario = one_system("kafka", "{recipe: kafka-noida}", workload,
                          "{client: confluent, partitions: 4}", name="dies")
    run_dir = tmp_path / "run"
    _, _, killed_ns = run_killing(scenario, "consumer-1", run_dir, 3.0)
    dead = kept_records(run_dir / "agents" / "consumer-1")
    report_gap("kafka consumer", killed_ns, dead.recv_ns.max(), len(dead))
    sent = pd.concat([records(run_dir, f"producer-{n}") for n in (0, 1)])
    unknown = unknown_at(dead, sent)
    summary = analyze_run(spark, run_dir)
    assert summary["status"] == "partial"
    assert (summary["sent"], summary["lost"], summary["unknown"]) == (len(sent), 0, unknown)


def requests_and_replies(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A requester's rows split: its requests (a sender's rows) and its replies (with a
    receive time)."""
    replied = rows.recv_ns.notna()
    return rows[~replied], rows[replied]


def unanswered(requests: pd.DataFrame, replies: pd.DataFrame, alive_ns: int) -> tuple[int, int]:
    """(lost, unknown) of a requester's requests without a reply, by the rule of
    docs/design.md: unknown when sent at or after (`alive_ns`, the last instant the far end
    of its stream is known alive − the longest recv − sent of its replies on that
    connection), lost before."""
    lateness = (replies.recv_ns - replies.sent_ns).groupby(replies.producer_id).max()
    missed = requests.merge(replies[MESSAGE].drop_duplicates(), on=MESSAGE, how="left",
                            indicator=True).query("_merge == 'left_only'")
    late = missed.sent_ns >= alive_ns - missed.producer_id.map(lateness)
    return int((~late).sum()), int(late.sum())


def test_a_dead_requester_keeps_its_chunks_and_its_tail_is_unknown(tmp_path, spark,
                                                                  monkeypatch):
    """A requester is its own consumer: killed, its kept replies are delivered, the replies
    it misses that may have come after its last chunk unknown; a reply whose request chunk
    died with it still counts as sent (a dead producer's rule), never as unexpected."""
    monkeypatch.setenv("SIXNINES_CHUNK_ROWS", CHUNK_ROWS)
    run_dir = tmp_path / "run"
    manifest, _, killed_ns = run_killing(ROUND_TRIP, "requester-1", run_dir, LATE_KILL_S)
    assert entry(manifest, "requester-1")["status"] == "failed"
    summary = check_dead_requester(spark, run_dir, killed_ns, "requester")
    assert logged_seconds(summary, "requester-1") >= 2  # its hlog too, as far as written


def check_dead_requester(spark, run_dir: Path, killed_ns: int, label: str) -> dict:
    """requester-1 of `run_dir` was SIGKILLed at `killed_ns`: its kept chunks reach to
    about a second before, and the analysis counts its requests as the rules say; the
    run's summary."""
    requests, replies = requests_and_replies(kept_records(run_dir / "agents" / "requester-1"))
    gap_s = report_gap(label, killed_ns, replies.recv_ns.max(), len(replies))
    assert 0 < gap_s < GAP_LIMIT_S
    seen = replies[MESSAGE].merge(requests[MESSAGE], on=MESSAGE, how="left",
                                  indicator=True).query("_merge == 'left_only'")
    requests = pd.concat([requests, replies.merge(seen[MESSAGE], on=MESSAGE)])
    lost, unknown = unanswered(requests, replies, replies.recv_ns.max())
    alive_requests, alive_replies = requests_and_replies(records(run_dir, "requester-0"))
    summary = analyze_run(spark, run_dir)
    print(f"{label} SIGKILLed: {len(requests):,} requests kept, {len(seen):,} known only "
          f"from their replies, {unknown:,} unknown")
    assert summary["status"] == "partial"
    assert (summary["sent"], summary["received"]) == (len(alive_requests) + len(requests),
                                                      len(alive_replies) + len(replies))
    assert (summary["lost"], summary["unknown"]) == (lost, unknown) == (0, unknown)
    # its request chunks close on the schedule, its reply chunks by time just after (as a
    # rule a few replies later), so requests past its reply horizon (unknown) are few or
    # none; those sent after its last request chunk are known from a reply kept or not at all
    assert summary["delivered"] + unknown == summary["sent"]
    assert summary["duplicated"] == summary["unexpected"] == 0
    assert summary["hlog_agrees"] is True
    return summary


def test_a_dead_responder_leaves_the_requests_after_it_unknown_not_lost(tmp_path, spark,
                                                                       monkeypatch):
    monkeypatch.setenv("SIXNINES_CHUNK_ROWS", CHUNK_ROWS)
    run_dir = tmp_path / "run"
    manifest, _, killed_ns = run_killing(RELAYED, "responder-0", run_dir, 3.0)
    assert entry(manifest, "responder-0")["status"] == "failed"
    assert manifest["status"] == "partial"
    lost = unknown = sent = after_death = 0
    for requester in ("requester-0", "requester-1"):
        assert entry(manifest, requester)["status"] == "ok"
        requests, replies = requests_and_replies(records(run_dir, requester))
        counts = unanswered(requests, replies, replies.sent_ns.max())
        lost, unknown = lost + counts[0], unknown + counts[1]
        sent += len(requests)
        after_death += int((requests.sent_ns > killed_ns).sum())  # one clock: this host's
    summary = analyze_run(spark, run_dir)
    print(f"responder SIGKILLed: {sent:,} requests, {unknown:,} unknown, {after_death:,} "
          "of them sent after its death")
    assert summary["status"] == "partial"
    assert summary["sent"] == sent
    assert (summary["lost"], summary["unknown"]) == (lost, unknown)
    assert unknown >= after_death > 0  # whatever the responder could not answer
    assert summary["delivered"] + lost + unknown == sent
    assert any(problem.startswith("agent responder-0 (responder, status failed) died "
                                  "mid-run: requests it may have received after the latest "
                                  "one it answered are unknown")
               for problem in summary["problems"])


def kill_agent_writing(name: str, deadline_s: float = 120.0) -> tuple[int, int] | None:
    """SIGKILL the agent whose writer process holds a file ending in `name` open, half a
    second after that file has a line (its first chunk closed); (pid, the instant of the
    kill)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for fd in Path("/proc").glob("[0-9]*/fd/*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.endswith(name) and read_index(Path(target).parent):
                agent = parents()[int(fd.parent.parent.name)]
                time.sleep(0.5)
                killed_ns = time.perf_counter_ns()
                os.kill(agent, signal.SIGKILL)
                return agent, killed_ns
        time.sleep(0.05)
    return None


def run_on_testbed_killing(tmp_path: Path, scenario: str, agent: str) -> tuple[Path, int]:
    """A real run with agents on two SSH hosts of a test bed whose `agent` (on h3) is
    SIGKILLed once its first chunk has closed; (the run's directory, the instant of the
    kill). No process is left on any host, the dead agent's kept chunks were fetched and
    every remote copy removed."""
    with testbed(3) as bed:
        path = tmp_path / "scenario.yaml"
        path.write_text(scenario + f"inventory: {bed.inventory}\noutput: {tmp_path / 'runs'}\n"
                        "placement: {broker: h1, agents: [h2, h3]}\n")
        killed: list[tuple[int, int] | None] = []
        killer = threading.Thread(
            target=lambda: killed.append(kill_agent_writing(f"/agents/{agent}/{CHUNK_INDEX}")),
            daemon=True)
        killer.start()
        outcome = run_scenario(load_scenario(path), path, output=None, spark_master=None,
                               console=Console(file=io.StringIO()))
        killer.join(5)
        listeners = {int((bed.dir / host.name / "sshd.pid").read_text()) for host in bed.hosts}
        assert still_alive_after(set(pids_in_namespaces(bed.netns_inodes)) - listeners,
                                 2.0) == {}
    assert killed and killed[0], f"{agent} was not found to kill"
    (run_dir,) = outcome.results_dir.glob("01-*")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert entry(manifest, agent)["status"] == "failed"
    assert entry(manifest, agent)["host"] == "h3"
    remote_runs = Path("/var/tmp/sixnines/runs/dies") / outcome.results_dir.name
    assert not list(remote_runs.glob("*/agents/*"))  # each copy removed once fetched whole
    return run_dir, killed[0][1]


def test_a_consumer_killed_on_an_ssh_host_has_its_chunks_fetched_and_analysed(
        tmp_path, spark, monkeypatch):
    monkeypatch.setenv("SIXNINES_CHUNK_ROWS", CHUNK_ROWS)  # passed on to remote agents
    run_dir, killed_ns = run_on_testbed_killing(tmp_path, ONE_WAY, "consumer-1")
    dead = kept_records(run_dir / "agents" / "consumer-1")  # fetched from h3
    gap_s = report_gap("consumer on an SSH host", killed_ns, dead.recv_ns.max(), len(dead))
    assert 0 < gap_s < GAP_LIMIT_S
    sent = pd.concat([records(run_dir, f"producer-{n}") for n in (0, 1)])
    summary = analyze_run(spark, run_dir)
    assert summary["status"] == "partial"
    assert (summary["sent"], summary["lost"]) == (len(sent), 0)
    assert 0 < summary["unknown"] == unknown_at(dead, sent)


def test_a_requester_killed_on_an_ssh_host_has_its_chunks_fetched_and_analysed(
        tmp_path, spark, monkeypatch):
    monkeypatch.setenv("SIXNINES_CHUNK_ROWS", CHUNK_ROWS)  # passed on to remote agents
    run_dir, killed_ns = run_on_testbed_killing(tmp_path, ROUND_TRIP, "requester-1")
    check_dead_requester(spark, run_dir, killed_ns, "requester on an SSH host")
