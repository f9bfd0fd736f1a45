"""Every driver sixnines ships, in each of its modes, through the conformance suite
(sixnines.testing) against its real server: one server per system for the whole session,
and one of its own for each kill case. What a driver fails goes in its variant's
`known_failures` (strict xfails: a fixed driver must drop its entry); none today."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from sixnines.drivers import registry
from sixnines.testing import DriverConformance, Target, WrongLogin
from sixnines.testing.brokers import builtin_broker, doomed_builtin
from tests.integration.support import (
    NATS_AUTH_CONFIG,
    NATS_SERVER,
    nats_server,
    recipe_server,
    redis_with_password,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

WRONG = "not-the-password-" + uuid.uuid4().hex[:8]
PASSWORD_ENV = "SIXNINES_CONFORMANCE_PASSWORD"  # holds WRONG while the suite runs
os.environ[PASSWORD_ENV] = WRONG


def fresh(prefix: str = "c") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


@dataclass(frozen=True)
class Variant:
    """One driver in one mode: its options, what isolates its cases on a shared server,
    the recipe (or builtin broker) it runs against and its login case."""

    system: str
    options: dict = field(default_factory=dict)
    isolate: Callable[[], dict] | None = None
    invalid: dict = field(default_factory=dict)
    large_size: int = 100_000
    recipe: str | None = None  # None: the driver's builtin broker
    login: str | None = None  # the session fixture giving a WrongLogin
    connect_s: float = 15.0
    known_failures: dict = field(default_factory=dict)


def _redis(**options) -> Variant:
    return Variant("redis", options, lambda: {"channel": fresh()}, {"mode": "queue"},
                   recipe="redis", login="redis_login")


def _nats(mode: str) -> Variant:
    def isolate() -> dict:
        return {"subject": fresh("t"), **({"stream": fresh("s")} if mode == "jetstream" else {})}
    return Variant("nats", {"mode": mode}, isolate, {"storage": "tape"}, recipe="nats",
                   login="nats_login")


def _rabbitmq(**options) -> Variant:
    def isolate() -> dict:
        name = fresh("t-")
        return {"exchange": name, "queue": name}
    return Variant("rabbitmq", options, isolate, {"prefetch": -1}, large_size=300_000,
                   recipe="rabbitmq", login="rabbitmq_login")


def _kafka(client: str, group: bool = False) -> Variant:
    return Variant("kafka", {"client": client, "group": group, "partitions": 2},
                   lambda: {"topic": fresh("t-")}, {"acks": 2}, recipe="kafka-noida",
                   login="kafka_login", connect_s=10.0)


VARIANTS = {
    "tcp": Variant("tcp", invalid={"nodelay": "maybe"}),
    "zmq": Variant("zmq", invalid={"hwm": -1}),
    "redis-pubsub": _redis(),
    "redis-streams": _redis(mode="streams"),
    "redis-streams-group": _redis(mode="streams", group=True),
    "nats-core": _nats("core"),
    "nats-jetstream": _nats("jetstream"),
    "rabbitmq-fanout": _rabbitmq(),
    "rabbitmq-persistent-confirms": _rabbitmq(persistent=True, confirms=True),
    "rabbitmq-auto-ack": _rabbitmq(auto_ack=True, prefetch=0),
    "rabbitmq-quorum": _rabbitmq(queue_type="quorum", persistent=True, confirms=True),
    "rabbitmq-stream": _rabbitmq(queue_type="stream", persistent=True),
    "kafka-confluent": _kafka("confluent"),
    "kafka-python": _kafka("kafka-python"),
    "kafka-confluent-group": _kafka("confluent", group=True),
    "kafka-python-group": _kafka("kafka-python", group=True),
}

MISSING = {
    "redis": shutil.which("redis-server") is None,
    "nats": not NATS_SERVER.exists(),
    "rabbitmq": shutil.which("/usr/lib/rabbitmq/bin/rabbitmq-server") is None,
}


# --- servers: one per system for the session, started when a variant first needs it ------


@pytest.fixture(scope="session")
def servers(tmp_path_factory):
    """Servers by recipe name, started on first use and stopped at the end."""
    started: dict = {}
    stack: list = []

    def get(recipe: str):
        if recipe not in started:
            manager = recipe_server(recipe, tmp_path_factory.mktemp(recipe))
            started[recipe] = manager.__enter__()
            stack.append(manager)
        return started[recipe]

    yield get
    for manager in reversed(stack):
        manager.__exit__(None, None, None)


@pytest.fixture(scope="session")
def redis_login(tmp_path_factory):
    with redis_with_password(tmp_path_factory.mktemp("redis-auth"), "right-" + WRONG) as address:
        yield WrongLogin(address, {"password_env": PASSWORD_ENV}, WRONG)


@pytest.fixture(scope="session")
def nats_login():
    with nats_server(config=NATS_AUTH_CONFIG) as address:
        yield WrongLogin(address, {"username": "alice", "password_env": PASSWORD_ENV}, WRONG)


@pytest.fixture(scope="session")
def rabbitmq_login(servers):
    return WrongLogin(servers("rabbitmq").address, {"password_env": PASSWORD_ENV}, WRONG)


@pytest.fixture(scope="session")
def kafka_login(servers):
    """noida-db accepts any PLAIN login but refuses SCRAM: a real refusal by the broker."""
    return WrongLogin(servers("kafka-noida").address,
                      {"sasl_mechanism": "SCRAM-SHA-256", "username": "u",
                       "password_env": PASSWORD_ENV}, WRONG)


@contextmanager
def doomed_recipe(recipe: str, work):
    with recipe_server(recipe, work) as broker:
        yield broker.address, broker.process.kill


class TestConformance(DriverConformance):
    @pytest.fixture(scope="class", params=list(VARIANTS))
    @classmethod
    def target(cls, request, servers, tmp_path_factory) -> Target:
        variant = VARIANTS[request.param]
        if MISSING.get(variant.system):
            pytest.skip(f"no {variant.system} server installed")
        driver = registry.load(variant.system)
        if variant.recipe is None:
            manager = builtin_broker(variant.system)
            address = manager.__enter__().address
            request.addfinalizer(lambda: manager.__exit__(None, None, None))

            def doomed():
                return doomed_builtin(variant.system)
        else:
            address = servers(variant.recipe).address

            def doomed():
                return doomed_recipe(variant.recipe, tmp_path_factory.mktemp("doomed"))
        login = request.getfixturevalue(variant.login) if variant.login else None
        return Target(driver, address, variant.options, isolate=variant.isolate,
                      doomed=doomed, wrong_login=login, invalid_options=variant.invalid,
                      large_size=variant.large_size, connect_s=variant.connect_s,
                      known_failures=variant.known_failures)
