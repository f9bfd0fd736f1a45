"""The driver conformance suite: what every driver must do against its real server.

Subclass `DriverConformance` and give it a `target` fixture (a `Target`: the driver, a
broker's address and options, and what the fault cases need); pytest then runs every case
below against that broker. The cases are short (hundreds of messages, seconds) and share
the target's broker, so give `isolate` when cases would otherwise see each other's traffic
(a fresh channel, topic or queue per case).

Every delivery case checks the accounting exactly: each message sent arrives once per
consumer (over one of its connections when it has several, `Lane`), byte for byte, in its
sender's order (sequence numbers in the message header).
"""

from __future__ import annotations

import contextlib
import re
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import pytest
from pydantic import ValidationError

from sixnines.drivers.base import (
    SOLE_LANE,
    Driver,
    DriverError,
    Lane,
    Receiver,
    Responder,
    Sender,
)
from sixnines.formats.payload import (
    HEADER_SIZE,
    HEADER_STRUCT,
    build_frames,
    build_sized_frames,
    frame_dtype,
)

SIZE = 64  # the message size of the cases that do not choose another
DELIVERY_S = 20.0  # how long a case waits for the messages it expects
STALL_S = 3.0  # how long it waits when messages stop coming (then it counts them lost)
QUIET_S = 0.3  # how long it listens afterwards for messages it must not get (duplicates)
FAULT_S = 20.0  # how long a sender may take to notice that its broker died
CALL_S = 10.0  # how long any one call may take once the broker is gone (a bounded settle)
NO_SUCH_OPTION = "no_such_option_sixnines"

#: A broker of a case's own (the kill case): a context manager yielding its address and a
#: function that kills it.
DoomedBroker = Callable[[], AbstractContextManager[tuple[str, Callable[[], None]]]]


@dataclass(frozen=True)
class WrongLogin:
    """A broker that requires a login, and options that log in with a wrong password."""

    address: str
    options: Mapping[str, object]
    secret: str = ""
    """The wrong password itself: an error message must not show it."""


@dataclass(frozen=True)
class Target:
    """What the suite runs against: `driver` at `address` with `options` (plus `isolate()`,
    called once per driver the suite makes)."""

    driver: type[Driver]
    address: str
    options: Mapping[str, object] = field(default_factory=dict)
    isolate: Callable[[], Mapping[str, object]] | None = None
    doomed: DoomedBroker | None = None
    """Starts a broker the kill case may kill; None skips that case."""
    wrong_login: WrongLogin | None = None
    """None: the system has no authentication (the case is skipped)."""
    invalid_options: Mapping[str, object] = field(default_factory=dict)
    """Option name -> a value the driver must refuse (naming the option)."""
    unreachable: str | None = None
    """An address nobody serves; default: a free loopback port."""
    large_size: int = 100_000
    """The message size of the large-message cases."""
    connect_s: float = 15.0
    """How long connecting to an unreachable address may take before it fails."""
    known_failures: Mapping[str, str] = field(default_factory=dict)
    """Case id ("one_way", "unreachable[requester]") -> why it fails: the case runs as a
    strict xfail, so it must fail, and the day it passes the entry must go."""

    def make(self, address: str | None = None, /, **options: object) -> Driver:
        """A driver for this target (another broker's `address`, more `options`)."""
        merged = {**self.options, **(self.isolate() if self.isolate else {}), **options}
        return self.driver(address or self.address, self.driver.Options(**merged))


# --- waiting, sending, receiving -------------------------------------------------------


def wait_readable(driver: Driver, receivers: Sequence[Receiver],
                  timeout_ms: int) -> list[Receiver]:
    """The receivers the driver's `Waiter` reports readable within `timeout_ms`, as a
    multi-connection agent waits; the one place the suite waits on receivers."""
    return [receivers[k] for k in driver.waiter(receivers).wait(timeout_ms)]


@dataclass
class Outgoing:
    """Frames laid out as the framework lays them out for `Sender.send`, headers stamped
    (producer_id, seq), and each message as a receiver must hand it over."""

    producer_id: int
    buf: np.ndarray
    stride: int  # the largest frame's, when they vary
    messages: list[bytes]
    offsets: list[int] | None = None  # where each frame starts, and the end (None: k × stride)


def outgoing(driver: Driver, producer_id: int, count: int, size: int = SIZE,
             lane: Lane = SOLE_LANE) -> Outgoing:
    """`count` messages of producer `producer_id` framed for a sender on `lane`."""
    framing = driver.framing(size, lane)
    prefix, suffix = len(framing.prefix), len(framing.suffix)
    buf = build_frames(framing.prefix, size, count, seed=producer_id, suffix=framing.suffix)
    view = buf.view(frame_dtype(prefix, size, suffix))
    view["producer_id"] = producer_id
    view["seq"] = np.arange(count, dtype=np.uint64)
    view["intended_ns"] = np.arange(count, dtype=np.int64) * 1000
    stride = framing.stride(size)
    raw = buf.tobytes()
    return Outgoing(producer_id, buf, stride,
                    [raw[k + prefix : k + prefix + size] for k in range(0, len(raw), stride)])


def varying_outgoing(driver: Driver, producer_id: int, sizes: Sequence[int],
                     lane: Lane = SOLE_LANE) -> Outgoing:
    """Messages of producer `producer_id` of the given sizes, each framed for its size on
    `lane` and laid end to end, as a sender of varying sizes lays them out."""
    framings = [driver.framing(size, lane) for size in sizes]
    buf, offsets = build_sized_frames([(f.prefix, f.suffix) for f in framings],
                                      np.array(sizes, dtype=np.int64), seed=producer_id)
    messages = []
    for k, (framing, size) in enumerate(zip(framings, sizes, strict=True)):
        at = int(offsets[k]) + len(framing.prefix)
        HEADER_STRUCT.pack_into(buf.data, at, producer_id, k, k * 1000, 0)
        messages.append(buf[at : at + size].tobytes())
    return Outgoing(producer_id, buf, max(f.stride(s) for f, s in zip(framings, sizes,
                                                                         strict=True)),
                    messages, offsets.tolist())


def send_all(sender: Sender, out: Outgoing, batches: Sequence[int] = (1, 7, 50, 13)) -> None:
    """Every frame of `out` in calls of changing size (as a sender's batches vary), then
    the sender's `settle`."""
    wire = out.buf.data
    count = len(out.messages)
    offsets = out.offsets or [k * out.stride for k in range(count + 1)]
    i = k = 0
    while i < count:
        n = min(batches[k % len(batches)], count - i)
        sender.send(wire[offsets[i] : offsets[i + n]], n)
        i += n
        k += 1
    sender.settle()


def collect(driver: Driver, receivers: Sequence[Receiver], expect: int, size: int = SIZE,
            responders: Sequence[Responder] = (), room: float = 37, lanes: int = 1
            ) -> list[list[bytes]]:
    """What each receiver hands over until each has `expect` messages (each consumer: every
    `lanes` receivers in a row are one consumer's, their messages counted together; or
    nothing came for STALL_S, or DELIVERY_S passed), and for QUIET_S after: what arrives
    then is counted too (duplicates). Receives as an agent does: one receiver with a
    timeout, several after waiting on their pollables (each once when none signals:
    `test_pollable_signals_held_messages` checks the pollables); through one small buffer
    of `room` frames for all of them, as an agent's (many calls, partial frames carried
    over), relaying through `responders` in between."""
    framing = driver.receive_framing(size)
    stride, at = framing.stride(size), len(framing.prefix)
    out = memoryview(bytearray(int(room * stride)))
    got: list[list[bytes]] = [[] for _ in receivers]
    index = {id(receiver): k for k, receiver in enumerate(receivers)}
    wait_ms = 5 if responders else 50
    now = time.monotonic()
    deadline, last, quiet_until = now + DELIVERY_S, None, None
    while quiet_until is None or now < quiet_until:
        if quiet_until is None and (_each_has(got, lanes, expect) or now > deadline
                                    or (last is not None and now - last > STALL_S)):
            quiet_until = now + QUIET_S
        for responder in responders:
            responder.relay(0)
        if len(receivers) == 1:
            ready = [(receivers[0], wait_ms)]
        else:  # all of them when none signals: that their pollables do is a case of its own
            ready = [(receiver, 0) for receiver in wait_readable(driver, receivers, wait_ms)
                     or receivers]
        for receiver, timeout_ms in ready:
            n = receiver.receive(out, stride, timeout_ms)
            if n:
                last = time.monotonic()
            got[index[id(receiver)]].extend(
                bytes(out[k * stride + at : k * stride + at + size]) for k in range(n))
        now = time.monotonic()
    return got


def _each_has(got: list[list[bytes]], lanes: int, expect: int) -> bool:
    return all(sum(map(len, got[k : k + lanes])) >= expect for k in range(0, len(got), lanes))


def by_consumer(got: list[list[bytes]], lanes: int) -> list[list[bytes]]:
    """What each consumer got over its `lanes` receivers (in a row in `got`)."""
    return [[message for part in got[k : k + lanes] for message in part]
            for k in range(0, len(got), lanes)]


def producer_and_seq(message: bytes) -> tuple[int, int]:
    fields = np.frombuffer(message, dtype=frame_dtype(0, len(message)))[0]
    return int(fields["producer_id"]), int(fields["seq"])


def accounting_problems(got: list[bytes], sent: Sequence[Outgoing]) -> list[str]:
    """How `got` differs from every message of `sent` exactly once, byte for byte, in each
    sender's order: lost, duplicated, reordered, damaged and unexpected messages."""
    expected = {out.producer_id: out.messages for out in sent}
    arrived: dict[int, list[tuple[int, bytes]]] = {}
    for message in got:
        producer_id, seq = producer_and_seq(message)
        arrived.setdefault(producer_id, []).append((seq, message))
    problems = [f"{len(v)} messages of unknown producer {p}" for p, v in arrived.items()
                if p not in expected]
    for producer_id, messages in expected.items():
        seqs = [seq for seq, _ in arrived.get(producer_id, [])]
        unique = set(seqs)
        lost = sorted(set(range(len(messages))) - unique)
        duplicated = len(seqs) - len(unique)
        unknown = sorted(unique - set(range(len(messages))))
        # a message shorter than the receiver's slot (sizes vary) fills its start
        damaged = sum(1 for seq, message in arrived.get(producer_id, [])
                      if seq < len(messages)
                      and message[: len(messages[seq])] != messages[seq])
        reordered = sum(1 for a, b in pairwise(seqs) if b < a)
        for what, n, sample in (("lost", len(lost), lost[:5]), ("duplicated", duplicated, []),
                                ("reordered", reordered, []), ("damaged", damaged, []),
                                ("with unknown seq", len(unknown), unknown[:5])):
            if n:
                problems.append(f"producer {producer_id}: {n} {what}"
                                + (f" (seq {sample})" if sample else ""))
    return problems


def assert_exactly_once(got: list[list[bytes]], sent: Sequence[Outgoing]) -> None:
    problems = [f"receiver {k}: {problem}" for k, messages in enumerate(got)
                for problem in accounting_problems(messages, sent)]
    assert not problems, "; ".join(problems)


def assert_refused(driver: Driver, receiver: Receiver, size: int) -> None:
    """`receiver` (of messages up to `size` bytes) hands over nothing and raises a
    `DriverError` naming the address within 10 s: a message of a size it cannot take
    came, an error rather than garbage."""
    stride = driver.receive_framing(size).stride(size)
    out = memoryview(bytearray(4 * stride))
    deadline = time.monotonic() + 10
    with pytest.raises(DriverError) as error:
        while time.monotonic() < deadline:
            assert receiver.receive(out, stride, 100) == 0, "handed over a wrong message"
    assert driver.address in str(error.value), error.value


def _attempt(call: Callable[[], object]) -> DriverError | None:
    """The DriverError `call` raises (None if it returns), checking it returns in CALL_S."""
    started = time.monotonic()
    try:
        call()
    except DriverError as exc:
        return exc
    finally:
        took = time.monotonic() - started
        assert took < CALL_S, f"a call took {took:.1f} s with the broker dead"
    return None


def free_address() -> str:
    """A loopback address nobody listens at (a port bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


# --- the suite -------------------------------------------------------------------------


class DriverConformance:
    """The cases every driver passes. Subclass it (as `TestSomething`) and provide a
    `target` fixture returning a `Target` (in the class, as a classmethod when it is
    class-scoped, or in a conftest.py); scope it wider than a case to share one broker."""

    @pytest.fixture(autouse=True)
    def _known_failures(self, request, target: Target) -> None:
        params = getattr(request.node, "callspec", None)
        role = params.params.get("role") if params is not None else None
        case = request.node.originalname.removeprefix("test_") + (f"[{role}]" if role else "")
        reason = target.known_failures.get(case)
        if reason is not None:
            request.node.add_marker(pytest.mark.xfail(strict=True, reason=reason))

    @pytest.fixture
    def closing(self) -> Iterator[Callable[..., None]]:
        """Closes what a case opened, after it (errors of connections to a dead broker
        are expected and ignored)."""
        opened: list = []
        yield lambda *things: opened.extend(things)
        for thing in reversed(opened):
            with contextlib.suppress(DriverError):
                thing.close()

    # -- delivery ------------------------------------------------------------------------

    def test_one_way(self, target: Target, closing) -> None:
        driver = target.make()
        receiver = driver.receiver(SIZE, 10)
        sender = driver.sender(SIZE, 1)
        closing(receiver, sender)
        out = outgoing(driver, 1, 500)
        send_all(sender, out)
        assert_exactly_once(collect(driver, [receiver], 500), [out])

    def test_fan_out(self, target: Target, closing) -> None:
        """Every receiver gets every message."""
        driver = target.make()
        receivers = [driver.receiver(SIZE, 10 + c) for c in range(3)]
        sender = driver.sender(SIZE, 1)
        closing(*receivers, sender)
        out = outgoing(driver, 1, 300)
        send_all(sender, out)
        assert_exactly_once(collect(driver, receivers, 300), [out])

    def test_several_connections(self, target: Target, closing) -> None:
        """Three senders interleaved, two receivers: each gets all three streams."""
        driver = target.make()
        receivers = [driver.receiver(SIZE, 10 + c) for c in range(2)]
        senders = [driver.sender(SIZE, p) for p in (1, 2, 3)]
        closing(*receivers, *senders)
        sent = [outgoing(driver, p, 200) for p in (1, 2, 3)]
        for k in range(0, 200, 20):
            for sender, out in zip(senders, sent, strict=True):
                sender.send(out.buf.data[k * out.stride : (k + 20) * out.stride], 20)
        for sender in senders:
            sender.settle()
        assert_exactly_once(collect(driver, receivers, 600), sent)

    def test_lanes_divide_the_load(self, target: Target, closing) -> None:
        """Two producers and two consumers with two connections each, on lanes 0 and 1 (as
        agents open them): each consumer gets every message exactly once over its two
        connections together, and no connection carries everything."""
        lanes = 2
        driver = target.make()
        receivers = [driver.receiver(SIZE, k * lanes + c, Lane(c, lanes))
                     for k in range(2) for c in range(lanes)]
        ids = range(2 * lanes)
        senders = [driver.sender(SIZE, p, Lane(p % lanes, lanes)) for p in ids]
        closing(*receivers, *senders)
        sent = [outgoing(driver, p, 120, lane=Lane(p % lanes, lanes)) for p in ids]
        for k in range(0, 120, 20):
            for sender, out in zip(senders, sent, strict=True):
                sender.send(out.buf.data[k * out.stride : (k + 20) * out.stride], 20)
        for sender in senders:
            sender.settle()
        got = collect(driver, receivers, 120 * len(ids), lanes=lanes)
        assert_exactly_once(by_consumer(got, lanes), sent)
        assert all(0 < len(messages) < 120 * len(ids) for messages in got), \
            f"messages per connection: {[len(messages) for messages in got]}"

    def test_one_large_batch(self, target: Target, closing) -> None:
        """5000 messages in one `send` call."""
        driver = target.make()
        receiver = driver.receiver(SIZE, 10)
        sender = driver.sender(SIZE, 1)
        closing(receiver, sender)
        out = outgoing(driver, 1, 5000)
        sender.send(out.buf.data, 5000)
        sender.settle()
        assert_exactly_once(collect(driver, [receiver], 5000), [out])

    def test_large_messages(self, target: Target, closing) -> None:
        size = target.large_size
        driver = target.make()
        receiver = driver.receiver(size, 10)
        sender = driver.sender(size, 1)
        closing(receiver, sender)
        out = outgoing(driver, 1, 12, size)
        send_all(sender, out, batches=(1, 5, 6))
        assert_exactly_once(collect(driver, [receiver], 12, size, room=2.5), [out])

    def _round_trip(self, target: Target, closing, requesters: int, count: int,
                    size: int = SIZE, room: float = 37) -> None:
        driver = target.make()
        responders = [driver.responder(size, 0)] if driver.needs_responder else []
        pairs = [driver.requester(size, 100 + p) for p in range(requesters)]
        closing(*responders, *(end for pair in pairs for end in pair))
        sent = [outgoing(driver, 100 + p, count, size) for p in range(requesters)]
        for (sender, _), out in zip(pairs, sent, strict=True):
            send_all(sender, out, batches=(1, 2, 100, 33))
        time.sleep(0.3)  # the replies arrive together: the receivers are read interleaved
        got = collect(driver, [receiver for _, receiver in pairs], count, size, responders,
                      room)
        for k, (messages, out) in enumerate(zip(got, sent, strict=True)):
            problems = accounting_problems(messages, [out])
            assert not problems, f"requester {k}: " + "; ".join(problems)

    def test_round_trip(self, target: Target, closing) -> None:
        """Every request comes back to its requester, once."""
        self._round_trip(target, closing, 1, 300)

    def test_round_trip_several_requesters(self, target: Target, closing) -> None:
        """Three requesters: each gets its own requests back, and only those."""
        self._round_trip(target, closing, 3, 100)

    def test_round_trip_large_messages(self, target: Target, closing) -> None:
        """Two requesters, one buffer of 2.5 messages for both (as an agent has one for all
        its connections): each call leaves a partial message with its receiver."""
        self._round_trip(target, closing, 2, 6, target.large_size, room=2.5)

    def test_pollable_signals_held_messages(self, target: Target, closing) -> None:
        """Messages wait at the receiver, more than one call takes: its pollable stays
        readable until every one is received (an agent with several connections waits on
        the pollables, then receives without waiting)."""
        driver = target.make()
        receiver = driver.receiver(SIZE, 10)
        sender = driver.sender(SIZE, 1)
        closing(receiver, sender)
        out = outgoing(driver, 1, 300)
        send_all(sender, out)
        time.sleep(0.3)  # all of them at the receiver's end
        stride = driver.receive_framing(SIZE).stride(SIZE)
        at = len(driver.receive_framing(SIZE).prefix)
        inbox = memoryview(bytearray(10 * stride))
        got: list[bytes] = []
        deadline = time.monotonic() + DELIVERY_S
        while len(got) < 300 and time.monotonic() < deadline:
            if not wait_readable(driver, [receiver], 1000):
                pytest.fail(f"the pollable stayed quiet for 1 s with {len(got)} of 300 "
                            "messages received")
            n = receiver.receive(inbox, stride, 0)
            got.extend(bytes(inbox[k * stride + at : k * stride + at + SIZE]) for k in range(n))
        assert_exactly_once([got], [out])

    def test_idle_receive_returns(self, target: Target, closing) -> None:
        """Nothing to receive: a zero timeout returns at once, a short one soon."""
        driver = target.make()
        receiver = driver.receiver(SIZE, 10)
        sender, replies = driver.requester(SIZE, 100)
        closing(receiver, sender, replies)
        stride = driver.receive_framing(SIZE).stride(SIZE)
        out = memoryview(bytearray(8 * stride))
        started = time.monotonic()
        for _ in range(100):
            assert receiver.receive(out, stride, 0) == 0
            assert replies.receive(out, stride, 0) == 0
        assert time.monotonic() - started < 1.0, "100 zero-timeout receives took over 1 s"
        started = time.monotonic()
        assert receiver.receive(out, stride, 50) == 0
        took = time.monotonic() - started
        assert 0.02 < took < 1.0, f"a 50 ms receive returned after {took:.3f} s"
        wait_readable(driver, [receiver, replies], 0)  # the pollables can be waited on

    def test_varying_sizes(self, target: Target, closing) -> None:
        """A driver that carries varying sizes (`Driver.carries_varying_sizes`) delivers each
        message whole at its own size, in batches mixing sizes, and refuses one above the
        largest its receiver was made for."""
        driver = target.make()
        largest = 4096
        if not driver.carries_varying_sizes(driver.options, largest):
            pytest.skip(f"driver {driver.name!r} sends one size (validate refuses sizes "
                        "that vary)")
        driver.sizes_vary = True
        receiver = driver.receiver(largest, 10)
        sender = driver.sender(largest, 1)
        closing(receiver, sender)
        sizes = np.random.default_rng(5).choice([HEADER_SIZE, 64, 700, largest], size=400)
        out = varying_outgoing(driver, 1, sizes.tolist())
        send_all(sender, out)
        assert_exactly_once(collect(driver, [receiver], 400, size=largest), [out])
        send_all(sender, varying_outgoing(driver, 2, [largest + 8]))
        assert_refused(driver, receiver, largest)

    def test_message_of_another_size(self, target: Target, closing) -> None:
        """A message of another size than the receiver's is an error, not garbage."""
        driver = target.make()
        receiver = driver.receiver(SIZE + 8, 10)
        sender = driver.sender(SIZE, 1)
        closing(receiver, sender)
        send_all(sender, outgoing(driver, 1, 1))
        assert_refused(driver, receiver, SIZE + 8)

    # -- faults --------------------------------------------------------------------------

    @pytest.mark.parametrize("role", ["sender", "receiver", "requester", "responder"])
    def test_unreachable(self, target: Target, role: str) -> None:
        """Connecting to an address nobody serves fails soon, naming the address."""
        address = target.unreachable or free_address()
        driver = target.make(address)
        if role == "responder" and not driver.needs_responder:
            pytest.skip(f"{driver.name} needs no responder")
        started = time.monotonic()
        with pytest.raises(DriverError) as error:
            connection = getattr(driver, role)(SIZE, 1)
            for end in connection if isinstance(connection, tuple) else (connection,):
                end.close()
        elapsed = time.monotonic() - started
        assert address in str(error.value), f"the error does not name {address}: {error.value}"
        assert elapsed < target.connect_s, f"failing took {elapsed:.1f} s"

    @pytest.mark.parametrize("role", ["sender", "receiver"])
    def test_wrong_credentials(self, target: Target, role: str) -> None:
        """A refused login is an error that says so and names the broker, not the secret."""
        login = target.wrong_login
        if login is None:
            pytest.skip("the target declares no authentication (wrong_login)")
        driver = target.make(login.address, **login.options)
        with pytest.raises(DriverError) as error:
            getattr(driver, role)(SIZE, 1).close()
        message = str(error.value)
        assert re.search(r"authenticat|credential|password|login|sasl", message, re.I), message
        assert login.address in message, message
        assert not login.secret or login.secret not in message, "the error shows the password"

    def test_broker_killed(self, target: Target, closing) -> None:
        """A broker dying under traffic: within FAULT_S the sender reports it (send, settle
        or close raise DriverError naming the broker); the receiver raises likewise or keeps
        returning, and no call hangs."""
        if target.doomed is None:
            pytest.skip("the target declares no broker to kill (doomed)")
        with target.doomed() as (address, kill):
            driver = target.make(address)
            receiver = driver.receiver(SIZE, 10)
            sender = driver.sender(SIZE, 1)
            closing(receiver, sender)
            first = outgoing(driver, 1, 50)
            send_all(sender, first)
            assert_exactly_once(collect(driver, [receiver], 50), [first])
            kill()
            more = outgoing(driver, 1, 10)
            stride = driver.receive_framing(SIZE).stride(SIZE)
            inbox = memoryview(bytearray(8 * stride))
            settle = sender.settle
            sent = received = None
            deadline = time.monotonic() + FAULT_S
            while sent is None and time.monotonic() < deadline:
                sent = _attempt(lambda: sender.send(more.buf.data, 10)) or _attempt(settle)
                if received is None:
                    received = _attempt(lambda: receiver.receive(inbox, stride, 10))
                time.sleep(0.01)
            sent = sent or _attempt(sender.close)
            assert sent is not None, f"no send, settle or close failed within {FAULT_S:.0f} s"
            for end, error in (("sender", sent), ("receiver", received)):
                assert error is None or address in str(error), \
                    f"the {end}'s error does not name {address}: {error}"

    # -- options -------------------------------------------------------------------------

    def test_unknown_option_refused(self, target: Target) -> None:
        with pytest.raises(ValidationError, match=NO_SUCH_OPTION):
            target.make(**{NO_SUCH_OPTION: 1})

    def test_invalid_options_refused(self, target: Target) -> None:
        if not target.invalid_options:
            pytest.skip("the target declares no invalid option values")
        for name, value in target.invalid_options.items():
            with pytest.raises(ValidationError, match=re.escape(name)):
                target.make(**{name: value})
