"""Pydantic validation errors turned into lines a user can act on.

A raw `ValidationError` names pydantic's internal locations and wording. `problems_from` turns
each error into a `Problem`: the dotted path as the user wrote it in the YAML file, its line
there, and a short human message ("must be a whole number", "unknown field (did you mean
'rate'?)"), so that `ScenarioError` can print one `FILE:LINE: PATH: MESSAGE` per line.

Values and keys from the file are shown through `shown`, clipped: a hostile file must not
turn one problem into megabytes of output, nor a newline in a key into a second line.
"""

from __future__ import annotations

import difflib
import reprlib
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from sixnines.formats.errors import BadInput
from sixnines.orchestrator.scenario.yaml_source import YamlDocument, YamlPath

# --- errors -----------------------------------------------------------------------------

#: Longest message printed for one problem (a safety net: values are already `shown`).
MAX_MESSAGE_CHARS = 500
#: Problems printed for one file; the count of the rest follows them.
MAX_PROBLEMS_SHOWN = 100
#: Longest key printed as written in a path; longer or unprintable ones are `shown`.
MAX_KEY_CHARS = 40

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = _SHORT.maxlong = 40
_SHORT.maxlist = _SHORT.maxdict = 4
_SHORT.maxlevel = 2


def shown(value: object) -> str:
    """`repr(value)` cut short, for quoting a value from the file in a message."""
    return _SHORT.repr(value)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a scenario file: where (dotted path, 1-based line) and what.
    `given` names where a value came from when not from the file (a command-line override,
    `--set workload.rate=abc`): the problem is then told against it instead."""

    path: str
    line: int | None
    message: str
    given: str | None = None

    def render(self, file: str) -> str:
        where = self.given if self.given is not None else \
            file if self.line is None else f"{file}:{self.line}"
        message = _clip(self.message, MAX_MESSAGE_CHARS)
        return f"{where}: {self.path}: {message}" if self.path else f"{where}: {message}"


class ScenarioError(BadInput):
    """A scenario that cannot be run; `str()` gives one `FILE:LINE: PATH: MESSAGE` per line."""

    def __init__(self, file: str, problems: list[Problem]) -> None:
        self.file = file
        self.problems = list(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        lines = [problem.render(self.file) for problem in self.problems[:MAX_PROBLEMS_SHOWN]]
        if len(self.problems) > MAX_PROBLEMS_SHOWN:
            rest = len(self.problems) - MAX_PROBLEMS_SHOWN
            lines.append(f"{self.file}: and {rest:,} more problems (fix the ones above first)")
        return "\n".join(lines)


# --- pydantic errors in human words -------------------------------------------------------

_MESSAGES = {
    "missing": "field required",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "dict_type": "must be a mapping (key: value)",
    "model_type": "must be a mapping (key: value)",
    "model_attributes_type": "must be a mapping (key: value)",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "too_short": "must not be empty",
    "string_too_short": "must not be empty",
    "invalid_key": "a key must be a string",
}
_BOUNDS = {
    "greater_than": ("gt", "must be greater than {}"),
    "greater_than_equal": ("ge", "must be at least {}"),
    "less_than": ("lt", "must be less than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "too_long": ("max_length", "must have at most {} items"),
    "string_too_long": ("max_length", "must be at most {} characters"),
}


def problems_from(
    exc: ValidationError,
    doc: YamlDocument | None = None,
    model: type[BaseModel] | None = None,
    prefix: YamlPath = (),
) -> list[Problem]:
    """Pydantic errors as Problems, located in `doc` (errors of `model`, found at `prefix`)."""
    errors = exc.errors(include_url=False)
    locs = [tuple(error["loc"]) for error in errors]
    parents = {loc[:end] for loc in locs for end in range(len(loc))}
    problems = []
    for error, loc in zip(errors, locs, strict=True):
        if error["type"] == "too_short" and loc in parents:
            continue  # pydantic counts only the valid items: "empty" just echoes their errors
        path = _source_path(doc.data, prefix + loc) if doc else prefix + loc
        line = doc.line_of(path) if doc else None
        problems.append(Problem(format_path(path), line, _message(error, model, loc)))
    return problems


def _source_path(data: Any, loc: YamlPath) -> YamlPath:
    """Pydantic's loc as a path into the file: drop the `[0]` pydantic adds when a single
    value stands for a one-item sweep, the tag a discriminated union adds before the
    fields of the alternative it chose (`hosts[0].ssh.address`), and the `[key]` it adds
    after a mapping key that is itself wrong (the key is the place)."""
    path: list[Any] = []
    node = data
    for index, part in enumerate(loc):
        if part == "[key]" or (isinstance(part, str) and node is not None
                               and not isinstance(node, dict | list)):
            continue  # a wrong key, or a union's tag after a scalar (`rate: 1e30`)
        if isinstance(node, dict) and isinstance(part, str) and part not in node:
            part = _key_named(node, part)
        is_key = isinstance(node, dict) and part in node
        if isinstance(part, int) and not is_key and not isinstance(node, list):
            continue
        if isinstance(part, str) and isinstance(node, dict) and not is_key \
                and index < len(loc) - 1:
            continue
        path.append(part)
        if is_key or (isinstance(node, list) and isinstance(part, int) and part < len(node)):
            node = node[part]
        else:
            node = None
    return tuple(path)


def _key_named(mapping: dict[Any, Any], name: str) -> Any:
    """The key of `mapping` that pydantic names `name` (it writes `None` for a null key),
    or `name` itself when there is none."""
    return next((key for key in mapping if not isinstance(key, str) and str(key) == name), name)


def format_path(path: YamlPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if type(part) is int else f".{_key(part)}" if out else _key(part)
    return out


def _key(part: object) -> str:
    """A mapping key as written, or `shown` when long, unprintable or not a string."""
    text = str(part)
    plain = isinstance(part, str) and text.isprintable() and len(text) <= MAX_KEY_CHARS
    return text if plain else shown(part)


def _message(error: Any, model: type[BaseModel] | None, loc: YamlPath) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "extra_forbidden":
        return _unknown_field(loc[-1], _fields_at(model, loc[:-1]))
    if kind == "enum":
        return f"must be {ctx['expected']}"
    if kind in _BOUNDS:
        key, template = _BOUNDS[kind]
        return template.format(f"{ctx[key]:,}" if type(ctx[key]) is int else ctx[key])
    if kind in _MESSAGES:
        return _MESSAGES[kind]
    message = str(error["msg"])
    for noise in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(noise)
    if message.startswith("Input should be "):
        message = "must be " + message.removeprefix("Input should be ")
    return message


def _unknown_field(key: object, allowed: list[str]) -> str:
    close = difflib.get_close_matches(str(key), allowed, n=1)
    if close:
        return f"unknown field (did you mean {close[0]!r}?)"
    if allowed:
        return f"unknown field (expected one of: {', '.join(allowed)})"
    return "unknown field (none allowed here)"


def _fields_at(model: type[BaseModel] | None, loc: YamlPath) -> list[str]:
    """Field names of the model found at `loc` below `model` (for "did you mean"). Where a
    field holds a union of models, a discriminator tag in `loc` picks the alternative whose
    `kind` it is."""
    candidates = [model] if model else []
    for part in loc:
        if isinstance(part, int) or not candidates:
            continue
        field = candidates[0].model_fields.get(part)
        if field is not None:
            candidates = _models_in(field.annotation)
        else:
            candidates = [m for m in candidates if getattr(m, "kind", None) == part]
    return list(candidates[0].model_fields) if candidates else []


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if get_origin(annotation) is None and isinstance(annotation, type):
        return [annotation] if issubclass(annotation, BaseModel) else []
    return [model for arg in get_args(annotation) for model in _models_in(arg)]
