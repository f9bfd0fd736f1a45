"""The value types a scenario's fields are written in: the workload enums, and annotated
types that parse and check one value as written ("1KB", "20k", "500ms") into base units.

They live apart from the models so that systems, workloads and the scenario can all use them
without importing each other.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, PlainSerializer, StrictInt

from agents.payload import HEADER_SIZE
from orchestrator import units


class Mode(StrEnum):
    ONE_WAY = "one-way"
    ROUND_TRIP = "round-trip"


class Schedule(StrEnum):
    FIXED = "fixed"
    POISSON = "poisson"
    CLOSED = "closed"


class Receive(StrEnum):
    BLOCKING = "blocking"
    BUSY_POLL = "busy-poll"


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
SECOND_NS = 1_000_000_000
MIN_SAMPLE_NS = 10_000_000
#: `rate: max`, throughput mode: no schedule, senders go as fast as the system takes.
MAX_RATE = "max"


def _name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValueError("must start with a letter or digit and use only letters, digits, _ . -")
    return value


def _size(value: object) -> int:
    size = units.parse_size(value)
    if size < HEADER_SIZE:
        raise ValueError(f"must be at least {HEADER_SIZE} bytes (the message header)")
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
    return rate


def _positive_duration(value: object) -> int:
    ns = units.parse_duration(value)
    if ns <= 0:
        raise ValueError("must be longer than 0")
    return ns


def _duration(value: object) -> int:
    ns = units.parse_duration(value)
    if ns < 0:
        raise ValueError("must not be negative")
    return ns


def _sample_interval(value: object) -> int:
    ns = units.parse_duration(value)
    if ns < MIN_SAMPLE_NS:
        raise ValueError("must be at least 10ms (the resolution of a process's CPU time in /proc)")
    return ns


Name = Annotated[str, Field(strict=True), AfterValidator(_name)]
Size = Annotated[int, BeforeValidator(_size)]
Rate = Annotated[float | Literal["max"], BeforeValidator(_rate)]
RunTime = Annotated[int, BeforeValidator(_positive_duration)]
Wait = Annotated[int, BeforeValidator(_duration)]
#: in ns; written back as "<n>ns" so a dumped scenario reloads the same
SampleInterval = Annotated[int, BeforeValidator(_sample_interval),
                           PlainSerializer(lambda ns: f"{ns}ns", return_type=str)]
Count = Annotated[int, Field(strict=True, ge=1)]
Seed = StrictInt | None

T = TypeVar("T")


def as_list(value: object) -> list[object] | tuple[object, ...]:
    return value if isinstance(value, list | tuple) else [value]


#: A workload field as written: one value, or a non-empty list of values to sweep.
Sweep = Annotated[tuple[T, ...], BeforeValidator(as_list), Field(min_length=1)]
