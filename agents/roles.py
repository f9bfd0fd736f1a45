"""What an agent does in a run: producer, consumer or requester.

Each role connects and allocates in `__init__` (before `ready`), runs its loop in `run`
(the measuring part: pace, stamp, send, receive, stamp — nothing else), and afterwards
writes what is left (`results`). Producers, consumers and requesters record in chunks
while the run goes (agents.recording): each closed chunk is described as rows and histogram
inputs (`_describe`) by the recorder's writer. A requester's requests are a sender's rows
and its replies a receiver's: the analysis matches them. Responders record nothing per
message and write their (empty) files at the end (`columns`, `metrics`).

Throughput mode (schedule `max`, from `rate: max`): producers send their `messages` as fast
as the system takes them, with no schedule (`run_flat_out`); their intended times are their
send times, so the interval logs hold one metric, `saturation_latency` (recv − sent, written
by consumers), and no send lag. Which role writes which metric under which load is
formats.load.TAGS_BY_ROLE.
"""

from __future__ import annotations

import contextlib
import functools
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sixnines.agents.artifacts import write_all
from sixnines.agents.reconnects import Reconnects
from sixnines.agents.recording import (
    Piece,
    PiecePool,
    Receipts,
    Recorder,
    producer_rows,
    receipt_rows,
)
from sixnines.agents.schedule import (
    NS,
    Pieces,
    ShapedPieces,
    message_count,
    shaped_count,
    split,
)
from sixnines.agents.streams import Inbox, OutStream, SizedOutStream, clock
from sixnines.drivers.base import SOLE_LANE, Driver, DriverError, Lane, Receiver, Sender, Waiter
from sixnines.formats import vocabulary
from sixnines.formats.fill import Fill, measured_ratios
from sixnines.formats.keys import keys_of, period
from sixnines.formats.protocol import Prepare
from sixnines.formats.records import MESSAGES
from sixnines.formats.shape import RateShape
from sixnines.formats.sizes import DrawnSizes, Sizes, sender_seed
from sixnines.formats.vocabulary import MAX_RATE, Metric, Receive, Schedule

WAIT_MS = 20  # blocking receive timeout: how often a blocked loop looks at its flags
BLOCK_MARGIN_NS = 2_000_000  # a requester stops blocking this long before its next send
HOLD_SPIN_NS = 2_000_000  # a held consumer spins this last stretch of its hold


@dataclass
class Control:
    """Flags set by the agent's control thread and read by the loops (plain attributes: a
    read costs tens of nanoseconds, so loops can look every iteration)."""

    stopping: bool = False
    stop_reason: str = ""
    finishing: bool = False
    expected: int = 0
    deadline_ns: int = 0

    def finish(self, expected: int, drain_ns: int) -> None:
        self.expected = expected
        self.deadline_ns = clock() + drain_ns
        self.finishing = True

    def stop(self, reason: str) -> None:
        self.stop_reason = self.stop_reason or reason
        self.stopping = True


class AgentRole(ABC):
    def __init__(self, spec: Prepare, driver: Driver) -> None:
        self.spec = spec
        self.driver = driver
        self.t0 = 0
        self.reconnects = Reconnects(spec.reconnect_ns, spec.connections)
        #: Keys each sending connection draws and cycles through (formats.keys; None: the
        #: messages carry none), for messages up to the largest size.
        self.key_period = None if driver.keys is None else period(spec.message_size)
        #: Message sizes drawn from a distribution (None: every message is message_size).
        self.drawn = None if spec.sizes is None else DrawnSizes(
            Sizes.from_message(spec.sizes), spec.seed, self.key_period)

    def drawn_keys(self, producer_id: int) -> np.ndarray | None:
        """The keys sending connection `producer_id` cycles through (None: none)."""
        space = self.driver.keys
        if space is None or self.key_period is None:
            return None
        return keys_of(space, self.spec.seed, producer_id, self.key_period)

    def size_column(self, producer_id: np.ndarray, seq: np.ndarray) -> np.ndarray:
        """The size of each message recorded (the records' `size` column)."""
        if self.drawn is None:
            return np.full(len(seq), self.spec.message_size, np.int32)
        return self.drawn.column(producer_id, seq)

    def arm(self, t0: int) -> None:
        self.t0 = t0

    @abstractmethod
    def run(self, control: Control) -> None: ...

    @property
    def sent(self) -> int:
        return 0

    @property
    def received(self) -> int:
        return 0

    @property
    def overflow(self) -> int:
        """Arrivals beyond the expected count: counted, reported, not recorded."""
        return 0

    def extra(self) -> dict[str, object]:
        """What `done` carries of this role's own besides sent and received: counts, the
        recording's account (read after the results are written)."""
        return self.reconnects.extra()

    @abstractmethod
    def results(self) -> tuple[dict, dict, list[str]]:
        """After the run: write what is left to write; returns ({file: {sha256, bytes}},
        out-of-range values per hlog tag, a problem per file that could not be written)."""

    def warmup(self, intended: np.ndarray) -> np.ndarray:
        return intended < self.t0 + self.spec.warmup_ns

    def label(self) -> str:
        return f"{self.spec.run_id} {self.spec.agent_id} ({self.spec.role})"

    def records_lost(self) -> str | None:
        """Why records it made are not on disk (read once its results are written), None
        when every one is."""
        return None

    def helpers(self) -> list[int]:
        """The processes the role runs beside its own (a recorder's writer)."""
        return []

    @abstractmethod
    def close(self) -> None:
        """Close connections (after the run)."""


class WholeRun(AgentRole):
    """A role that keeps its records until the run ends and writes them then."""

    def results(self) -> tuple[dict, dict, list[str]]:
        return write_all(Path(self.spec.out_dir), self.columns(), self.metrics(),
                         t0_ns=self.t0, warmup_ns=self.spec.warmup_ns, label=self.label())

    @abstractmethod
    def columns(self) -> dict[str, np.ndarray | None]:
        """Rows of messages.parquet (formats/records.py); None for an all-null column."""

    @abstractmethod
    def metrics(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """{tag: (intended time − t0, values)} for the interval log."""


class Chunked(AgentRole):
    """A role that records in chunks while the run goes (agents.recording)."""

    def __init__(self, spec: Prepare, driver: Driver) -> None:
        super().__init__(spec, driver)
        self.recorder = Recorder(Path(spec.out_dir), self._describe, spec.warmup_ns,
                                 self.label(), self._behind)
        self.fill_ratios: dict[str, float] | None = None  # a sender's (out_streams)

    def arm(self, t0: int) -> None:
        """Buffers armed first: the recorder's writer process starts from them."""
        super().arm(t0)
        self._arm_buffers(t0)
        self.recorder.start(t0)

    def results(self) -> tuple[dict, dict, list[str]]:
        self._close_chunks()
        return self.recorder.finish()

    def helpers(self) -> list[int]:
        return [self.recorder.pid] if self.recorder.pid else []

    def extra(self) -> dict[str, object]:
        ratios = {} if self.fill_ratios is None else {"fill_ratios": self.fill_ratios}
        return {**super().extra(), "recording": self.recorder.summary(), **ratios}

    def records_lost(self) -> str | None:
        lost = self.recorder.lost()
        return f"its records are not all on disk ({lost})" if lost else None

    @abstractmethod
    def _arm_buffers(self, t0: int) -> None:
        """Make the buffers' schedules absolute from t0."""

    @abstractmethod
    def _describe(self, chunk) -> tuple[dict, dict]:
        """One closed chunk as message columns (None: all null) and hlog series."""

    @abstractmethod
    def _close_chunks(self) -> None:
        """Hand the buffers being filled to the recorder (the loop is over)."""

    @abstractmethod
    def _behind(self) -> int:
        """Times the pools had no buffer ready during the run."""


def _schedules(spec: Prepare) -> list[Pieces]:
    """One schedule per connection; connections interleave evenly within the agent's share.
    Throughput mode has none: placeholders that `OutStream.blast` fills with send times."""
    if spec.schedule == MAX_RATE:
        return [Pieces(MAX_RATE, 0.0, n) for n in split(spec.messages, spec.connections)]
    if spec.shape is not None:
        return _shaped_schedules(spec, RateShape.model_validate(spec.shape))
    per_connection = spec.rate / spec.connections
    count = message_count(per_connection, spec.warmup_ns + spec.duration_ns)
    interval_ns = NS / spec.rate
    return [
        Pieces(spec.schedule, per_connection, count, spec.phase_ns + int(c * interval_ns),
               seed=sender_seed(spec.seed, spec.first_id + c))
        for c in range(spec.connections)
    ]


def _shaped_schedules(spec: Prepare, shape: RateShape) -> list[Pieces]:
    """One lane of the shape per connection, numbered as the phases of a constant rate
    interleave them (agent k's connection c after c rounds of all agents' first ones)."""
    senders = spec.lanes // spec.connections
    agent = spec.first_id // spec.connections
    count = shaped_count(shape, spec.warmup_ns + spec.duration_ns, spec.lanes)
    return [
        ShapedPieces(spec.schedule, shape, count, agent + c * senders, spec.lanes,
                     seed=sender_seed(spec.seed, spec.first_id + c))
        for c in range(spec.connections)
    ]


def sent_rows(role: AgentRole, chunk: Piece) -> tuple[dict, dict]:
    """A sent piece of schedule as a sender's rows (no receipt) and its send lag (none in
    throughput mode: no schedule to lag)."""
    n = chunk.rows
    intended, sent = chunk.intended[:n], chunk.sent[:n]
    producer_id = np.full(n, chunk.pool.producer_id, np.int32)
    seq = np.arange(chunk.start, chunk.start + n, dtype=np.int64)
    columns = {
        "producer_id": producer_id,
        "seq": seq,
        "size": role.size_column(producer_id, seq),
        "intended_ns": intended, "sent_ns": sent, "warmup": role.warmup(intended),
        "recv_ns": None, "consumer_id": None, "rx_index": None,
    }
    if role.spec.schedule == MAX_RATE:
        return columns, {}
    return columns, {Metric.SEND_LAG: (intended - role.t0, sent - intended)}


def received_rows(role: AgentRole, chunk: Receipts) -> tuple[dict, dict]:
    """A closed buffer of receipts as a receiver's rows, with the latencies their headers'
    intended and sent times give."""
    n = chunk.rows
    intended, sent, recv = chunk.intended[:n], chunk.sent[:n], chunk.recv[:n]
    columns = {
        "producer_id": chunk.producer_id[:n],
        "seq": chunk.seq[:n],
        "size": role.size_column(chunk.producer_id[:n], chunk.seq[:n]),
        "intended_ns": intended,
        "sent_ns": sent,
        "recv_ns": recv,
        "consumer_id": chunk.consumer_id[:n],
        "rx_index": np.arange(chunk.start, chunk.start + n, dtype=np.int64),
        "warmup": role.warmup(intended),
    }
    offsets = intended - role.t0
    if role.spec.schedule == MAX_RATE:
        return columns, {Metric.SATURATION_LATENCY: (offsets, recv - sent)}
    return columns, {Metric.LATENCY: (offsets, recv - intended),
                     Metric.SERVICE_TIME: (offsets, recv - sent)}


def run_senders(streams: list[OutStream], control: Control, inbox: Inbox | None = None,
                receivers: Sequence[Receiver] = (), first_id: int = 0) -> None:
    """The open-loop send loop: busy-wait on the absolute schedule, send what is due.

    A requester passes its `inbox` and `receivers`: replies are then taken without blocking
    between sends (a second thread would fight the sender for the GIL).
    """
    if len(streams) == 1 and inbox is None:
        stream = streams[0]
        pump, count = stream.pump, stream.count
        while stream.next < count and not control.stopping:
            pump(clock())
        return
    pending = list(streams)
    while pending and not control.stopping:
        now = clock()
        for stream in pending:
            stream.pump(now)
        if inbox is not None:
            for c, receiver in enumerate(receivers):
                inbox.take(receiver, first_id + c, 0)
        if any(s.next >= s.count for s in pending):
            pending = [s for s in pending if s.next < s.count]


def run_flat_out(streams: list[OutStream], control: Control, t0: int, end_ns: int) -> None:
    """The throughput-mode send loop: from `t0`, every stream in turn sends its next batch
    at once, until all are sent, the time cap `end_ns` has passed (the counts then say how
    far it got) or the run is stopped."""
    while clock() < t0 and not control.stopping:
        pass
    live = len(streams)
    while live and not control.stopping and clock() < end_ns:
        live = 0
        for stream in streams:
            if stream.next < stream.count:
                stream.blast()
                live += 1


def drain(inbox: Inbox, receivers: list[Receiver], waiter: Waiter, first_id: int,
          control: Control, busy: bool) -> None:
    """Receive until the control thread says enough: finished and complete, finished and
    past the drain deadline, or stopped. Several connections are waited on together
    (`waiter`, the driver's)."""
    timeout_ms = 0 if busy else WAIT_MS
    ids = [first_id + c for c in range(len(receivers))]
    single = len(receivers) == 1
    while not control.stopping:
        if single:
            inbox.take(receivers[0], first_id, timeout_ms)
        elif busy:
            for receiver, consumer_id in zip(receivers, ids, strict=True):
                inbox.take(receiver, consumer_id, 0)
        else:
            for index in waiter.wait(timeout_ms):
                inbox.take(receivers[index], ids[index], 0)
        if control.finishing and (
            inbox.count >= control.expected or clock() >= control.deadline_ns
        ):
            return


def hold(until_ns: int, control: Control) -> None:
    """Read nothing until `until_ns` (a backlog builds meanwhile), or until stopped: asleep
    in steps short enough to see a stop, then spinning the last stretch so the reading
    starts on the instant."""
    while not control.stopping and (left := until_ns - clock()) > HOLD_SPIN_NS:
        time.sleep(min(left - HOLD_SPIN_NS, WAIT_MS * 1_000_000) / NS)
    while not control.stopping and clock() < until_ns:
        pass


def lane(spec: Prepare, connection: int) -> Lane:
    """A connection's lane: one-way connections divide the load (drivers.base.Lane);
    round trips need none."""
    one_way = spec.role in (vocabulary.Role.PRODUCER, vocabulary.Role.CONSUMER)
    return Lane(connection, spec.connections) if one_way else SOLE_LANE


def out_streams(role: Chunked, senders: list[Sender]) -> list[OutStream]:
    """One stream per connection, its schedule in pieces its role's recorder writes; the
    first one's fills measured (compressed / original, `done` reports it), before the
    start. Sizes drawn from a distribution take a `SizedOutStream` (one size takes the
    plain one, unchanged)."""
    spec = role.spec
    rate = None if spec.schedule == MAX_RATE else spec.rate / spec.connections
    if spec.shape is not None:  # pieces sized for the peak, not the mean
        rate = RateShape.model_validate(spec.shape).peak / spec.lanes
    fill = Fill.from_message(spec.content)
    streams: list[OutStream] = []
    for c, (sender, schedule) in enumerate(zip(senders, _schedules(spec), strict=True)):
        producer_id = spec.first_id + c
        pool = PiecePool(schedule, producer_rows(schedule.count, rate), producer_id,
                         role.recorder)
        seed = sender_seed(spec.seed, producer_id)
        keys = role.drawn_keys(producer_id)
        if role.drawn is None:
            streams.append(OutStream(sender, role.driver.framing(spec.message_size, lane(spec, c)),
                                     spec.message_size, pool, producer_id, seed=seed, fill=fill,
                                     keys=keys))
        else:
            framing_of = functools.partial(role.driver.framing, lane=lane(spec, c))
            streams.append(SizedOutStream(sender, framing_of, role.drawn.ring(producer_id),
                                          pool, producer_id, seed=seed, fill=fill, keys=keys))
    role.fill_ratios = measured_ratios(streams[0].fills())
    return streams


def inbox_of(role: Chunked) -> Inbox:
    """A receiver's inbox, its buffers written by its role's recorder."""
    spec = role.spec
    rows = receipt_rows(spec.expected, spec.warmup_ns + spec.duration_ns, spec.hold_ns)
    return Inbox(rows, role.driver.receive_framing(spec.message_size), spec.message_size,
                 role.recorder)


class Producer(Chunked):
    def __init__(self, spec: Prepare, driver: Driver) -> None:
        super().__init__(spec, driver)
        self.streams = out_streams(self, [driver.sender(spec.message_size, spec.first_id + c,
                                                        lane(spec, c))
                                          for c in range(spec.connections)])
        self.acknowledged: list[dict[str, int]] = []  # `_note_acknowledged`
        self._noted: list[Sender] = []  # the senders noted there

    def _arm_buffers(self, t0: int) -> None:
        for stream in self.streams:
            stream.arm(t0)

    def run(self, control: Control) -> None:
        end_ns = self.t0 + self.spec.warmup_ns + self.spec.duration_ns  # of the schedule
        self.reconnects.run(lambda: self._send(control, end_ns), control, self._connect_again,
                            lambda: clock() >= end_ns)

    def _send(self, control: Control, end_ns: int) -> None:
        if self.spec.schedule == MAX_RATE:
            run_flat_out(self.streams, control, self.t0, end_ns)
        else:
            run_senders(self.streams, control)

    def _connect_again(self) -> None:
        """Every connection made anew (agents.reconnects), the streams go on from where
        they stopped."""
        spec = self.spec
        for stream in self.streams:
            with contextlib.suppress(DriverError, OSError):
                stream.sender.close()
        self._note_acknowledged()
        for c, stream in enumerate(self.streams):
            stream.use_sender(self.driver.sender(spec.message_size, spec.first_id + c,
                                                 lane(spec, c)))

    def _note_acknowledged(self) -> None:
        """Each sender's acknowledged messages (`Sender.acknowledged`), the first it sent:
        seqs [first_on_sender, first_on_sender + count) of its producer id; once per
        sender (reconnecting may take several attempts)."""
        for c, stream in enumerate(self.streams):
            count = stream.sender.acknowledged
            if stream.sender not in self._noted and count is not None:
                self._noted.append(stream.sender)
                self.acknowledged.append({"producer_id": self.spec.first_id + c,
                                          "first_seq": stream.first_on_sender,
                                          "count": count})

    def extra(self) -> dict[str, object]:
        """Besides the chunked role's: the acknowledged runs of seqs, where the system
        says (after `close`, so the last acks are in)."""
        self._note_acknowledged()
        acknowledged = {"acknowledged": self.acknowledged} if self.acknowledged else {}
        return {**super().extra(), **acknowledged}

    @property
    def sent(self) -> int:
        return sum(s.next for s in self.streams)

    def _describe(self, chunk: Piece) -> tuple[dict, dict]:
        return sent_rows(self, chunk)

    def _close_chunks(self) -> None:
        for stream in self.streams:
            stream.close()

    def _behind(self) -> int:
        return sum(stream.pool.behind for stream in self.streams)

    def close(self) -> None:
        for stream in self.streams:
            stream.sender.close()


class Consumer(Chunked):
    def __init__(self, spec: Prepare, driver: Driver) -> None:
        super().__init__(spec, driver)
        self.receivers = [driver.receiver(spec.message_size, spec.first_id + c,
                                          lane(spec, c))
                          for c in range(spec.connections)]
        self.waiter = driver.waiter(self.receivers)
        self.inbox = inbox_of(self)

    def _arm_buffers(self, t0: int) -> None:
        self.inbox.arm(t0)

    def run(self, control: Control) -> None:
        if self.spec.hold_ns:
            hold(self.t0 + self.spec.hold_ns, control)
        self.reconnects.run(lambda: drain(self.inbox, self.receivers, self.waiter,
                                          self.spec.first_id, control,
                                          self.spec.receive == Receive.BUSY_POLL),
                            control, self._connect_again,
                            lambda: control.finishing and clock() >= control.deadline_ns)

    def _connect_again(self) -> None:
        """Every connection made anew and subscribed (agents.reconnects)."""
        spec = self.spec
        for receiver in self.receivers:
            with contextlib.suppress(DriverError, OSError):
                receiver.close()
        self.receivers = [self.driver.receiver(spec.message_size, spec.first_id + c,
                                               lane(spec, c))
                          for c in range(spec.connections)]
        self.waiter = self.driver.waiter(self.receivers)

    @property
    def received(self) -> int:
        return self.inbox.count

    @property
    def overflow(self) -> int:
        return self.inbox.overflow

    def _describe(self, chunk: Receipts) -> tuple[dict, dict]:
        return received_rows(self, chunk)

    def _close_chunks(self) -> None:
        self.inbox.close()

    def _behind(self) -> int:
        return self.inbox.pool.behind

    def close(self) -> None:
        for receiver in self.receivers:
            receiver.close()


class Requester(Chunked):
    """Round trip: sends on schedule and takes the echoes on the same connections. Open loop
    (fixed, poisson) by default; `closed` waits for each reply before the next request.

    It records like a producer and a consumer in one: its requests as a sender's rows
    (pieces of its schedule), its replies as a receiver's (each reply's header is its
    request's: producer id, seq, intended and sent times). The analysis matches the two as
    it matches any sender's and receiver's rows, so nothing joins them here and both go to
    disk in chunks while the run goes."""

    def __init__(self, spec: Prepare, driver: Driver) -> None:
        super().__init__(spec, driver)
        pairs = [driver.requester(spec.message_size, spec.first_id + c)
                 for c in range(spec.connections)]
        self.receivers = [receiver for _, receiver in pairs]
        self.waiter = driver.waiter(self.receivers)
        self.streams = out_streams(self, [sender for sender, _ in pairs])
        self.inbox = inbox_of(self)

    def _arm_buffers(self, t0: int) -> None:
        for stream in self.streams:
            stream.arm(t0)
        self.inbox.arm(t0)

    def run(self, control: Control) -> None:
        busy = self.spec.receive == Receive.BUSY_POLL
        end_ns = self.t0 + self.spec.warmup_ns + self.spec.duration_ns  # of the schedule
        self.reconnects.run(lambda: self._send(control, busy), control, self._connect_again,
                            lambda: clock() >= end_ns)
        control.finish(self.sent, self.spec.drain_ns)
        self.reconnects.run(lambda: drain(self.inbox, self.receivers, self.waiter,
                                          self.spec.first_id, control, busy),
                            control, self._connect_again,
                            lambda: clock() >= control.deadline_ns)

    def _send(self, control: Control, busy: bool) -> None:
        if self.spec.schedule == Schedule.CLOSED:
            self._run_closed(control, busy)
        else:
            run_senders(self.streams, control, self.inbox, self.receivers, self.spec.first_id)

    def _connect_again(self) -> None:
        """Every connection made anew (agents.reconnects); the streams go on from where
        they stopped."""
        for stream, receiver in zip(self.streams, self.receivers, strict=True):
            with contextlib.suppress(DriverError, OSError):
                stream.sender.close()
            with contextlib.suppress(DriverError, OSError):
                receiver.close()
        pairs = [self.driver.requester(self.spec.message_size, self.spec.first_id + c)
                 for c in range(self.spec.connections)]
        for stream, (sender, _) in zip(self.streams, pairs, strict=True):
            stream.use_sender(sender)
        self.receivers = [receiver for _, receiver in pairs]
        self.waiter = self.driver.waiter(self.receivers)

    def _run_closed(self, control: Control, busy: bool) -> None:
        """One request in flight: wait for its nominal time, send, wait for the reply; the
        connections take turns (their schedules interleave); stop at the schedule's end,
        however many requests that left unsent — as a closed-loop tool does."""
        end_ns = self.t0 + self.spec.warmup_ns + self.spec.duration_ns
        timeout_ms = 0 if busy else WAIT_MS
        inbox = self.inbox
        turns = list(zip(self.streams, self.receivers, strict=True))
        turn = 0
        while not control.stopping:
            stream, receiver = turns[turn]
            turn = (turn + 1) % len(turns)
            if stream.next >= stream.count:
                return
            due = stream.due()
            while (now := clock()) < due and not control.stopping:
                pass
            if now >= end_ns:
                return
            expected = inbox.count + 1
            stream.send_next_now()
            give_up = clock() + self.spec.drain_ns
            while inbox.count < expected and not control.stopping and clock() < give_up:
                inbox.take(receiver, stream.producer_id, timeout_ms)

    @property
    def sent(self) -> int:
        return sum(s.next for s in self.streams)

    @property
    def received(self) -> int:
        return self.inbox.count

    @property
    def overflow(self) -> int:
        return self.inbox.overflow

    def _describe(self, chunk: Piece | Receipts) -> tuple[dict, dict]:
        if isinstance(chunk, Piece):
            return sent_rows(self, chunk)
        return received_rows(self, chunk)

    def _close_chunks(self) -> None:
        for stream in self.streams:
            stream.close()
        self.inbox.close()

    def _behind(self) -> int:
        return sum(stream.pool.behind for stream in self.streams) + self.inbox.pool.behind

    def close(self) -> None:
        for stream in self.streams:
            stream.sender.close()


class ResponderRole(WholeRun):
    """The far end of a round trip through a broker: sends every request back to its
    requester. It records nothing per message (the requester measures) and stops once it
    has relayed every request the requesters sent, or its drain time has passed."""

    def __init__(self, spec: Prepare, driver: Driver) -> None:
        super().__init__(spec, driver)
        self.relays = [driver.responder(spec.message_size, spec.first_id + c)
                       for c in range(spec.connections)]
        self.relayed = 0

    def run(self, control: Control) -> None:
        self.reconnects.run(lambda: self._relay(control), control, self._connect_again,
                            lambda: control.finishing and clock() >= control.deadline_ns)

    def _connect_again(self) -> None:
        """Every connection made anew and subscribed (agents.reconnects)."""
        for relay in self.relays:
            with contextlib.suppress(DriverError, OSError):
                relay.close()
        self.relays = [self.driver.responder(self.spec.message_size, self.spec.first_id + c)
                       for c in range(self.spec.connections)]

    def _relay(self, control: Control) -> None:
        # with several connections a blocking wait on one would starve the others
        wait = len(self.relays) == 1 and self.spec.receive != Receive.BUSY_POLL
        timeout_ms = WAIT_MS if wait else 0
        while not control.stopping:
            for relay in self.relays:
                self.relayed += relay.relay(timeout_ms)
            if control.finishing and (
                self.relayed >= control.expected or clock() >= control.deadline_ns
            ):
                return

    @property
    def received(self) -> int:
        return self.relayed

    def columns(self) -> dict[str, np.ndarray | None]:
        return {name: None for name in MESSAGES.names} | {"seq": np.empty(0, np.int64)}

    def metrics(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {}

    def close(self) -> None:
        for relay in self.relays:
            relay.close()
