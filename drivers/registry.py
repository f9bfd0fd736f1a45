"""Finding drivers: every `Driver` registered under the `sixnines.drivers` entry points."""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points

from sixnines.drivers.base import Driver

GROUP = "sixnines.drivers"


@cache
def available() -> dict[str, object]:
    """Entry points by driver name (not yet imported: a broken third-party driver only
    fails the scenarios that use it)."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def load(name: str) -> type[Driver]:
    try:
        entry = available()[name]
    except KeyError:
        known = ", ".join(sorted(available())) or "none"
        raise LookupError(f"no driver named {name!r} (installed: {known})") from None
    driver = entry.load()
    if not (isinstance(driver, type) and issubclass(driver, Driver)):
        raise LookupError(f"entry point {name!r} does not name a sixnines Driver subclass")
    return driver
