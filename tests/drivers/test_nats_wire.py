"""The NATS client protocol as the nats driver speaks it, on bytes alone (expected bytes
written by hand from the NATS protocol: `PUB <subject> [reply-to] <#bytes>`, `SUB <subject>
[queue group] <sid>`, `MSG <subject> <sid> [reply-to] <#bytes>`, `HMSG <subject> <sid>
[reply-to] <#header bytes> <#total bytes>`, every line ending in CRLF)."""

from __future__ import annotations

import pytest

from sixnines.drivers.base import DriverError
from sixnines.drivers.nats.wire import (
    Parser,
    msg_line,
    pub_line,
    pull_request,
    stream_seq,
    sub_line,
)

SID = b"1"
ACKS = b"2"


def test_the_lines_the_driver_sends():
    assert pub_line("bench", 5) == b"PUB bench 5\r\n"
    assert pub_line("bench", 5, "_INBOX.ab") == b"PUB bench _INBOX.ab 5\r\n"
    assert sub_line("bench", b"1") == b"SUB bench 1\r\n"
    assert sub_line("bench", b"1", b"workers") == b"SUB bench workers 1\r\n"
    assert msg_line("bench", b"1", 5) == b"MSG bench 1 5\r\n"
    assert pull_request("$JS.API.CONSUMER.MSG.NEXT.S.C", "_INBOX.p", 10, 30) == (
        b'PUB $JS.API.CONSUMER.MSG.NEXT.S.C _INBOX.p 28\r\n{"batch": 10, "expires": 30}\r\n')


def parser(size: int = 5, fast: bool = True) -> Parser:
    p = Parser(size, "nats at test")
    p.data_sid = SID
    p.ack_sid = ACKS
    if fast:
        p.fast = b"MSG bench 1 %d\r\n" % size
    return p


def feed(p: Parser, data: bytes) -> None:
    p.buf[p.end : p.end + len(data)] = data
    p.end += len(data)


@pytest.mark.parametrize("fast", [True, False])
def test_messages_are_copied_out_and_pings_answered(fast):
    p = parser(fast=fast)
    feed(p, b"MSG bench 1 5\r\nhello\r\nPING\r\n+OK\r\nMSG bench 1 5\r\nworld\r\nPONG\r\n")
    out = bytearray(16)
    assert p.parse(memoryview(out), 8, 2) == 2
    assert out == b"hello\0\0\0world\0\0\0"
    assert p.outgoing == b"PONG\r\n"
    assert p.pongs == 1


@pytest.mark.parametrize("fast", [True, False])
def test_a_message_in_pieces_waits_for_the_rest(fast):
    p = parser(fast=fast)
    out = memoryview(bytearray(5))
    feed(p, b"MSG bench 1 5\r\nhel")
    assert p.parse(out, 5, 1) == 0
    feed(p, b"lo\r")
    assert p.parse(out, 5, 1) == 0
    feed(p, b"\n")
    assert p.parse(out, 5, 1) == 1 and bytes(out) == b"hello"


def test_a_full_buffer_leaves_messages_for_the_next_call():
    p = parser()
    feed(p, b"MSG bench 1 5\r\naaaaa\r\nMSG bench 1 5\r\nbbbbb\r\n")
    out = memoryview(bytearray(5))
    assert p.parse(out, 5, 1) == 1 and p.more
    assert p.parse(out, 5, 1) == 1 and bytes(out) == b"bbbbb"


def test_errors_and_strangers_are_refused():
    p = parser()
    feed(p, b"-ERR 'Permissions Violation for Publish'\r\n")
    with pytest.raises(DriverError, match="reported an error: Permissions Violation"):
        p.parse(None, 0, 0)
    p = parser()
    feed(p, b"MSG bench 9 5\r\nhello\r\n")
    with pytest.raises(DriverError, match="unknown subscription 9"):
        p.parse(memoryview(bytearray(5)), 5, 1)
    p = parser(fast=False)
    feed(p, b"MSG bench 1 4\r\nhell\r\n")
    with pytest.raises(DriverError, match="got a 4-byte message on bench, expected 5"):
        p.parse(memoryview(bytearray(5)), 5, 1)
    p = parser()
    feed(p, b"HELLO\r\n")
    with pytest.raises(DriverError, match="unexpected data"):
        p.parse(None, 0, 0)


def test_jetstream_publish_acks_are_counted_and_refusals_raised():
    p = parser()
    ack = b'{"stream":"S","seq":1}'
    feed(p, b"MSG _INBOX.a 2 22\r\n" + ack + b"\r\n")
    assert p.parse(None, 0, 0) == 0 and p.acked == 1
    p = parser()
    error = b'{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}'
    feed(p, b"MSG _INBOX.a 2 %d\r\n%s\r\n" % (len(error), error))
    with pytest.raises(DriverError, match="maximum messages exceeded \\(error 10077\\)"):
        p.parse(None, 0, 0)
    p = parser()
    feed(p, b"HMSG _INBOX.a 2 16 16\r\nNATS/1.0 503\r\n\r\n\r\n")
    with pytest.raises(DriverError, match="no JetStream stream stores the subject"):
        p.parse(None, 0, 0)


def test_an_expired_pull_request_is_renewed():
    p = parser()
    p.pull, p.batch, p.outstanding = b"PULL\r\n", 10, 10
    # NATS/1.0 408 Request Timeout, Nats-Pending-Messages: 7 (headers end with an empty line)
    headers = b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 7\r\n\r\n"
    feed(p, b"HMSG _INBOX.p 1 %d %d\r\n%s\r\n" % (len(headers), len(headers), headers))
    assert p.parse(memoryview(bytearray(5)), 5, 1) == 0
    assert p.outgoing == b"PULL\r\n"  # 3 left outstanding: another batch asked for
    assert p.outstanding == 13


def test_a_deliverys_place_in_the_stream_is_read_from_its_reply_subject():
    # $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>,
    # or with <domain>.<account hash> after $JS.ACK and a random token at the end
    assert stream_seq(b"$JS.ACK.S.c.1.7.2.1795830027852723059.1") == 7
    assert stream_seq(b"$JS.ACK._.ACCHASH.S.c.1.42.2.1795830027852723059.1.tok") == 42
    assert stream_seq(b"_INBOX.x") is None and stream_seq(b"") is None


def test_the_last_delivery_is_remembered_and_a_status_after_deliveries_waits():
    # two deliveries, then a consumer's failure: the deliveries are returned (and the
    # last one's place kept) before the status raises on the next call
    p = parser()
    p.pull, p.batch, p.outstanding = b"PULL\r\n", 10, 10
    status = b"NATS/1.0 409 Leadership Change\r\n\r\n"
    feed(p, b"MSG S 1 $JS.ACK.S.c.1.7.1.1.0 5\r\nhello\r\n"
            b"MSG S 1 $JS.ACK.S.c.1.8.2.1.0 5\r\nworld\r\n"
            b"HMSG _INBOX.p 1 %d %d\r\n%s\r\n" % (len(status), len(status), status))
    out = memoryview(bytearray(10))
    assert p.parse(out, 5, 2) == 2 and bytes(out) == b"helloworld"
    assert stream_seq(p.last_reply) == 8 and p.more
    with pytest.raises(DriverError, match="409 Leadership Change"):
        p.parse(out, 5, 2)


def test_an_error_after_deliveries_waits_for_the_next_call():
    p = parser()
    feed(p, b"MSG bench 1 5\r\nhello\r\n-ERR 'Slow Consumer'\r\n")
    out = memoryview(bytearray(5))
    assert p.parse(out, 5, 1) == 1 and p.more
    with pytest.raises(DriverError, match="Slow Consumer"):
        p.parse(out, 5, 1)


def test_a_responder_queues_each_request_to_its_producers_reply_subject():
    p = Parser(28, "nats at test")
    p.data_sid, p.replies, p.reply_prefix = SID, bytearray(), b"bench.reply."
    header = b"\x07\x00\x00\x00" + bytes(24)  # producer id 7 (u32 LE), then seq and times
    feed(p, b"MSG bench 1 28\r\n" + header + b"\r\n")
    assert p.parse(None, 0, 1) == 1
    assert p.replies == b"PUB bench.reply.7 28\r\n" + header + b"\r\n"
