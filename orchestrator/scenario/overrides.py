"""Command-line overrides of a scenario's fields: `--set workload.rate=20k`, and the short
flags that each stand for one (`--rate 20k`, orchestrator.cli). They are applied to the
parsed YAML document before it is validated, so a value given there is read and checked
exactly as in the file; its problems are told against the flag instead of a line of the
file.

A PATH names a field as problems do: keys joined by dots, a list item by its index or, in a
list of named entries (systems, cases, hosts), by its name: `systems[0].broker.recipe`,
`systems[rabbit].options.prefetch`; a key holding a dot in brackets
(`workload.rate.objective[p99.9]`). Mappings on the way that the file does not have are
made. A VALUE is YAML as in the file: 20k, 1KB, 5s, or a flow collection ([64, 1KB],
{recipe: redis}).

The scenario holds no secret, only where one is (`password_env`, `password_file`): what an
override can set, the file could hold, so overrides are printed and recorded as given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sixnines.orchestrator.scenario.problems import Problem, format_path, shown
from sixnines.orchestrator.scenario.yaml_source import (
    YamlDocument,
    YamlPath,
    YamlSyntaxError,
    parse,
)

PATH_FORM = ("keys joined by dots, a list item as [N] or [NAME]: e.g. workload.rate, "
             "systems[0].broker.recipe")
#: Longest flag quoted in a problem (the rest of the line is the problem).
MAX_FLAG_CHARS = 80

_KEY = r"[A-Za-z_][A-Za-z0-9_-]*"
_STEP = re.compile(rf"\.({_KEY})|\[([^\[\]]+)\]")


@dataclass(frozen=True)
class Override:
    """One override as given: `flag` is how (`--set workload.rate=20k`, `--rate 20k`),
    `path` and `value` what it sets (value None: `--set` without `=`)."""

    flag: str
    path: str
    value: str | None

    @classmethod
    def of_set(cls, text: str) -> Override:
        path, equals, value = text.partition("=")
        return cls(f"--set {text}", path.strip(), value if equals else None)

    @property
    def text(self) -> str:
        """PATH=VALUE, as recorded: `--rate 20k` is `workload.rate=20k`."""
        return f"{self.path}={self.value}"

    @property
    def named(self) -> str:
        """The flag as problems quote it (clipped)."""
        return self.flag if len(self.flag) <= MAX_FLAG_CHARS else \
            self.flag[: MAX_FLAG_CHARS - 1] + "…"


def as_given(overrides: Sequence[Override]) -> str:
    """The overrides as the command line gave them: "--set workload.rate=20k --size 1KB"."""
    return " ".join(override.named for override in overrides)


class _Refused(Exception):
    """An override that cannot be applied: the message says why."""


def apply_overrides(doc: YamlDocument, overrides: Sequence[Override]) -> list[Problem]:
    """Set every override in `doc` (a scenario mapping), in order (the last of two on one
    field wins), recording in `doc.given` where each came from; a problem for each that
    cannot be set."""
    problems = []
    for override in overrides:
        try:
            _apply(doc, override)
        except _Refused as refused:
            problems.append(Problem("", None, str(refused), given=override.named))
    return problems


def told_against_flags(problems: list[Problem], doc: YamlDocument) -> list[Problem]:
    """`problems` with each one at or below a field an override set told against its flag."""
    given = sorted(((format_path(path), flag) for path, flag in doc.given.items()),
                   key=lambda entry: len(entry[0]), reverse=True)  # the nearest first
    return [next((Problem(problem.path, None, problem.message, given=flag)
                  for path, flag in given if _at_or_below(problem.path, path)), problem)
            if problem.given is None else problem for problem in problems]


def _at_or_below(path: str, field: str) -> bool:
    return path == field or path.startswith((f"{field}.", f"{field}["))


def _apply(doc: YamlDocument, override: Override) -> None:
    if override.value is None:
        raise _Refused(f"give PATH=VALUE ({PATH_FORM})")
    steps = _steps(override.path)
    _refuse_shadowed(doc.data, steps)
    value = _value(override.value)
    node: Any = doc.data
    path: YamlPath = ()
    made: YamlPath | None = None  # the first mapping this override made
    for step, following in zip(steps, [*steps[1:], None], strict=True):
        key = _key_in(node, step, path)
        path = (*path, key)
        if following is None:
            node[key] = value
        elif not (_has(node, key) and isinstance(node[key], dict | list)):
            if isinstance(following, int):
                raise _Refused(f"{format_path(path)} is no list to pick item [{following}] of")
            node[key] = {}
            made = made or path
        node = node[key]
    where = made or path
    doc.given = {given: flag for given, flag in doc.given.items()
                 if given[:len(where)] != where}  # what it replaced is its own now
    doc.given[where] = override.named


def _steps(path: str) -> list[str | int]:
    """PATH as keys (str) and list indexes (int); a bracketed name stays a str."""
    first = re.match(_KEY, path)
    if first is None:
        raise _Refused(f"{shown(path)} is not a field path ({PATH_FORM})")
    steps: list[str | int] = [first.group()]
    at = first.end()
    while at < len(path):
        step = _STEP.match(path, at)
        if step is None:
            raise _Refused(f"{shown(path)} is not a field path ({PATH_FORM})")
        key, bracketed = step.groups()
        steps.append(key if key is not None else
                     int(bracketed) if bracketed.isascii() and bracketed.isdigit() else bracketed)
        at = step.end()
    return steps


def _value(text: str) -> Any:
    """VALUE read as YAML, as the file's values are."""
    try:
        return parse(text).data
    except YamlSyntaxError as exc:
        raise _Refused(f"the value is not YAML: {exc.message}") from None


def _has(node: Any, key: Any) -> bool:
    return key in node if isinstance(node, dict) else 0 <= key < len(node)


def _key_in(node: dict | list, step: str | int, path: YamlPath) -> Any:
    """Where `step` leads in `node`: a mapping's key, or a list's index (by number, or by
    the name of the item)."""
    if isinstance(node, dict):
        return step if isinstance(step, str) else str(step)
    where = format_path(path)
    names = [item.get("name") if isinstance(item, dict) else None for item in node]
    if isinstance(step, int):
        if step >= len(node):
            raise _Refused(f"{where} has {len(node)} item(s): [0] to [{len(node) - 1}]"
                           if node else f"{where} is empty")
        return step
    if step in names:
        return names.index(step)
    known = ", ".join(map(str, filter(None, names))) or "none has a name"
    raise _Refused(f"no item of {where} is named {shown(step)} (names: {known})")


def _refuse_shadowed(data: dict, steps: list[str | int]) -> None:
    """A field of the base workload that cases set themselves would change nothing in
    those cases: refused, naming them."""
    cases = data.get("cases")
    if len(steps) != 2 or steps[0] != "workload" or not isinstance(cases, list):
        return
    field = steps[1]
    shadowing = [f"cases[{index}]" for index, case in enumerate(cases)
                 if isinstance(case, dict) and field in case]
    if shadowing:
        raise _Refused(f"{', '.join(shadowing)} set {field} over workload's, so this would "
                       f"not reach them: set it there (--set {shadowing[0]}.{field}=…)")
