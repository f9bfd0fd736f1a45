"""Broker recipes: how to start, check, stop and identify a system under test.

A recipe is a YAML file in `deploy/recipes/` (or a directory named in
`SIXNINES_RECIPE_PATH`), so a new system or a site-specific install is a data file, not code.
It names the ports it needs (sixnines picks free ones), the native command with its
environment and config files, a readiness check, extra stop commands, a version query, how
the broker is made to require a per-run credential when it listens off loopback (`auth`),
and the container image form used by the container launcher. Placeholders in any string:
`{host}`, `{port.NAME}`, `{data}` (a fresh directory for this broker), `{env.NAME}`; in
`auth` also `{user}`, and `{secret}` in its standard-input texts alone.

A recipe with a `cluster` section can start a broker of several nodes (`broker: {recipe:
NAME, nodes: 3}`): each node is the native command with ports and a data directory of its
own, plus the cluster's `args`, where `{node}` is its number and `{peers}` names the others.

A recipe's command runs on the broker host, so a scenario names a recipe only by a plain
name found in the recipe directories, never by a path (`check_name`).
"""

from __future__ import annotations

import os
import re
import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic.main import IncEx

from sixnines.formats.errors import SixninesError
from sixnines.orchestrator.scenario import units
from sixnines.orchestrator.scenario.fields import check_env_name
from sixnines.orchestrator.scenario.yaml_source import (
    SourceError,
    YamlSyntaxError,
    parse,
    read_source,
)

BUILTIN_DIR = Path(__file__).resolve().parents[2] / "deploy" / "recipes"
PATH_VARIABLE = "SIXNINES_RECIPE_PATH"

#: A recipe name: a file name in a recipe directory, without its `.yaml`.
NAME = re.compile(r"[A-Za-z0-9_.-]+")
MAX_NAME_LENGTH = 64  # a file name in a recipe directory (as scenario names are bounded)

Command = list[str]
Nanoseconds = Annotated[int, BeforeValidator(units.parse_duration)]
EnvName = Annotated[str, AfterValidator(check_env_name)]


class RecipeError(SixninesError):
    pass


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReadyCheck(Strict):
    """Ready when a TCP connect succeeds, when a command exits 0, or when an HTTP GET made
    on the broker host answers 200 (retried)."""

    tcp: str | None = None
    command: Command | None = None
    http: str | None = None  # a URL the broker host reaches (e.g. a health endpoint)
    timeout: Nanoseconds = Field(default=30_000_000_000)


class Step(Strict):
    """A command run once the broker is ready; `stdin` (which may hold `{secret}`) is its
    standard input, handed over the launcher's control channel (orchestrator.launchers.handoff)."""

    command: Command
    stdin: str | None = None


class Auth(Strict):
    """How the broker is started so that it requires the run's credential: used when it
    listens off loopback, where anyone who reaches the address could use it. The secret
    reaches the broker host only as standard input (never argv, environment or a file), so
    `{secret}` is allowed in `stdin` texts alone (`Recipe` refuses it anywhere else)."""

    user: str | None = None  # the login name; None: a password alone (Redis' default user)
    args: list[str] = []  # added to the native command
    stdin: str | None = None  # the broker's standard input (e.g. config read from stdin)
    setup: list[Step] = []  # run in order once the broker is ready (e.g. add the user)


class Native(Strict):
    prepare: list[Command] = []  # run once, in order, before `command` (e.g. format storage)
    command: Command
    install: str | None = None  # how to get its programs, said when one is missing (as is)
    env: dict[EnvName, str] = {}
    files: dict[str, str] = {}  # file name in {data} -> content, written before `prepare`
    ready: ReadyCheck
    stop: list[Command] = []  # run after the process group is stopped (daemons it left)
    version: Command | None = None
    auth: Auth | None = None  # None: the broker cannot require a credential


class Cluster(Strict):
    """How nodes of the recipe's broker make one cluster on the broker host. Each node runs
    the native command with its own ports (the recipe's and `ports`) and data directory,
    and `args` added; in `args`, `{node}` is its number (0, 1, ...) and `{peers}` the
    others' `peer` texts joined by commas. `ready` is checked on each node once all are
    started (and on a node started again), after the native form's own check."""

    ports: list[str] = []  # more ports each node needs (e.g. where the others reach it)
    args: list[str] = Field(min_length=1)
    peer: str  # one node as the others reach it, e.g. "nats://127.0.0.1:{port.route}"
    ready: ReadyCheck | None = None  # e.g. the node has joined and the cluster has a leader


class Container(Strict):
    image: str
    command: Command = []
    env: dict[EnvName, str] = {}
    ports: dict[str, int] = {}  # recipe port name -> port inside the container


class Recipe(Strict):
    name: str
    description: str
    drivers: list[str] = Field(min_length=1)  # drivers that can talk to it
    ports: list[str] = Field(min_length=1)
    address: str  # what drivers connect to, e.g. "{host}:{port.client}"
    native: Native
    cluster: Cluster | None = None  # None: its broker is one node
    container: Container | None = None
    note: str | None = None  # shown wherever its figures appear (e.g. "not Apache Kafka")

    @property
    def all_ports(self) -> list[str]:
        """The ports each node needs: the recipe's, then its cluster's."""
        return [*self.ports, *(self.cluster.ports if self.cluster else [])]

    @model_validator(mode="after")
    def _secret_only_in_stdin(self) -> Recipe:
        stdin_texts: dict[str, IncEx | bool] = {
            "native": {"auth": {"stdin": True, "setup": {"__all__": {"stdin"}}}}}
        if _names_secret(self.model_dump(exclude=stdin_texts)):
            raise ValueError("{secret} may appear only in auth.stdin and auth.setup[].stdin "
                             "(anywhere else it would reach argv, the environment or a file)")
        return self

    @model_validator(mode="after")
    def _cluster_ports_apart(self) -> Recipe:
        if len(set(self.all_ports)) != len(self.all_ports):
            raise ValueError("cluster.ports repeats a port name of ports")
        return self


def _names_secret(value) -> bool:
    """Whether `value` (plain data: strings in lists and dicts) uses `{secret}`."""
    if isinstance(value, dict):
        return any(map(_names_secret, value.values()))
    if isinstance(value, list):
        return any(map(_names_secret, value))
    if not isinstance(value, str):
        return False
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(value) if field]
    except ValueError:  # unbalanced braces: rendering names them
        return False
    return any(re.match(r"secret\b", field) for field in fields)


def search_path() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(PATH_VARIABLE, "").split(os.pathsep) if p]
    return [*extra, BUILTIN_DIR]


#: A mapping with none of these is no recipe: its keys are not listed as unknown fields.
RECIPE_KEYS = {"name", "native", "ports", "address"}


@cache
def _load(path: Path) -> Recipe:
    """The recipe in `path`, read as scenarios are (bounded: yaml_source); a file that is
    not a recipe is named with a line, never quoted (it may be any file of that name)."""
    try:
        doc = parse(read_source(path))
    except (SourceError, YamlSyntaxError) as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise RecipeError(f"broker recipe {where}: {exc.message}") from None
    if not isinstance(doc.data, dict) or not RECIPE_KEYS & set(doc.data):
        raise RecipeError(f"broker recipe {path}:{doc.line_of(())}: not a broker recipe (its "
                          "content is not shown)")
    try:
        return Recipe.model_validate(doc.data)
    except ValidationError as exc:
        raise RecipeError(f"broker recipe {path}: {_errors(exc)}") from None


def _errors(exc: ValidationError) -> str:
    """Each error of a recipe as `where: what`, on one line."""
    return "; ".join(f"{'.'.join(map(str, error['loc'])) or '(top)'}: "
                     f"{error['msg'].removeprefix('Value error, ')}" for error in exc.errors())


def recipe_names() -> list[str]:
    return sorted({p.stem for d in search_path() if d.is_dir() for p in d.glob("*.yaml")})


def check_name(name: str) -> str:
    """`name` if it is a plain recipe name. A path would make whatever file it points to a
    recipe whose command then runs (`/tmp/x`, `../../x`, `sub/x`)."""
    if not NAME.fullmatch(name) or name in (".", ".."):
        raise RecipeError(
            f"{name!r} is not a recipe name (letters, digits, '_', '.', '-'; no path): "
            f"recipes are found by name in deploy/recipes and the directories in {PATH_VARIABLE}")
    if len(name) > MAX_NAME_LENGTH:
        raise RecipeError(f"a recipe name is at most {MAX_NAME_LENGTH} characters")
    return name


def load_recipe(name: str) -> Recipe:
    check_name(name)
    for directory in search_path():
        path = directory / f"{name}.yaml"
        if path.is_file():
            return _load(path)
    known = ", ".join(recipe_names()) or "none"
    raise RecipeError(f"no broker recipe named {name!r} (available: {known})")


class _Strict(string.Formatter):
    """str.format that names a misspelt placeholder, or the environment variable one needs,
    instead of raising a bare KeyError."""

    def get_field(self, field_name, args, kwargs):
        try:
            return super().get_field(field_name, args, kwargs)
        except (KeyError, AttributeError):
            variable = field_name.removeprefix("env.")
            if variable != field_name:
                raise RecipeError(f"needs the environment variable {variable} ({{{field_name}}}"
                                  "), which is not set here") from None
            raise RecipeError(f"unknown placeholder {{{field_name}}}") from None


def render(value, *, host: str, ports: dict[str, int], data: str | Path, **extra: str):
    """`value` (a string, or lists/dicts of them) with its placeholders filled in; `extra`
    adds placeholders (`user`, `secret`) where a caller allows them."""
    names = {"host": host, "port": SimpleNamespace(**ports), "data": str(data),
             "env": SimpleNamespace(**os.environ), **extra}
    return _fill(value, names)


def _fill(value, names: dict):
    if isinstance(value, str):
        return _Strict().vformat(value, (), names)
    if isinstance(value, list):
        return [_fill(item, names) for item in value]
    if isinstance(value, dict):
        return {k: _fill(v, names) for k, v in value.items()}
    return value


#: Stand-ins for what only a run knows, to render a recipe before one (`check_renders`).
_TRIAL = {"host": "127.0.0.1", "data": "/", "user": "", "secret": ""}


def check_renders(recipe: Recipe) -> None:
    """RecipeError naming the first placeholder of the recipe's native form (and cluster
    section) that cannot be filled here (an environment variable not set, a misspelt
    name), as starting it would."""
    ports = dict.fromkeys(recipe.all_ports, 1)
    render([recipe.address, recipe.native.model_dump(exclude={"install"})], ports=ports,
           **_TRIAL)
    if recipe.cluster is not None:
        render(recipe.cluster.model_dump(), ports=ports, node="0", peers="", **_TRIAL)


@dataclass(frozen=True)
class Node:
    """One node of a broker started from a recipe: what its placeholders are filled with.
    A broker of one node has just one, without the cluster's `{node}` and `{peers}`."""

    index: int
    host: str
    ports: dict[str, int]
    data: str
    peers: str | None = None  # the others' `peer` texts (None: not a cluster)

    def fill(self, value, **extra: str):
        """`value` with this node's placeholders (and `extra`: `user`, `secret`) filled."""
        return render(value, host=self.host, ports=self.ports, data=self.data, **extra)

    def cluster_args(self, recipe: Recipe) -> list[str]:
        """The cluster's `args` for this node (none for a broker of one node)."""
        if recipe.cluster is None or self.peers is None:
            return []
        return self.fill(recipe.cluster.args, node=str(self.index), peers=self.peers)


def nodes_of(recipe: Recipe, count: int, host: str, data: str, ports: list[int]) -> list[Node]:
    """`count` nodes of the recipe's broker on `host`, from `ports` (`recipe.all_ports` for
    each node in turn) and under `data` (itself for one node, `data/<index>` for several);
    RecipeError when the recipe cannot make a cluster of them."""
    names = recipe.all_ports if count > 1 else recipe.ports
    if count > 1 and recipe.cluster is None:
        raise RecipeError(f"recipe {recipe.name!r} starts a broker of one node (it has no "
                          "cluster section)")
    per_node = [dict(zip(names, ports[k * len(names):(k + 1) * len(names)], strict=True))
                for k in range(count)]
    if count == 1:
        return [Node(0, host, per_node[0], data)]
    assert recipe.cluster is not None  # checked above
    peer = recipe.cluster.peer
    reached = [render(peer, host=host, ports=own, data=f"{data}/{k}")
               for k, own in enumerate(per_node)]
    return [Node(k, host, own, f"{data}/{k}", ",".join(reached[:k] + reached[k + 1:]))
            for k, own in enumerate(per_node)]


def programs(recipe: Recipe, **values) -> list[str]:
    """The programs the recipe's native form runs, rendered with `values` (host, ports,
    data; stand-ins by default): each must be found on the broker host's PATH, or be a
    path to an executable there."""
    native = recipe.native
    cluster_ready = recipe.cluster.ready if recipe.cluster else None
    commands = [*native.prepare, native.command, native.ready.command, native.version,
                cluster_ready.command if cluster_ready else None,
                *native.stop, *(step.command for step in (native.auth.setup if native.auth
                                                          else []))]
    values = {**_TRIAL, "ports": dict.fromkeys(recipe.all_ports, 1), **values}
    return list(dict.fromkeys(render([command[0] for command in commands if command],
                                     **values)))


def not_installed(missing: list[str], install: str | None) -> str:
    """What to say of programs a recipe runs that are not there, and how to get them."""
    how = f": {install}" if install else ""
    return f"{', '.join(missing)} not installed (not on PATH, or not executable){how}"
