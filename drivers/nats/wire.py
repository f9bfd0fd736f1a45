"""The NATS client protocol as the nats driver speaks it on the hot path: the lines it
sends (PUB, SUB, PING, pull requests) and a parser of what a server sends (MSG, HMSG, PING,
PONG, +OK, INFO, -ERR), over a buffer and without a socket: what it must answer (PONG, a
next pull request, a responder's replies) is queued in `outgoing` and `replies`, and the
connection (drivers/nats/connection.py) writes it.
"""

from __future__ import annotations

import json

from sixnines.drivers.base import DriverError
from sixnines.formats.payload import HEADER_STRUCT

BUFFER_BYTES = 1 << 20  # per connection read buffer (at least 4 messages' worth)
MAX_LINE = 4096  # a protocol line longer than this is garbage, not a partial read
PING, PONG = b"PING\r\n", b"PONG\r\n"


def pub_line(subject: str, size: int, reply: str = "") -> bytes:
    """What precedes a `size`-byte message published to `subject` (CRLF follows it)."""
    return f"PUB {subject}{' ' + reply if reply else ''} {size}\r\n".encode()


def lanes_pattern(subject: str) -> str:
    """The subjects of every one-way lane of `subject` (`Lane.name`: `<subject>.<i>`), as a
    stream captures them. One token only, so round trips' `<subject>.reply.<id>` (core
    NATS) stay out of the stream."""
    return f"{subject}.*"


def keys_pattern(subject: str) -> str:
    """The subjects of every key of `subject` (formats.keys: `<subject>.<key>`), as a
    subscriber or a pull consumer of a keyed lane takes them."""
    return f"{subject}.*"


def keyed_lanes_pattern(subject: str) -> str:
    """The subjects of every key of every lane of `subject` (`<subject>.<key>`,
    `<subject>.<i>.<key>`), as a stream captures them: every subject below it (keys are
    one-way: no round trip's replies to keep out)."""
    return f"{subject}.>"


def covers(pattern: str, subject: str) -> bool:
    """Whether a stream subject `pattern` (`*`: one token, `>`: one or more, last) takes
    messages published to the literal `subject`."""
    want, have = subject.split("."), pattern.split(".")
    for k, token in enumerate(have):
        if token == ">":
            return len(want) > k
        if k >= len(want) or (token != "*" and token != want[k]):
            return False
    return len(want) == len(have)


def sub_line(subject: str, sid: bytes, queue: bytes = b"") -> bytes:
    """Subscribe to `subject` as subscription `sid` (in the queue group `queue`)."""
    group = b" " + queue if queue else b""
    return b"SUB " + subject.encode() + group + b" " + sid + b"\r\n"


def msg_line(subject: str, sid: bytes, size: int) -> bytes:
    """The exact line a server puts before each `size`-byte message of subscription `sid`
    on `subject` (no reply subject): the parser's fast path."""
    return b"MSG %s %s %d\r\n" % (subject.encode(), sid, size)


def pull_request(api_subject: str, inbox: str, batch: int, expires_ns: int) -> bytes:
    """A JetStream pull request for `batch` messages, delivered to `inbox`."""
    ask = json.dumps({"batch": batch, "expires": expires_ns}).encode()
    return b"PUB %s %s %d\r\n%s\r\n" % (api_subject.encode(), inbox.encode(), len(ask), ask)


def stream_seq(reply: bytes) -> int | None:
    """The stream sequence of a JetStream delivery, from its reply subject:
    `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>`,
    or with `<domain>.<account hash>` after `$JS.ACK` (and a token at the end); None when
    `reply` is neither."""
    tokens = reply.split(b".")
    if tokens[:2] != [b"$JS", b"ACK"] or len(tokens) not in (9, 11, 12):
        return None
    seq = tokens[5 if len(tokens) == 9 else 7]
    return int(seq) if seq.isdigit() else None


class Parser:
    """A connection's read buffer and the parser over it.

    It handles what can arrive on any connection (PING, PONG, +OK, INFO, -ERR) and the
    messages of the connection's subscriptions: data (`data_sid`: copied out, or queued as
    replies for a responder), JetStream publish acks (`ack_sid`) and pull-request statuses
    (HMSG on the data subscription). Whatever is incomplete stays buffered for the next
    call; bytes come in through `buf[end:]` (then `end` moves on).
    """

    def __init__(self, size: int, label: str, leftover: bytes = b"") -> None:
        self.label = label
        self.size = size
        self.smallest = size  # the smallest data message accepted (below `size`: sizes vary)
        self.buf = bytearray(max(BUFFER_BYTES, 4 * (size + MAX_LINE)))
        self.view = memoryview(self.buf)
        self.buf[: len(leftover)] = leftover
        self.start = 0
        self.end = len(leftover)
        self.more = bool(leftover)  # complete messages may still be buffered
        self.data_sid: bytes | None = None
        self.fast = b""  # the exact MSG line of every data message, when it is fixed
        self.ack_sid: bytes | None = None
        self.acked = 0
        self.pongs = 0
        self.outgoing = bytearray()  # what the connection must send (PONG, pull requests)
        # a JetStream pull consumer: messages asked for and not yet delivered or expired
        self.pull: bytes = b""
        self.batch = 0
        self.outstanding = 0
        self.last_reply = b""  # the reply subject of the last delivery (`stream_seq`)
        # a responder's outgoing replies, and their PUB lines by producer id
        self.replies: bytearray | None = None
        self.reply_lines: dict[int, bytes] = {}
        self.reply_prefix = b""

    def request_more(self) -> None:
        """Keep a JetStream pull consumer's requests topped up (one request = `batch`)."""
        while self.outstanding <= self.batch // 2:
            self.outgoing += self.pull
            self.outstanding += self.batch

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
                        if not self.smallest <= total <= size:
                            raise DriverError(f"{self.label}: got a {total}-byte message on "
                                              f"{parts[1].decode()}, expected "
                                              f"{self._expected()}")
                        if relay:
                            self._relay(body, stop)
                        else:
                            out[at : at + total] = view[body:stop]
                            at += stride
                        if len(parts) == 5:  # a JetStream delivery: its place in the stream
                            self.last_reply = parts[3]
                        n += 1
                        self.outstanding -= 1
                    elif sid == self.ack_sid:
                        self._ack(parts, body, stop)
                    elif sid == self.data_sid:
                        if n:  # deliveries first: a status that fails is for the next call
                            self.more = True
                            break
                        self._status(parts, body, stop)
                    else:
                        raise DriverError(f"{self.label}: message for unknown subscription "
                                          f"{sid.decode(errors='replace')}")
                    pos = stop + 2
                    continue
                line = bytes(view[pos:eol])
                pos = eol + 2
                if line == b"PING":
                    self.outgoing += PONG
                elif line == b"PONG":
                    self.pongs += 1
                elif line.startswith(b"-ERR"):
                    if n:  # the deliveries before it go out first
                        pos = eol - len(line)
                        self.more = True
                        break
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

    def _expected(self) -> str:
        if self.smallest == self.size:
            return f"{self.size}"
        return f"{self.smallest} to {self.size}"

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
        assert replies is not None  # only a responder relays, and it has them
        replies += line
        replies += self.view[body:stop]
        replies += b"\r\n"
