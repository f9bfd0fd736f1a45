"""The hot path (agents/streams.py) against a real TCP relay in its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import sixnines.agents.streams as streams
from sixnines.agents.recording import RECEIPT_DTYPES, Columns, PiecePool, Recorder
from sixnines.agents.roles import Control, Producer
from sixnines.agents.schedule import Pieces, intended_offsets
from sixnines.agents.streams import Inbox, OutStream, clock
from sixnines.drivers.base import Framing, Lane, Sender
from sixnines.drivers.tcp import TcpDriver, TcpOptions
from sixnines.formats.chunks import message_files, read_index
from sixnines.formats.integrity import sha256_of
from sixnines.formats.layout import chunk_name
from sixnines.formats.payload import HEADER_SIZE, HEADER_STRUCT
from sixnines.formats.protocol import PROTOCOL_VERSION, Prepare
from sixnines.formats.vocabulary import MAX_RATE

TCP_FRAMING = Framing(prefix=b"\0" * 4)  # the lengths of a tcp frame

pytestmark = pytest.mark.integration  # the relay is a server in its own process

ROOT = Path(__file__).resolve().parents[1]
SIZE = 64
NS = 1_000_000_000


@pytest.fixture(scope="module")
def relay():
    """`python -m sixnines broker tcp` as a subprocess; yields its address."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sixnines", "broker", "tcp", "--bind", "127.0.0.1:0"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        line = process.stdout.readline()
        assert line, f"the relay exited before announcing itself (rc {process.poll()})"
        yield json.loads(line)["listening"]
    finally:
        process.terminate()
        process.wait(10)
        process.stdout.close()


@pytest.fixture
def driver(relay):
    return TcpDriver(relay, TcpOptions())


@pytest.fixture
def pair(driver):
    """A connected (sender, receiver) through the relay, closed afterwards."""
    receiver = driver.receiver(SIZE, 0)
    sender = driver.sender(SIZE, 0)
    yield sender, receiver
    sender.close()
    receiver.close()


class RecordingSender(Sender):
    """A spy around a real sender: remembers each call, then delegates to the socket."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls: list[tuple[int, int]] = []  # (bytes, count) per send

    def send(self, frames: memoryview, count: int) -> None:
        self.calls.append((len(frames), count))
        self.inner.send(frames, count)

    def close(self) -> None:
        self.inner.close()


class Given:
    """A schedule given whole (as `Pieces` would make it)."""

    def __init__(self, offsets: np.ndarray) -> None:
        self.offsets, self.count, self.made = offsets, len(offsets), 0

    def fill(self, out: np.ndarray) -> int:
        n = min(len(out), self.count - self.made)
        out[:n] = self.offsets[self.made : self.made + n]
        self.made += n
        return n


def whole(offsets: np.ndarray, producer_id: int = 3) -> PiecePool:
    """One piece holding the whole schedule, recorded by nobody (as a requester's)."""
    return PiecePool(Given(offsets), max(len(offsets), 1), producer_id, None)


def make_stream(driver, sender, offsets, producer_id=3, seed=1) -> OutStream:
    return OutStream(sender, driver.framing(SIZE), SIZE, whole(offsets, producer_id),
                     producer_id, seed)


def take_all(inbox: Inbox, receiver, count: int, consumer_id: int = 0) -> None:
    """Take from `receiver` until `inbox` holds `count` messages (or 15 s have passed)."""
    deadline = time.monotonic() + 15
    while inbox.count + inbox.overflow < count:
        assert time.monotonic() < deadline, f"only {inbox.count} of {count} arrived"
        inbox.take(receiver, consumer_id, 200)


def test_a_due_schedule_goes_out_in_one_pump(driver, pair):
    sender, receiver = pair
    spy = RecordingSender(sender)
    count = 100
    offsets = intended_offsets("fixed", 10_000.0, count)
    stream = make_stream(driver, spy, offsets)
    assert stream.slots == count
    t0 = clock() - 10 * NS  # the whole schedule is already due
    stream.arm(t0)
    before = clock()
    stream.pump(clock())
    after = clock()
    assert stream.next == count
    # coalescing: every due message in one driver send
    assert spy.calls == [(count * stream.stride, count)]
    assert len(set(stream.sent.tolist())) == 1
    assert before <= stream.sent[0] <= after
    stream.pump(clock())  # nothing left: no further send
    assert len(spy.calls) == 1

    inbox = Inbox(count, driver.framing(SIZE), SIZE)
    take_all(inbox, receiver, count, consumer_id=7)
    assert inbox.count == count
    assert inbox.overflow == 0
    assert (inbox.producer_id == 3).all()
    assert inbox.seq.tolist() == list(range(count))
    assert np.array_equal(inbox.intended, offsets + t0)
    assert (inbox.sent == stream.sent[0]).all()
    assert (inbox.recv >= inbox.sent).all()
    assert (inbox.consumer_id == 7).all()


def test_pump_stops_at_the_ring_end(driver, pair, monkeypatch):
    sender, receiver = pair
    spy = RecordingSender(sender)
    stride = 4 + SIZE
    monkeypatch.setattr(streams, "RING_BYTES", 30 * stride)
    count = 100
    stream = make_stream(driver, spy, intended_offsets("fixed", 1000.0, count))
    assert stream.slots == 30
    stream.arm(clock() - 10 * NS)
    nexts = []
    while stream.next < count:
        stream.pump(clock())
        nexts.append(stream.next)
    assert nexts == [30, 60, 90, 100]
    assert [c for _, c in spy.calls] == [30, 30, 30, 10]
    assert [b for b, _ in spy.calls] == [30 * stride] * 3 + [10 * stride]
    for start, end in [(0, 30), (30, 60), (60, 90), (90, 100)]:
        assert len(set(stream.sent[start:end].tolist())) == 1  # one stamp per batch
    assert (np.diff(stream.sent) >= 0).all()

    inbox = Inbox(count, TCP_FRAMING, SIZE)
    take_all(inbox, receiver, count)
    assert inbox.seq.tolist() == list(range(count))
    assert np.array_equal(inbox.sent, stream.sent)


def test_pump_sends_only_what_is_due(driver, pair):
    sender, receiver = pair
    spy = RecordingSender(sender)
    count = 50
    offsets = intended_offsets("fixed", 1000.0, count)  # 1 ms apart
    stream = make_stream(driver, spy, offsets)
    stream.arm(0)  # absolute times = offsets, so `now` below is chosen exactly
    stream.pump(-1)
    assert stream.next == 0
    assert spy.calls == []
    stream.pump(0)  # exactly due: the first message only
    assert stream.next == 1
    stream.pump(offsets[10] - 1)
    assert stream.next == 10
    stream.pump(offsets[10] - 1)  # same instant again: nothing new is due
    assert stream.next == 10
    stream.pump(offsets[25])
    assert stream.next == 26
    assert [c for _, c in spy.calls] == [1, 9, 16]

    inbox = Inbox(count, TCP_FRAMING, SIZE)
    take_all(inbox, receiver, 26)
    assert inbox.seq[:26].tolist() == list(range(26))
    assert np.array_equal(inbox.intended[:26], offsets[:26])


def test_a_schedule_in_the_future_sends_nothing(driver, pair):
    sender, _ = pair
    spy = RecordingSender(sender)
    stream = make_stream(driver, spy, intended_offsets("fixed", 1000.0, 10))
    stream.arm(clock() + 3600 * NS)
    for _ in range(100):
        stream.pump(clock())
    assert stream.next == 0
    assert spy.calls == []


def test_the_ring_wraps_and_every_message_arrives_in_order(driver, pair, monkeypatch):
    sender, receiver = pair
    stride = 4 + SIZE
    monkeypatch.setattr(streams, "RING_BYTES", 7 * stride)
    count = 500
    offsets = intended_offsets("poisson", 100_000.0, count, phase_ns=11, seed=4)
    stream = make_stream(driver, RecordingSender(sender), offsets, producer_id=12, seed=9)
    assert stream.slots == 7
    stream.arm(0)
    # step `now` through the schedule unevenly, so batches start at every slot of the ring
    rng = np.random.default_rng(0)
    now = 0
    while stream.next < count:
        now = int(offsets[min(count - 1, stream.next + rng.integers(0, 12))])
        stream.pump(now)
    inbox = Inbox(count, TCP_FRAMING, SIZE)
    take_all(inbox, receiver, count, consumer_id=1)
    assert inbox.count == count
    assert (inbox.producer_id == 12).all()
    assert inbox.seq.tolist() == list(range(count))
    assert np.array_equal(inbox.intended, offsets)
    assert np.array_equal(inbox.sent, stream.sent)


def test_fill_survives_the_trip(driver, pair, monkeypatch):
    """What arrives is the ring's frame byte for byte after the header."""
    sender, receiver = pair
    monkeypatch.setattr(streams, "RING_BYTES", 5 * (4 + SIZE))
    stream = make_stream(driver, sender, intended_offsets("fixed", 1000.0, 5), seed=77)
    stream.arm(0)
    ring = bytes(stream.frames)
    stream.pump(10**12)
    inbox = Inbox(5, TCP_FRAMING, SIZE)
    take_all(inbox, receiver, 5)
    got = bytes(inbox.buffer[: 5 * stream.stride])
    for k in range(5):
        start = k * stream.stride
        fill = slice(start + 4 + HEADER_SIZE, start + stream.stride)
        assert got[fill] == ring[fill]
        assert got[start : start + 4] == ring[start : start + 4]  # the length prefix


def test_send_next_now_measures_from_now(driver, pair):
    sender, receiver = pair
    spy = RecordingSender(sender)
    offsets = intended_offsets("fixed", 1000.0, 3)
    stream = make_stream(driver, spy, offsets)
    stream.arm(clock() + 3600 * NS)
    for i in range(3):
        before = clock()
        stream.send_next_now()
        assert stream.next == i + 1
        assert before <= stream.sent[i]
        assert stream.intended[i] == stream.sent[i]
    assert spy.calls == [(stream.stride, 1)] * 3
    inbox = Inbox(3, TCP_FRAMING, SIZE)
    take_all(inbox, receiver, 3)
    assert inbox.seq.tolist() == [0, 1, 2]
    assert np.array_equal(inbox.intended, inbox.sent)
    assert np.array_equal(inbox.sent, stream.sent)


def test_inbox_counts_overflow_beyond_capacity(driver, pair):
    sender, receiver = pair
    count, capacity = 25, 10
    stream = make_stream(driver, sender, intended_offsets("fixed", 1000.0, count),
                         producer_id=5)
    stream.arm(0)
    stream.pump(10**15)
    assert stream.next == count
    inbox = Inbox(capacity, TCP_FRAMING, SIZE)
    take_all(inbox, receiver, count)
    assert inbox.count == capacity
    assert inbox.overflow == count - capacity
    assert inbox.seq.tolist() == list(range(capacity))  # the first arrivals are kept
    assert (inbox.producer_id == 5).all()
    # later arrivals keep being counted, never written past the columns
    stream2 = make_stream(driver, sender, intended_offsets("fixed", 1000.0, 3))
    stream2.arm(0)
    stream2.pump(10**15)
    take_all(inbox, receiver, count + 3)
    assert inbox.count == capacity
    assert inbox.overflow == count + 3 - capacity


def test_inbox_poll_returns_zero_when_nothing_arrived(pair):
    _, receiver = pair
    inbox = Inbox(4, TCP_FRAMING, SIZE)
    assert inbox.take(receiver, 0, 0) == 0
    assert inbox.take(receiver, 0, 20) == 0
    assert inbox.count == 0
    assert inbox.overflow == 0


# --- throughput mode (rate: max) ------------------------------------------------------------


class SettlingSender(RecordingSender):
    """The spy, with the `settle` of a system that acknowledges publishes: counted."""

    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.settled_after: list[int] = []  # batches sent when each settle came

    def settle(self) -> None:
        self.settled_after.append(len(self.calls))


def test_blast_sends_batches_at_once_stamped_with_their_send_time(driver, pair, monkeypatch):
    sender, receiver = pair
    spy = SettlingSender(sender)
    monkeypatch.setattr(streams, "RING_BYTES", 100 * (4 + SIZE))
    count = 1000
    stream = make_stream(driver, spy, np.zeros(count, np.int64), producer_id=8)
    stream.arm(clock() + 3600 * NS)  # no schedule: a start in an hour changes nothing
    assert (stream.slots, stream.batch) == (100, streams.BLAST_MESSAGES)
    before = clock()
    while stream.next < count:
        stream.blast()
    assert stream.next == count
    # batches of 64, cut at the ring's end (slot 100): 64, 36, 64, 36, ...
    assert [c for _, c in spy.calls] == [64, 36] * 10
    assert spy.settled_after == list(range(1, 21))  # every batch waited for its acks
    assert (stream.intended == stream.sent).all() and stream.sent[0] >= before
    assert (np.diff(stream.sent) >= 0).all()

    inbox = Inbox(count, TCP_FRAMING, SIZE)
    take_all(inbox, receiver, count)
    assert inbox.seq.tolist() == list(range(count))
    assert np.array_equal(inbox.intended, inbox.sent)
    assert np.array_equal(inbox.sent, stream.sent)


def test_a_large_message_blasts_a_few_at_a_time(driver):
    stream = OutStream(driver.sender(32 << 10, 0), driver.framing(32 << 10), 32 << 10,
                       whole(np.zeros(10, np.int64), 0), 0, 1)
    try:
        assert stream.batch == 1  # 64 KB per call at most: one 32 KB frame (+ its length)
    finally:
        stream.sender.close()


def max_prepare(messages: int, connections: int, duration_ns: int = 60 * NS,
                out_dir: Path = Path("unused")) -> Prepare:
    return Prepare(
        protocol=PROTOCOL_VERSION, run_id="r", agent_id="producer-0", role="producer",
        driver="tcp", address="", driver_options={}, message_size=SIZE, rate=0.0,
        schedule=MAX_RATE, duration_ns=duration_ns, warmup_ns=0, connections=connections,
        first_id=0, phase_ns=0, receive="blocking", drain_ns=NS, seed=1, expected=0,
        out_dir=str(out_dir), messages=messages)


def test_a_max_mode_producer_sends_exactly_its_messages(driver, tmp_path):
    receivers = [driver.receiver(SIZE, c, Lane(c, 3)) for c in range(3)]  # one consumer
    producer = Producer(max_prepare(2001, connections=3, out_dir=tmp_path), driver)
    try:
        assert [s.count for s in producer.streams] == [667, 667, 667]
        t0 = clock() + NS // 100
        producer.arm(t0)
        producer.run(Control())
        assert producer.sent == 2001
        files, out_of_range, problems = producer.results()
        assert problems == [] and out_of_range == {}  # no schedule: no send lag in the hlog
        rows = pq.read_table(message_files(tmp_path)).to_pandas()
        assert len(rows) == 2001 and rows.sent_ns.min() >= t0
        assert (rows.intended_ns == rows.sent_ns).all()
        assert {"latency.hlog", "chunks.jsonl"} < files.keys()
        inbox = Inbox(2001, TCP_FRAMING, SIZE)
        for lane, receiver in enumerate(receivers):  # a connection's 667 on each lane
            take_all(inbox, receiver, 667 * (lane + 1), lane)
        pairs = set(zip(inbox.producer_id.tolist(), inbox.seq.tolist(), strict=True))
        assert len(pairs) == 2001
    finally:
        producer.close()
        for receiver in receivers:
            receiver.close()


def test_the_time_cap_ends_a_max_mode_run_early(driver, tmp_path):
    producer = Producer(max_prepare(10**6, connections=1, duration_ns=NS // 50,
                                    out_dir=tmp_path), driver)
    try:
        producer.arm(clock())
        began = clock()
        producer.run(Control())
        assert clock() - began < NS  # stopped by the 20 ms cap, long before a million
        assert 0 < producer.sent < 10**6
    finally:
        producer.close()


# --- chunked recording (agents.recording) ---------------------------------------------------


def describe(chunk) -> tuple[dict, dict]:
    """A receiver's chunk as the consumer describes it, without hlog series."""
    n = chunk.rows
    return {"producer_id": chunk.producer_id[:n], "seq": chunk.seq[:n],
            "size": np.full(n, SIZE, np.int32), "intended_ns": chunk.intended[:n],
            "sent_ns": chunk.sent[:n], "recv_ns": chunk.recv[:n],
            "consumer_id": chunk.consumer_id[:n],
            "rx_index": np.arange(chunk.start, chunk.start + n, dtype=np.int64),
            "warmup": np.zeros(n, bool)}, {}


def test_an_inbox_records_chunk_after_chunk_each_listed_with_its_checksum(driver, pair,
                                                                            tmp_path,
                                                                            streaming):
    sender, receiver = pair
    count = 5_000
    stream = make_stream(driver, sender, intended_offsets("fixed", 1e6, count))
    stream.arm(clock() - NS)
    while stream.next < count:
        stream.pump(clock())
    recorder = Recorder(tmp_path, describe, 0, "test", lambda: 0)
    inbox = Inbox(300, TCP_FRAMING, SIZE, recorder)  # batches straddle chunks
    recorder.start(clock())
    take_all(inbox, receiver, count)
    inbox.close()
    files, out_of_range, problems = recorder.finish()
    assert (inbox.count, inbox.overflow, problems, out_of_range) == (count, 0, [], {})
    chunks = read_index(tmp_path)
    assert [c["file"] for c in chunks] == [chunk_name(k) for k in range(1, len(chunks) + 1)]
    assert len(chunks) >= count // 300 and sum(c["rows"] for c in chunks) == count
    for chunk in chunks:
        assert files[chunk["file"]] == {"sha256": sha256_of(tmp_path / chunk["file"]),
                                        "bytes": chunk["bytes"]}
        assert chunk["sha256"] == files[chunk["file"]]["sha256"]
    rows = pq.read_table(message_files(tmp_path)).to_pandas()
    assert rows.seq.tolist() == list(range(count))
    assert rows.rx_index.tolist() == list(range(count))
    assert np.array_equal(rows.sent_ns, stream.sent[:count])


def test_an_inbox_closes_a_chunk_after_a_second_without_arrivals(driver, pair, tmp_path,
                                                                streaming):
    sender, receiver = pair
    stream = make_stream(driver, sender, intended_offsets("fixed", 1000.0, 3))
    stream.arm(clock() - NS)
    stream.pump(clock())
    recorder = Recorder(tmp_path, describe, 0, "test", lambda: 0)
    inbox = Inbox(1000, TCP_FRAMING, SIZE, recorder)
    inbox.arm(clock())
    recorder.start(clock())
    take_all(inbox, receiver, 3)
    assert read_index(tmp_path) == []  # open: less than a second old
    deadline = time.monotonic() + 5
    while not read_index(tmp_path):  # idle: the time check of an empty receive closes it
        assert time.monotonic() < deadline
        inbox.take(receiver, 0, 20)
    assert read_index(tmp_path)[0]["rows"] == 3
    recorder.finish()


def test_a_producer_s_schedule_is_made_and_recorded_piece_by_piece(driver, pair, tmp_path,
                                                                    streaming):
    """Pieces of 64 rows refilled by the writer while the stream sends: the recorded
    intended times are the whole run's schedule, every send stamped, every row once."""
    sender, receiver = pair
    count = 3_000
    recorder = Recorder(tmp_path, lambda piece: ({
        "producer_id": np.full(piece.rows, 3, np.int32),
        "seq": np.arange(piece.start, piece.start + piece.rows, dtype=np.int64),
        "size": np.full(piece.rows, SIZE, np.int32),
        "intended_ns": piece.intended[: piece.rows], "sent_ns": piece.sent[: piece.rows],
        "recv_ns": None, "consumer_id": None, "rx_index": None,
        "warmup": np.zeros(piece.rows, bool)}, {}), 0, "test", lambda: 0)
    pool = PiecePool(Pieces("poisson", 200_000.0, count, 11, seed=4), 64, 3, recorder)
    stream = OutStream(sender, driver.framing(SIZE), SIZE, pool, 3, seed=1)
    t0 = clock()
    stream.arm(t0)
    recorder.start(t0)
    while stream.next < count:
        stream.pump(clock())
    stream.close()
    recorder.finish()
    rows = pq.read_table(message_files(tmp_path)).to_pandas().sort_values("seq")
    assert rows.seq.tolist() == list(range(count))
    assert np.array_equal(rows.intended_ns,
                          intended_offsets("poisson", 200_000.0, count, 11, seed=4) + t0)
    assert (rows.sent_ns >= rows.intended_ns).all()
    inbox = Inbox(count, TCP_FRAMING, SIZE)
    take_all(inbox, receiver, count)
    assert np.array_equal(inbox.sent, rows.sent_ns.to_numpy())


@pytest.mark.parametrize("capacity", [1, 1001, 16_385])
def test_shared_columns_take_scalar_writes_whatever_their_length(capacity):
    """A receiver's int32 columns come first: after an odd number of rows the int64 ones
    must still start aligned, or the loop's memoryview writes fail (one row at a time is
    how a few messages are recorded)."""
    columns = Columns(capacity, RECEIPT_DTYPES, shared=True)
    for array in columns.arrays:
        view = memoryview(array)
        view[capacity - 1] = 7
        assert array[capacity - 1] == 7
    os.close(columns.fd)


def test_a_sized_stream_sends_its_ring_of_varying_frames_through_the_relay(relay):
    """Frames of the ring's own sizes go out contiguous (one send per due batch, cut at the
    ring's end), each stamped where its frame puts the header; the relay forwards them by
    their length words and the receiver hands each over at the start of a largest-size
    slot, with its length word first."""
    driver = TcpDriver(relay, TcpOptions())
    driver.sizes_vary = True
    largest = 700
    receiver = driver.receiver(largest, 0)
    spy = RecordingSender(driver.sender(largest, 0))
    ring = np.array([HEADER_SIZE, 64, largest, 100, 64], np.int64)
    count = 12
    offsets = intended_offsets("fixed", 10_000.0, count)
    stream = streams.SizedOutStream(spy, driver.framing, ring, whole(offsets, 5), 5, seed=2)
    stream.arm(clock() - 10 * NS)  # all due: the ring's end cuts the batches
    while stream.next < count:
        stream.pump(clock())
    sizes = [int(ring[seq % len(ring)]) for seq in range(count)]
    assert [c for _, c in spy.calls] == [5, 5, 2]
    assert [b for b, _ in spy.calls] == [4 * 5 + int(ring.sum())] * 2 + [4 * 2 + 28 + 64]

    stride = driver.receive_framing(largest).stride(largest)
    out = memoryview(bytearray(count * stride))
    got, deadline = 0, time.monotonic() + 15
    while got < count:
        assert time.monotonic() < deadline, f"only {got} of {count} arrived"
        got += receiver.receive(out[got * stride :], stride, 200)
    ring_bytes = stream.wire
    for slot in range(count):
        at = slot * stride
        length = int.from_bytes(out[at : at + 4], "little")
        producer_id, seq, intended, _ = HEADER_STRUCT.unpack_from(out, at + 4)
        assert (producer_id, seq, length) == (5, slot, sizes[slot])
        assert intended == stream.intended[slot]
        k = slot % len(ring)  # the fill after the header, as the ring holds it
        body = stream.offsets[k] + 4 + HEADER_SIZE
        assert bytes(out[at + 4 + HEADER_SIZE : at + 4 + length]) == bytes(
            ring_bytes[body : body + length - HEADER_SIZE])
    spy.close()
    receiver.close()
