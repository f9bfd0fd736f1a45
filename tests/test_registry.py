"""drivers.registry: drivers found by name among the installed entry points."""

from __future__ import annotations

import pytest

from sixnines.drivers.base import Driver
from sixnines.drivers.registry import available, load


def test_every_driver_sixnines_ships_is_registered_and_loads():
    assert {"tcp", "zmq", "redis", "nats", "rabbitmq", "kafka"} <= set(available())
    driver = load("tcp")
    assert issubclass(driver, Driver)


def test_an_unknown_driver_is_named_with_those_installed():
    with pytest.raises(LookupError, match=r"no driver named 'nope' \(installed: .*tcp"):
        load("nope")
