"""Where the rabbitmq driver sends and subscribes a one-way lane, on options alone: a
fanout exchange per lane, or (the default exchange) a named queue per lane; the configured
names themselves with one connection."""

from __future__ import annotations

import pytest

from sixnines.drivers.base import SOLE_LANE, Lane
from sixnines.drivers.rabbitmq.driver import RabbitmqDriver, lane_route
from sixnines.drivers.rabbitmq.options import RabbitmqOptions
from sixnines.drivers.rabbitmq.wire import publish_head
from sixnines.orchestrator.scenario.workload import WorkloadPoint


def test_a_fanout_lane_has_an_exchange_of_its_own():
    options = RabbitmqOptions(exchange="ex", queue="q")
    assert lane_route(options, SOLE_LANE) == ("ex", "")
    assert lane_route(options, Lane(0, 2)) == ("ex.0", "")
    assert lane_route(options, Lane(1, 2)) == ("ex.1", "")


def test_a_default_exchange_lane_has_a_queue_of_its_own():
    options = RabbitmqOptions(exchange="", queue="q")
    assert lane_route(options, SOLE_LANE) == ("", "q")
    assert lane_route(options, Lane(3, 4)) == ("", "q.3")


@pytest.mark.parametrize("exchange", ["ex", ""])
@pytest.mark.parametrize("lane", [SOLE_LANE, Lane(0, 2), Lane(1, 2)])
def test_each_lane_is_framed_for_its_own_route(exchange, lane):
    """`framing` is asked per connection: the pre-encoded publish names the lane's route."""
    options = RabbitmqOptions(exchange=exchange, queue="q")
    prefix = RabbitmqDriver("127.0.0.1:5672", options).framing(64, lane).prefix
    assert prefix.startswith(publish_head(1, *lane_route(options, lane), 64, False))


def workload(**fields) -> WorkloadPoint:
    return WorkloadPoint(**{"message_size": 64, "rate": 10, "duration_ns": 10**9, **fields})


def test_the_default_exchange_refuses_several_consumers_not_several_connections():
    shared = RabbitmqOptions(exchange="", queue="q")
    problems = RabbitmqDriver.workload_problems(shared, workload(consumers=2))
    assert len(problems) == 1 and "2 consumers" in problems[0]
    assert "name a fanout exchange (option exchange) or use one consumer" in problems[0]
    assert RabbitmqDriver.workload_problems(shared, workload(connections=4)) == []
    assert RabbitmqDriver.workload_problems(
        shared, workload(mode="round-trip", consumers=2)) == []
    assert RabbitmqDriver.workload_problems(RabbitmqOptions(), workload(consumers=3)) == []
