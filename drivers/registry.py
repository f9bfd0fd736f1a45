"""Finding drivers: every `Driver` registered under the `sixnines.drivers` entry points."""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points, metadata

from sixnines.drivers.base import Driver

GROUP = "sixnines.drivers"
PROJECT = "sixnines"


@cache
def available() -> dict[str, EntryPoint]:
    """Entry points by driver name (not yet imported: a broken third-party driver only
    fails the scenarios that use it)."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def load(name: str) -> type[Driver]:
    try:
        entry = available()[name]
    except KeyError:
        known = ", ".join(sorted(available())) or "none"
        raise LookupError(f"no driver named {name!r} (installed: {known})") from None
    try:
        driver = entry.load()
    except ModuleNotFoundError as exc:
        raise LookupError(_missing_client(name, entry, exc)) from None
    if not (isinstance(driver, type) and issubclass(driver, Driver)):
        raise LookupError(f"entry point {name!r} does not name a sixnines Driver subclass")
    return driver


def _missing_client(name: str, entry: EntryPoint, exc: ModuleNotFoundError) -> str:
    """What to install: each of sixnines' own drivers has the extra of its name (pyproject
    `[project.optional-dependencies]`), so an agent host installs only the clients of the
    systems it drives."""
    missing = (exc.name or str(exc)).split(".")[0]
    if entry.dist is not None and entry.dist.name == PROJECT and name in _extras():
        return (f"driver {name!r} needs the Python package {missing!r}, which is not "
                f"installed: pip install 'sixnines[{name}]' (or 'sixnines[systems]' for "
                "every system)")
    owner = f" (from {entry.dist.name})" if entry.dist is not None else ""
    return f"driver {name!r}{owner} needs the Python package {missing!r}, which is not installed"


@cache
def _extras() -> frozenset[str]:
    return frozenset(metadata(PROJECT).get_all("Provides-Extra") or ())
