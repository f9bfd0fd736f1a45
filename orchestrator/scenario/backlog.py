"""`backlog: {build: …, drain_within: …}`: consumers hold off while producers keep the rate,
then go, and the run measures whether and how fast they catch up.

Consumers connect and subscribe before the start, as always (nothing is lost), but read
nothing from the start instant until the backlog is built: `build` says how much, as a
number of messages ("20k messages"), bytes ("5MB") or a time ("10s"), counted from the
start instant along the intended schedule, so the release is an instant every agent knows
before the start (`release_ns`). Producers go on at the rate throughout, and
`drain_within` bounds how long after the release the consumers may take to catch up; the
run's measured time must hold both, so that producers keep the rate the whole time the
drain is watched. What was built and when it drained come from the records afterwards
(spark_jobs.backlog_pass), not from this plan: producers that fall behind build less.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    model_serializer,
    model_validator,
)

from sixnines.formats.shape import RateShape
from sixnines.orchestrator.scenario import units, written
from sixnines.orchestrator.scenario.fields import MAX_MESSAGES, MAX_RUN_TIME_NS, SECOND_NS
from sixnines.orchestrator.scenario.problems import shown

_MESSAGES = re.compile(r"^\s*(.+?)\s*(messages|message|msgs|msg)\s*$", re.IGNORECASE)
BACKLOG_KEYS = {"build", "drain_within"}
BUILD_FORMS = "a count of messages (20k messages), bytes (5MB) or a time (10s)"


def _build(value: object) -> dict[str, int]:
    """`build` as written into {"messages"|"bytes"|"time_ns": amount}."""
    text = value.strip() if isinstance(value, str) else None
    if text is None:
        raise ValueError(f"build must be {BUILD_FORMS}, with its unit (got {shown(value)})")
    if match := _MESSAGES.fullmatch(text):
        count = units.parse_rate(match[1])
        if count != int(count) or not 1 <= count <= MAX_MESSAGES:
            raise ValueError(f"build: {shown(value)} is not a whole number of messages from "
                             f"1 to {MAX_MESSAGES:,}")
        return {"messages": int(count)}
    if not re.search(r"[A-Za-z]", text):  # a bare number: messages, bytes or seconds?
        raise ValueError(f"build must be {BUILD_FORMS}, with its unit (got {shown(value)})")
    for parse, key in ((units.parse_size, "bytes"), (units.parse_duration, "time_ns")):
        try:
            amount = parse(text)
        except ValueError:
            continue
        if amount <= 0:
            raise ValueError(f"build must be more than nothing (got {shown(value)})")
        return {key: amount}
    raise ValueError(f"build must be {BUILD_FORMS} (got {shown(value)})")


def _drain_within(value: object) -> int:
    ns = units.parse_duration(value)
    if not 0 < ns <= MAX_RUN_TIME_NS:
        raise ValueError(f"drain_within must be longer than 0 and at most "
                         f"{units.format_duration(MAX_RUN_TIME_NS)} (got {shown(value)})")
    return ns


_SCHEMA = {
    "type": "object",
    "properties": {
        "build": {"type": "string", "description": BUILD_FORMS,
                  "examples": ["20k messages", "5MB", "10s"]},
        "drain_within": written.duration(MAX_RUN_TIME_NS, above=True).json_schema,
    },
    "required": ["build", "drain_within"],
    "additionalProperties": False,
}


class Backlog(BaseModel):
    """A backlog to build and drain (see the module doc); exactly one of `messages`,
    `bytes` and `time_ns` is set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: Annotated[int, Field(ge=1)] | None = None
    bytes: Annotated[int, Field(ge=1)] | None = None
    time_ns: Annotated[int, Field(ge=1)] | None = None
    drain_within_ns: Annotated[int, Field(gt=0)]

    @model_validator(mode="before")
    @classmethod
    def _as_written(cls, data: Any) -> Any:
        """{build, drain_within} as the scenario writes them (a Backlog's own dump passes)."""
        if not isinstance(data, dict) or "drain_within_ns" in data:
            return data
        unknown = set(data) - BACKLOG_KEYS
        if unknown:
            raise ValueError(f"unknown field(s) {', '.join(sorted(map(str, unknown)))}: "
                             "a backlog has build and drain_within")
        missing = [key for key in ("build", "drain_within") if key not in data]
        if missing:
            raise ValueError(f"{' and '.join(missing)} required (e.g. "
                             "{build: 20k messages, drain_within: 60s})")
        return {**_build(data["build"]),
                "drain_within_ns": _drain_within(data["drain_within"])}

    @model_serializer
    def _as_yaml(self) -> dict[str, str]:
        """The written form back: it reloads, names runs and sits in a run's params."""
        return {"build": self.build_text, "drain_within": f"{self.drain_within_ns}ns"}

    @property
    def build_text(self) -> str:
        if self.messages is not None:
            return f"{self.messages} messages"
        if self.bytes is not None:
            return f"{self.bytes}B"
        return f"{self.time_ns}ns"

    def release_ns(self, rate: float | RateShape, message_size: float | None) -> int:
        """When consumers start reading, from the start instant: the build's time, or when
        the schedule (`rate` msg/s, or a shape) has intended the build's messages (its
        bytes in messages of `message_size`, the mean when sizes vary)."""
        if self.time_ns is not None:
            return self.time_ns
        if self.messages is not None:
            count = self.messages
        elif message_size is None:
            raise ValueError("a build in bytes needs the messages' mean size")
        else:
            count = math.ceil((self.bytes or 0) / message_size)
        if isinstance(rate, RateShape):
            return math.ceil(float(rate.cumulative().inverse(np.array([count]))[0]))
        return math.ceil(count * SECOND_NS / rate)


#: The workload field's type: a mapping as written, a `Backlog` once read.
BacklogField = Annotated[Backlog, WithJsonSchema(_SCHEMA, mode="validation")]
