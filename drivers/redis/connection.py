"""Redis connections set up by redis-py: connect, AUTH, PING, setup commands, SUBSCRIBE.

redis-py owns connecting, authentication and error mapping; the driver then writes and
reads the connection's socket itself (`socket_of`: redis-py's private `_sock`, pinned in
pyproject's `redis` extra and checked by tests/drivers/test_client_privates.py).
"""

from __future__ import annotations

import contextlib
import socket
from typing import cast

from redis.connection import Connection
from redis.exceptions import AuthenticationError, InvalidResponse, RedisError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from sixnines.drivers.base import DriverError
from sixnines.drivers.redis.options import RedisOptions
from sixnines.drivers.redis.wire import CRLF, subscribed


def _private_socket(conn: Connection) -> socket.socket:
    """The connected socket under redis-py's connection: a private member, which redis-py's
    own types declare as None (tests/drivers/test_client_privates.py checks it is there)."""
    return cast(socket.socket, conn._sock)


def socket_of(conn: Connection) -> socket.socket:
    """The connected socket under redis-py's connection, blocking from now on."""
    sock = _private_socket(conn)
    sock.settimeout(None)
    return sock


def connect(host: str, port: int, options: RedisOptions, login: tuple[str | None, str | None],
            label: str) -> Connection:
    """A connection redis-py opened, authenticated and checked with a PING (so a server
    wanting a password says so here, not in the middle of the run)."""
    username, password = login
    conn = Connection(
        host=host, port=port, db=options.db, username=username, password=password,
        protocol=2,
        socket_connect_timeout=options.connect_timeout_s,
        socket_timeout=options.connect_timeout_s,
    )
    try:
        conn.connect()
        conn.send_command("PING", check_health=False)
        conn.read_response()
    except AuthenticationError as exc:
        conn.disconnect()
        raise DriverError(f"{label}: authentication failed ({exc})") from None
    except RedisTimeoutError:
        conn.disconnect()
        raise DriverError(f"{label}: cannot connect (no answer within "
                          f"{options.connect_timeout_s:g} s: is a Redis server listening "
                          "there?)") from None
    except InvalidResponse as exc:  # what it read, quoted (repr): no control character
        conn.disconnect()
        raise DriverError(f"{label}: cannot connect (not a Redis server: "
                          f"{str(exc)[:200]})") from None
    except (RedisConnectionError, OSError) as exc:
        conn.disconnect()
        raise DriverError(f"{label}: cannot connect ({exc})") from None
    except RedisError as exc:
        conn.disconnect()
        raise DriverError(f"{label}: {exc}") from None
    return conn


def call(conn: Connection, label: str, *args):
    """One setup command through redis-py, its error worded for the user."""
    try:
        conn.send_command(*args, check_health=False)
        return conn.read_response()
    except ResponseError as exc:
        conn.disconnect()
        raise DriverError(f"{label}: {args[0]} refused ({exc})") from None
    except RedisError as exc:
        conn.disconnect()
        raise DriverError(f"{label}: {args[0]} failed ({exc})") from None


def subscribe(conn: Connection, channels: list[bytes], label: str) -> None:
    """SUBSCRIBE to `channels`, with the confirmation read here byte for byte: redis-py's
    parser never reads from the socket after SUBSCRIBE, so no push can be left in its
    buffer when the receiver takes over."""
    confirmation = subscribed(channels)
    sock = _private_socket(conn)
    got = b""
    try:
        conn.send_command("SUBSCRIBE", *channels, check_health=False)
        while len(got) < len(confirmation):
            chunk = sock.recv(len(confirmation) - len(got))
            if not chunk:
                raise OSError("connection closed by the server")
            got += chunk
            if got[:1] == b"-" and got.endswith(CRLF):
                break
    except (OSError, RedisError) as exc:
        conn.disconnect()
        raise DriverError(f"{label}: SUBSCRIBE failed ({exc})") from None
    if got != confirmation:
        conn.disconnect()
        reply = got.decode("utf-8", "replace").strip()
        raise DriverError(f"{label}: SUBSCRIBE refused ({reply[:300]})")


def run_quietly(conn_factory, commands: list[tuple]) -> None:
    """Best effort: run `commands` on a fresh connection, ignoring every failure (clean-up
    after a reader has gone)."""
    if not commands:
        return
    with contextlib.suppress(DriverError, RedisError, OSError):
        conn = conn_factory()
        try:
            for command in commands:
                conn.send_command(*command, check_health=False)
                conn.read_response()
        finally:
            conn.disconnect()
