"""`rate: {steps|ramp|bursts|trace: …}`: a rate that changes over the run, as the scenario
writes it, and its resolution into the segments a run follows (formats.shape).

A shape is a mapping under `rate`, never a list: a list under a workload field sweeps it,
so `rate: [{steps: …}, {ramp: …}]` is two runs, one per shape.

Times count from the start of the measured time (after the warm-up), as faults' `at` does;
the warm-up runs at the shape's opening rate. The rules at the end of the measured time:
steps that last less than `duration` leave their last step holding to the end (the last
step may leave out `for`: it holds), and steps that last longer are refused; a ramp
longer than `duration` is refused, a shorter one holds its `to` rate; bursts come every
`every` from the measured start (the first after one `every` at the base rate), the last
cut at the end; a trace's rows hold until the next row, the last to the end, and a row at
or after the end is refused with its line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PlainSerializer,
    Tag,
    WithJsonSchema,
)

from sixnines.formats.shape import MAX_STEPS, RateShape, Segment
from sixnines.orchestrator.scenario import units
from sixnines.orchestrator.scenario.fields import NumericRate, RunTime, check_text
from sixnines.orchestrator.scenario.problems import shown
from sixnines.orchestrator.scenario.side_files import read_side_file

#: Most rows of a trace (each becomes a segment every agent holds).
MAX_TRACE_ROWS = 100_000
#: Most steps written in a shape's label before "…".
LABEL_STEPS = 4

#: Where a trace's path is read from: the scenario file's folder while it is loaded.
_TRACE_BASE: ContextVar[Path] = ContextVar("trace_base", default=Path("."))


@contextmanager
def traces_beside(scenario_file: str) -> Iterator[None]:
    """Read trace files named while loading relative to `scenario_file`'s folder."""
    token = _TRACE_BASE.set(Path(scenario_file).parent)
    try:
        yield
    finally:
        _TRACE_BASE.reset(token)


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              populate_by_name=True, serialize_by_alias=True)


class RateStep(_Shape):
    rate: NumericRate
    """msg/s in total during the step."""
    length: Annotated[RunTime | None, Field(alias="for")] = None
    """How long the step lasts (the last step may leave it out: it holds to the end)."""


class Steps(_Shape):
    """Rates one after the other, each for its `for`."""

    steps: Annotated[tuple[RateStep, ...], Field(min_length=1, max_length=MAX_STEPS)]
    """The steps in order, e.g. [{rate: 10k, for: 30s}, {rate: 50k}]."""


class RampSpan(_Shape):
    low: Annotated[NumericRate, Field(alias="from")]
    """The rate at the measured start, msg/s."""
    high: Annotated[NumericRate, Field(alias="to")]
    """The rate `over` later (held after it)."""
    over: RunTime
    """How long the ramp takes."""


class Ramp(_Shape):
    """A rate going linearly from `from` to `to` over `over`, then holding `to`."""

    ramp: RampSpan
    """From which rate, to which, over how long."""


class Burst(_Shape):
    rate: NumericRate
    """msg/s in total during a burst."""
    length: Annotated[RunTime, Field(alias="for")]
    """How long each burst lasts."""
    every: RunTime
    """From one burst's start to the next's (the first starts one `every` in)."""


class Bursts(_Shape):
    """A base rate with bursts."""

    base: NumericRate
    """msg/s in total between bursts."""
    bursts: Burst
    """The bursts' rate, length and period."""


@dataclass(frozen=True)
class TraceFile:
    """A trace file as named, and its rows (ns from the measured start, msg/s), read once
    where the scenario is loaded."""

    name: str
    rows: tuple[tuple[int, float], ...]


def _trace_file(value: object) -> TraceFile:
    if isinstance(value, TraceFile):
        return value
    name = check_text(value) if isinstance(value, str) and value else None
    if name is None:
        raise ValueError("must be the path of a CSV file")
    return TraceFile(name, read_trace(_TRACE_BASE.get() / Path(name).expanduser(), name))


class Trace(_Shape):
    """A replay of a CSV file of `time,rate` rows: from each row's time (from the measured
    start, e.g. 0, 1.5, 2s, 500ms) its rate (e.g. 800, 2k) holds until the next row's. The
    first row is at 0; a header row and lines starting with # are skipped."""

    trace: Annotated[TraceFile, BeforeValidator(_trace_file),
                     PlainSerializer(lambda trace: trace.name, return_type=str),
                     WithJsonSchema({"type": "string", "minLength": 1}, mode="validation")]
    """The CSV file (relative to the scenario file)."""

    @property
    def rows(self) -> tuple[tuple[int, float], ...]:
        """(ns from the measured start, msg/s), in order."""
        return self.trace.rows


def _shape_kind(value: Any) -> str | None:
    """Which shape a value is, by its key (None: none of them)."""
    if isinstance(value, _Shape):
        return type(value).__name__.lower()
    if isinstance(value, dict):
        for key, kind in (("steps", "steps"), ("ramp", "ramp"), ("bursts", "bursts"),
                          ("base", "bursts"), ("trace", "trace")):
            if key in value:
                return kind
    return None


def _shape_tag(value: Any) -> str | None:
    """The union's tag of a shape: not a key the file writes, so that an error's path
    leaves it out (problems.format_path)."""
    kind = _shape_kind(value)
    return None if kind is None else f"{kind}_shape"


#: A rate that changes over the run.
Shape = Annotated[
    Annotated[Steps, Tag("steps_shape")] | Annotated[Ramp, Tag("ramp_shape")]
    | Annotated[Bursts, Tag("bursts_shape")] | Annotated[Trace, Tag("trace_shape")],
    Discriminator(_shape_tag, custom_error_type="shape",
                  custom_error_message="a rate shape is one of {steps: [...]}, {ramp: {from, "
                  "to, over}}, {base: RATE, bursts: {rate, for, every}} or {trace: FILE}"),
]
SHAPE_KEYS = frozenset({"steps", "ramp", "base", "bursts", "trace"})
#: The shapes' models, for isinstance.
SHAPES = (Steps, Ramp, Bursts, Trace)


#: A trace's rows are held in the manifest and sent to every sender: a bound, not a limit
#: any real trace meets (a day at one row a second is about 2 MiB).
MAX_TRACE_BYTES = 16 << 20


def read_trace(path: Path, named: str) -> tuple[tuple[int, float], ...]:
    """A trace file's rows; ValueError naming the file and line of the first bad one."""
    try:
        text = read_side_file(path, MAX_TRACE_BYTES, named, "trace ").decode("utf-8")
    except UnicodeError:
        raise ValueError(f"cannot read trace {shown(named)}: not UTF-8 text") from None
    rows: list[tuple[int, float]] = []
    for line, fields in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not fields or not "".join(fields).strip() or fields[0].lstrip().startswith("#"):
            continue
        where = f"{named}:{line}"
        if not rows and fields[0].strip().lower() in ("time", "t", "at"):
            continue  # the header
        if len(fields) != 2:
            raise ValueError(f"{where}: a row is `time,rate` (two fields), not {len(fields)}")
        try:
            at, rate = units.parse_duration(fields[0].strip()), units.parse_rate(fields[1].strip())
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if not rate > 0 or rate == float("inf"):
            raise ValueError(f"{where}: the rate must be greater than 0 msg/s")
        if not rows and at != 0:
            raise ValueError(f"{where}: the first row must be at time 0 (the measured start)")
        if rows and at <= rows[-1][0]:
            raise ValueError(f"{where}: times must increase (this row is not after the last)")
        rows.append((at, rate))
        if len(rows) > MAX_TRACE_ROWS:
            raise ValueError(f"{where}: more than {MAX_TRACE_ROWS:,} rows")
    if not rows:
        raise ValueError(f"trace {shown(named)} has no `time,rate` rows")
    return tuple(rows)


def shape_problems(shape: BaseModel, duration_ns: int | None) -> list[str]:
    """What does not fit the measured time (the module doc has the rules)."""
    if duration_ns is None:
        return []
    end = units.format_duration(duration_ns)
    if isinstance(shape, Steps):
        if any(step.length is None for step in shape.steps[:-1]):
            return ["only the last step may leave out `for` (it holds to the end)"]
        total = sum(step.length or 0 for step in shape.steps)
        if total > duration_ns:
            return [f"the steps last {units.format_duration(total)}, longer than the "
                    f"duration ({end}): shorten them or lengthen the duration"]
        before_last = total - (shape.steps[-1].length or 0)
        if before_last >= duration_ns:
            return [f"the steps before the last fill the duration ({end}): the last would "
                    "get no time"]
    elif isinstance(shape, Ramp) and shape.ramp.over > duration_ns:
        return [f"the ramp takes {units.format_duration(shape.ramp.over)}, longer than the "
                f"duration ({end})"]
    elif isinstance(shape, Bursts):
        if shape.bursts.length >= shape.bursts.every:
            return ["a burst's `for` must be shorter than its `every`"]
        if shape.bursts.every >= duration_ns:
            return [f"no burst would start within the duration ({end}): `every` must be "
                    "shorter"]
    elif isinstance(shape, Trace):
        late = [at for at, _ in shape.rows if at >= duration_ns]
        if late:
            return [f"trace {shown(shape.trace.name)} has rows at or after the end of the duration "
                    f"({end}), the first at {units.format_duration(late[0])}"]
    return []


def resolve(shape: BaseModel, warmup_ns: int, duration_ns: int) -> RateShape:
    """The segments a run of `shape` follows (its problems checked: `shape_problems`)."""
    stretches = list(_stretches(shape, duration_ns))  # (from, to, rate, end rate), measured
    segments = [Segment(start_ns=0, end_ns=warmup_ns, rate=stretches[0][2],
                        to=stretches[0][2])] if warmup_ns > 0 else []
    segments += [Segment(start_ns=warmup_ns + start, end_ns=warmup_ns + end, rate=rate, to=to)
                 for start, end, rate, to in stretches]
    first = 1 if warmup_ns > 0 else 0
    steps = list(range(first, len(segments))) if isinstance(shape, Steps) else []
    return RateShape(kind=_shape_kind(shape), label=shape_label(shape),
                     segments=segments, steps=steps,
                     source=shape.trace.name if isinstance(shape, Trace) else None)


def _stretches(shape: BaseModel, duration_ns: int) -> Iterator[tuple[int, int, float, float]]:
    if isinstance(shape, Steps):
        start = 0
        for index, step in enumerate(shape.steps):
            last = index == len(shape.steps) - 1
            end = duration_ns if last else start + (step.length or 0)
            yield start, end, step.rate, step.rate
            start = end
    elif isinstance(shape, Ramp):
        ramp = shape.ramp
        yield 0, ramp.over, ramp.low, ramp.high
        if ramp.over < duration_ns:
            yield ramp.over, duration_ns, ramp.high, ramp.high
    elif isinstance(shape, Bursts):
        burst, start, burst_at = shape.bursts, 0, shape.bursts.every
        while start < duration_ns:
            yield start, min(burst_at, duration_ns), shape.base, shape.base
            start = min(burst_at + burst.length, duration_ns)
            if burst_at < duration_ns:
                yield burst_at, start, burst.rate, burst.rate
            burst_at += burst.every
    elif isinstance(shape, Trace):
        times = [at for at, _ in shape.rows[1:]] + [duration_ns]
        for (at, rate), end in zip(shape.rows, times, strict=True):
            yield at, end, rate, rate


def _rate(rate: float) -> str:
    return units.format_rate(int(rate)) if float(rate).is_integer() else f"{rate:g}"


def shape_label(shape: BaseModel) -> str:
    """The shape in a few words, for run ids and tables ("steps 500 → 2k msg/s")."""
    if isinstance(shape, Steps):
        rates = [_rate(step.rate) for step in shape.steps]
        if len(rates) > LABEL_STEPS:
            rates = [*rates[:LABEL_STEPS - 1], "…", rates[-1]]
        return f"steps {' → '.join(rates)} msg/s"
    if isinstance(shape, Ramp):
        ramp = shape.ramp
        return (f"ramp {_rate(ramp.low)} → {_rate(ramp.high)} msg/s over "
                f"{units.format_duration(ramp.over)}")
    if isinstance(shape, Bursts):
        burst = shape.bursts
        return (f"{_rate(shape.base)} msg/s, bursts of {_rate(burst.rate)} for "
                f"{units.format_duration(burst.length)} every {units.format_duration(burst.every)}")
    assert isinstance(shape, Trace)
    return f"trace {Path(shape.trace.name).name}"
