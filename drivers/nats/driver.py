"""NATS: core publish/subscribe and JetStream, with request/response round trips.

nats-py is asyncio-only, and the agents' send loop is a synchronous busy-wait that must not
share the GIL with an event-loop thread. So nats-py runs each connection's handshake on a
private event loop over a socket this module lends it (`_LentTransport`): nats-py reads
INFO, builds CONNECT with the credentials, upgrades to TLS when the server asks for it, and
interprets the server's answer; its background tasks are then cancelled before their first
step, the loop is closed, and the socket is ours. The hot path speaks the text protocol
directly: frames are pre-encoded `PUB <subject> [reply] <size>\\r\\n` + message + `\\r\\n`
(the `Framing`), so a batch goes out in one `sendall`; receivers parse `MSG` lines and copy
payloads out. JetStream management (streams, consumers) goes through nats-py's own
JetStreamManager on a short-lived connection.

One framing serves every connection of an agent, producer and requester alike (the
framework asks for it once, before it opens connections), so the PUB line cannot name a
per-connection reply subject. Requests therefore go to the same subject S as one-way
messages, and the responder sends each back to `S.reply.<producer id>`, the id read from
the message header; requester connection N subscribes to `S.reply.N`.

- core one-way: `PUB S`, every receiver subscribes to S (fan-out).
- core round trip: the responder subscribes to S in the queue group `sixnines` (responders
  could be scaled) and publishes each request to `S.reply.<id>`.
- JetStream: publishes carry the agent's ack inbox as reply subject (`PUB S <inbox>`); the
  agent's connections subscribe to it in one queue group, so each ack reaches exactly one
  of them; acks are counted without blocking the send loop, an error ack is a DriverError.
  Receivers each own a pull consumer (filter S, deliver new, no acks), so every receiver
  sees every message published after it was created. A responder agent's connections
  share one such consumer (as core responders share a queue group) and answer over core
  NATS. Pull requests ask for `batch` messages; the next goes out when half have come.
- The server's PINGs are answered on every connection (a sender looks about once a
  millisecond, without blocking); -ERR is a DriverError.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import select
import socket
import ssl
import time
from collections.abc import Callable
from typing import Literal

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.transport import Transport
from nats.js import api
from pydantic import Field, field_validator, model_validator

from sixnines.drivers.base import (
    Credential,
    Driver,
    DriverError,
    Framing,
    LoginOptions,
    secret_from_env,
    split_address,
)
from sixnines.formats.payload import HEADER_STRUCT

CONNECT_TIMEOUT_S = 5
BUFFER_BYTES = 1 << 20  # per connection read buffer (at least 4 messages' worth)
MAX_LINE = 4096  # a protocol line longer than this is garbage, not a partial read
SERVICE_NS = 1_000_000  # how often a sender looks for PING, -ERR and acks (it never blocks)
PULL_EXPIRES_NS = 30_000_000_000  # a pull request's lifetime; renewed when it ends
CONSUMER_INACTIVE_S = 600.0  # a consumer left behind by a crashed receiver goes after this
RESPONDERS_GROUP = b"sixnines"  # core responders share requests in this queue group
MAX_PAYLOAD_LIMIT = 64 << 20  # the largest max_payload a server can be configured with
DATA_SID, ACK_SID = b"1", b"2"  # our subscriptions: messages (or pull deliveries), acks
MSG_DONTWAIT = socket.MSG_DONTWAIT
clock = time.perf_counter_ns
_TOKEN = re.compile(r"[^\s.*>]+")  # a subject token without wildcards or whitespace
_NAME = re.compile(r"[A-Za-z0-9_-]+")  # stream names


class NatsOptions(LoginOptions):
    """Options of the nats driver. Secrets only by reference, read at connect time:
    `username` with password_env or password_file, or token_env."""

    subject: str = "sixnines"
    """Base subject (see the module docstring for the subjects derived from it)."""
    mode: Literal["core", "jetstream"] = "core"
    """core: at-most-once pub/sub; jetstream: every publish stored in a stream and acked."""
    stream: str = "sixnines"
    """JetStream stream, created if missing (subject S); an existing stream is used as it
    is if its subjects include S."""
    storage: Literal["memory", "file"] = "memory"
    """JetStream storage of a stream the driver creates."""
    replicas: int = Field(1, ge=1, le=5)
    """JetStream replicas of a stream the driver creates (a cluster's R3 is 3)."""
    max_bytes: int = Field(1 << 30, ge=-1)
    """Size limit of a stream the driver creates, oldest messages discarded past it (-1:
    unlimited), so a long run cannot exhaust the server's memory or disk."""
    batch: int = Field(1000, ge=1, le=1_000_000)
    """JetStream pull consumer batch: messages requested at a time (another request goes
    out when half are delivered)."""
    token_env: str | None = None
    """Name of the environment variable holding an authentication token."""
    tls_ca_file: str | None = None
    """CA bundle to verify a TLS server with (TLS is used when the server requires it; the
    system's CAs by default)."""

    @field_validator("subject")
    @classmethod
    def _subject(cls, subject: str) -> str:
        if not all(_TOKEN.fullmatch(token) for token in subject.split(".")):
            raise ValueError("a subject is dot-separated tokens without spaces or * and >")
        return subject

    @field_validator("stream")
    @classmethod
    def _stream(cls, stream: str) -> str:
        if not _NAME.fullmatch(stream):
            raise ValueError("a stream name is letters, digits, '-' and '_'")
        return stream

    @model_validator(mode="after")
    def _consistent(self) -> NatsOptions:
        has_password = bool(self.password_env or self.password_file)
        if has_password != bool(self.username):
            raise ValueError("username and a password (password_env or password_file) go "
                             "together")
        if self.token_env and self.username:
            raise ValueError("give username/password or token_env, not both")
        if self.mode == "core":
            fields = type(self).model_fields
            wasted = [name for name in ("stream", "storage", "replicas", "max_bytes", "batch")
                      if getattr(self, name) != fields[name].default]
            if wasted:
                raise ValueError(f"{', '.join(wasted)}: only for mode: jetstream")
        return self


# --- connecting: nats-py's handshake on a socket we keep ---------------------------------


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
            data = self.sock.recv(65536)
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
            self.sock.sendall(data)

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
        return {"token": secret_from_env(options.token_env, "token_env", label)}
    return {}


def _client_arguments(options: NatsOptions, login: tuple[str | None, str | None],
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


def _handshake(host: str, port: int, arguments: dict, label: str):
    """Connect with nats-py on a private loop; return (socket, bytes already read, server
    INFO). nats-py's read loop, pinger and flusher are cancelled before their first step,
    so nothing but this module ever touches the socket afterwards."""
    transport = _LentTransport(CONNECT_TIMEOUT_S)
    client = Client()
    client._transport = transport  # nats-py keeps a transport that is already set up
    url = f"nats://[{host}]:{port}" if ":" in host else f"nats://{host}:{port}"

    async def quiet(exc: Exception) -> None:  # nats-py's default error callback logs
        return None

    async def connect() -> None:
        await client.connect(url, error_cb=quiet, **arguments)
        tasks = [getattr(client, name, None) for name in
                 ("_reading_task", "_ping_interval_task", "_flusher_task")]
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
    sock = transport.sock
    sock.settimeout(None)
    if isinstance(sock, socket.socket) and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock, bytes(transport.inbox), dict(client._server_info or {})


# --- JetStream management, through nats-py's JetStreamManager ----------------------------


def _manage(host: str, port: int, arguments: dict, label: str, work) -> object:
    """Run `await work(jsm)` on a short-lived nats-py connection of its own."""
    url = f"nats://[{host}]:{port}" if ":" in host else f"nats://{host}:{port}"
    failure: list[Exception] = []

    async def remember(exc: Exception) -> None:
        failure.append(exc)

    async def run():
        client = await nats.connect(url, error_cb=remember, **arguments)
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


async def _ensure_stream(jsm, options: NatsOptions, label: str) -> None:
    """Create the stream, or accept an existing one that has our subject, storage and
    replicas (its other settings, e.g. limits, are left as they are)."""
    config = api.StreamConfig(
        name=options.stream, subjects=[options.subject],
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
    if options.subject not in have:
        raise DriverError(
            f"{label}: stream {options.stream!r} exists with subjects {sorted(have)}, "
            f"without {options.subject!r}: use another stream name or subject")
    for what, want, got in (("storage", config.storage, existing.storage),
                            ("replicas", config.num_replicas, existing.num_replicas)):
        if got is not None and _plain(got) != _plain(want):
            raise DriverError(
                f"{label}: stream {options.stream!r} exists with {what} {_plain(got)}, not "
                f"{_plain(want)}: delete it or use another stream name")


def _plain(value) -> str:
    return str(getattr(value, "value", value))


# --- the protocol on the socket ----------------------------------------------------------


class _Link:
    """One connection after the handshake: the socket, a read buffer, and the parser.

    The parser handles what can arrive on any connection (PING, PONG, +OK, INFO, -ERR) and
    the messages of the connection's subscriptions: data (`data_sid`: copied out or
    relayed), JetStream publish acks (`ack_sid`) and pull-request statuses (HMSG on the
    data subscription). Whatever is incomplete stays buffered for the next call.
    """

    def __init__(self, sock: socket.socket, leftover: bytes, info: dict, size: int,
                 label: str) -> None:
        self.sock = sock
        self.tls = isinstance(sock, ssl.SSLSocket)
        self.label = label
        self.size = size
        self.buf = bytearray(max(BUFFER_BYTES, 4 * (size + MAX_LINE)))
        self.view = memoryview(self.buf)
        self.buf[: len(leftover)] = leftover
        self.start = 0
        self.end = len(leftover)
        self.more = bool(leftover)  # complete messages may still be buffered
        self.poller = select.poll()
        self.poller.register(sock, select.POLLIN)
        self.max_payload = int(info.get("max_payload", 1 << 20))
        self.data_sid: bytes | None = None
        self.fast = b""  # the exact MSG line of every data message, when it is fixed
        self.ack_sid: bytes | None = None
        self.acked = 0
        self.pongs = 0
        self.closed = False
        # a JetStream pull consumer: messages asked for and not yet delivered or expired
        self.pull: bytes = b""
        self.batch = 0
        self.outstanding = 0
        # a responder's outgoing replies, and their PUB lines by producer id
        self.replies: bytearray | None = None
        self.reply_lines: dict[int, bytes] = {}
        self.reply_prefix = b""

    # writing

    def write(self, data) -> None:
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise DriverError(f"{self.label}: connection lost ({exc})") from None

    def subscribe(self, subject: str, sid: bytes, queue: bytes = b"") -> None:
        group = b" " + queue if queue else b""
        self.write(b"SUB " + subject.encode() + group + b" " + sid + b"\r\n")

    def request_more(self) -> None:
        """Keep a JetStream pull consumer's requests topped up (one request = `batch`)."""
        while self.outstanding <= self.batch // 2:
            self.write(self.pull)
            self.outstanding += self.batch

    def sync(self) -> None:
        """PING and wait for the PONG: the server has then processed everything sent
        before (subscriptions are live). A data message on our subscription proves it too."""
        target = self.pongs + 1
        self.write(b"PING\r\n")
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

    # reading

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
        try:
            if self.tls:  # no MSG_DONTWAIT on TLS: look first (a whole record follows)
                if not self.sock.pending() and not self.poller.poll(0):
                    return 0
                got = self.sock.recv_into(self.view[end : end + room], room)
            else:
                got = self.sock.recv_into(self.view[end : end + room], room, MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
            return 0
        except OSError as exc:
            raise DriverError(f"{self.label}: connection lost ({exc})") from None
        if not got:
            raise DriverError(f"{self.label}: connection closed by the server")
        self.end = end + got
        return got

    def parse(self, out, stride: int, room: int) -> int:
        """Consume whole operations from the buffer; copy up to `room` data payloads into
        `out` (or queue them as replies for a responder); return how many."""
        buf, view, size = self.buf, self.view, self.size
        pos, end = self.start, self.end
        fast = self.fast
        fast_len = len(fast)
        fast_end = fast_len + size
        relay = self.replies is not None
        n = 0
        at = 0
        self.more = False
        try:
            while pos < end:
                if fast and buf.startswith(fast, pos, end):  # the usual case: no splitting
                    if pos + fast_end + 2 > end:
                        break
                    if n >= room:
                        self.more = True
                        break
                    if relay:
                        self._relay(pos + fast_len, pos + fast_end)
                    else:
                        out[at : at + size] = view[pos + fast_len : pos + fast_end]
                        at += stride
                    pos += fast_end + 2
                    n += 1
                    continue
                eol = buf.find(b"\r\n", pos, end)
                if eol < 0:
                    if end - pos > MAX_LINE:
                        self._garbage(pos, end)
                    break
                if buf.startswith(b"MSG ", pos) or buf.startswith(b"HMSG ", pos):
                    parts = bytes(view[pos:eol]).split()
                    try:
                        total = int(parts[-1])
                    except ValueError:
                        self._garbage(pos, eol)
                    body = eol + 2
                    stop = body + total
                    if stop + 2 > end:
                        break
                    sid = parts[2]
                    if sid == self.data_sid and parts[0] == b"MSG":
                        if n >= room:
                            self.more = True
                            break
                        if total != size:
                            raise DriverError(f"{self.label}: got a {total}-byte message on "
                                              f"{parts[1].decode()}, expected {size}")
                        if relay:
                            self._relay(body, stop)
                        else:
                            out[at : at + size] = view[body:stop]
                            at += stride
                        n += 1
                        self.outstanding -= 1
                    elif sid == self.ack_sid:
                        self._ack(parts, body, stop)
                    elif sid == self.data_sid:
                        self._status(parts, body, stop)
                    else:
                        raise DriverError(f"{self.label}: message for unknown subscription "
                                          f"{sid.decode(errors='replace')}")
                    pos = stop + 2
                    continue
                line = bytes(view[pos:eol])
                pos = eol + 2
                if line == b"PING":
                    self.write(b"PONG\r\n")
                elif line == b"PONG":
                    self.pongs += 1
                elif line.startswith(b"-ERR"):
                    reason = line[4:].strip().strip(b"'").decode(errors="replace")
                    raise DriverError(f"{self.label}: the server reported an error: {reason}")
                elif not (line.startswith(b"INFO") or line == b"+OK"):
                    self._garbage(pos - len(line) - 2, eol)
        finally:
            if pos >= end:
                self.start = self.end = 0
            else:
                self.start = pos
        if self.batch:
            self.request_more()
        return n

    def _garbage(self, start: int, stop: int):
        text = bytes(self.view[start : min(stop, start + 60)])
        raise DriverError(f"{self.label}: unexpected data from the server: {text!r}")

    def _ack(self, parts: list[bytes], body: int, stop: int) -> None:
        """A JetStream publish ack: counted; an error (or no stream: status 503) raises."""
        payload = bytes(self.view[body:stop])
        if parts[0] == b"HMSG":
            status = payload.split(b"\r\n", 1)[0]
            if b" 503" in status:
                raise DriverError(f"{self.label}: no JetStream stream stores the subject "
                                  "(was the stream deleted?)")
            raise DriverError(f"{self.label}: unexpected publish ack: "
                              f"{status.decode(errors='replace')}")
        if b'"error"' in payload:
            try:
                error = json.loads(payload)["error"]
                text = f"{error.get('description')} (error {error.get('err_code')})"
            except (ValueError, KeyError, AttributeError):
                text = payload[:200].decode(errors="replace")
            raise DriverError(f"{self.label}: JetStream refused a publish: {text}")
        self.acked += 1

    def _status(self, parts: list[bytes], body: int, stop: int) -> None:
        """A pull request's status: 408 (expired) and 404/409 end a request early; the
        messages it still owed are no longer outstanding."""
        headers = bytes(self.view[body : body + int(parts[-2])]).split(b"\r\n")
        status = headers[0].split(b" ", 2)
        code = status[1] if len(status) > 1 else b""
        if code == b"100":  # idle heartbeat
            return
        pending = None
        for header in headers[1:]:
            name, _, value = header.partition(b":")
            if name.strip().lower() == b"nats-pending-messages":
                pending = int(value)
        if code in (b"404", b"408", b"409") and (pending is not None or code != b"409"):
            self.outstanding -= pending if pending is not None else self.batch
            self.outstanding = max(self.outstanding, 0)
            return
        reason = b" ".join(status[1:]).decode(errors="replace") or "no status"
        if not self.batch:
            raise DriverError(f"{self.label}: unexpected message with headers ({reason})")
        raise DriverError(f"{self.label}: the JetStream consumer failed: {reason}")

    def _relay(self, body: int, stop: int) -> None:
        """Queue a request's reply to its requester, found by the producer id in the
        message header (see the module docstring)."""
        producer_id = HEADER_STRUCT.unpack_from(self.buf, body)[0]
        line = self.reply_lines.get(producer_id)
        if line is None:
            line = self.reply_lines[producer_id] = b"PUB %s%d %d\r\n" % (
                self.reply_prefix, producer_id, self.size)
        replies = self.replies
        replies += line
        replies += self.view[body:stop]
        replies += b"\r\n"

    def wait(self, timeout_ms: int) -> bool:
        if self.tls and self.sock.pending():
            return True
        return bool(self.poller.poll(None if timeout_ms < 0 else timeout_ms))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()


Release = Callable[[], bytes] | None  # what to send before closing a subscriber


class NatsSender:
    """Publishes pre-framed batches with one `sendall`. About every millisecond it reads
    what the server sent, without blocking: PINGs are answered (a client that ignores two
    is dropped), -ERR raises, JetStream acks are counted. A requester's sender leaves the
    reading to its receiver, which the send loop polls anyway."""

    def __init__(self, link: _Link, reads: bool) -> None:
        self.link = link
        self._sock = link.sock
        self._reads = reads
        self._next_read = clock() + SERVICE_NS

    @property
    def acked(self) -> int:
        """JetStream publish acks this connection took (its agent's acks are spread over
        its connections: the sum over them is what counts)."""
        return self.link.acked

    def send(self, frames: memoryview, count: int) -> None:
        # before the write: a DriverError must mean these frames were not sent
        if self._reads and clock() >= self._next_read:
            self.service()
        try:
            self._sock.sendall(frames)
        except OSError as exc:
            raise DriverError(f"{self.link.label}: connection lost ({exc})") from None

    def service(self) -> None:
        """Handle what the server sent (PING, -ERR, acks) without blocking."""
        self._next_read = clock() + SERVICE_NS
        link = self.link
        while link.fill(len(link.buf)):
            link.parse(None, 0, 0)

    def close(self) -> None:
        self.link.close()


class NatsReceiver:
    def __init__(self, link: _Link, release: Release = None) -> None:
        self.link = link
        # The descriptor, not the socket: zmq.Poller.poll reports a non-zmq pollable by its
        # descriptor, and agents look the reported pollable up among the registered ones.
        self.pollable = link.sock.fileno()
        self._release = release
        self._wire_min = link.size + len(b"MSG a 1 \r\n\r\n") + len(str(link.size))

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        link = self.link
        room = len(out) // stride
        if link.more:  # whole messages buffered (by the subscription's sync, or a full out)
            return link.parse(out, stride, room)
        if timeout_ms and not link.wait(timeout_ms):
            return 0
        # Read no more than `out` can take, so that no whole message stays buffered where a
        # poller waiting on the socket cannot see it: every message takes at least
        # `_wire_min` bytes, and a buffered partial one at least one byte more than it has.
        partial = link.end - link.start
        limit = max(room * self._wire_min - partial, 1 + (room - 1) * self._wire_min)
        if not link.fill(limit):
            return 0
        n = link.parse(out, stride, room)
        # TLS may hold decrypted bytes that no poller sees: take them while `out` has room
        while link.tls and n < room and link.sock.pending():
            left = room - n
            link.fill(max(left * self._wire_min - (link.end - link.start), 1))
            n += link.parse(out[n * stride :], stride, left)
        return n

    def close(self) -> None:
        _close(self.link, self._release)


class NatsResponder:
    def __init__(self, link: _Link, reply_prefix: bytes, release: Release = None) -> None:
        self.link = link
        self._release = release
        link.replies = bytearray()
        link.reply_prefix = reply_prefix

    def relay(self, timeout_ms: int) -> int:
        link = self.link
        if not link.more:  # (whole requests may be buffered since the subscription's sync)
            if timeout_ms and not link.wait(timeout_ms):
                return 0
            if not link.fill(len(link.buf)):
                return 0
        n = link.parse(None, 0, 1 << 62)
        if link.replies:
            link.write(link.replies)
            link.replies.clear()
        return n

    def close(self) -> None:
        _close(self.link, self._release)


def _close(link: _Link, release: Release) -> None:
    """Close a subscriber, deleting its JetStream consumer if it was the last user."""
    if link.closed:
        return
    cleanup = release() if release else b""
    if cleanup:
        with contextlib.suppress(DriverError):
            link.write(cleanup)
    link.close()


class NatsDriver(Driver):
    name = "nats"
    Options = NatsOptions
    needs_responder = True

    def __init__(self, address: str, options: NatsOptions,
                 credential: Credential | None = None) -> None:
        super().__init__(address, options, credential)
        self._label = f"nats at {address}"
        self._host, self._port = split_address(address, "nats")
        self._js = options.mode == "jetstream"
        self._token = os.urandom(8).hex()  # names this agent's inbox and consumers
        self._acks = f"_INBOX.{self._token}"
        self._stream_ready = False
        self._consumers: dict[str, int] = {}  # JetStream consumers made here: connections

    def framing(self, message_size: int) -> Framing:
        reply = f" {self._acks}" if self._js else ""
        return Framing(prefix=f"PUB {self.options.subject}{reply} {message_size}\r\n".encode(),
                       suffix=b"\r\n")

    def receive_framing(self, message_size: int) -> Framing:
        return Framing()  # payloads are copied out end to end

    @classmethod
    def workload_problems(cls, options: NatsOptions, workload) -> list[str]:
        if workload.message_size > MAX_PAYLOAD_LIMIT:
            return [f"message_size {workload.message_size} is above 64 MiB, the largest "
                    "max_payload a NATS server accepts"]
        return []

    # connections

    def _arguments(self) -> dict:
        """nats-py's connect arguments, the login looked up now."""
        return _client_arguments(self.options, self.login(), self._label)

    def _open(self, size: int, consumer: str = "") -> _Link:
        """A connection after the handshake; in JetStream mode the stream exists (and the
        pull consumer `consumer`, when named) before it returns."""
        if self._js and (consumer or not self._stream_ready):
            _manage(self._host, self._port, self._arguments(), self._label,
                    lambda jsm: self._prepare(jsm, consumer))
            self._stream_ready = True
        sock, leftover, info = _handshake(self._host, self._port, self._arguments(),
                                          self._label)
        link = _Link(sock, leftover, info, size, self._label)
        if size > link.max_payload:
            link.close()
            raise DriverError(f"{self._label}: {size}-byte messages exceed the server's "
                              f"max_payload of {link.max_payload} bytes")
        return link

    async def _prepare(self, jsm, consumer: str) -> None:
        if not self._stream_ready:
            await _ensure_stream(jsm, self.options, self._label)
        if consumer:
            await jsm.add_consumer(self.options.stream, api.ConsumerConfig(
                name=consumer, deliver_policy=api.DeliverPolicy.NEW,
                ack_policy=api.AckPolicy.NONE, filter_subject=self.options.subject,
                inactive_threshold=CONSUMER_INACTIVE_S))

    def _publisher(self, link: _Link, reads: bool) -> NatsSender:
        if self._js:
            link.ack_sid = ACK_SID
            link.subscribe(self._acks, ACK_SID, b"acks")
        return NatsSender(link, reads)

    def _subscriber(self, size: int, name: str, queue: bytes = b"") -> tuple[_Link, Release]:
        """A connection subscribed to the one-way subject, in JetStream mode by pulling
        from the consumer `sixnines-<agent token>-<name>` (created by the first connection
        that names it, deleted when the last one closes); returns it with the release."""
        if not self._js:
            link = self._open(size)
            link.data_sid = DATA_SID
            link.subscribe(self.options.subject, DATA_SID, queue)
            link.fast = b"MSG %s %s %d\r\n" % (self.options.subject.encode(), DATA_SID, size)
            return link, None
        consumer = f"sixnines-{self._token}-{name}"
        link = self._open(size, consumer="" if consumer in self._consumers else consumer)
        self._consumers[consumer] = self._consumers.get(consumer, 0) + 1
        inbox = f"{self._acks}.pull.{os.urandom(6).hex()}"
        link.data_sid = DATA_SID
        link.subscribe(inbox, DATA_SID)
        endpoint = f"$JS.API.CONSUMER.%s.{self.options.stream}.{consumer}"
        ask = json.dumps({"batch": self.options.batch, "expires": PULL_EXPIRES_NS}).encode()
        link.pull = b"PUB %s %s %d\r\n%s\r\n" % (
            (endpoint % "MSG.NEXT").encode(), inbox.encode(), len(ask), ask)
        link.batch = self.options.batch
        link.request_more()

        def release() -> bytes:
            self._consumers[consumer] -= 1
            if self._consumers[consumer]:
                return b""
            return f"PUB {endpoint % 'DELETE'} 0\r\n\r\n".encode()  # no reply wanted

        return link, release

    @staticmethod
    def _ready(link: _Link, release: Release = None) -> None:
        """Wait until the server has taken the subscriptions; close the link if not."""
        try:
            link.sync()
        except DriverError:
            _close(link, release)
            raise

    def sender(self, message_size: int, connection_id: int) -> NatsSender:
        link = self._open(message_size)
        sender = self._publisher(link, reads=True)
        self._ready(link)
        return sender

    def receiver(self, message_size: int, connection_id: int) -> NatsReceiver:
        link, release = self._subscriber(message_size, f"receiver-{connection_id}")
        self._ready(link, release)
        return NatsReceiver(link, release)

    def requester(self, message_size: int,
                  connection_id: int) -> tuple[NatsSender, NatsReceiver]:
        link = self._open(message_size)
        reply = f"{self.options.subject}.reply.{connection_id}"
        link.data_sid = DATA_SID
        link.subscribe(reply, DATA_SID)
        link.fast = b"MSG %s %s %d\r\n" % (reply.encode(), DATA_SID, message_size)
        sender = self._publisher(link, reads=False)
        self._ready(link)
        return sender, NatsReceiver(link)

    def responder(self, message_size: int, connection_id: int) -> NatsResponder:
        # core: one queue group; JetStream: one consumer shared by the agent's connections
        link, release = self._subscriber(message_size, "responders", RESPONDERS_GROUP)
        self._ready(link, release)
        return NatsResponder(link, f"{self.options.subject}.reply.".encode(), release)
