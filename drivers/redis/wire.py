"""RESP2 as the redis driver speaks it on the hot path: pre-encoded commands and pushes,
error replies found in a stream of replies, and XREAD replies parsed into the caller's
buffer. Pure functions and a parser over bytes; the sockets are drivers/redis/driver.py's.
"""

from __future__ import annotations

from sixnines.drivers.base import DriverError
from sixnines.drivers.sockets import FrameAt

CRLF = b"\r\n"
DASH, NEWLINE, COLON = ord("-"), ord("\n"), ord(":")
FIELD = b"m"  # the one field of every stream entry
ENTRY_START = b"*2\r\n$"  # a stream entry: [id, [field, value]]
STREAM_START = ENTRY_START  # a stream in a reply: [key, [entry, ...]]
ARRAY = ord("*")
NIL_ARRAY = b"*-1\r\n"  # a blocking read that timed out


def bulk(value: bytes | bytearray) -> bytes:
    """A RESP bulk string."""
    return b"$%d\r\n%s\r\n" % (len(value), value)


def head(*args: bytes, size: int) -> bytes:
    """A RESP array of `args` and one more bulk string of `size` bytes, up to that string's
    content: the prefix of a pre-encoded command (or of a push) carrying a message; CRLF
    follows the message."""
    return b"*%d\r\n%s$%d\r\n" % (len(args) + 1, b"".join(map(bulk, args)), size)


def command(*args: bytes) -> bytes:
    """A whole RESP command (as redis-py packs one)."""
    return b"*%d\r\n%s" % (len(args), b"".join(map(bulk, args)))


def xread_head(keys: list[bytes], count: int, group: bytes | None) -> bytes:
    """XREAD (XREADGROUP as consumer `c` of `group`) of up to `count` entries from each of
    the streams `keys`, blocking until one has some, up to the streams' ids: XREAD's
    follow, one bulk string each (XREADGROUP's, `>` each, are in)."""
    ids = len(keys)
    reader = (b"XREADGROUP", b"GROUP", group, b"c") if group is not None else (b"XREAD",)
    args = (*reader, b"COUNT", b"%d" % count, b"BLOCK", b"0", b"STREAMS", *keys)
    head = b"*%d\r\n%s" % (len(args) + ids, b"".join(map(bulk, args)))
    return head if group is None else head + bulk(b">") * ids


def publish_head(channel: bytes, size: int) -> bytes:
    return head(b"PUBLISH", channel, size=size)


def push_head(channel: bytes, size: int) -> bytes:
    """What precedes a message the server pushes to a subscriber of `channel`."""
    return head(b"message", channel, size=size)


#: Most digits a RESP bulk length has here (a payload is at most MAX_BULK bytes).
LENGTH_DIGITS = 10


def varying_pushes(label: str, channels: list[bytes], smallest: int, largest: int
                   ) -> FrameAt:
    """Where each pub/sub push of one of `channels` (names of one length: one channel, or
    one per message key) is, its payload of its own size from `smallest` to `largest`
    (sockets.VaryingFrames hands the payloads over); anything else is refused as soon as
    it differs."""
    head = push_head(channels[0], 0)[: -len(b"0" + CRLF)]  # up to the payload's length
    width = len(channels[0])
    name_at = len(head) - width - len(CRLF + b"$")  # where the channel's name is in it
    others = frozenset(channels[1:])
    known = len(head) if not others else name_at  # what every push's head has of `head`

    def refused() -> DriverError:
        return DriverError(f"{label}: unexpected data on the subscription (a message "
                           f"outside {smallest} to {largest} bytes on the channel?)")

    def frame_at(raw: bytearray, at: int, end: int) -> tuple[int, int, int] | None:
        digits_at = at + len(head)
        if end < digits_at:
            arrived = min(end - at, known)
            if raw[at : at + arrived] != head[:arrived]:
                raise refused()
            return None
        if not raw.startswith(head, at):  # another channel's head, or none
            name = at + name_at
            if not others or not raw.startswith(head[:name_at], at) \
                    or not raw.startswith(head[name_at + width :], name + width) \
                    or bytes(raw[name : name + width]) not in others:
                raise refused()
        stop = raw.find(CRLF, digits_at, min(end, digits_at + LENGTH_DIGITS + 1))
        if stop < 0:
            if end - digits_at > LENGTH_DIGITS:
                raise refused()
            return None
        digits = raw[digits_at:stop]
        if not digits.isdigit() or not smallest <= int(digits) <= largest:
            raise refused()
        payload = stop + len(CRLF)
        following = payload + int(digits) + len(CRLF)
        return None if following > end else (payload, following - len(CRLF), following)
    return frame_at


def xadd_head(key: bytes, maxlen: int, size: int) -> bytes:
    """XADD to `key`, trimmed to about `maxlen` entries, with a server-made id."""
    return head(b"XADD", key, b"MAXLEN", b"~", b"%d" % maxlen, b"*", FIELD, size=size)


def subscribed(channels: list[bytes]) -> bytes:
    """The server's confirmation of SUBSCRIBE to `channels` (the connection's first)."""
    return b"".join(b"*3\r\n" + bulk(b"subscribe") + bulk(channel) + b":%d\r\n" % number
                    for number, channel in enumerate(channels, 1))


def reply_key(channel: str, producer_id: int) -> bytes:
    """Where a round trip's replies to producer `producer_id` go. Never a lane's channel
    (`Lane.name`: `<channel>.<digits>`), so one-way lanes and replies cannot mix."""
    return f"{channel}.reply.{producer_id}".encode()


def lane_maxlen(maxlen: int, lanes: int) -> int:
    """A lane's stream trim length: `stream_maxlen` is for the lanes' streams together, so
    more connections neither multiply the memory held nor shorten how far behind (in time)
    a reader may fall."""
    return max(1, -(-maxlen // lanes))


def error_line(data: bytes | bytearray, start: int, end: int) -> str:
    """The text of the error reply at `start` (its `-` dropped), at most 300 characters."""
    stop = data.find(CRLF, start, end)
    line = bytes(data[start + 1 : stop if stop >= 0 else end])
    return line.decode("utf-8", "replace")[:300]


def error_at(data: bytes | bytearray, got: int, last: int) -> int:
    """Where an error reply starts in `data[:got]`, the next bytes of a stream of replies
    whose previous byte was `last` (NEWLINE at the start); -1 when none does. Replies start
    after a newline, and `-` after a newline can only start an error (PUBLISH answers
    integers, XADD entry ids have a `-` between digits), so one `find` does."""
    if data[0] == DASH and last == NEWLINE:
        return 0
    at = data.find(b"\n-", 0, got)
    return at + 1 if at >= 0 else -1


class StreamReplies:
    """Parses replies to XREAD (XREADGROUP, and XACK's counts) on the streams `keys` (one
    per message key, or the one stream) whose entries hold one `size`-byte field FIELD,
    copying the payloads into the caller's buffer. Bytes arrive through
    `room()`/`filled()`; a reply not yet whole stays for the next `parse`, and `held` says
    when entries may be waiting in the buffer (the socket cannot signal them). `ask` turns
    True when the outstanding read has been answered (the next one goes out with `after`,
    each stream's last entry read, and in a group the ids in `pending`, a list per stream,
    are acknowledged)."""

    def __init__(self, keys: list[bytes], size: int, count: int, overhead: int, label: str,
                 last_ids: list[bytes], group: bool, smallest: int | None = None) -> None:
        self.label = label
        self.size = size
        self.keys = {key: index for index, key in enumerate(keys)}
        # a reply of the one stream, up to its number of entries: read at once
        self.header = b"*1\r\n*2\r\n" + bulk(keys[0]) + b"*" if len(keys) == 1 else None
        self.middle = CRLF + b"*2\r\n" + bulk(FIELD) + b"$%d\r\n" % size
        self.any_middle = self.middle[: -len(b"%d\r\n" % size)]  # before any size
        # the smallest payload accepted (below `size`: sizes vary, `size` the largest)
        self.smallest = size if smallest is None else smallest
        longest = max(map(len, keys))
        self.buf = bytearray(count * (size + overhead) + 1024 + 2 * longest)
        self.view = memoryview(self.buf)
        self.pos = 0
        self.end = 0
        self.streams = 0  # streams of the current reply not begun yet
        self.left = 0  # entries of the current stream not parsed yet
        self.stream = 0  # the current stream's index in `keys`
        #: each stream's last id read (first: `last_ids`), as XREAD names it: a bulk string
        self.after = [bulk(last_id) for last_id in last_ids]
        self.group = group
        self.pending: list[list[bytes]] = [[] for _ in keys]
        self.acks = self.pending[0]  # the current stream's ids to acknowledge
        self.ask = False
        self.held = False  # the last parse filled `out` with bytes left: entries may wait

    def room(self) -> memoryview:
        """Where the next bytes go (the unparsed rest moved to the front first)."""
        pos, end, buf = self.pos, self.end, self.buf
        if pos == end:
            pos = end = 0
        elif pos:
            buf[: end - pos] = buf[pos:end]
            pos, end = 0, end - pos
        self.pos, self.end = pos, end
        if end == len(buf):
            raise DriverError(f"{self.label}: a stream reply larger than expected")
        return self.view[end:]

    def filled(self, got: int) -> None:
        self.end += got

    def parse(self, out: memoryview, stride: int) -> int:
        """Copy up to `len(out) // stride` payloads, `stride` apart; return how many.
        Raises DriverError on an error reply or anything but the entries expected."""
        buf, view, pos, end = self.buf, self.view, self.pos, self.end
        size, middle = self.size, self.middle
        room = len(out) // stride
        n = 0
        try:
            while n < room and pos < end:
                if not self.left:  # the start of a reply, or of a stream in it
                    header = self.header
                    if header is not None and buf.startswith(header, pos):
                        stop = buf.find(CRLF, pos + len(header), end)
                        if stop < 0:
                            break
                        self.left = int(buf[pos + len(header) : stop])
                        if not self.left:
                            self.ask = True
                        pos = stop + 2
                        continue
                    begun = self._begin(pos, end)
                    if begun < 0:
                        break
                    pos = begun
                    continue
                stop = buf.find(CRLF, pos + 5, end)  # an entry: *2 $<id length> <id> ...
                if stop < 0:
                    break
                if not buf.startswith(ENTRY_START, pos):
                    raise self._unexpected()
                id_at = stop + 2
                id_end = id_at + int(buf[pos + 5 : stop])
                data_at = id_end + len(middle)
                if data_at > end:
                    break
                length = size
                if not buf.startswith(middle, id_end):  # another size: refused on arrival
                    if self.smallest == size:
                        raise self._unexpected()
                    data_at, length = self._varying(id_end, end)  # unless sizes vary
                    if data_at < 0:
                        break
                if data_at + length + 2 > end:
                    break
                o = n * stride
                out[o : o + length] = view[data_at : data_at + length]
                n += 1
                pos = data_at + length + 2
                self.left -= 1
                if self.group:
                    self.acks.append(bytes(buf[id_at:id_end]))
                if not self.left:
                    self.after[self.stream] = bulk(buf[id_at:id_end])
                    if not self.streams:
                        self.ask = True
        finally:
            self.pos = pos
            self.held = n == room and pos < end
        return n

    def _begin(self, pos: int, end: int) -> int:
        """Read what starts at `pos` between entries: a reply's start (an error refused,
        XACK's count and a timed-out read passed over, the number of streams) or a
        stream's (its key and its number of entries); returns where the next element
        starts, -1 while this one has not all arrived."""
        buf = self.buf
        if not self.streams:  # a reply
            first = buf[pos]
            if first == DASH:
                raise DriverError(f"{self.label}: the server refused a read: "
                                  f"{error_line(buf, pos, end)}")
            stop = buf.find(CRLF, pos, end)
            if stop < 0:
                return -1
            if first == COLON:  # XACK's count
                return stop + 2
            if buf.startswith(NIL_ARRAY, pos):  # nothing (a timed-out read)
                self.ask = True
                return stop + 2
            if first != ARRAY or not buf[pos + 1 : stop].isdigit():
                raise self._unexpected()
            self.streams = int(buf[pos + 1 : stop])
            if not self.streams:
                self.ask = True
            return stop + 2
        stop = buf.find(CRLF, pos + len(STREAM_START), end)  # *2 $<key length> <key> *<n>
        if stop < 0:
            return -1
        if not buf.startswith(STREAM_START, pos) or not buf[pos + 5 : stop].isdigit():
            raise self._unexpected()
        key_at = stop + 2
        key_end = key_at + int(buf[pos + 5 : stop])
        stop = buf.find(CRLF, key_end + 3, end)
        if stop < 0:
            return -1
        stream = self.keys.get(bytes(buf[key_at:key_end]))
        if stream is None or not buf.startswith(CRLF + b"*", key_end) \
                or not buf[key_end + 3 : stop].isdigit():
            raise self._unexpected()
        self.stream = stream
        self.acks = self.pending[stream]
        self.streams -= 1
        self.left = int(buf[key_end + 3 : stop])
        if not self.left and not self.streams:
            self.ask = True
        return stop + 2

    def _varying(self, id_end: int, end: int) -> tuple[int, int]:
        """(where the payload starts, its length) of an entry whose field's length is its
        own, from `smallest` to `size`; (-1, 0) when its length has not all arrived."""
        buf, at = self.buf, id_end + len(self.any_middle)
        stop = buf.find(CRLF, at, end)
        if stop < 0:
            return -1, 0
        if not buf.startswith(self.any_middle, id_end) or not buf[at:stop].isdigit():
            raise self._unexpected()
        length = int(buf[at:stop])
        if not self.smallest <= length <= self.size:
            raise self._unexpected()
        return stop + 2, length

    def _unexpected(self) -> DriverError:
        sizes = (f"{self.size}-byte" if self.smallest == self.size
                 else f"{self.smallest}- to {self.size}-byte")
        return DriverError(f"{self.label}: unexpected entry in the stream (not one "
                          f"{sizes} field {FIELD.decode()!r}: another writer?)")


def glob_literal(text: str) -> str:
    """A SCAN/KEYS pattern matching `text` alone: its glob characters escaped."""
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
