"""What the conformance suite checks of a driver's options model (an unknown key refused,
naming it), seen where users meet it: a scenario naming every driver sixnines ships is
refused at the option's path. Parses only; no server starts."""

from __future__ import annotations

import re

import pytest

from sixnines.orchestrator.scenario.model import ScenarioError
from tests.integration.support import parse_options

DRIVERS = ["tcp", "zmq", "redis", "nats", "rabbitmq", "kafka"]
RECIPES = {"kafka": "kafka-noida"}


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_misspelt_option_is_refused_at_its_path(driver):
    path = re.escape("systems[0].options.no_such_option")
    with pytest.raises(ScenarioError, match=path):
        parse_options(driver, "{no_such_option: x}", recipe=RECIPES.get(driver))
