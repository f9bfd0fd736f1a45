"""Broker recipes: how to start, check, stop and identify a system under test.

A recipe is a YAML file in `deploy/recipes/` (or a directory named in
`SIXNINES_RECIPE_PATH`), so a new system or a site-specific install is a data file, not code.
It names the ports it needs (sixnines picks free ones), the native command with its
environment and config files, a readiness check, extra stop commands, a version query, and
the container image form used by the container launcher. Placeholders in any string:
`{host}`, `{port.NAME}`, `{data}` (a fresh directory for this broker), `{env.NAME}`.
"""

from __future__ import annotations

import os
import string
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from orchestrator import units

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "deploy" / "recipes"
PATH_VARIABLE = "SIXNINES_RECIPE_PATH"

Command = list[str]
Nanoseconds = Annotated[int, BeforeValidator(units.parse_duration)]


class RecipeError(Exception):
    pass


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Ready(Strict):
    """Ready when a TCP connect succeeds, or when a command exits 0 (retried)."""

    tcp: str | None = None
    command: Command | None = None
    timeout: Nanoseconds = Field(default=30_000_000_000)


class Native(Strict):
    prepare: list[Command] = []  # run once, in order, before `command` (e.g. format storage)
    command: Command
    env: dict[str, str] = {}
    files: dict[str, str] = {}  # file name in {data} -> content, written before `prepare`
    ready: Ready
    stop: list[Command] = []  # run after the process group is stopped (daemons it left)
    version: Command | None = None


class Container(Strict):
    image: str
    command: Command = []
    env: dict[str, str] = {}
    ports: dict[str, int] = {}  # recipe port name -> port inside the container


class Recipe(Strict):
    name: str
    description: str
    drivers: list[str] = Field(min_length=1)  # drivers that can talk to it
    ports: list[str] = Field(min_length=1)
    address: str  # what drivers connect to, e.g. "{host}:{port.client}"
    native: Native
    container: Container | None = None
    note: str | None = None  # shown wherever its figures appear (e.g. "not Apache Kafka")


def search_path() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(PATH_VARIABLE, "").split(os.pathsep) if p]
    return [*extra, BUILTIN_DIR]


@cache
def _load(path: Path) -> Recipe:
    try:
        return Recipe.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise RecipeError(f"broker recipe {path}: {exc}") from None


def recipe_names() -> list[str]:
    return sorted({p.stem for d in search_path() if d.is_dir() for p in d.glob("*.yaml")})


def load_recipe(name: str) -> Recipe:
    for directory in search_path():
        path = directory / f"{name}.yaml"
        if path.is_file():
            return _load(path)
    known = ", ".join(recipe_names()) or "none"
    raise RecipeError(f"no broker recipe named {name!r} (available: {known})")


class _Strict(string.Formatter):
    """str.format that names a misspelt placeholder instead of raising a bare KeyError."""

    def get_field(self, field_name, args, kwargs):
        try:
            return super().get_field(field_name, args, kwargs)
        except (KeyError, AttributeError):
            raise RecipeError(f"unknown placeholder {{{field_name}}}") from None


def render(value, *, host: str, ports: dict[str, int], data: str | Path):
    """`value` (a string, or lists/dicts of them) with its placeholders filled in."""
    names = {"host": host, "port": SimpleNamespace(**ports), "data": str(data),
             "env": SimpleNamespace(**os.environ)}
    if isinstance(value, str):
        return _Strict().vformat(value, (), names)
    if isinstance(value, list):
        return [render(item, host=host, ports=ports, data=data) for item in value]
    if isinstance(value, dict):
        return {k: render(v, host=host, ports=ports, data=data) for k, v in value.items()}
    return value
