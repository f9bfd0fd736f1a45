"""The scenario a user writes, as pydantic models, and `load_scenario`, which turns a YAML
file into a validated `Scenario` or a `ScenarioError` listing *every* problem with its line.

Two workload shapes exist on purpose: `WorkloadSpec` is what the file says (every field a
non-empty tuple of values, because any field may be swept), `Workload` is one resolved point
of the matrix (scalars in base units: bytes, msg/s, nanoseconds) that agents run.

A file with `cases:` is a `CaseScenario`: its `workload:` is a `WorkloadBase` (fields every
case starts from, none required) and each `Case` sets some fields over it, so the runs are
named combinations instead of one cartesian product. `Scenario.variants()` gives the full
`WorkloadSpec` of each case (or the one workload) either way.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializeAsAny,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from agents.payload import HEADER_SIZE
from drivers import registry
from drivers.base import Driver, DriverOptions
from orchestrator import units
from orchestrator.problems import Problem, ScenarioError, format_path, problems_from  # re-export
from orchestrator.recipes import RecipeError, load_recipe
from orchestrator.yaml_source import Document, YamlPath, YamlSyntaxError, parse

# --- field types ------------------------------------------------------------------------


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


def _name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValueError("must start with a letter or digit and use only letters, digits, _ . -")
    return value


def _size(value: object) -> int:
    size = units.parse_size(value)
    if size < HEADER_SIZE:
        raise ValueError(f"must be at least {HEADER_SIZE} bytes (the message header)")
    return size


def _rate(value: object) -> float:
    rate = units.parse_rate(value)
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


def _local_only(host: str) -> str:
    if host != "local":
        raise ValueError(
            f"unknown host {host!r}: only 'local' is supported for now (multi-host runs come later)"
        )
    return host


Name = Annotated[str, Field(strict=True), AfterValidator(_name)]
Size = Annotated[int, BeforeValidator(_size)]
Rate = Annotated[float, BeforeValidator(_rate)]
RunTime = Annotated[int, BeforeValidator(_positive_duration)]
Wait = Annotated[int, BeforeValidator(_duration)]
Count = Annotated[int, Field(strict=True, ge=1)]
Seed = StrictInt | None
Host = Annotated[str, Field(strict=True), AfterValidator(_local_only)]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def _as_list(value: object) -> list[object] | tuple[object, ...]:
    return value if isinstance(value, list | tuple) else [value]


#: A workload field as written: one value, or a non-empty list of values to sweep.
Sweep = Annotated[tuple[T, ...], BeforeValidator(_as_list), Field(min_length=1)]

# --- systems ------------------------------------------------------------------------------

_BROKER_FORMS = "must be builtin, {external: HOST:PORT} or {recipe: NAME}"
_DEFER_OPTIONS = "sixnines.defer_driver_options"
_DEFER_CASES = "sixnines.defer_case_checks"


def _check_address(address: str) -> str:
    host, sep, port = address.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if (
        not sep
        or not host.strip("[]")
        or not port.isdigit()
        or not 0 < int(port) < 65536
        or any(c.isspace() for c in host)
        or (":" in host and not bracketed)
        or (host.startswith("[") != host.endswith("]"))
    ):
        raise ValueError(f"{address!r} is not HOST:PORT (e.g. 127.0.0.1:7000 or [::1]:7000)")
    return address


class Broker(BaseModel):
    """Where the system under test runs: `builtin` (sixnines starts the driver's own broker),
    `{external: HOST:PORT}` (already running) or `{recipe: NAME}` (started from deploy/).
    Both fields None means builtin; `kind` says which."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    external: str | None = None
    recipe: str | None = None

    @property
    def kind(self) -> Literal["builtin", "external", "recipe"]:
        if self.external is not None:
            return "external"
        return "recipe" if self.recipe is not None else "builtin"

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, data: Any) -> Any:
        if data == "builtin":
            return {}
        if isinstance(data, Broker):
            return data
        if not isinstance(data, dict):
            raise ValueError(_BROKER_FORMS)
        if set(data) <= {"external", "recipe"} and not any(data.values()):
            raise ValueError(_BROKER_FORMS)
        return data

    @field_validator("external", mode="before")
    @classmethod
    def _external(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError("must be HOST:PORT as a string, e.g. 127.0.0.1:7000")
        return _check_address(value)

    @field_validator("recipe")
    @classmethod
    def _recipe(cls, value: str) -> str:
        try:
            load_recipe(value)
        except RecipeError as exc:
            raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> Broker:
        if self.external is not None and self.recipe is not None:
            raise ValueError("give either external or recipe, not both")
        return self

    @model_serializer
    def _as_yaml(self) -> str | dict[str, str]:
        if self.external is not None:
            return {"external": self.external}
        return {"recipe": self.recipe} if self.recipe is not None else "builtin"


def _load_driver(name: str) -> type[Driver]:
    try:
        return registry.load(name)
    except LookupError as exc:
        raise ValueError(str(exc)) from None
    except Exception as exc:  # a broken third-party driver: fail this scenario, say why
        raise ValueError(f"driver {name!r} failed to load: {exc}") from None


def _driver_or_none(name: object) -> type[Driver] | None:
    try:
        return _load_driver(name) if isinstance(name, str) else None
    except ValueError:
        return None


class System(BaseModel):
    """One system under test. `options` is validated against the driver's strict `Options`
    model and stored as that instance (`load_scenario` never returns a plain dict there)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Name
    driver: Annotated[str, Field(strict=True)]
    broker: Broker = Field(default="builtin", validate_default=True)  # type: ignore[assignment]
    options: SerializeAsAny[DriverOptions] | dict[str, Any] = Field(
        default_factory=dict, validate_default=True
    )

    def driver_class(self) -> type[Driver]:
        return registry.load(self.driver)

    @field_validator("driver")
    @classmethod
    def _registered(cls, value: str) -> str:
        _load_driver(value)
        return value

    @field_validator("broker")
    @classmethod
    def _builtin_exists(cls, broker: Broker, info: ValidationInfo) -> Broker:
        driver = _driver_or_none(info.data.get("driver"))
        if broker.kind == "builtin" and driver is not None and not driver.has_builtin_broker:
            raise ValueError(
                f"driver {driver.name!r} has no builtin broker: use {{recipe: NAME}} or "
                "{external: HOST:PORT}"
            )
        if broker.kind == "recipe" and driver is not None:
            drivers = load_recipe(broker.recipe).drivers
            if driver.name not in drivers:
                raise ValueError(f"recipe {broker.recipe!r} serves drivers {', '.join(drivers)}, "
                                 f"not {driver.name!r}")
        return broker

    @field_validator("options", mode="plain")
    @classmethod
    def _driver_options(cls, value: Any, info: ValidationInfo) -> DriverOptions | dict[str, Any]:
        if not isinstance(value, dict | DriverOptions):
            raise ValueError("must be a mapping of driver options")
        driver = _driver_or_none(info.data.get("driver"))
        if driver is None or isinstance(value, driver.Options):
            return value  # an unknown driver is reported on `driver`
        if isinstance(value, DriverOptions):
            raise ValueError(f"must be {driver.__name__}.Options, not {type(value).__name__}")
        try:
            return driver.Options.model_validate(value)
        except ValidationError as exc:
            if info.context and info.context.get(_DEFER_OPTIONS):
                return value  # load_scenario reports each option error with its own line
            raise ValueError("; ".join(p.render(driver.name) for p in problems_from(exc))) from None


# --- workload -----------------------------------------------------------------------------

#: YAML workload field -> `Workload` field (durations are resolved to nanoseconds).
WORKLOAD_FIELDS: dict[str, str] = {
    "mode": "mode",
    "message_size": "message_size",
    "rate": "rate",
    "schedule": "schedule",
    "duration": "duration_ns",
    "warmup": "warmup_ns",
    "producers": "producers",
    "consumers": "consumers",
    "connections": "connections",
    "receive": "receive",
    "drain": "drain_ns",
    "seed": "seed",
}


class Workload(BaseModel):
    """One resolved point: what the agents run. Sizes in bytes, rate in msg/s (total across
    producers), times in nanoseconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Mode = Mode.ONE_WAY
    message_size: Size
    rate: Rate
    schedule: Schedule = Schedule.FIXED
    duration_ns: Annotated[int, Field(strict=True, gt=0)]
    warmup_ns: Annotated[int, Field(strict=True, ge=0)] = 1 * SECOND_NS
    producers: Count = 1
    consumers: Count = 1
    connections: Count = 1
    receive: Receive = Receive.BLOCKING
    drain_ns: Annotated[int, Field(strict=True, ge=0)] = 5 * SECOND_NS
    seed: Seed = None

    @model_validator(mode="after")
    def _consistent(self) -> Workload:
        problems = cross_field_problems(self)
        if problems:
            raise ValueError("; ".join(message for _, message in problems))
        return self


def cross_field_problems(workload: Workload) -> list[tuple[str, str]]:
    """Rules spanning several fields, as (YAML field to blame, message)."""
    if workload.schedule is Schedule.CLOSED and workload.mode is not Mode.ROUND_TRIP:
        return [
            (
                "schedule",
                "'closed' needs mode 'round-trip' (a closed loop sends the next "
                "request when the reply arrives)",
            )
        ]
    return []


class WorkloadSpec(BaseModel):
    """The workload as written: every field a tuple of values. A field given as a list in
    the file is *swept* (see `swept`), and the matrix is the product of all fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Sweep[Mode] = (Mode.ONE_WAY,)
    message_size: Sweep[Size]
    rate: Sweep[Rate]
    schedule: Sweep[Schedule] = (Schedule.FIXED,)
    duration: Sweep[RunTime]
    warmup: Sweep[Wait] = (1 * SECOND_NS,)
    producers: Sweep[Count] = (1,)
    consumers: Sweep[Count] = (1,)
    connections: Sweep[Count] = (1,)
    receive: Sweep[Receive] = (Receive.BLOCKING,)
    drain: Sweep[Wait] = (5 * SECOND_NS,)
    seed: Sweep[Seed] = (None,)

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
                key: tuple(str(_plain(item)).strip() for item in _as_list(value))
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

    def expand(self) -> list[tuple[Workload, dict[str, str]]]:
        """Validated `Workload`s with their swept labels (see `combinations`)."""
        return [(Workload(**values), labels) for values, labels in self.combinations()]

    @model_serializer
    def _as_yaml(self) -> dict[str, Any]:
        """The YAML form back: durations as "<n>ns" so a reload cannot misread them."""
        return self._yaml(WORKLOAD_FIELDS)

    def _yaml(self, names: Iterable[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in names:
            values = [_plain(v) for v in getattr(self, name)]
            if WORKLOAD_FIELDS[name].endswith("_ns"):
                values = [f"{v}ns" for v in values]
            out[name] = values if name in self.swept else values[0]
        return out


#: Fields a complete `WorkloadSpec` must be given (the rest have defaults).
REQUIRED_FIELDS = tuple(n for n, f in WorkloadSpec.model_fields.items() if f.is_required())


class WorkloadBase(WorkloadSpec):
    """`workload:` next to `cases:`, the base every case starts from: no field is required
    here, as long as each case ends up complete (message_size, rate and duration are `()`
    until given; `given` says which fields the file set)."""

    message_size: Sweep[Size] = ()
    rate: Sweep[Rate] = ()
    duration: Sweep[RunTime] = ()

    @model_serializer
    def _as_yaml(self) -> dict[str, Any]:
        return self._yaml(self.given)


class Case(WorkloadBase):
    """One entry of `cases:`: workload fields (lists still sweep) over the base, and an
    optional `name` that stands for the case in run ids."""

    name: Name | None = None

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


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, StrEnum) else value


# --- scenario -----------------------------------------------------------------------------


class Scenario(BaseModel):
    """A whole scenario file. `output` is kept as written (relative to the caller's cwd)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Name
    systems: Annotated[tuple[System, ...], Field(min_length=1)]
    workload: WorkloadSpec
    hosts: Annotated[tuple[Host, ...], Field(min_length=1)] = ("local",)
    output: Annotated[str, Field(strict=True, min_length=1)] = "runs"

    @field_validator("systems")
    @classmethod
    def _unique_names(cls, systems: tuple[System, ...]) -> tuple[System, ...]:
        first: dict[str, int] = {}
        for index, system in enumerate(systems):
            if system.name in first:
                raise ValueError(
                    f"duplicate system name {system.name!r} "
                    f"(systems[{first[system.name]}] and systems[{index}])"
                )
            first[system.name] = index
        return systems

    def variants(self) -> tuple[tuple[Case | None, WorkloadSpec], ...]:
        """The complete workload specs the matrix expands, in order, each with its case
        (None here: the one `workload`; see `CaseScenario`)."""
        return ((None, self.workload),)


Cases = tuple[Case, ...]


class CaseScenario(Scenario):
    """A scenario with `cases:`: each case's fields over the base `workload`, in order."""

    workload: WorkloadBase = Field(default_factory=WorkloadBase)
    cases: Annotated[Cases, Field(min_length=1)]

    @field_validator("cases")
    @classmethod
    def _complete_and_unique(cls, cases: Cases, info: ValidationInfo) -> Cases:
        base = info.data.get("workload")  # None when invalid: reported there
        if base is None or (info.context and info.context.get(_DEFER_CASES)):
            return cases  # load_scenario reports each problem with its line
        found = case_problems(base.given, [(case.given, case.name) for case in cases])
        if found:
            raise ValueError("; ".join(f"{format_path(path)}: {text}" for path, text in found))
        return cases

    def variants(self) -> tuple[tuple[Case | None, WorkloadSpec], ...]:
        return tuple((case, self.workload.merged(case)) for case in self.cases)


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
            message = f"duplicate case name {name!r} (cases[{first[name]}] and cases[{index}])"
            found.append((("cases", index, "name"), message))
        elif isinstance(name, str):
            first[name] = index
    return found


# --- loading --------------------------------------------------------------------------------


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and validate a scenario file; raise `ScenarioError` with every problem found."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(file, [Problem("", None, "no such file")]) from None
    except IsADirectoryError:
        raise ScenarioError(file, [Problem("", None, "is a directory, not a file")]) from None
    except UnicodeDecodeError as exc:
        message = f"not UTF-8 text (bad byte at offset {exc.start})"
        raise ScenarioError(file, [Problem("", None, message)]) from None
    except OSError as exc:
        message = f"cannot read: {exc.strerror or exc}"
        raise ScenarioError(file, [Problem("", None, message)]) from None
    return parse_scenario(text, file)


def parse_scenario(text: str, file: str = "<scenario>") -> Scenario:
    """Validate scenario YAML text; `file` only names the source in error messages."""
    try:
        doc = parse(text)
    except YamlSyntaxError as exc:
        raise ScenarioError(file, [Problem("", exc.line, f"invalid YAML: {exc.message}")]) from None
    if not isinstance(doc.data, dict):
        what = "the file is empty" if doc.data is None else "the file is not a mapping"
        message = f"{what}: a scenario needs at least name, systems and workload"
        raise ScenarioError(file, [Problem("", doc.line_of(()), message)])

    problems = [
        Problem(
            format_path(dup.path),
            dup.line,
            f"duplicate key (first given at line {dup.first_line})",
        )
        for dup in doc.duplicates
    ]
    problems += _driver_option_problems(doc)
    model = CaseScenario if "cases" in doc.data else Scenario
    scenario: Scenario | None = None
    try:
        context = {_DEFER_OPTIONS: True, _DEFER_CASES: True}
        scenario = model.model_validate(doc.data, context=context)
    except ValidationError as exc:
        problems += problems_from(exc, doc, model)
    problems += _case_problems(doc)
    specs = _specs_in_file(doc.data)
    problems += _point_problems(specs, doc)
    if scenario is not None:
        problems += _driver_workload_problems(scenario, specs, doc)
    if problems:
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        raise ScenarioError(file, problems)
    assert scenario is not None
    return scenario


def _case_problems(doc: Document) -> list[Problem]:
    """`case_problems` of the file as written, so they show even when a case has others."""
    cases, base = doc.data.get("cases"), doc.data.get("workload", {})
    if not isinstance(cases, list):
        return []
    # a base that is not a mapping is reported itself: do not blame every case for it
    given = set(base) if isinstance(base, dict) else set(REQUIRED_FIELDS)
    shapes = [(set(c), c.get("name")) if isinstance(c, dict) else None for c in cases]
    return [
        Problem(format_path(path), doc.line_of(path), message)
        for path, message in case_problems(given, shapes)
    ]


#: A workload spec to check and where it was written: ("workload",) or ("cases", index).
SpecAt = tuple[YamlPath, WorkloadSpec]


def _specs_in_file(data: dict[Any, Any]) -> list[SpecAt]:
    """Every complete workload spec in the file that is valid on its own, so that point
    problems are found even when something else in the scenario is wrong."""
    if "cases" not in data:
        spec = _valid_or_none(WorkloadSpec, data.get("workload"))
        return [] if spec is None else [(("workload",), spec)]
    base = _valid_or_none(WorkloadBase, data.get("workload", {}))
    cases = data["cases"] if isinstance(data["cases"], list) else []
    found: list[SpecAt] = []
    for index, raw in enumerate(cases):
        case = _valid_or_none(Case, raw)
        if base is not None and case is not None and not case.missing_from(base):
            found.append((("cases", index), base.merged(case)))
    return found


def _valid_or_none(model: type[M], data: Any) -> M | None:
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def _driver_option_problems(doc: Document) -> list[Problem]:
    """Each driver option error at its own path (`systems[2].options.nodelay`)."""
    systems = doc.data.get("systems")
    problems: list[Problem] = []
    for index, system in enumerate(systems if isinstance(systems, list) else []):
        if not isinstance(system, dict) or not isinstance(system.get("options", {}), dict):
            continue
        driver = _driver_or_none(system.get("driver"))
        if driver is None:
            continue
        try:
            driver.Options.model_validate(system.get("options", {}))
        except ValidationError as exc:
            problems += problems_from(exc, doc, driver.Options, ("systems", index, "options"))
    return problems


def _points(specs: list[SpecAt]) -> list[tuple[YamlPath, Workload]]:
    """Every point of every spec, unvalidated (the checks below say what is wrong)."""
    return [
        (where, Workload.model_construct(**values))
        for where, spec in specs
        for values, _ in spec.combinations()
    ]


def _driver_workload_problems(
    scenario: Scenario, specs: list[SpecAt], doc: Document
) -> list[Problem]:
    """What each system's driver says it cannot do with the workload, each message once
    (per case: "tcp: ... (in cases[2])")."""
    problems: dict[Problem, None] = {}
    points = _points(specs)
    for index, system in enumerate(scenario.systems):
        driver = system.driver_class()
        line = doc.line_of(("systems", index))
        for where, workload in points:
            case = "" if where == ("workload",) else f" (in {format_path(where)})"
            for message in driver.workload_problems(system.options, workload):
                text = f"{system.name}: {message}{case}"
                problems[Problem(f"systems[{index}]", line, text)] = None
    return list(problems)


def _point_problems(specs: list[SpecAt], doc: Document) -> list[Problem]:
    """Cross-field rules over every expanded point, each distinct message once per spec,
    blamed on the field where that spec was written: `workload.schedule`, or with cases
    `cases[2].schedule` (at the case's own line when the field comes from the base)."""
    found: dict[Problem, None] = {}
    for where, workload in _points(specs):
        for field, message in cross_field_problems(workload):
            path = (*where, field)
            found[Problem(format_path(path), doc.line_of(path), message)] = None
    return list(found)
