"""The value types a scenario's fields are written in: the workload enums, and annotated
types that parse and check one value as written ("1KB", "20k", "500ms") into base units.

They live apart from the models so that systems, workloads and the scenario can all use them
without importing each other.

Every number has an upper bound, named below and stated in its error: generous for a
demanding benchmark, low enough to catch a typo of a few extra zeros before it becomes a
run that cannot start or never ends. (Whether a plan fits the machines is checked apart.)
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, PlainSerializer

from sixnines.formats.payload import HEADER_SIZE
from sixnines.formats.vocabulary import MAX_RATE
from sixnines.orchestrator import units

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
SECOND_NS = 1_000_000_000
HOUR_NS = 3600 * SECOND_NS
MIN_SAMPLE_NS = 10_000_000

#: Names (scenario, systems, cases, hosts) become directory and run-id parts.
MAX_NAME_LENGTH = 64
#: Paths, addresses and other free text: Linux's PATH_MAX.
MAX_TEXT_LENGTH = 4096
#: Largest message: frames are built ahead in memory, a few per connection. Each driver
#: refuses what its system cannot carry below this (NATS and Kafka 64 MiB, RabbitMQ's
#: default 128 MiB, Redis 512 MiB).
MAX_MESSAGE_SIZE = 1024**3
#: Slowest and fastest schedules, in msg/s (in total, across producers).
MIN_RATE_PER_S = 0.001
MAX_RATE_PER_S = 100_000_000
#: Longest measured run (`duration`): a week-long soak test.
MAX_RUN_TIME_NS = 7 * 24 * HOUR_NS
#: Longest `warmup`, `drain` and `cpu_sample` interval.
MAX_WAIT_NS = HOUR_NS
#: Most messages of a `rate: max` run, and of a `throughput_window`: each message sent is
#: kept (24 bytes of timestamps and more) until the run ends.
MAX_MESSAGES = 10_000_000_000
#: Most producers, consumers, and connections of each, in one run.
MAX_PARALLEL = 1000
#: Seeds are fed to numpy's generators (non-negative integers), here 32-bit ones.
MAX_SEED = 2**32 - 1


def _name(value: str) -> str:
    if len(value) > MAX_NAME_LENGTH:
        raise ValueError(f"must be at most {MAX_NAME_LENGTH} characters (names become file "
                         "names)")
    if not _NAME.fullmatch(value):
        raise ValueError("must start with a letter or digit and use only letters, digits, _ . -")
    return value


def _text(value: str) -> str:
    if len(value) > MAX_TEXT_LENGTH:
        raise ValueError(f"must be at most {MAX_TEXT_LENGTH} characters")
    if not value.isprintable():
        raise ValueError("must not contain control characters (NUL, newline, tab, ...)")
    return value


def _at_most(value: float, limit: float, limit_text: str) -> None:
    if value > limit:
        raise ValueError(f"must be at most {limit_text}")


def _size(value: object) -> int:
    size = units.parse_size(value)
    if size < HEADER_SIZE:
        raise ValueError(f"must be at least {HEADER_SIZE} bytes (the message header)")
    _at_most(size, MAX_MESSAGE_SIZE, units.format_size(MAX_MESSAGE_SIZE))
    return size


def _rate(value: object) -> float | str:
    if isinstance(value, str) and value.strip().lower() == MAX_RATE:
        return MAX_RATE
    try:
        rate = units.parse_rate(value)
    except ValueError as exc:
        raise ValueError(f"{exc}, or max") from None
    if not rate > 0:
        raise ValueError("must be greater than 0 msg/s")
    if rate < MIN_RATE_PER_S:
        raise ValueError(f"must be at least {MIN_RATE_PER_S} msg/s (one message every "
                         f"{1 / MIN_RATE_PER_S:.0f} s)")
    _at_most(rate, MAX_RATE_PER_S, f"{units.format_rate(MAX_RATE_PER_S)} msg/s")
    return rate


def _numeric_rate(value: object) -> float:
    rate = _rate(value)
    if isinstance(rate, str):
        raise ValueError("must be a rate in msg/s here, not max")
    return rate


def _duration_at_most(value: object, limit_ns: int) -> int:
    ns = units.parse_duration(value)
    _at_most(ns, limit_ns, units.format_duration(limit_ns))
    return ns


def _run_time(value: object) -> int:
    ns = _duration_at_most(value, MAX_RUN_TIME_NS)
    if ns <= 0:
        raise ValueError("must be longer than 0")
    return ns


def _wait(value: object) -> int:
    ns = _duration_at_most(value, MAX_WAIT_NS)
    if ns < 0:
        raise ValueError("must not be negative")
    return ns


def _sample_interval(value: object) -> int:
    ns = _duration_at_most(value, MAX_WAIT_NS)
    if ns < MIN_SAMPLE_NS:
        raise ValueError("must be at least 10ms (the resolution of a process's CPU time in /proc)")
    return ns


Name = Annotated[str, Field(strict=True), AfterValidator(_name)]
Text = Annotated[str, Field(strict=True, min_length=1), AfterValidator(_text)]
Size = Annotated[int, BeforeValidator(_size)]
Rate = Annotated[float | Literal["max"], BeforeValidator(_rate)]
NumericRate = Annotated[float, BeforeValidator(_numeric_rate)]
RunTime = Annotated[int, BeforeValidator(_run_time)]
Wait = Annotated[int, BeforeValidator(_wait)]
#: in ns; written back as "<n>ns" so a dumped scenario reloads the same
SampleInterval = Annotated[int, BeforeValidator(_sample_interval),
                           PlainSerializer(lambda ns: f"{ns}ns", return_type=str)]
Messages = Annotated[int, Field(strict=True, ge=1, le=MAX_MESSAGES)]
Parallel = Annotated[int, Field(strict=True, ge=1, le=MAX_PARALLEL)]
Seed = Annotated[int, Field(strict=True, ge=0, le=MAX_SEED)] | None

T = TypeVar("T")


def as_list(value: object) -> list[object] | tuple[object, ...]:
    return value if isinstance(value, list | tuple) else [value]


#: A workload field as written: one value, or a non-empty list of values to sweep.
Sweep = Annotated[tuple[T, ...], BeforeValidator(as_list), Field(min_length=1)]
