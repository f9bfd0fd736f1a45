"""The pieces of drivers/base.py every driver shares: the secret lookup, the declared
contract's defaults, and the refusal of a driver whose client is not installed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from pydantic import ValidationError

from sixnines.drivers.base import (
    DriverError,
    PollWaiter,
    Receiver,
    Sender,
    secret,
    split_addresses,
)
from sixnines.drivers.rabbitmq import RabbitmqOptions

LABEL = "redis at h:1"


def test_a_secret_comes_from_the_named_environment_variable(monkeypatch):
    monkeypatch.setenv("SIXNINES_TEST_SECRET", "s3cret\n")
    assert secret(LABEL, "password_env", "SIXNINES_TEST_SECRET") == "s3cret\n"  # as set
    monkeypatch.delenv("SIXNINES_TEST_SECRET")
    with pytest.raises(DriverError, match="redis at h:1: password_env SIXNINES_TEST_SECRET "
                                          "is not set"):
        secret(LABEL, "password_env", "SIXNINES_TEST_SECRET")


@pytest.mark.parametrize(("content", "expected"), [
    ("pw", "pw"), ("pw\n", "pw"), ("pw\r\n", "pw"), ("pw\n\n", "pw\n"), (" pw \n", " pw "),
    ("\n", ""),
])
def test_a_secret_file_loses_exactly_one_trailing_line_break(tmp_path, content, expected):
    path = tmp_path / "secret"
    path.write_bytes(content.encode())
    assert secret(LABEL, "token_env", None, "token_file", path) == expected


def test_a_missing_file_is_named_with_its_option_and_nothing_is_no_secret(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(DriverError, match=f"cannot read password_file {missing}"):
        secret(LABEL, "password_env", None, "password_file", missing)
    assert secret(LABEL, "password_env", None, "password_file", None) is None


def test_rabbitmq_only_lets_guest_go_without_a_password():
    assert RabbitmqOptions().username == "guest"
    assert RabbitmqOptions(username="alice", password_env="P").username == "alice"
    with pytest.raises(ValidationError, match="username 'alice' needs password_env or "
                                              "password_file"):
        RabbitmqOptions(username="alice")


def test_a_sender_that_acknowledges_nothing_settles_at_once():
    class Fire(Sender):
        def send(self, frames: memoryview, count: int) -> None: ...

        def close(self) -> None: ...

    assert Fire().settle() is None
    with pytest.raises(TypeError):
        type("Half", (Sender,), {"close": lambda self: None})()  # no send: not a Sender


CLIENTS = {"zmq": "zmq", "redis": "redis", "nats": "nats", "rabbitmq": "pika",
           "kafka": "confluent_kafka"}


def test_a_driver_whose_client_is_missing_is_refused_naming_its_extra():
    """Every system's client is imported with its driver (kafka's too), so `validate`
    refuses a scenario on a host without it, saying what to install."""
    script = textwrap.dedent(f"""
        import sys
        for client in {sorted(set(CLIENTS.values()))!r}:
            sys.modules[client] = None  # as if not installed
        from sixnines.drivers import registry
        for name in {sorted(CLIENTS)!r}:
            try:
                registry.load(name)
            except LookupError as exc:
                print(exc)
            else:
                print(name, "loaded")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(CLIENTS)
    for line, name in zip(lines, sorted(CLIENTS), strict=True):
        assert line == (f"driver {name!r} needs the Python package {CLIENTS[name]!r}, which is "
                        f"not installed: pip install 'sixnines[{name}]' (or "
                        "'sixnines[systems]' for every system)")


class Holding(Receiver):
    """A receiver whose messages wait in the driver, where its descriptor cannot signal."""

    holds = True

    def __init__(self, fd: int) -> None:
        self.pollable = fd
        self.waiting = 0

    def held(self) -> bool:
        return self.waiting > 0

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        return 0

    def close(self) -> None: ...


def test_a_waiter_reports_held_messages_at_once_and_polls_the_rest():
    quiet, quiet_writer = os.pipe()
    ready, writer = os.pipe()
    os.write(writer, b"x")
    receivers = [Holding(quiet), Holding(ready)]
    waiter = PollWaiter(receivers)
    assert waiter.wait(0) == [1]
    receivers[0].waiting = 3
    assert waiter.wait(-1) == [0, 1]  # no sleep: receiver 0 holds messages
    for fd in (quiet, quiet_writer, ready, writer):
        os.close(fd)


def test_a_clusters_address_names_each_of_its_servers():
    assert split_addresses("10.0.0.1:4222", "nats") == [("10.0.0.1", 4222)]
    assert split_addresses("127.0.0.1:1, [::1]:2,h:3", "nats") == [
        ("127.0.0.1", 1), ("::1", 2), ("h", 3)]
    with pytest.raises(DriverError, match="nats: address 'h' is not HOST:PORT"):
        split_addresses("127.0.0.1:1,h", "nats")
