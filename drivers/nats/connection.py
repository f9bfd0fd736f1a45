"""NATS connections: nats-py's handshake on a socket we keep, JetStream management
through nats-py, and `NatsLink`, a connection's socket with its protocol parser.

nats-py is asyncio-only, and the agents' send loop is a synchronous busy-wait that must not
share the GIL with an event-loop thread. So nats-py runs each connection's handshake on a
private event loop over a socket this module lends it (`_LentTransport`): nats-py reads
INFO, builds CONNECT with the credentials, upgrades to TLS when the server asks for it, and
interprets the server's answer; its background tasks are then cancelled before their first
step, the loop is closed, and the socket is ours. That reaches into nats-py's private
members (`Client._transport`, its tasks, `_server_info`): pinned in pyproject's `nats`
extra and checked by tests/drivers/test_client_privates.py.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.transport import Transport
from nats.js import api

from sixnines.drivers.base import DriverError, secret
from sixnines.drivers.nats.options import NatsOptions
from sixnines.drivers.nats.wire import (
    PING,
    Parser,
    covers,
    keyed_lanes_pattern,
    lanes_pattern,
    sub_line,
)
from sixnines.drivers.sockets import SocketIO

CONNECT_TIMEOUT_S = 5
REWIND_TIMEOUT_S = 2  # a consumer's leader answers a reset at once, when there is one
PRIVATE_TASKS = ("_reading_task", "_ping_interval_task", "_flusher_task")


class _LentTransport(Transport):
    """A nats-py transport over a plain blocking socket, for the handshake only.

    nats-py drives it from a private event loop that does nothing else, so blocking calls
    are fine; afterwards the socket (TLS-wrapped if nats-py asked for it) belongs to the
    driver. Should nats-py's background tasks ever get to run before they are cancelled,
    they find nothing to read (`read` waits forever) and nothing to write.
    """

    def __init__(self, timeout: float) -> None:
        self.sock: socket.socket | None = None
        self.timeout = timeout
        self.inbox = bytearray()  # bytes read past the last line nats-py asked for
        self.outbox: list[bytes] = []
        self.error: Exception | None = None  # why connecting failed, for the message

    async def connect(self, uri, buffer_size: int, connect_timeout: int) -> None:
        try:
            self.sock = socket.create_connection((uri.hostname, uri.port), self.timeout)
        except OSError as exc:
            self.error = exc
            raise

    def connected(self) -> socket.socket:
        """The socket, once `connect` made it (nats-py calls nothing else before)."""
        if self.sock is None:
            raise ConnectionError("the transport is not connected")
        return self.sock

    async def connect_tls(self, uri, ssl_context, buffer_size: int, connect_timeout: int):
        hostname = uri if isinstance(uri, str) else uri.hostname
        try:
            self.sock = ssl_context.wrap_socket(self.sock, server_hostname=hostname)
        except OSError as exc:
            self.error = exc
            raise

    def write(self, payload: bytes) -> None:
        self.outbox.append(payload)

    def writelines(self, payload: list[bytes]) -> None:
        self.outbox.extend(payload)

    async def read(self, buffer_size: int) -> bytes:
        await asyncio.Future()  # nats-py's read loop is cancelled before it gets here
        return b""

    async def readline(self) -> bytes:
        while (end := self.inbox.find(b"\n")) < 0:
            data = self.connected().recv(65536)
            if not data:
                return b""
            self.inbox += data
        line = bytes(self.inbox[: end + 1])
        del self.inbox[: end + 1]
        return line

    async def drain(self) -> None:
        if self.outbox:
            data = b"".join(self.outbox)
            self.outbox.clear()
            self.connected().sendall(data)

    async def wait_closed(self) -> None:
        return None

    def close(self) -> None:
        return None  # the socket outlives nats-py's client: the driver closes it

    def at_eof(self) -> bool:
        return False

    def __bool__(self) -> bool:
        return True  # "already set up": nats-py then uses this transport, not its own


def _secret(options: NatsOptions, login: tuple[str | None, str | None], label: str) -> dict:
    """nats-py's credential arguments: the driver's login, else the token the options name."""
    user, password = login
    if user is not None:
        return {"user": user, "password": password}
    if options.token_env:
        return {"token": secret(label, "token_env", options.token_env)}
    return {}


def client_arguments(options: NatsOptions, login: tuple[str | None, str | None],
                      label: str) -> dict:
    arguments = {
        "allow_reconnect": False,
        "max_reconnect_attempts": 1,  # nats-py then gives up after a retry (0: never)
        "reconnect_time_wait": 0,
        "connect_timeout": CONNECT_TIMEOUT_S,
        "name": "sixnines",
        **_secret(options, login, label),
    }
    if options.tls_ca_file:
        try:
            arguments["tls"] = ssl.create_default_context(cafile=options.tls_ca_file)
        except OSError as exc:
            raise DriverError(f"{label}: cannot read tls_ca_file ({exc.strerror})") from None
    return arguments


def _has_credentials(arguments: dict) -> bool:
    return "user" in arguments or "token" in arguments


def _connect_error(exc: BaseException, cause: BaseException | None, label: str,
                   credentials: bool) -> DriverError:
    """Word what nats-py (or the socket under it) said as a DriverError naming the server."""
    text = str(exc)
    if cause is not None:
        return DriverError(f"{label}: cannot connect ({cause})")
    if isinstance(exc, nats.errors.AuthorizationError) or "Authorization" in text:
        advice = ("check username and password_env/password_file, or token_env" if
                  credentials else "the server wants username and password_env/password_file,"
                  " or token_env")
        return DriverError(f"{label}: authentication failed (Authorization Violation: "
                           f"{advice})")
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return DriverError(f"{label}: cannot connect (no answer within {CONNECT_TIMEOUT_S} s:"
                           " is a NATS server listening there?)")
    if "INFO" in text:
        return DriverError(f"{label}: cannot connect (not a NATS server: no INFO greeting)")
    return DriverError(f"{label}: cannot connect ({text or type(exc).__name__})")


def handshake(host: str, port: int, arguments: dict, label: str):
    """Connect with nats-py on a private loop; return (socket, bytes already read, server
    INFO). nats-py's read loop, pinger and flusher are cancelled before their first step,
    so nothing but this module ever touches the socket afterwards."""
    transport = _LentTransport(CONNECT_TIMEOUT_S)
    client = Client()
    client._transport = transport  # nats-py keeps a transport that is already set up
    url = _url(host, port)

    async def quiet(exc: Exception) -> None:  # nats-py's default error callback logs
        return None

    async def connect() -> None:
        await client.connect(url, error_cb=quiet, **arguments)
        tasks = [getattr(client, name, None) for name in PRIVATE_TASKS]
        for task in tasks:
            if task is not None:
                task.cancel()
        await asyncio.sleep(0)

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(connect())
    except Exception as exc:
        if transport.sock is not None:
            transport.sock.close()
        raise _connect_error(exc, transport.error, label, _has_credentials(arguments)) from None
    finally:
        loop.close()
    sock = transport.connected()
    sock.settimeout(None)
    if isinstance(sock, socket.socket) and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock, bytes(transport.inbox), dict(client._server_info or {})


# --- JetStream management, through nats-py's JetStreamManager ----------------------------


def _url(host: str, port: int) -> str:
    return f"nats://[{host}]:{port}" if ":" in host else f"nats://{host}:{port}"


def manage(servers: list[tuple[str, int]], arguments: dict, label: str, work) -> object:
    """Run `await work(jsm)` on a short-lived nats-py connection of its own, to the first of
    `servers` (a cluster's nodes) that takes one."""
    failure: list[Exception] = []

    async def remember(exc: Exception) -> None:
        failure.append(exc)

    async def connect() -> Client:
        for host, port in servers[:-1]:
            try:
                return await nats.connect(_url(host, port), error_cb=remember, **arguments)
            except Exception:  # the next node; the last one's failure is what is said
                failure.clear()
        return await nats.connect(_url(*servers[-1]), error_cb=remember, **arguments)

    async def run():
        client = await connect()
        try:
            return await work(client.jsm(timeout=CONNECT_TIMEOUT_S))
        finally:
            await client.close()

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(run())
    except DriverError:
        raise
    except nats.js.errors.ServiceUnavailableError:
        raise DriverError(f"{label}: JetStream is not enabled on the server (start it with "
                          "-js)") from None
    except nats.errors.NoRespondersError:
        raise DriverError(f"{label}: JetStream is not enabled on the server (start it with "
                          "-js) or not available to this account") from None
    except nats.js.errors.APIError as exc:
        raise DriverError(f"{label}: JetStream refused: {exc.description} "
                          f"(error {exc.err_code})") from None
    except nats.errors.TimeoutError:
        raise DriverError(f"{label}: JetStream did not answer within {CONNECT_TIMEOUT_S} s"
                          ) from None
    except Exception as exc:
        cause = failure[0] if failure and isinstance(failure[0], OSError) else None
        raise _connect_error(exc, cause, label, _has_credentials(arguments)) from None
    finally:
        loop.close()


async def ensure_stream(jsm, options: NatsOptions, label: str, subjects: list[str],
                        keyed: bool = False) -> None:
    """Create the stream, or accept an existing one that takes `subjects` (those this
    agent publishes to, `*` standing for any token) and has our storage and replicas (its
    other settings, e.g. limits, are left as they are). A stream made here takes the
    subject and every lane's (`lanes_pattern`), so runs with any number of connections
    share it; a `keyed` run's takes every subject below it (`keyed_lanes_pattern`)."""
    below = keyed_lanes_pattern(options.subject) if keyed else lanes_pattern(options.subject)
    config = api.StreamConfig(
        name=options.stream, subjects=[options.subject, below],
        storage=api.StorageType.MEMORY if options.storage == "memory" else api.StorageType.FILE,
        num_replicas=options.replicas, max_bytes=options.max_bytes,
        discard=api.DiscardPolicy.OLD,
    )
    try:
        await jsm.add_stream(config)
        return
    except nats.js.errors.BadRequestError as exc:
        if exc.err_code != 10058:  # "stream name already in use with a different config"
            raise
    existing = (await jsm.stream_info(options.stream)).config
    have = existing.subjects or []
    missing = [subject for subject in subjects
               if not any(covers(pattern, subject) for pattern in have)]
    if missing:
        who = "keyed messages go" if keyed else "several connections publish"
        hint = f" ({who} to {below!r})" if missing != [options.subject] else ""
        raise DriverError(
            f"{label}: stream {options.stream!r} exists with subjects {sorted(have)}, "
            f"without {missing[0]!r}{hint}: use another stream name or subject")
    for what, want, got in (("storage", config.storage, existing.storage),
                            ("replicas", config.num_replicas, existing.num_replicas)):
        if got is not None and _plain(got) != _plain(want):
            raise DriverError(
                f"{label}: stream {options.stream!r} exists with {what} {_plain(got)}, not "
                f"{_plain(want)}: delete it or use another stream name")


async def rewind(jsm, stream: str, consumer: str, seq: int) -> bool:
    """Whether the consumer now delivers from stream seq `seq` on, reset in place (its
    leader answers: nats-server 2.14 and later, `$JS.API.CONSUMER.RESET`); False where the
    server or nats-py cannot, or no leader answers within REWIND_TIMEOUT_S."""
    reset = getattr(jsm, "reset_consumer", None)  # nats-py 2.16 and later
    if reset is None:
        return False
    try:
        await reset(stream, consumer, seq, timeout=REWIND_TIMEOUT_S)
    except (TimeoutError, nats.errors.Error):
        return False
    return True


def _plain(value) -> str:
    return str(getattr(value, "value", value))


# --- the protocol on the socket ----------------------------------------------------------


class NatsLink(Parser):
    """One connection after the handshake: its socket (`io`) and the parser of what the
    server sends, whose answers (PONG, pull requests) go out after each `parse`."""

    def __init__(self, sock: socket.socket, leftover: bytes, info: dict, size: int,
                 label: str) -> None:
        super().__init__(size, label, leftover)
        self.io = SocketIO(sock, label)
        self.sock = sock
        self.max_payload = int(info.get("max_payload", 1 << 20))
        self.closed = False

    def write(self, data) -> None:
        self.io.write(data)

    def subscribe(self, subject: str, sid: bytes, queue: bytes = b"") -> None:
        self.write(sub_line(subject, sid, queue))

    def flush(self) -> None:
        """Send what the parser queued."""
        if self.outgoing:
            self.write(self.outgoing)
            self.outgoing.clear()

    def parse(self, out, stride: int, room: int) -> int:
        n = super().parse(out, stride, room)
        if self.outgoing:
            self.flush()
        return n

    def sync(self) -> None:
        """PING and wait for the PONG: the server has then processed everything sent
        before (subscriptions are live). A data message on our subscription proves it too."""
        target = self.pongs + 1
        self.write(PING)
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while self.pongs < target:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DriverError(f"{self.label}: no PONG within {CONNECT_TIMEOUT_S} s")
            if self.wait(int(remaining * 1000) + 1):
                self.fill(len(self.buf))
                self.parse(None, 0, 0)
                if self.more:  # stopped at a data message: the subscription works
                    return

    def fill(self, limit: int) -> int:
        """Read what the socket has (never blocking), at most `limit` bytes."""
        start, end = self.start, self.end
        if start:
            if end > start:
                self.buf[: end - start] = self.buf[start:end]
            end -= start
            self.start, self.end = 0, end
        room = min(limit, len(self.buf) - end)
        if room <= 0:
            return 0
        got = self.io.read(self.view[end : end + room])
        self.end = end + got
        return got

    def wait(self, timeout_ms: int) -> bool:
        return self.io.readable(timeout_ms)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()
