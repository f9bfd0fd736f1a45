"""The scenario a user writes, as pydantic models, and `load_scenario`, which turns a YAML
file into a validated `Scenario` or a `ScenarioError` listing *every* problem with its line.

A file with `cases:` is a `CaseScenario`: its `workload:` is a `WorkloadBase` (fields every
case starts from, none required) and each `Case` sets some fields over it, so the runs are
named combinations instead of one cartesian product. `Scenario.variants()` gives the full
`WorkloadSpec` of each case (or the one workload) either way.

The parts live in their own modules of this folder: field types in `fields`, `System` and
`Broker` in `systems`, the workload models in `workload`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from sixnines.drivers.base import Driver, DriverOptions, fixed_size_problem
from sixnines.formats.keys import NONE
from sixnines.formats.protocol import DEFAULT_CPU_SAMPLE_NS
from sixnines.formats.records import DEFAULT_THROUGHPUT_WINDOW
from sixnines.formats.vocabulary import LoopCpus, Mode, Receive, Schedule
from sixnines.orchestrator.scenario.content import read_sample, sample_path
from sixnines.orchestrator.scenario.faults import Faults, RunShape, agent_ids, fault_problems
from sixnines.orchestrator.scenario.fields import (
    MAX_MESSAGE_SIZE,
    MAX_REPEATS,
    Messages,
    Name,
    Repeats,
    SampleInterval,
    Text,
)
from sixnines.orchestrator.scenario.hosts import (
    LOCAL,
    MAX_HOSTS,
    HostSpec,
    Inventory,
    Placement,
    is_loopback,
)
from sixnines.orchestrator.scenario.overrides import (
    Override,
    apply_overrides,
    told_against_flags,
)
from sixnines.orchestrator.scenario.problems import (
    Problem,
    ScenarioError,
    format_path,
    problems_from,
    shown,
)
from sixnines.orchestrator.scenario.recipes import RecipeError, load_recipe
from sixnines.orchestrator.scenario.shapes import traces_beside
from sixnines.orchestrator.scenario.sizes import SizeDistribution, header_problem
from sixnines.orchestrator.scenario.systems import (
    DATA_DISKS_ON,
    DEFER_OPTIONS,
    System,
    driver_or_none,
)
from sixnines.orchestrator.scenario.units import format_size
from sixnines.orchestrator.scenario.workload import (
    MAX_RATE_CAP_NS,
    REQUIRED_FIELDS,
    Case,
    DriverView,
    WorkloadBase,
    WorkloadPoint,
    WorkloadSpec,
    case_problems,
    cross_field_problems,
)
from sixnines.orchestrator.scenario.yaml_source import (
    SourceError,
    YamlDocument,
    YamlPath,
    YamlSyntaxError,
    parse,
    read_source,
)

#: Names other code imports from here (they live in the modules above).
__all__ = [
    "Case",
    "CaseScenario",
    "Mode",
    "Problem",
    "Receive",
    "Scenario",
    "ScenarioError",
    "Schedule",
    "System",
    "WorkloadPoint",
    "load_scenario",
    "parse_scenario",
    "read_scenario",
]

M = TypeVar("M", bound=BaseModel)
#: A mapping with none of these is no scenario: its keys are not listed as unknown fields.
SCENARIO_KEYS = {"name", "systems", "workload", "cases"}
#: Said of a file that is not the document expected, whose content is not quoted (a
#: scenario or inventory naming /etc/shadow: its lines would be its keys).
NOT_THE_DOCUMENT = "not {} (its content is not shown)"
#: Known host names listed when a placement names an unknown one.
MAX_HOSTS_LISTED = 10
_DEFER_CASES = "sixnines.defer_case_checks"


class Scenario(BaseModel):
    """A whole scenario file. `output` is kept as written (relative to the caller's cwd)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    name: Name
    """Names the results directory: <output>/<name>/<timestamp>/."""
    systems: Annotated[tuple[System, ...], Field(min_length=1)]
    """The systems under test, each measured with every workload point."""
    workload: WorkloadSpec
    """What every run sends; a field given as a list is swept (one run per value)."""
    hosts: Annotated[tuple[HostSpec, ...], Field(max_length=MAX_HOSTS)] = ()
    """Machines besides `local` (SSH or container hosts); more may come from `inventory`."""
    inventory: Text | None = None
    """A YAML file with a `hosts:` list (relative to the scenario file)."""
    placement: Placement = Field(default_factory=Placement)
    """Where the broker and the agents run (default: all on `local`)."""
    output: Text = "runs"
    """Where results go (relative to the working directory; `sixnines run --output` wins)."""
    spark_master: Text | None = None
    """Where the analysis runs (e.g. spark://host:7077); None: embedded local[*]."""
    cpu_sample: SampleInterval = DEFAULT_CPU_SAMPLE_NS
    """How often agents and the broker monitor sample CPU time (cpu.parquet)."""
    throughput_window: Messages = DEFAULT_THROUGHPUT_WINDOW
    """Messages per window of a stream's overhead and throughput (SO_n … RT_n)."""
    loop_cpus: LoopCpus = LoopCpus.DEDICATED
    """dedicated: each busy-waiting loop runs on a CPU of its own, everything else sixnines
    runs on that host keeps off it (when the host has a CPU to spare); shared: the kernel
    places everything."""
    repeat: Repeats = 1
    """How many times every case runs, interleaved (all cases once, then all again), so
    the machine's drift spreads over all of them; the results merge each case's repeats
    and say how far they spread (orchestrator.results.repeats)."""
    faults: Faults = ()
    """Faults on purpose, each at a time of the measured run (docs/faults.md, "Faults on
    purpose"), issued in every run of the scenario."""

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

    def host(self, name: str) -> HostSpec | None:
        """The host called `name` (None for `local`, the controller's machine)."""
        return next((host for host in self.hosts if host.name == name), None)

    def variants(self) -> tuple[tuple[Case | None, WorkloadSpec], ...]:
        """The complete workload specs the matrix expands, in order, each with its case
        (None here: the one `workload`; see `CaseScenario`)."""
        return ((None, self.workload),)


Cases = tuple[Case, ...]


class CaseScenario(Scenario):
    """A scenario with `cases:`: each case's fields over the base `workload`, in order."""

    workload: WorkloadBase = Field(default_factory=WorkloadBase)
    """The fields every case starts from (none required)."""
    cases: Annotated[Cases, Field(min_length=1)]
    """Named combinations, each setting workload fields over `workload`."""

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

# --- loading --------------------------------------------------------------------------------


def load_scenario(path: str | os.PathLike[str], overrides: Sequence[Override] = ()
                  ) -> Scenario:
    """Read and validate a scenario file, with `overrides` (orchestrator.scenario.overrides)
    set over it; raise `ScenarioError` with every problem found."""
    return read_scenario(path, overrides)[0]


def read_scenario(path: str | os.PathLike[str], overrides: Sequence[Override] = ()
                  ) -> tuple[Scenario, YamlDocument]:
    """`load_scenario`, and the document it validated (the file's data with the overrides
    set, and where each value came from)."""
    file = str(path)
    try:
        text = read_source(Path(path))
    except SourceError as exc:
        raise ScenarioError(file, [Problem("", exc.line, exc.message)]) from None
    return _validated(text, file, overrides)


def parse_scenario(text: str, file: str = "<scenario>",
                   overrides: Sequence[Override] = ()) -> Scenario:
    """Validate scenario YAML text; `file` only names the source in error messages."""
    return _validated(text, file, overrides)[0]


def _validated(text: str, file: str, overrides: Sequence[Override]
               ) -> tuple[Scenario, YamlDocument]:
    with traces_beside(file):
        return _validated_beside(text, file, overrides)


def _validated_beside(text: str, file: str, overrides: Sequence[Override]
                      ) -> tuple[Scenario, YamlDocument]:
    """`_validated` with trace files read beside the scenario's."""
    try:
        doc = parse(text)
    except YamlSyntaxError as exc:
        raise ScenarioError(file, [Problem("", exc.line, f"invalid YAML: {exc.message}")]) from None
    if not isinstance(doc.data, dict) or not SCENARIO_KEYS & set(doc.data):
        what = ("the file is empty" if doc.data is None else "the file is not a mapping"
                if not isinstance(doc.data, dict) else NOT_THE_DOCUMENT.format("a scenario"))
        message = f"{what}: a scenario needs at least name, systems and workload"
        raise ScenarioError(file, [Problem("", doc.line_of(()), message)])

    refused = apply_overrides(doc, overrides)
    duplicates = [
        Problem(
            format_path(dup.path),
            dup.line,
            f"duplicate key (first given at line {dup.first_line})",
        )
        for dup in doc.duplicates
    ]
    problems = _driver_option_problems(doc)
    model = CaseScenario if "cases" in doc.data else Scenario
    scenario: Scenario | None = None
    try:
        context = {DEFER_OPTIONS: True, _DEFER_CASES: True}
        scenario = model.model_validate(doc.data, context=context)
    except ValidationError as exc:
        problems += problems_from(exc, doc, model)
    problems += _case_problems(doc)
    inventory = _inventory_hosts(doc, file)
    if scenario is not None:
        scenario = scenario.model_copy(update={"hosts": (*scenario.hosts, *inventory)})
        problems += _host_problems(scenario, doc, len(inventory))
        problems += _open_broker_problems(scenario, doc)
        problems += _broker_host_problems(scenario, doc)
    specs = _specs_in_file(doc.data)
    too_many = _run_count_problems(specs, doc)
    problems += too_many
    if not too_many:  # the checks below go through every point
        problems += _point_problems(specs, doc)
        problems += _sample_problems(specs, doc, Path(file).parent)
        problems += _size_problems(specs, doc, Path(file).parent)
        if scenario is not None:
            problems += _driver_workload_problems(scenario, specs, doc, Path(file).parent)
            problems += _fault_problems(scenario, specs, doc)
    problems = [*refused, *duplicates, *told_against_flags(problems, doc)]
    if problems:
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        raise ScenarioError(file, problems)
    assert scenario is not None
    return scenario, doc


#: Most runs of one scenario: at 15 s or more a run (broker start, warm-up, drain), 10,000
#: runs take two days; more is a sweep to split into several scenarios.
MAX_RUNS = 10_000


def run_count(systems: int, specs: Iterable[WorkloadSpec], repeat: int = 1) -> int:
    """Runs of `systems` systems over every point of `specs`, each `repeat` times, without
    expanding them."""
    return systems * sum(spec.points for spec in specs) * repeat


def _run_count_problems(specs: list[SpecAt], doc: YamlDocument) -> list[Problem]:
    """A matrix of more than `MAX_RUNS` runs, counted without making a single point."""
    systems = doc.data.get("systems")
    count = len(systems) if isinstance(systems, list) else 1
    given = doc.data.get("repeat")
    repeat = given if isinstance(given, int) and 1 <= given <= MAX_REPEATS else 1
    runs = run_count(count, (spec for _, spec in specs), repeat)
    if runs <= MAX_RUNS:
        return []
    where = ("cases",) if "cases" in doc.data else ("workload",)
    times = f" × {repeat} repeats" if repeat > 1 else ""
    message = (f"{runs:,} runs ({count} system(s) × {runs // count // repeat:,} workload "
               f"points{times}) are more than the limit of {MAX_RUNS:,}: sweep fewer "
               "values, or split the scenario into several files")
    return [Problem(format_path(where), doc.line_of(where), message)]


def _inventory_hosts(doc: YamlDocument, file: str) -> tuple[HostSpec, ...]:
    """The hosts of the inventory file the scenario names (relative to the scenario);
    its own problems are reported against it, with their lines."""
    name = doc.data.get("inventory")
    if not isinstance(name, str) or not name:
        return ()
    line, given = doc.line_of(("inventory",)), doc.given_at(("inventory",))
    try:
        path = Path(file).parent / Path(name).expanduser()
    except RuntimeError:  # ~user of an unknown user
        raise ScenarioError(file, [Problem("inventory", line, f"cannot read {shown(name)}: "
                                           "no such user's home", given)]) from None
    try:
        text = read_source(path)
    except SourceError as exc:
        raise ScenarioError(file, [Problem("inventory", line, f"cannot read {shown(str(path))}"
                                           f": {exc.message}", given)]) from None
    return parse_inventory(text, str(path))


def load_inventory(path: str | os.PathLike[str]) -> tuple[HostSpec, ...]:
    """The hosts of an inventory file; `ScenarioError` against that file, with lines, for
    anything wrong in it (duplicate keys and host names among them)."""
    try:
        text = read_source(Path(path))
    except SourceError as exc:
        raise ScenarioError(str(path), [Problem("", exc.line, exc.message)]) from None
    return parse_inventory(text, str(path))


def parse_inventory(text: str, file: str) -> tuple[HostSpec, ...]:
    """Validate inventory YAML text; `file` names it in error messages."""
    try:
        doc = parse(text)
    except YamlSyntaxError as exc:
        raise ScenarioError(file, [Problem("", exc.line, f"invalid YAML: {exc.message}")]
                            ) from None
    data = doc.data or {}
    if not isinstance(data, dict) or ("hosts" not in data and data):
        what = NOT_THE_DOCUMENT.format("an inventory")
        raise ScenarioError(file, [Problem("", doc.line_of(()), f"{what}: an "
                                           "inventory is a mapping with a hosts: list")])
    problems = [Problem(format_path(dup.path), dup.line,
                        f"duplicate key (first given at line {dup.first_line})")
                for dup in doc.duplicates]
    try:
        hosts = Inventory.model_validate(data).hosts
    except ValidationError as exc:
        problems += problems_from(exc, doc, Inventory)
        hosts = ()
    problems += _inventory_name_problems(hosts, doc)
    if problems:
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        raise ScenarioError(file, problems)
    return hosts


def _inventory_name_problems(hosts: tuple[HostSpec, ...], doc: YamlDocument) -> list[Problem]:
    """Host names of an inventory that are `local` or given twice, with their lines."""
    problems, seen = [], set()
    for index, host in enumerate(hosts):
        path = ("hosts", index, "name")
        if host.name == LOCAL or host.name in seen:
            what = "is reserved for the controller's machine" if host.name == LOCAL else \
                "is given twice"
            problems.append(Problem(format_path(path), doc.line_of(path),
                                    f"host name {host.name!r} {what}"))
        seen.add(host.name)
    return problems


def _host_problems(scenario: Scenario, doc: YamlDocument, from_inventory: int) -> list[Problem]:
    """Host names unique (and not `local`), and placement naming only known hosts."""
    problems = []
    seen: set[str] = set()
    in_file = len(scenario.hosts) - from_inventory
    for index, host in enumerate(scenario.hosts):
        path: YamlPath = ("hosts", index, "name") if index < in_file else ("inventory",)
        if host.name == LOCAL or host.name in seen:
            what = "is reserved for the controller's machine" if host.name == LOCAL else (
                "is given twice (in the scenario and/or its inventory)")
            problems.append(Problem(format_path(path), doc.line_of(path),
                                    f"host name {host.name!r} {what}"))
        seen.add(host.name)
    placement = scenario.placement
    named: list[tuple[YamlPath, str]] = [(("placement", "broker"), placement.broker)] + [
        (("placement", "agents", i), name) for i, name in enumerate(placement.agents)]
    known = seen | {LOCAL}
    listed = _known(known)
    for path, name in named:
        if name not in known:
            problems.append(Problem(format_path(path), doc.line_of(path),
                                    f"unknown host {name!r} ({listed})"))
    return problems


def _known(known: set[str]) -> str:
    """The known host names, the first few of them when there are many."""
    names = sorted(known)
    more = f", ... ({len(names):,} in all)" if len(names) > MAX_HOSTS_LISTED else ""
    return f"known: {', '.join(names[:MAX_HOSTS_LISTED])}{more}"


def _open_broker_problems(scenario: Scenario, doc: YamlDocument) -> list[Problem]:
    """Recipes that cannot require a credential (no `auth`), placed on a host others can
    reach: refused unless the system accepts an open broker (orchestrator.run.brokers)."""
    host = scenario.host(scenario.placement.broker)
    address = getattr(host, "address", None)
    if host is None or address is None or is_loopback(address):
        return []
    problems = []
    for index, system in enumerate(scenario.systems):
        broker = system.broker
        if broker.recipe is None or broker.allow_unauthenticated:
            continue
        try:
            if load_recipe(broker.recipe).native.auth is not None:
                continue
        except RecipeError:
            continue  # reported on the recipe field itself
        path = ("systems", index, "broker")
        problems.append(Problem(format_path(path), doc.line_of(path), (
            f"recipe {broker.recipe!r} cannot require a credential, and its broker would "
            f"listen on {host.name} ({address}), open to anyone who reaches it: place the "
            "broker on local, or write allow_unauthenticated: true to accept that")))
    return problems


def _broker_host_problems(scenario: Scenario, doc: YamlDocument) -> list[Problem]:
    """What a system asks of its broker that the broker's host cannot give: a data disk (a
    loop mount, which a container host would need privileged) or several nodes (they
    reach each other on the host's loopback, which containers do not share)."""
    name = scenario.placement.broker
    host = scenario.host(name)
    kind = host.kind if host is not None else LOCAL
    problems = []
    for index, system in enumerate(scenario.systems):
        broker = system.broker
        for field_name, refused, why in (
                ("data_disk", broker.data_disk is not None and kind not in DATA_DISKS_ON,
                 f"a data disk is made on local and SSH hosts; the broker's host {name!r} "
                 f"is a {kind} host (a loop mount there needs a privileged container)"),
                ("nodes", broker.nodes > 1 and kind == "container",
                 f"a broker of several nodes is started on local and SSH hosts, not on "
                 f"container host {name!r}")):
            if refused:
                path = ("systems", index, "broker", field_name)
                problems.append(Problem(format_path(path), doc.line_of(path), why))
    return problems


def _case_problems(doc: YamlDocument) -> list[Problem]:
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


def _as_driver_sees(point: WorkloadPoint, folder: Path) -> DriverView | None:
    """The point with a distribution's largest size as its `message_size` (None: its file
    of sizes cannot be read, which `_size_problems` reports)."""
    written = point.message_size
    if not isinstance(written, SizeDistribution):
        return point.driver_view()
    try:
        return point.driver_view(written.sizes(folder).largest)
    except ValueError:
        return None


def _size_problems(specs: list[SpecAt], doc: YamlDocument, folder: Path) -> list[Problem]:
    """A distribution of sizes whose file cannot be read, whose smallest size does not
    hold the header (with keys, the key index after it) or whose largest exceeds the
    largest message (keyed message), once per spec, where the spec writes its
    message_size."""
    found: dict[Problem, None] = {}
    for where, spec in specs:
        for written in spec.message_size:
            if not isinstance(written, SizeDistribution):
                continue
            at = (*where, "message_size")
            try:
                sizes = written.sizes(folder)
            except ValueError as exc:
                found[Problem(format_path(at), doc.line_of(at), f"file: {exc}")] = None
                continue
            problem = header_problem(sizes, keyed=any(keys != NONE for keys in spec.keys))
            if problem is None and sizes.largest > MAX_MESSAGE_SIZE:
                problem = (f"its largest size, {format_size(sizes.largest)}, is above the "
                           f"largest message ({format_size(MAX_MESSAGE_SIZE)})")
            if problem is not None:
                found[Problem(format_path(at), doc.line_of(at), problem)] = None
    return list(found)


def _sample_problems(specs: list[SpecAt], doc: YamlDocument, folder: Path) -> list[Problem]:
    """`content: {file: PATH}` naming a file that cannot be a sample (missing, empty, too
    large), once per spec, where the spec writes its content."""
    found: dict[Problem, None] = {}
    for where, spec in specs:
        for content in spec.content:
            path = sample_path(content, folder)
            if path is None:
                continue
            try:
                read_sample(path)
            except ValueError as exc:
                at = (*where, "content")
                found[Problem(format_path(at), doc.line_of(at), f"file: {exc}")] = None
    return list(found)


def _valid_or_none(model: type[M], data: Any) -> M | None:
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def _driver_option_problems(doc: YamlDocument) -> list[Problem]:
    """Each driver option error at its own path (`systems[2].options.nodelay`)."""
    systems = doc.data.get("systems")
    problems: list[Problem] = []
    for index, system in enumerate(systems if isinstance(systems, list) else []):
        if not isinstance(system, dict) or not isinstance(system.get("options", {}), dict):
            continue
        driver = driver_or_none(system.get("driver"))
        if driver is None:
            continue
        try:
            driver.Options.model_validate(system.get("options", {}))
        except ValidationError as exc:
            problems += problems_from(exc, doc, driver.Options, ("systems", index, "options"))
    return problems


def _points(specs: list[SpecAt]) -> list[tuple[YamlPath, WorkloadPoint]]:
    """Every point of every spec, unvalidated (the checks below say what is wrong)."""
    return [
        (where, WorkloadPoint.model_construct(**values))
        for where, spec in specs
        for values, _ in spec.combinations()
    ]


def _driver_workload_problems(
    scenario: Scenario, specs: list[SpecAt], doc: YamlDocument, folder: Path
) -> list[Problem]:
    """What each system's driver says it cannot do with the workload, each message once
    (per case: "... (in cases[2])"). Systems whose options are invalid are skipped: those
    errors are reported on the options themselves. A driver sees a distribution of sizes
    as its largest size; one that sends every message at one size refuses it by name."""
    problems: dict[Problem, None] = {}
    points = [(where, shape, isinstance(point.message_size, SizeDistribution))
              for where, point in _points(specs)
              if (shape := _as_driver_sees(point, folder)) is not None]
    for index, system in enumerate(scenario.systems):
        driver = system.driver_class()
        if not isinstance(system.options, driver.Options):
            continue
        line = doc.line_of(("systems", index))
        for where, workload, varies in points:
            case = "" if where == ("workload",) else f" (in {format_path(where)})"
            messages = [*driver.workload_problems(system.options, workload),
                        *_backlog_problems(driver, system.options, workload),
                        *driver.key_problems(system.options, workload)]
            if varies and not driver.carries_varying_sizes(system.options,
                                                           workload.message_size):
                messages = [*messages, fixed_size_problem(driver.name)]
            for message in messages:
                text = f"{message}{case}"
                problems[Problem(f"systems[{index}]", line, text)] = None
    return list(problems)


def _backlog_problems(driver: type[Driver], options: DriverOptions,
                      workload: DriverView) -> list[str]:
    """A backlog on a system that keeps no messages for a consumer not reading."""
    if not workload.backlog_messages or driver.stores_messages(options):
        return []
    return [f"driver {driver.name!r} with these options keeps no messages for a consumer "
            "that is not reading, so no backlog can build: use a system that stores them "
            "(kafka, rabbitmq, redis mode streams, nats mode jetstream)"]


def _point_problems(specs: list[SpecAt], doc: YamlDocument) -> list[Problem]:
    """Cross-field rules over every expanded point, each distinct message once per spec,
    blamed on the field where that spec was written: `workload.schedule`, or with cases
    `cases[2].schedule` (at the case's own line when the field comes from the base)."""
    found: dict[Problem, None] = {}
    for where, workload in _points(specs):
        for field, message in cross_field_problems(workload):
            path = (*where, field)
            found[Problem(format_path(path), doc.line_of(path), message)] = None
    return list(found)


def _fault_problems(scenario: Scenario, specs: list[SpecAt], doc: YamlDocument
                    ) -> list[Problem]:
    """The faults checked against every run the scenario makes (orchestrator.scenario
    .faults), each problem at the fault's field."""
    if not scenario.faults:
        return []
    kinds = {host.name: host.kind for host in scenario.hosts}
    agent_hosts = scenario.placement.agents
    shapes = []
    for system in scenario.systems:
        needs_responder = system.driver_class().needs_responder
        for _, point in _points(specs):
            ids = agent_ids(point.producers, point.consumers, point.mode, needs_responder)
            shapes.append(RunShape(
                duration_ns=point.duration_ns or MAX_RATE_CAP_NS,
                agents={agent: agent_hosts[int(agent.rsplit("-", 1)[1]) % len(agent_hosts)]
                        for agent in ids},
                broker_host=scenario.placement.broker, broker_kind=system.broker.kind,
                system=system.name, recipe=system.broker.recipe,
                data_disk=system.broker.data_disk is not None,
                broker_nodes=system.broker.nodes))
    problems = []
    shaped = frozenset(host.name for host in scenario.hosts
                       if getattr(host, "link", None) is not None)
    for index, field, message in fault_problems(scenario.faults, shapes, kinds, shaped):
        path = ("faults", index, field)
        problems.append(Problem(format_path(path), doc.line_of(path), message))
    return problems
