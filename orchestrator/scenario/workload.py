"""The workload of a scenario, in its two shapes, and the rules that span several fields.

Two workload shapes exist on purpose: `WorkloadSpec` is what the file says (every field a
non-empty tuple of values, because any field may be swept), `Workload` is one resolved point
of the matrix (scalars in base units: bytes, msg/s, nanoseconds) that agents run.

`rate: max` is throughput mode: no schedule, `messages` in total sent as fast as the system
takes, `duration` only a time cap (`MAX_RATE_CAP_NS` unless given).

With `cases:`, `WorkloadBase` is the base every case starts from (no field required) and each
`Case` sets some fields over it; `case_problems` says which cases end up incomplete.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    model_serializer,
    model_validator,
)

from sixnines.formats.fill import RANDOM
from sixnines.formats.keys import MAX_KEYED_SIZE, MIN_KEYED_SIZE, MIN_PERIOD, NONE
from sixnines.formats.payload import HEADER_SIZE
from sixnines.formats.shape import RateShape
from sixnines.formats.vocabulary import MAX_RATE, Mode, Receive, Schedule
from sixnines.orchestrator.scenario.backlog import BACKLOG_KEYS, BacklogField
from sixnines.orchestrator.scenario.fields import (
    MAX_RUN_TIME_NS,
    MAX_WAIT_NS,
    SECOND_NS,
    Content,
    Keys,
    Messages,
    MessageSize,
    Name,
    Parallel,
    RunTime,
    Seed,
    Sweep,
    Wait,
    as_list,
)
from sixnines.orchestrator.scenario.keys import parse_keys
from sixnines.orchestrator.scenario.problems import shown
from sixnines.orchestrator.scenario.search_spec import RateOrSearch, RateSearch, search_problems
from sixnines.orchestrator.scenario.shapes import (
    SHAPE_KEYS,
    SHAPES,
    Shape,
    resolve,
    shape_label,
    shape_problems,
)
from sixnines.orchestrator.scenario.sizes import SizeDistribution, size_label
from sixnines.orchestrator.scenario.units import format_duration
from sixnines.orchestrator.scenario.yaml_source import YamlPath

#: YAML workload field -> `Workload` field (durations are resolved to nanoseconds).
WORKLOAD_FIELDS: dict[str, str] = {
    "mode": "mode",
    "message_size": "message_size",
    "content": "content",
    "keys": "keys",
    "rate": "rate",
    "messages": "messages",
    "schedule": "schedule",
    "duration": "duration_ns",
    "warmup": "warmup_ns",
    "producers": "producers",
    "consumers": "consumers",
    "connections": "connections",
    "receive": "receive",
    "drain": "drain_ns",
    "seed": "seed",
    "backlog": "backlog",
}


#: What messages carry unless `content` says otherwise (formats.fill).
DEFAULT_CONTENT = RANDOM
#: Messages carry no key unless `keys` says so (formats.keys).
DEFAULT_KEYS = NONE

#: With `rate: max`, how long senders may take for their `messages` when `duration` is not
#: given: a cap that ends a run the system cannot finish, not a target.
MAX_RATE_CAP_NS = 600 * SECOND_NS


class WorkloadPoint(BaseModel):
    """One resolved point: what the agents run. Sizes in bytes, rate in msg/s (total across
    producers) or `MAX_RATE`, times in nanoseconds. With `rate: max`, `messages` is the total
    to send across producers and `duration_ns` the cap on sending after the warm-up."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    mode: Mode = Mode.ONE_WAY
    message_size: MessageSize
    content: Content = DEFAULT_CONTENT
    keys: Keys = DEFAULT_KEYS
    rate: RateOrSearch
    messages: Messages | None = None
    schedule: Schedule = Schedule.FIXED
    duration_ns: Annotated[int, Field(strict=True, gt=0, le=MAX_RUN_TIME_NS)]
    warmup_ns: Annotated[int, Field(strict=True, ge=0, le=MAX_WAIT_NS)] = 1 * SECOND_NS
    producers: Parallel = 1
    consumers: Parallel = 1
    connections: Parallel = 1
    receive: Receive = Receive.BLOCKING
    drain_ns: Annotated[int, Field(strict=True, ge=0, le=MAX_WAIT_NS)] = 5 * SECOND_NS
    seed: Seed = None
    backlog: BacklogField | None = None

    @model_validator(mode="before")
    @classmethod
    def _capped(cls, data: Any) -> Any:
        """rate: max without a duration: the default time cap."""
        if isinstance(data, dict) and data.get("rate") == MAX_RATE \
                and data.get("duration_ns") is None:
            return {**data, "duration_ns": MAX_RATE_CAP_NS}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> WorkloadPoint:
        problems = cross_field_problems(self)
        if problems:
            raise ValueError("; ".join(message for _, message in problems))
        return self

    @model_serializer(mode="wrap")
    def _content_when_given(self, handler: Any) -> Any:
        """`content` and `keys` only when not the default, `backlog` only when there is one:
        a run's params (manifest, summary, compare, history) stay those of runs recorded
        before they existed, whose messages carried random fill and no key, and had no
        backlog."""
        data = handler(self)
        if isinstance(data, dict):
            for name, default in (("content", DEFAULT_CONTENT), ("keys", DEFAULT_KEYS)):
                if data.get(name) == default:
                    del data[name]
            if data.get("backlog", 0) is None:
                del data["backlog"]
        return data

    @property
    def saturation(self) -> bool:
        """Throughput mode (`rate: max`): its latency is saturation latency."""
        return self.rate == MAX_RATE

    @property
    def mean_size(self) -> float | None:
        """A message's mean size: its one size, or the mean a distribution draws (None: a
        file of sizes, read only when the run starts)."""
        size = self.message_size
        if isinstance(size, int):
            return size
        if not isinstance(size, SizeDistribution) or size.file is not None:
            return None
        return size.sizes(Path()).mean(HEADER_SIZE if self.keys == NONE else MIN_KEYED_SIZE)

    @property
    def release_ns(self) -> int | None:
        """With a backlog, when consumers start reading, from the start instant (None:
        they read from the start). A build in bytes is in messages of the mean size."""
        if self.backlog is None:
            return None
        mean = self.mean_size
        if self.backlog.bytes is not None and mean is None:  # refused (backlog_problems)
            return None
        if self.shape is not None:
            return self.backlog.release_ns(self.shape, mean)
        if isinstance(self.rate, float | int):
            return self.backlog.release_ns(float(self.rate), mean)
        return None

    @property
    def backlog_messages(self) -> int:
        """The messages the schedule intends before the release: the backlog a system must
        keep for consumers not reading (0: no backlog)."""
        release = self.release_ns
        if release is None:
            return 0
        shape = self.shape
        if shape is not None:
            return math.ceil(float(shape.cumulative().at(release)))
        assert isinstance(self.rate, float | int)  # a release needs a number or a shape
        return math.ceil(float(self.rate) * release / SECOND_NS)

    @property
    def shape(self) -> RateShape | None:
        """The segments a shaped rate follows (None: the rate is one number, max or a
        search)."""
        if not isinstance(self.rate, SHAPES):
            return None
        return resolve(self.rate, self.warmup_ns, self.duration_ns)

    def driver_view(self, largest: int | None = None) -> DriverView:
        """The point as a driver sees it (drivers.base.WorkloadShape): one message size,
        a distribution's `largest` (its file read by the caller)."""
        size = largest if isinstance(self.message_size, SizeDistribution) else self.message_size
        assert size is not None  # a distribution's largest is given
        return DriverView(self.mode, size, self.producers, self.consumers, self.connections,
                          self.backlog_messages, self.keys)

    def params(self) -> dict[str, Any]:
        """The point as JSON, as the manifest's `params` keep it: a shaped rate as its mean
        over the measured time (msg/s, what figures of the scheduled rate compare with)
        and the shape beside it."""
        params = self.model_dump(mode="json")
        shape = self.shape
        if shape is not None:
            params["rate"] = shape.mean(self.warmup_ns, self.warmup_ns + self.duration_ns)
            params["shape"] = shape.as_json()
        if self.backlog is not None:
            params["backlog"] = {"build": self.backlog.build_text,
                                 "release_ns": self.release_ns,
                                 "drain_within_ns": self.backlog.drain_within_ns}
        return params


@dataclass(frozen=True)
class DriverView:
    """What a driver reads of a point (drivers.base.WorkloadShape)."""

    mode: Mode
    message_size: int  # the largest, when sizes vary
    producers: int
    consumers: int
    connections: int
    backlog_messages: int = 0  # due before consumers read (0: no backlog)
    keys: str = NONE


#: Rates that change during the run (a shape, a search): what a closed loop, which sends
#: when the reply arrives, says to each, and what of each does not fit the measured time.
_CHANGING_RATES: tuple[tuple[tuple[type, ...], str,
                             Callable[[Any, int | None], list[str]]], ...] = (
    (SHAPES, "'closed' cannot follow a rate shape (a closed loop sends when the reply "
     "arrives); use fixed or poisson", shape_problems),
    ((RateSearch,), "'closed' cannot search for a rate (a closed loop sends when the reply "
     "arrives, at whatever rate that gives)", search_problems),
)


def cross_field_problems(workload: WorkloadPoint) -> list[tuple[str, str]]:
    """Rules spanning several fields, as (YAML field to blame, message). `workload` may be
    unvalidated (`model_construct`), so a missing duration shows as None."""
    found = []
    if workload.schedule is Schedule.CLOSED and workload.mode is not Mode.ROUND_TRIP:
        found.append(("schedule", "'closed' needs mode 'round-trip' (a closed loop sends the "
                      "next request when the reply arrives)"))
    if isinstance(workload.message_size, SizeDistribution) and workload.mode is not Mode.ONE_WAY:
        found.append(("message_size", "a distribution of sizes needs mode 'one-way' (round "
                      "trips send every request at one size)"))
    for kinds, closed_problem, timing_problems in _CHANGING_RATES:
        if isinstance(workload.rate, kinds):
            if workload.schedule is Schedule.CLOSED:
                found.append(("schedule", closed_problem))
            found += [("rate", problem)
                      for problem in timing_problems(workload.rate, workload.duration_ns)]
    found += [("backlog", problem) for problem in backlog_problems(workload)]
    if workload.keys != NONE:
        found += _key_problems(workload)
    if not workload.saturation:
        if workload.messages is not None:
            found.append(("messages", "only with rate: max (at a fixed rate, rate × duration "
                          "sets how many messages are sent)"))
        if workload.duration_ns is None:
            found.append(("duration", "field required (only rate: max may leave it out)"))
        return found
    if workload.messages is None:
        found.append(("rate", "rate: max needs `messages`: how many to send in total, across "
                      "all producers"))
    if workload.schedule is not Schedule.FIXED:
        found.append(("schedule", f"{str(workload.schedule)!r} makes no sense with rate: max "
                      "(there is no schedule: senders go as fast as the system takes)"))
    if workload.mode is not Mode.ONE_WAY:
        found.append(("rate", "rate: max needs mode 'one-way' (a requester sending as fast as "
                      "it can would block on replies it has no time to read)"))
    return found


def backlog_problems(workload: WorkloadPoint) -> list[str]:
    """What keeps a point from building and draining its backlog: a schedule to keep
    while consumers hold off, and room in the run for the build and the drain's bound."""
    if workload.backlog is None:
        return []
    if not isinstance(workload.rate, (float, int, *SHAPES)) or workload.rate == MAX_RATE:
        return ["needs a scheduled rate (a number or a shape): producers keep it while the "
                "backlog builds and drains"]
    if workload.mode is not Mode.ONE_WAY or workload.schedule is Schedule.CLOSED:
        return ["needs mode one-way with an open-loop schedule (fixed or poisson): "
                "consumers hold off while producers send"]
    if workload.backlog.bytes is not None and workload.mean_size is None:
        return ["a build in bytes is counted in messages of the sizes' mean, and a file of "
                "sizes is read only when the run starts: give the build in messages (20k "
                "messages) or a time (10s)"]
    if workload.duration_ns is None:
        return []  # reported on its own field
    release = workload.release_ns
    assert release is not None
    run_ns = workload.warmup_ns + workload.duration_ns
    bound = workload.backlog.drain_within_ns
    if release + bound > run_ns:
        return [f"built at {format_duration(release)} from the start, then drain_within "
                f"{format_duration(bound)}, ends after the warm-up and duration "
                f"({format_duration(run_ns)}): producers must keep the rate the whole time "
                "the drain is watched; lengthen duration or shorten the build or the bound"]
    return []


def _key_problems(workload: WorkloadPoint) -> list[tuple[str, str]]:
    """Keys ride in the 4 bytes after the header, on one-way messages."""
    found = []
    if workload.mode is not Mode.ONE_WAY:
        found.append(("keys", "keys need mode 'one-way' (a round trip's requests go to "
                      "their requester's own reply route, whatever their key)"))
    size = workload.message_size
    if isinstance(size, int) and size < MIN_KEYED_SIZE:
        found.append(("keys", f"keyed messages need message_size of at least "
                      f"{MIN_KEYED_SIZE} bytes (the key index follows the "
                      f"{MIN_KEYED_SIZE - 4}-byte header; got {size})"))
    if isinstance(size, int) and size > MAX_KEYED_SIZE:
        found.append(("keys", f"keyed messages may be at most {MAX_KEYED_SIZE >> 20} MiB "
                      f"(a sender's ring holds {MIN_PERIOD} keyed frames; got {size})"))
    return found


class WorkloadSpec(BaseModel):
    """The workload as written: every field a tuple of values. A field given as a list in
    the file is *swept* (see `swept`), and the matrix is the product of all fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    mode: Sweep[Mode] = (Mode.ONE_WAY,)
    """one-way: producers send, consumers receive; round-trip: requesters send and each
    message comes back to them (request/reply, timed on one clock)."""
    message_size: Sweep[MessageSize]
    """Bytes per message on the wire, sixnines' message header included."""
    content: Sweep[Content] = (DEFAULT_CONTENT,)
    """What each message carries after its 28-byte header: random (incompressible),
    zeros, text (English-like words), {file: PATH} (a sample file cut into messages,
    relative to the scenario, at most 4 MiB), or {compressibility: RATIO} (compressed /
    original size for gzip, zstd and lz4 within ±0.02)."""
    keys: Sweep[Keys] = (DEFAULT_KEYS,)
    """The key each message carries: none; {count: N}, N keys drawn uniformly; or
    {count: N, zipf: S}, Zipf with exponent S over N keys (key k+1 is drawn in proportion
    to 1/(k+1)^S). Drawn from the seed before the start, carried as each system carries
    keys (Kafka: the record key picks the partition); per-key order is checked
    (docs/writing.md, "Message keys")."""
    rate: Sweep[RateOrSearch]
    """Messages per second in total, split across producers; `max` (throughput mode:
    `messages` sent as fast as the system takes); `{search: max, …}`, the highest rate
    that meets a latency objective; or a shape: `{steps: […]}`, `{ramp: …}`,
    `{base: …, bursts: …}` or `{trace: FILE}` (docs/writing.md, "Rate shapes")."""
    messages: Sweep[Messages | None] = (None,)
    """With `rate: max` only: how many messages to send in total, across producers."""
    schedule: Sweep[Schedule] = (Schedule.FIXED,)
    """When each message is due: fixed (evenly spaced), poisson (random arrivals at the
    rate), closed (round-trip only: the next request when the reply is in, for comparison
    with closed-loop tools)."""
    duration: Sweep[RunTime | None] = (None,)
    """The measured time, after the warm-up. Required, but with `rate: max`, where it caps
    the sending (default 10m)."""
    warmup: Sweep[Wait] = (1 * SECOND_NS,)
    """Sending before the measured time: recorded, excluded from the results."""
    producers: Sweep[Parallel] = (1,)
    """Sending agents (in round-trip mode: requesters); the rate is split across them."""
    consumers: Sweep[Parallel] = (1,)
    """Receiving agents; every consumer receives every message (fan-out)."""
    connections: Sweep[Parallel] = (1,)
    """Connections per agent, dividing its load: each producer connection sends its share
    of the rate, and each message reaches a consumer once, over one of its connections."""
    receive: Sweep[Receive] = (Receive.BLOCKING,)
    """How receivers wait: blocking (in the kernel) or busy-poll (spinning on a CPU of its
    own: lower latency, one core per receiving loop)."""
    drain: Sweep[Wait] = (5 * SECOND_NS,)
    """How long consumers wait for messages in flight after the last send."""
    seed: Sweep[Seed] = (None,)
    """Seed of the payloads and of Poisson arrivals (default: the run number)."""
    backlog: Sweep[BacklogField | None] = (None,)
    """Build a backlog, then drain it: `{build: 20k messages | 5MB | 10s, drain_within:
    60s}`. Consumers, subscribed, read nothing from the start until the build's amount is
    due on the schedule; then they go while producers keep the rate, and the results say
    whether they caught up within `drain_within` (docs/writing.md, "Backlog build and
    drain"). Only for systems that store messages."""

    _labels: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)
    _lists: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_labels(cls, data: Any, handler: Any) -> WorkloadSpec:
        """Remember the fields as written ("1KB", "500ms") to name runs by them, and which
        were given as lists."""
        spec = handler(data)
        if isinstance(data, dict):
            given = {key: value for key, value in data.items() if key in WORKLOAD_FIELDS}
            spec._labels = {
                key: tuple(_label_of(item) for item in as_list(value))
                for key, value in given.items()
            }
            spec._lists = frozenset(k for k, v in given.items() if isinstance(v, list | tuple))
        return spec

    @property
    def swept(self) -> tuple[str, ...]:
        """YAML field names given as lists (or holding several values), in declared order."""
        return tuple(
            name for name in WORKLOAD_FIELDS if name in self._lists or len(getattr(self, name)) > 1
        )

    @property
    def given(self) -> tuple[str, ...]:
        """YAML field names set explicitly (in the file, or by keyword), in declared order."""
        return tuple(name for name in WORKLOAD_FIELDS if name in self.model_fields_set)

    @property
    def points(self) -> int:
        """How many points `combinations` yields, counted without making them."""
        return math.prod(len(getattr(self, name)) for name in WORKLOAD_FIELDS)

    def merged(self, other: WorkloadSpec) -> WorkloadSpec:
        """This spec with every field `other` gives replaced by `other`'s (labels too). The
        result must be complete: callers check `missing_from` first."""
        values = {name: getattr(self, name) for name in self.given}
        values |= {name: getattr(other, name) for name in other.given}
        spec = WorkloadSpec.model_construct(**values)
        spec._labels = self._labels | other._labels
        spec._lists = (self._lists - set(other.given)) | other._lists
        return spec

    def label(self, name: str, index: int) -> str:
        """Value `index` of field `name` in its human form (as written when known)."""
        labels = self._labels.get(name)
        return labels[index] if labels else str(_plain(getattr(self, name)[index]))

    def combinations(self) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
        """Every point as (`Workload` field values, {swept YAML field: label}), first
        declared field varying slowest."""
        names = list(WORKLOAD_FIELDS)
        swept = self.swept
        ranges = [range(len(getattr(self, name))) for name in names]
        for indexes in itertools.product(*ranges):
            picked = dict(zip(names, indexes, strict=True))
            values = {WORKLOAD_FIELDS[n]: getattr(self, n)[i] for n, i in picked.items()}
            yield values, {n: self.label(n, picked[n]) for n in swept}

    def expand(self) -> list[tuple[WorkloadPoint, dict[str, str]]]:
        """Validated `Workload`s with their swept labels (see `combinations`)."""
        return [(WorkloadPoint(**values), labels) for values, labels in self.combinations()]

    @model_serializer
    def _as_yaml(self) -> dict[str, Any]:
        """The YAML form back: durations as "<n>ns" so a reload cannot misread them."""
        return self._yaml(WORKLOAD_FIELDS)

    def _yaml(self, names: Iterable[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in names:
            values = [_plain(v) for v in getattr(self, name)]
            if WORKLOAD_FIELDS[name].endswith("_ns"):
                values = [None if v is None else f"{v}ns" for v in values]
            out[name] = values if name in self.swept else values[0]
        return out


#: Fields a complete `WorkloadSpec` must be given (the rest have defaults).
REQUIRED_FIELDS = tuple(n for n, f in WorkloadSpec.model_fields.items() if f.is_required())


class WorkloadBase(WorkloadSpec):
    """`workload:` next to `cases:`, the base every case starts from: no field is required
    here, as long as each case ends up complete (message_size and rate are `()` until
    given; `given` says which fields the file set)."""

    message_size: Sweep[MessageSize] = ()
    rate: Sweep[RateOrSearch] = ()

    @model_serializer
    def _as_yaml(self) -> dict[str, Any]:
        return self._yaml(self.given)


class Case(WorkloadBase):
    """One entry of `cases:`: workload fields (lists still sweep) over the base, and an
    optional `name` that stands for the case in run ids."""

    name: Name | None = None
    """Stands for the case in run ids (default: the fields it sets)."""

    def missing_from(self, base: WorkloadSpec) -> list[str]:
        """Required fields neither this case nor `base` gives."""
        given = {*self.given, *base.given}
        return [name for name in REQUIRED_FIELDS if name not in given]

    def labels(self) -> dict[str, str]:
        """This case's own fields as written ({"message_size": "1KB"}); a list shows its
        first value (`WorkloadSpec.combinations` labels each point)."""
        return {name: self.label(name, 0) for name in self.given}

    @model_serializer
    def _as_yaml(self) -> dict[str, Any]:
        return ({} if self.name is None else {"name": self.name}) | self._yaml(self.given)


def _label_of(written: Any) -> str:
    """A value as written, in words (run ids are made of them): a shape by its label, a
    backlog by its build and bound, any other one-key mapping as key=value (`content:
    {file: PATH}`), anything else as it reads."""
    if isinstance(written, dict) and SHAPE_KEYS & set(written):
        try:
            return shape_label(TypeAdapter(Shape).validate_python(written))
        except (ValueError, ValidationError):
            return "shape"  # invalid: its problems are reported, not its label
    sizes = size_label(written)
    if sizes is not None:
        return sizes
    if isinstance(written, dict) and set(written) == BACKLOG_KEYS:
        return f"{written['build']}-within-{written['drain_within']}"
    if isinstance(written, dict) and "count" in written:
        try:
            return parse_keys(written)
        except ValueError:
            return "keys"  # invalid: its problems are reported, not its label
    if isinstance(written, dict) and len(written) == 1:
        ((key, value),) = written.items()
        return f"{key}={value}"
    return str(_plain(written)).strip()


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, StrEnum) else value


def case_problems(
    base: Collection[str], cases: Sequence[tuple[Collection[str], object] | None]
) -> list[tuple[YamlPath, str]]:
    """Cases that lack a required field, and repeated case names, as (path, message).
    `base` names the fields the base workload gives; each case is (its fields, its name),
    or None when it is not a mapping at all."""
    found: list[tuple[YamlPath, str]] = []
    first: dict[str, int] = {}
    for index, case in enumerate(cases):
        if case is None:
            continue
        fields, name = case
        for field in REQUIRED_FIELDS:
            if field not in fields and field not in base:
                message = f"{field} is required (not in the case nor in workload)"
                found.append((("cases", index), message))
        if isinstance(name, str) and name in first:
            message = f"duplicate case name {shown(name)} (cases[{first[name]}] and cases[{index}])"
            found.append((("cases", index, "name"), message))
        elif isinstance(name, str):
            first[name] = index
    return found
