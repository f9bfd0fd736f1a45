"""The control channel between controller and agent: JSON lines over the agent's stdio.

One dataclass per message type and a table from type name to class (not string-typed
dicts handled in a 170-line function). Agents open no listening port: the controller owns
the agent's stdin/stdout through whatever launched it (subprocess, SSH, container attach).

    controller                      agent
    prepare  ─────────────────────▶  connect, allocate, touch memory
             ◀─────────────────────  ready (protocol version, host facts)
    ping     ─────────────────────▶  (clock offset estimate, repeated)
             ◀─────────────────────  pong
    start(at)─────────────────────▶  run the schedule
             ◀─────────────────────  progress (every second)
    finish   ─────────────────────▶  (consumers: producers are done, drain)
             ◀─────────────────────  done (status, artifacts with sha256)
    stop     ─────────────────────▶  (abort at any time; data so far is kept)
    beat     ─────────────────────▶  (every HEARTBEAT_S where a connection can vanish
                                      without closing: containers)

An agent that heard a `beat` takes SILENCE_S without any line as the end of its input:
the controller froze or its network went, and no connection closes to say so.
"""

from __future__ import annotations

import dataclasses
import json
import queue
import threading
from dataclasses import dataclass, field
from typing import IO, ClassVar

from sixnines.formats.errors import SixninesError

PROTOCOL_VERSION = 7  # 3: heartbeats (`beat`); 4: progress carries disk written and free;
#: 5: `start` carries the CPU placement; 6: connections divide the load (lanes: a consumer
#: expects each message once, and the relay's hello carries the lane); 7: `prepare` carries
#: a rate shape, the fill of messages (`content`, formats.fill.Fill.to_message), how long
#: a broken connection is tried again (`reconnect_ns`) and a consumer's hold while a
#: backlog builds (`hold_ns`); `follow` points the broker monitor at a broker started again;
#: the monitor samples every node of a broker of several (`prepare` carries `node_pids`,
#: `follow` names the node)
#: How often a controller says it is still there, where its silence is the only sign of
#: its end; and how much silence, heartbeats included, ends the other side's input (three
#: beats may be late, and what the controller started still notices within 5 s).
HEARTBEAT_S = 1.0
SILENCE_S = 4.0
DEFAULT_CPU_SAMPLE_NS = 1_000_000_000  # as often as the interval log and the progress report


class ProtocolError(SixninesError):
    pass


@dataclass(frozen=True)
class Message:
    TYPE: ClassVar[str] = ""


@dataclass(frozen=True)
class Prepare(Message):
    TYPE: ClassVar[str] = "prepare"
    protocol: int
    run_id: str
    agent_id: str
    role: str  # producer | consumer | requester | responder | monitor
    driver: str
    address: str
    driver_options: dict
    message_size: int
    rate: float  # this agent's share, msg/s (0 with schedule max)
    schedule: str  # fixed | poisson | closed | max (rate: max: `messages` as fast as it goes)
    duration_ns: int
    warmup_ns: int
    connections: int
    first_id: int  # producer/consumer id of this agent's first connection
    phase_ns: int  # offset of this agent's schedule, so agents interleave evenly
    receive: str  # blocking | busy-poll
    drain_ns: int
    seed: int
    expected: int  # messages a consumer should receive (sizes its arrays)
    out_dir: str
    cpu_sample_ns: int = DEFAULT_CPU_SAMPLE_NS  # how often CPU time is sampled (cpu.parquet)
    target_pid: int = 0  # monitor: the pid naming the broker's process group on its host
    #: monitor: the pids naming the process groups of the broker's other nodes (a broker of
    #: several: node 1, 2, ...; `target_pid` is node 0's)
    node_pids: list = field(default_factory=list)
    messages: int = 0  # schedule max: this agent's messages, split over its connections
    #: A shaped rate (formats.shape.RateShape as JSON, the whole run's), which each sending
    #: connection follows as lane `first_id // connections + c * senders` of `lanes`
    #: (senders × connections) instead of `rate` and `phase_ns`.
    shape: dict | None = None
    lanes: int = 0
    reconnect_ns: int = 0  # how long a broken connection is tried again (0: never)
    #: {"username", "password"}: the run's login for a broker sixnines started off loopback
    #: (drivers.base.Credential). Only this channel carries it; `decode` never quotes it.
    credential: dict | None = field(default=None, repr=False)
    #: What messages carry after their header (formats.fill.Fill.to_message); a sample
    #: file's bytes travel in it, so it is kept out of `repr` (logs) too.
    content: dict = field(default_factory=lambda: {"kind": "random"}, repr=False)
    #: A consumer of a backlog run reads nothing until `hold_ns` after the start instant
    #: (subscribed all along, so the system keeps what arrives); 0: it reads from the start.
    hold_ns: int = 0
    #: The message keys (formats.keys: "none" or a key space's text): senders write each
    #: message's key into their rings, drivers that route by key read it there.
    keys: str = "none"
    #: Message sizes drawn from a distribution (formats.sizes.Sizes as JSON; None: every
    #: message is `message_size`, which is then the distribution's largest).
    sizes: dict | None = None


@dataclass(frozen=True)
class Ready(Message):
    TYPE: ClassVar[str] = "ready"
    protocol: int
    agent_id: str
    pid: int
    host: dict
    versions: dict


@dataclass(frozen=True)
class Ping(Message):
    TYPE: ClassVar[str] = "ping"
    t_ns: int


@dataclass(frozen=True)
class Pong(Message):
    TYPE: ClassVar[str] = "pong"
    t_ns: int
    agent_ns: int


@dataclass(frozen=True)
class Start(Message):
    """Begin at `at_ns` (the agent's own monotonic clock). The CPU placement on its kernel
    (docs/design.md, "CPU placement"): its loop runs on `loop_cpu` alone (-1: anywhere),
    and every other thread and process of the agent keeps off `keep_off` (the CPUs of the
    busy loops there)."""

    TYPE: ClassVar[str] = "start"
    at_ns: int
    loop_cpu: int = -1
    keep_off: list = field(default_factory=list)


@dataclass(frozen=True)
class Follow(Message):
    """To the broker monitor: the broker (its node `node`) was started again (a fault on
    purpose), its process group is now `target_pid`; its CPU time goes on from the
    previous one's."""

    TYPE: ClassVar[str] = "follow"
    target_pid: int
    node: int = 0


@dataclass(frozen=True)
class Finish(Message):
    """Producers are done: a consumer drains until it has `expected` messages or its drain
    time has passed."""

    TYPE: ClassVar[str] = "finish"
    expected: int


@dataclass(frozen=True)
class Stop(Message):
    TYPE: ClassVar[str] = "stop"
    reason: str


@dataclass(frozen=True)
class Progress(Message):
    TYPE: ClassVar[str] = "progress"
    agent_id: str
    sent: int
    received: int
    disk_written: int = 0  # bytes of records on disk so far (agents.disk)
    disk_free: int = -1  # bytes left on the agent's filesystem; -1: unknown


@dataclass(frozen=True)
class Done(Message):
    TYPE: ClassVar[str] = "done"
    agent_id: str
    status: str  # ok | partial
    sent: int
    received: int
    t0_ns: int
    artifacts: dict  # file name -> {"sha256": hex, "bytes": n}
    problems: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Failed(Message):
    TYPE: ClassVar[str] = "failed"
    agent_id: str
    error: str


@dataclass(frozen=True)
class Beat(Message):
    """The controller is still there (see the module docstring); `Channel` consumes it."""

    TYPE: ClassVar[str] = "beat"


MESSAGE_TYPES: dict[str, type[Message]] = {
    cls.TYPE: cls
    for cls in (Prepare, Ready, Ping, Pong, Start, Follow, Finish, Stop, Progress, Done,
                Failed, Beat)
}


def encode(message: Message) -> str:
    return json.dumps({"type": message.TYPE, **dataclasses.asdict(message)}, separators=(",", ":"))


def decode(line: str) -> Message:
    try:
        return message_of(json.loads(line))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ProtocolError(f"bad control message {_excerpt(line)}: {exc}") from exc


def message_of(data: dict) -> Message:
    """The message a decoded JSON object is (KeyError, TypeError or AttributeError when it
    is none)."""
    fields = dict(data)
    return MESSAGE_TYPES[fields.pop("type")](**fields)


def _excerpt(line: str) -> str:
    """The start of a bad line for an error message, unless the line carries a credential
    (errors reach logs and manifests)."""
    return "(not shown: it carries a credential)" if '"credential"' in line else repr(line[:200])


class Channel:
    """JSON lines over a pair of text streams; `send` is safe from several threads. Once a
    `beat` came in, SILENCE_S without a line ends the input as its end would."""

    def __init__(self, incoming: IO[str], outgoing: IO[str]) -> None:
        self._incoming = incoming
        self._outgoing = outgoing
        self._lock = threading.Lock()
        self._lines: queue.Queue[str] | None = None  # filled by a reader thread
        self._beating = False
        self._ended = False

    def send(self, message: Message) -> bool:
        """False when the other end has gone (the controller died): an agent then finishes
        on its own, and its files and done.json are what remains."""
        line = encode(message) + "\n"
        with self._lock:
            try:
                self._outgoing.write(line)
                self._outgoing.flush()
            except (OSError, ValueError):  # broken pipe, or closed after one
                return False
        return True

    def receive(self) -> Message | None:
        """The next message, or None at end of stream or after SILENCE_S of silence
        following a beat (the controller has gone)."""
        while True:
            line = self._next_line()
            if not line:
                return None
            if line.strip():
                message = decode(line)
                if not isinstance(message, Beat):
                    return message
                self._beating = True

    def _next_line(self) -> str:
        """A line ('' at the end), read by a thread of its own so that waiting for it can
        time out: a blocked readline cannot be interrupted."""
        if self._ended:
            return ""
        if self._lines is None:
            self._lines = queue.Queue()
            threading.Thread(target=self._read, args=(self._lines,), name="channel-read",
                             daemon=True).start()
        try:
            line = self._lines.get(timeout=SILENCE_S if self._beating else None)
        except queue.Empty:
            line = ""
        self._ended = not line
        return line

    def _read(self, lines: queue.Queue[str]) -> None:
        try:
            for line in iter(self._incoming.readline, ""):
                lines.put(line)
        except (OSError, ValueError):  # the stream failed, or was closed under us: its end
            pass
        lines.put("")
