"""The contract between the sixnines framework and one system under test.

A driver only moves bytes. The framework owns the schedule, the timestamps, the payload
header and the accounting (see formats/payload.py), so every system is measured the same
way. Sends and receives work on *contiguous batches of frames* so that a sender which falls
behind its schedule can put every due message on the wire in one call (coalescing), and a
receiver can hand over everything that arrived together without a per-message Python call.

Third parties add a system by registering a `Driver` subclass under the `sixnines.drivers`
entry-point group.

Passwords are never options (options land in scenario files and manifests): a driver that
logs in takes `LoginOptions`, whose password is a reference read when connecting, or the
`Credential` the framework hands it for a broker sixnines started with a per-run secret.
`Driver.login` is the one place either is looked up.
"""

from __future__ import annotations

import os
import select
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, model_validator

from sixnines.formats.durability import Durability, Setting
from sixnines.formats.errors import SixninesError
from sixnines.formats.keys import NONE, KeySpace
from sixnines.formats.vocabulary import Mode


class DriverOptions(BaseModel):
    """Base of every driver's options: strict, so a misspelt key is an error, not a default."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class LoginOptions(DriverOptions):
    """Options of a driver that logs in: a user name and where the password is."""

    username: str | None = None
    """The user to log in as."""
    password_env: str | None = None
    """Name of an environment variable (of the agent) holding the password."""
    password_file: Path | None = None
    """File (on the agent's host) holding the password; a trailing line break is dropped."""

    @model_validator(mode="after")
    def _one_password_source(self) -> LoginOptions:
        if self.password_env is not None and self.password_file is not None:
            raise ValueError("give password_env or password_file, not both")
        return self

    def password(self, label: str) -> str | None:
        """The password the options point to, read now (None: they name none)."""
        return secret(label, "password_env", self.password_env, "password_file",
                      self.password_file)


def secret(label: str, env_option: str, variable: str | None, file_option: str = "",
           path: Path | None = None) -> str | None:
    """The secret an option names, read now: the agent's environment variable `variable`
    (option `env_option`), else the file `path` (option `file_option`) minus exactly one
    trailing line break (the one an editor or `echo` adds; anything else is the secret's).
    None when neither is given: what that means is the caller's to say, never a default
    password. Errors name the option, so the user knows which line of the scenario to fix."""
    if variable is not None:
        value = os.environ.get(variable)
        if value is None:
            raise DriverError(f"{label}: {env_option} {variable} is not set in the agent's "
                              "environment")
        return value
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise DriverError(f"{label}: cannot read {file_option} {path} "
                          f"({exc.strerror or exc})") from None
    return text.removesuffix("\n").removesuffix("\r") if text.endswith("\n") else text


@dataclass(frozen=True)
class Credential:
    """A login the framework hands a driver: the per-run secret of a broker sixnines started
    off loopback. It arrives over the agent's control channel and lives only in memory."""

    username: str | None  # None: a password alone (e.g. Redis' default user)
    password: str = field(repr=False)


@dataclass(frozen=True)
class Framing:
    """What a driver needs around every message of a contiguous batch: bytes before (a
    length word, a pre-encoded command) and after (a terminator). The framework lays frames
    out as prefix + message + suffix, end to end, and stamps the message header."""

    prefix: bytes = b""
    suffix: bytes = b""
    #: With keys (formats.keys), where the prefix names the key (a subject per key): the
    #: prefix of each key index, every one as long as `prefix`, which is key 0's.
    key_prefixes: tuple[bytes, ...] = ()

    def stride(self, message_size: int) -> int:
        return len(self.prefix) + message_size + len(self.suffix)


@dataclass(frozen=True)
class Lane:
    """The share of one-way traffic a connection carries (docs/design.md, "Connections
    divide the load").

    Connection c of an agent is on lane c of `count` (the workload's connections, the same
    for producers and consumers). A consumer's connections, one per lane, together receive
    every message exactly once: more connections spread one rate over more sockets instead
    of multiplying the deliveries. Drivers that route by name send and subscribe per lane
    (`name`), so lane i carries what senders' lane-i connections send; a partitioned system
    may instead give each lane its share of the partitions. Round trips need no lanes
    (each requester connection has its own reply route)."""

    index: int = 0
    count: int = 1

    def name(self, base: str) -> str:
        """A per-lane destination (channel, subject, exchange, queue, stream): `base` itself
        when there is one lane, so a single-connection run uses the name configured, else
        `base.index`."""
        return base if self.count == 1 else f"{base}.{self.index}"


#: The lane of a run with one connection per agent.
SOLE_LANE = Lane()


class WorkloadShape(Protocol):
    """What a driver may read of a workload point when it says what it cannot do with it
    (`Driver.workload_problems`): the scenario's point, checked before any run starts and
    possibly before its own fields are (a field may still hold the value as written)."""

    @property
    def mode(self) -> Mode: ...
    @property
    def message_size(self) -> int: ...  # the largest, when sizes vary (a distribution)
    @property
    def producers(self) -> int: ...
    @property
    def consumers(self) -> int: ...
    @property
    def connections(self) -> int: ...  # per agent: one `Lane` each
    @property
    def backlog_messages(self) -> int: ...  # due before consumers read (0: no backlog)
    @property
    def keys(self) -> str: ...  # formats.keys: "none" or a key space's text


#: The durability of a system that stores and acknowledges nothing.
IN_MEMORY_ONLY = "no durability: messages live in memory only, nothing is stored or acknowledged"


#: What a builtin broker calls with its address ("host:port") once it accepts connections.
Announce = Callable[[str], None]


class DriverError(SixninesError):
    """A failure of the system under test (unreachable, refused, closed), already worded
    for the user: it names the system and the address."""


#: A receiver's smallest message when it takes none smaller than its stride (one size).
NONE_SMALLER = 1 << 62


def wrong_size(label: str, length: int, smallest: int, largest: int) -> DriverError:
    """A receiver's refusal of a `length`-byte message: it takes `largest` bytes, or
    (sizes that vary) any from `smallest` up to it; a `smallest` not below `largest`
    means one size."""
    expected = largest if smallest >= largest else f"{smallest} to {largest}"
    return DriverError(f"{label}: got a {length}-byte message, expected {expected}")


class Sender(ABC):
    """One publishing connection."""

    @abstractmethod
    def send(self, frames: memoryview, count: int) -> None:
        """Send `count` messages laid end to end in `frames` (each framed by `framing`)."""

    def settle(self) -> None:  # noqa: B027 (a default, not a forgotten abstract method)
        """Wait until everything sent so far is acknowledged, raising `DriverError` on a
        refusal or a timeout. Throughput mode (`rate: max`) calls it after every batch, so
        its rates count what the system accepted, not what sat in a client buffer. The
        default is for systems that acknowledge nothing: there is nothing to wait for."""

    @property
    def acknowledged(self) -> int | None:
        """How many messages sent on this connection the system has acknowledged so far,
        where it acknowledges them in the order they were sent, each ack to the connection
        that sent it: they are then the first that many sent on it. None where the system
        acknowledges nothing, or not so (what the analysis' `lost_acknowledged` rests on)."""
        return None

    @abstractmethod
    def close(self) -> None: ...


#: The length word before each message of a batch of varying sizes that a driver cuts
#: itself (`LengthCutSender`): read by the sender, never sent.
LENGTH_WORD = struct.Struct("<I")


class LengthCutSender(Sender):
    """A sender of varying sizes for a driver whose `send` takes messages of one stride:
    each frame of a batch is a `LENGTH_WORD` then the message, and each message goes to
    the driver's sender alone."""

    def __init__(self, inner: Sender) -> None:
        self.inner = inner
        self.settle = inner.settle  # type: ignore[method-assign]

    def send(self, frames: memoryview, count: int) -> None:
        send, unpack, at = self.inner.send, LENGTH_WORD.unpack_from, 0
        for _ in range(count):
            start = at + LENGTH_WORD.size
            at = start + unpack(frames, at)[0]
            send(frames[start:at], 1)

    def close(self) -> None:
        self.inner.close()


class HasFileno(Protocol):
    def fileno(self) -> int: ...


#: What a `Waiter` waits on: a file descriptor, or an object whose `fileno()` is one.
Pollable = int | HasFileno


class Receiver(ABC):
    """One subscribing connection."""

    #: Readable when `receive` may have something (it may also be readable when it has
    #: not: a receiver must cope with a call that finds nothing). Set by the constructor.
    pollable: Pollable
    #: True for a receiver that may hold whole messages it read but did not hand over (more
    #: than one call's `out` took), which its `pollable` cannot signal: waiters then ask
    #: `held()` before they sleep. False promises that the pollable alone tells.
    holds: ClassVar[bool] = False

    def held(self) -> bool:
        """True when messages already read wait to be handed over (asked when `holds`)."""
        return False

    @abstractmethod
    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        """Write whole received frames (`receive_framing`) end to end from `out[0]`;
        return how many.

        `timeout_ms`: 0 polls without blocking, a positive value waits at most that long,
        -1 waits until something arrives. Partial frames stay with the receiver until the
        next call. Raises `DriverError` when the connection is lost.
        """

    @abstractmethod
    def close(self) -> None: ...


class Responder(ABC):
    @abstractmethod
    def relay(self, timeout_ms: int) -> int:
        """Send every request that has arrived back to its requester, unchanged (waiting up
        to `timeout_ms` as `Receiver.receive` does); return how many."""

    @abstractmethod
    def close(self) -> None: ...


class Waiter(ABC):
    """Waits until some of an agent's receivers are readable, so an agent holding several
    connections blocks on all of them at once (`Driver.waiter` makes it). A receiver that
    holds messages (`Receiver.held`) is ready without waiting: its pollable cannot say so.
    A driver's own waiter implements `poll`."""

    def __init__(self, receivers: Sequence[Receiver]) -> None:
        self._holding = [(index, receiver) for index, receiver in enumerate(receivers)
                         if receiver.holds]

    def wait(self, timeout_ms: int) -> list[int]:
        """Indexes (into the receivers it was made for) of those readable within
        `timeout_ms` (-1: until one is), at once when one holds messages."""
        if self._holding:
            held = [index for index, receiver in self._holding if receiver.held()]
            if held:
                return sorted(set(held).union(self.poll(0)))
        return self.poll(timeout_ms)

    @abstractmethod
    def poll(self, timeout_ms: int) -> list[int]:
        """Indexes of the receivers whose pollable is readable within `timeout_ms`."""


class PollWaiter(Waiter):
    """select.poll on the receivers' `pollable` descriptors."""

    def __init__(self, receivers: Sequence[Receiver]) -> None:
        super().__init__(receivers)
        self._poller = select.poll()
        self._index: dict[int, int] = {}  # descriptor -> receiver
        for index, receiver in enumerate(receivers):
            pollable = receiver.pollable
            fd = pollable if isinstance(pollable, int) else pollable.fileno()
            self._poller.register(fd, select.POLLIN)
            self._index[fd] = index

    def poll(self, timeout_ms: int) -> list[int]:
        index = self._index
        return [index[fd] for fd, _ in self._poller.poll(timeout_ms)]


class Driver(ABC):
    """One system under test, reached at `address` ("host:port"), logging in with
    `credential` when the framework gives one (see `login`; a subclass that overrides
    `__init__` takes it and passes it on).

    Delivery in one-way mode is by `Lane`: the receivers of one consumer, one per lane,
    together get every message of every sender exactly once; every consumer gets them all
    (consumers fan out, connections divide).
    `connection_id` is unique per connection within a run (the sender's producer id, the
    receiver's consumer id), for drivers that name per-connection destinations such as
    reply subjects or queues.
    """

    name: ClassVar[str]
    Options: ClassVar[type[DriverOptions]] = DriverOptions
    #: True when the driver has a broker sixnines can run itself (`sixnines broker NAME`).
    has_builtin_broker: ClassVar[bool] = False
    #: Set by the agent before any connection is made when this run's sizes vary (see
    #: `carries_varying_sizes`).
    sizes_vary: bool = False
    #: True when round trip needs a responder agent to send requests back (brokered
    #: systems); False when the broker itself echoes (the tcp relay, the zmq echo).
    needs_responder: ClassVar[bool] = False
    #: How the system carries a message's key (formats.keys: its index is in the frame at
    #: KEY_OFFSET after the prefix), in words for docs and refusals; None: it cannot, and
    #: `validate` refuses a keyed workload (`key_problems`).
    carries_keys: ClassVar[str | None] = None

    def __init__(self, address: str, options: DriverOptions,
                 credential: Credential | None = None) -> None:
        self.address = address
        self.options = options
        self.credential = credential
        #: The run's key space (set by the agent before it makes connections): a driver
        #: that routes by key reads each message's key index from its frame.
        self.keys: KeySpace | None = None

    def login(self) -> tuple[str | None, str | None]:
        """(user, password) to connect with, looked up now and never kept: the run's
        credential when there is one (it is the only login the broker takes), else the
        options' user and the password they point to."""
        if self.credential is not None:
            return self.credential.username, self.credential.password
        if isinstance(self.options, LoginOptions):
            return self.options.username, self.options.password(f"{self.name} at {self.address}")
        return None, None

    # -- durability (formats.durability) -----------------------------------------------------

    def durability(self) -> Durability:
        """What durability the run is measured with: the settings the options ask for, those
        the broker reports (asked over a short-lived connection of its own, so call it once
        the agents have set up what they use), and the label made of them. A broker that
        cannot be asked leaves `actual` None and the note says why; the label then says
        what was asked."""
        asked = self.durability_asked()
        actual, note = None, self.durability_unasked()
        if note is None:
            try:
                actual = self.durability_actual()
            except Exception as exc:  # a reading only: a client's own error never fails the run
                note = (f"not read back from the broker ({type(exc).__name__}: {exc}): the "
                        "label says what was asked")
        return Durability(label=self.durability_label({**asked, **(actual or {})}),
                          asked=asked, actual=actual, note=note)

    def durability_asked(self) -> dict[str, Setting]:
        """The settings deciding durability and delivery guarantees the options ask for
        (and the client defaults the driver relies on), named as the system names them."""
        return {}

    def durability_unasked(self) -> str | None:
        """Why the broker is not asked what it runs with (it is when None: then
        `durability_actual` asks it). The default: a system that stores nothing."""
        return IN_MEMORY_ONLY

    def durability_actual(self) -> dict[str, Setting]:
        """The settings the broker reports running with, named as `durability_asked` names
        them; raises DriverError when the broker cannot be reached or refuses."""
        raise NotImplementedError(f"driver {self.name!r} does not ask its broker")

    @classmethod
    def durability_label(cls, settings: Mapping[str, Setting]) -> str:
        """The short form of `settings` (asked, overlaid with what the broker reported)
        shown after the system's name; docs/results.md gives each driver's rule."""
        return "none"

    def waiter(self, receivers: Sequence[Receiver]) -> Waiter:
        """What the agent waits on its receivers with (more than one: with one, it calls
        `receive` with a timeout)."""
        return PollWaiter(receivers)

    def framing(self, message_size: int, lane: Lane = SOLE_LANE) -> Framing:
        """How outgoing messages are framed in a batch handed to `Sender.send` of a
        connection on `lane` (asked per connection: a prefix may name the lane's
        destination)."""
        return Framing()

    def receive_framing(self, message_size: int) -> Framing:
        """How a `Receiver` lays received messages out in its output buffer (only the
        lengths matter: the header is read after the prefix). One for all lanes: an agent's
        receivers share one buffer."""
        return self.framing(message_size)

    @classmethod
    def carries_varying_sizes(cls, options: DriverOptions, largest: int) -> bool:
        """True when, with these options and sizes up to `largest`, its senders and
        receivers carry messages of varying sizes (a workload's `message_size` as a
        distribution): `Sender.send` then
        gets frames of several lengths end to end, each framed for its own size, and
        `Receiver.receive` lays each message at the start of a `stride` slot (the
        largest's). A driver that does not is refused such a workload by name
        (`fixed_size_problem`); the conformance suite's `test_varying_sizes` is what one
        passes to say it does."""
        return False

    @classmethod
    def workload_problems(cls, options: DriverOptions, workload: WorkloadShape) -> list[str]:
        """What this driver cannot do with this workload (checked before anything starts),
        e.g. a delivery mode that cannot fan out to several consumers."""
        return []

    @classmethod
    def stores_messages(cls, options: DriverOptions) -> bool:
        """Whether, given these options, the system keeps messages for a subscribed
        consumer that is not reading (so a backlog can build): a broker's queue, log or
        stream, not a relay or pub/sub that drops or blocks."""
        return False

    @classmethod
    def key_problems(cls, options: DriverOptions, workload: WorkloadShape) -> list[str]:
        """Why this driver cannot carry the workload's keys (none when it has none)."""
        if workload.keys == NONE or cls.carries_keys is not None:
            return []
        return [f"{cls.name}: cannot carry message keys (workload keys {workload.keys}); "
                "leave keys out for this system, or use one that carries them (kafka, "
                "nats, rabbitmq, redis, tcp, zmq)"]

    @classmethod
    def resource_options(cls, options: DriverOptions) -> tuple[str, ...]:
        """The options that name what a run uses on the broker (a topic, stream, queue,
        subject), given these options (e.g. a stream only in a mode that has one). Each one
        a scenario leaves out gets a name of the run's own (orchestrator.run.resources):
        the agents create it as they connect, and `remove_resources` deletes it at the end.
        One the scenario names is the user's: used as it is, never deleted."""
        return ()

    def remove_resources(self, per_run: Collection[str], workload: WorkloadShape
                         ) -> list[str]:
        """Delete from the broker what the run created under the options in `per_run`
        (the run's own names, every lane's and round trip's names derived from them;
        nothing else) and return the names deleted. Called once the agents are gone;
        raises `DriverError` on a failure, which the run records as a note."""
        return []

    @abstractmethod
    def sender(self, message_size: int, connection_id: int, lane: Lane = SOLE_LANE) -> Sender:
        """One publishing connection (one-way mode), sending on `lane`."""

    @abstractmethod
    def receiver(self, message_size: int, connection_id: int,
                 lane: Lane = SOLE_LANE) -> Receiver:
        """One subscribing connection to `lane`, already subscribed when returned (one-way
        mode)."""

    @abstractmethod
    def requester(self, message_size: int, connection_id: int) -> tuple[Sender, Receiver]:
        """One round-trip connection: every message sent comes back on the receiver."""

    def responder(self, message_size: int, connection_id: int) -> Responder:
        """The far end of round trips, for drivers with `needs_responder`; ready (e.g.
        subscribed) when returned."""
        raise NotImplementedError(f"driver {self.name!r} needs no responder")

    @classmethod
    def serve_broker(cls, host: str, port: int, announce: Announce) -> None:
        """Run the builtin broker in this process until SIGTERM; call `announce(address)`
        once it accepts connections. Only for drivers with `has_builtin_broker`."""
        raise NotImplementedError(f"driver {cls.name!r} has no builtin broker")


def fixed_size_problem(driver: str) -> str:
    """Why a driver without `carries_varying_sizes` refuses a distribution of sizes."""
    return (f"driver {driver!r} sends every message at one size here: message_size as a "
            "distribution is not supported by it yet (every driver sixnines ships carries "
            "varying sizes, rabbitmq up to 128 KiB)")


def split_address(address: str, system: str) -> tuple[str, int]:
    """Parse "host:port" (IPv6 as "[::1]:port"), naming the system in the error."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise DriverError(f"{system}: address {address!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def split_addresses(address: str, system: str) -> list[tuple[str, int]]:
    """Parse the servers of a cluster, "host:port,host:port,..." (one: a list of one)."""
    return [split_address(part.strip(), system) for part in address.split(",")]
