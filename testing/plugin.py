"""The pytest plugin (entry point `pytest11`): options naming a driver to test, and the
`sixnines_target` fixture they make. `python -m sixnines.testing` runs the suite with them.

It imports nothing of the suite until the fixture is used, so it costs other pytest runs
nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sixnines", "sixnines driver conformance")
    group.addoption("--sixnines-driver", metavar="NAME",
                    help="the driver (a `sixnines.drivers` entry point) to test")
    group.addoption("--sixnines-broker", metavar="HOST:PORT",
                    help="its broker's address (default: start the driver's builtin broker)")
    group.addoption("--sixnines-option", metavar="KEY=VALUE", action="append", default=[],
                    help="a driver option (the value is read as YAML; repeatable)")


def parse_option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise pytest.UsageError(f"--sixnines-option {text!r} is not KEY=VALUE")
    return key.strip(), yaml.safe_load(value)


@pytest.fixture(scope="session")
def sixnines_target(request: pytest.FixtureRequest) -> Iterator[object]:
    """A `Target` from the command line's --sixnines-* options."""
    from sixnines.drivers import registry
    from sixnines.testing.brokers import builtin_broker, doomed_builtin
    from sixnines.testing.conformance import Target

    config = request.config
    name = config.getoption("--sixnines-driver")
    if not name:
        raise pytest.UsageError("give the driver to test: --sixnines-driver NAME")
    driver = registry.load(name)
    options = dict(parse_option(text) for text in config.getoption("--sixnines-option"))
    address = config.getoption("--sixnines-broker")
    doomed = (lambda: doomed_builtin(name)) if driver.has_builtin_broker else None
    if address is not None:
        yield Target(driver, address, options, doomed=doomed)
        return
    if doomed is None:
        raise pytest.UsageError(f"driver {name!r} has no builtin broker: give --sixnines-broker")
    with builtin_broker(name) as broker:
        yield Target(driver, broker.address, options, doomed=doomed)
