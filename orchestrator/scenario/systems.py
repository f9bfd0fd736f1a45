"""The systems under test of a scenario: `System` (a driver, its options checked against the
driver's own `Options` model) and `Broker` (where it runs), with the driver loading they share
with `load_scenario`, which reports driver option errors itself.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializeAsAny,
    StrictBool,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from sixnines.drivers import registry
from sixnines.drivers.base import Credential, Driver, DriverOptions
from sixnines.orchestrator.scenario import units, written
from sixnines.orchestrator.scenario.fields import (
    ADDRESS_EXAMPLE,
    SECOND_NS,
    Name,
    Wait,
    check_text,
    split_address,
)
from sixnines.orchestrator.scenario.problems import problems_from
from sixnines.orchestrator.scenario.recipes import RecipeError, load_recipe

_BROKER_FORMS = "must be builtin, {external: HOST:PORT} or {recipe: NAME}"
#: Most nodes of a broker started as a cluster (`BrokerSpec.nodes`).
MAX_NODES = 9
#: How long clients try to connect again by default (`System.reconnect`).
DEFAULT_RECONNECT_NS = 30 * SECOND_NS
#: Validation context key: keep invalid driver options as a dict (the loader reports them).
DEFER_OPTIONS = "sixnines.defer_driver_options"
#: A broker's data disk: room for ext4's journal and tables, and no more than a host
#: gives a throwaway file without thought.
MIN_DATA_DISK, MAX_DATA_DISK = 32 * 1024**2, 64 * 1024**3
#: Host kinds a broker's data disk can be made on (a container's filesystem is the
#: engine's: a loop mount there needs a privileged container).
DATA_DISKS_ON = ("local", "ssh")


def _data_disk_size(value: object) -> int | None:
    if value is None:
        return None
    size = units.parse_size(value)
    if not MIN_DATA_DISK <= size <= MAX_DATA_DISK:
        raise ValueError(f"must be from {units.format_size(MIN_DATA_DISK)} to "
                         f"{units.format_size(MAX_DATA_DISK)}")
    return size


def _or_builtin(schema: dict[str, Any]) -> None:
    """The JSON Schema of a broker: the word `builtin`, or the mapping (`_from_yaml`)."""
    mapping = {key: schema.pop(key) for key in list(schema) if key not in ("title", "description")}
    schema["anyOf"] = [{"const": "builtin"}, mapping]


class BrokerSpec(BaseModel):
    """Where the system under test runs: `builtin` (sixnines starts the driver's own broker),
    `{external: HOST:PORT}` (already running) or `{recipe: NAME}` (started from deploy/).
    Both fields None means builtin; `kind` says which."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              json_schema_extra=_or_builtin)

    external: str | None = None
    """HOST:PORT of a broker already running (sixnines neither starts nor stops it)."""
    recipe: str | None = None
    """A broker recipe sixnines starts and stops for each run (deploy/recipes, or the
    directories of --recipes and $SIXNINES_RECIPE_PATH)."""
    nodes: Annotated[int, Field(strict=True, ge=1, le=MAX_NODES)] = 1
    """How many nodes of the recipe's broker make one cluster on the broker host, each with
    its own ports and data directory (recipes with a cluster section: nats); clients are
    given every node's address. Faults target one of them as broker-0, broker-1, ..."""
    allow_unauthenticated: StrictBool = False
    """A recipe without an auth section starts a broker that takes anyone who reaches it:
    off loopback that is refused unless this accepts the risk (e.g. on an isolated
    network, or a recipe that sets up its own credentials)."""
    data_disk: Annotated[int | None, BeforeValidator(_data_disk_size),
                         written.size(MIN_DATA_DISK, MAX_DATA_DISK,
                                      examples=("256MB", "2GiB"))] = None
    """The broker's data directory on a filesystem of its own, this size, for each run
    (ext4 in a file beside it, loop-mounted; root on the broker's host, a local or SSH
    host): what the faults `disk-stall` and `disk-full` freeze or fill, touching nothing
    else. Unmounted and removed when the broker stops (its files kept where a broker's
    data is kept)."""

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
        if isinstance(data, BrokerSpec):
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
            raise ValueError(f"must be HOST:PORT as a string ({ADDRESS_EXAMPLE})")
        split_address(check_text(value))
        return value

    @field_validator("recipe")
    @classmethod
    def _recipe(cls, value: str) -> str:
        try:
            load_recipe(value)
        except RecipeError as exc:
            raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> BrokerSpec:
        if self.external is not None and self.recipe is not None:
            raise ValueError("give either external or recipe, not both")
        if self.data_disk is not None and self.recipe is None:
            raise ValueError("data_disk goes with a recipe: a builtin broker keeps its "
                             "messages in memory, an external one is not sixnines' to touch")
        if self.nodes > 1:
            if self.recipe is None:
                raise ValueError("nodes goes with a recipe: sixnines starts the cluster")
            if load_recipe(self.recipe).cluster is None:
                raise ValueError(f"recipe {self.recipe!r} starts a broker of one node (it has "
                                 "no cluster section)")
            if self.data_disk is not None:
                raise ValueError("data_disk gives one broker's data a disk of its own; a "
                                 "broker of several nodes has a data directory per node, "
                                 "which sixnines does not give disks of their own")
        if self.allow_unauthenticated:
            if self.recipe is None:
                raise ValueError("allow_unauthenticated goes with a recipe")
            if load_recipe(self.recipe).native.auth is not None:
                raise ValueError(f"recipe {self.recipe!r} makes its broker require a per-run "
                                 "credential off loopback; allow_unauthenticated is for "
                                 "recipes that cannot")
        return self

    @model_serializer
    def _as_yaml(self) -> str | dict[str, str | bool | int]:
        if self.external is not None:
            return {"external": self.external}
        if self.recipe is None:
            return "builtin"
        fields: dict[str, str | bool | int] = {"recipe": self.recipe}
        if self.nodes > 1:
            fields["nodes"] = self.nodes
        if self.allow_unauthenticated:
            fields["allow_unauthenticated"] = True
        if self.data_disk is not None:
            fields["data_disk"] = self.data_disk
        return fields


def _load_driver(name: str) -> type[Driver]:
    try:
        return registry.load(name)
    except LookupError as exc:
        raise ValueError(str(exc)) from None
    except Exception as exc:  # a broken third-party driver: fail this scenario, say why
        raise ValueError(f"driver {name!r} failed to load: {exc}") from None


def driver_or_none(name: object) -> type[Driver] | None:
    try:
        return _load_driver(name) if isinstance(name, str) else None
    except ValueError:
        return None


class System(BaseModel):
    """One system under test. `options` is validated against the driver's strict `Options`
    model and stored as that instance (`load_scenario` never returns a plain dict there)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    name: Name
    """A label for reports and run ids."""
    driver: Annotated[str, Field(strict=True)]
    """The driver that talks to the system (tcp, zmq, redis, nats, rabbitmq, kafka, or one
    installed apart)."""
    broker: BrokerSpec = Field(default="builtin", validate_default=True)
    """Where the system runs: builtin, {external: HOST:PORT} or {recipe: NAME}."""
    options: SerializeAsAny[DriverOptions] | dict[str, Any] = Field(
        default_factory=dict, validate_default=True
    )
    """The driver's own options (each driver's are listed apart)."""
    keep_resources: StrictBool = False
    """Leave what each run made on the broker there after the run (its own topic, stream,
    stream keys, exchanges or queues, named `<scenario>-<run id>-<suffix>`: the manifest's
    `resources` says which), to look at them; by default they are deleted at the run's end.
    A topic, stream or queue named in `options` is the user's and never deleted."""

    @field_validator("keep_resources")
    @classmethod
    def _something_to_keep(cls, keep: bool, info: ValidationInfo) -> bool:
        driver = driver_or_none(info.data.get("driver"))
        options = info.data.get("options")
        if keep and driver is not None and isinstance(options, DriverOptions) \
                and not driver.resource_options(options):
            raise ValueError(f"driver {driver.name!r} keeps nothing on a broker")
        return keep

    reconnect: Annotated[Wait, PlainSerializer(lambda ns: f"{ns}ns", return_type=str)] = \
        DEFAULT_RECONNECT_NS
    """How long a client whose connection breaks (a broker restarted) keeps trying to
    connect again, as production clients do; 0: never (the agent's part ends there).
    Reconnects are counted in the agent's manifest entry (`reconnects`)."""

    def driver_class(self) -> type[Driver]:
        return registry.load(self.driver)

    @property
    def checked_options(self) -> DriverOptions:
        """`options` of a loaded scenario (a dict only while the loader reports them)."""
        assert isinstance(self.options, DriverOptions), "options the loader refused"
        return self.options

    def driver_at(self, address: str, credential: Credential | None) -> Driver:
        """The driver of this system for the controller's own short talks with the broker
        at `address` (durability read back, a run's resources removed)."""
        return self.driver_class()(address, self.checked_options, credential)

    @field_validator("driver")
    @classmethod
    def _registered(cls, value: str) -> str:
        _load_driver(value)
        return value

    @field_validator("broker")
    @classmethod
    def _builtin_exists(cls, broker: BrokerSpec, info: ValidationInfo) -> BrokerSpec:
        driver = driver_or_none(info.data.get("driver"))
        if broker.kind == "builtin" and driver is not None and not driver.has_builtin_broker:
            raise ValueError(
                f"driver {driver.name!r} has no builtin broker: use {{recipe: NAME}} or "
                "{external: HOST:PORT}"
            )
        if broker.recipe is not None and driver is not None:  # kind recipe
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
        driver = driver_or_none(info.data.get("driver"))
        if driver is None or isinstance(value, driver.Options):
            return value  # an unknown driver is reported on `driver`
        if isinstance(value, DriverOptions):
            raise ValueError(f"must be {driver.__name__}.Options, not {type(value).__name__}")
        try:
            return driver.Options.model_validate(value)
        except ValidationError as exc:
            if info.context and info.context.get(DEFER_OPTIONS):
                return value  # load_scenario reports each option error with its own line
            raise ValueError("; ".join(p.render(driver.name) for p in problems_from(exc))) from None
