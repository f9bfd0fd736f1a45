"""AMQP 0-9-1 frames as the rabbitmq driver writes and reads them, on bytes alone.

Expected bytes are written by hand from the AMQP 0-9-1 specification: a frame is type
(octet: 1 method, 2 content header, 3 body, 8 heartbeat), channel (u16), payload size
(u32), payload, 0xCE; a method payload starts with class id and method id (u16 each);
integers are big-endian; a short string is a length octet and its bytes."""

from __future__ import annotations

import pytest

from sixnines.drivers.base import DriverError
from sixnines.drivers.rabbitmq.wire import (
    Reader,
    connection_close_frame,
    consume_frame,
    fits_one_frame,
    frame,
    publish_head,
    shortstr,
    stream_offset_table,
)

END = b"\xce"


def test_frames_and_short_strings():
    assert frame(1, 1, b"xy") == b"\x01\x00\x01\x00\x00\x00\x02xy\xce"
    assert shortstr("abc") == b"\x03abc"
    assert shortstr(b"") == b"\x00"
    with pytest.raises(ValueError):
        shortstr("x" * 256)


PUBLISH_METHOD = (b"\x01\x00\x01\x00\x00\x00\x0b"  # method frame, channel 1, 11 bytes
                  b"\x00\x3c\x00\x28"  # basic.publish (60, 40)
                  b"\x00\x00"  # reserved
                  b"\x02ex"  # exchange "ex"
                  b"\x00"  # routing key ""
                  b"\x00" + END)  # mandatory, immediate: off


def test_a_publish_is_method_and_content_header():
    header = (b"\x02\x00\x01\x00\x00\x00\x0e"  # content header frame, channel 1, 14 bytes
              b"\x00\x3c\x00\x00"  # class basic, weight 0
              b"\x00\x00\x00\x00\x00\x00\x00\x05"  # body size 5
              b"\x00\x00" + END)  # no properties
    assert publish_head(1, "ex", "", 5, persistent=False) == PUBLISH_METHOD + header


def test_properties_follow_their_flags_from_the_highest_bit():
    head = publish_head(1, "ex", "", 5, persistent=True, reply_to="rq")
    header = (b"\x02\x00\x01\x00\x00\x00\x12"  # 18 bytes
              b"\x00\x3c\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05"
              b"\x12\x00"  # delivery-mode (bit 12) and reply-to (bit 9)
              b"\x02"  # delivery mode 2: persistent
              b"\x02rq" + END)
    assert head == PUBLISH_METHOD + header


def test_consume_ack_and_close():
    assert consume_frame(1, "q", no_ack=True) == (
        b"\x01\x00\x01\x00\x00\x00\x0e\x00\x3c\x00\x14"  # basic.consume (60, 20)
        b"\x00\x00\x01q\x00"  # reserved, queue "q", consumer tag ""
        b"\x02"  # no-ack (bit 1)
        b"\x00\x00\x00\x00" + END)  # no arguments
    assert Reader(1, "r", 64).ack_frame(7) == (
        b"\x01\x00\x01\x00\x00\x00\x0d\x00\x3c\x00\x50"  # basic.ack (60, 80)
        b"\x00\x00\x00\x00\x00\x00\x00\x07\x01" + END)  # tag 7, multiple
    assert connection_close_frame() == (
        b"\x01\x00\x00\x00\x00\x00\x0e\x00\x0a\x00\x32"  # channel 0, connection.close
        b"\x00\xc8\x03bye\x00\x00\x00\x00" + END)  # 200 "bye", no failing method
    assert fits_one_frame(131072 - 8) and not fits_one_frame(131072 - 7)


def deliver(tag: int) -> bytes:
    payload = (b"\x00\x3c\x00\x3c"  # basic.deliver (60, 60)
               b"\x04ctag" + tag.to_bytes(8, "big") + b"\x00"  # consumer tag, tag, redelivered
               b"\x00\x01q")  # exchange "", routing key "q"
    return b"\x01\x00\x01" + len(payload).to_bytes(4, "big") + payload + END


def content_header(size: int, reply_to: bytes = b"") -> bytes:
    """No properties; with `reply_to`, delivery mode 2 and reply-to (flags 0x1200)."""
    props = b"\x12\x00\x02" + bytes([len(reply_to)]) + reply_to if reply_to else b"\x00\x00"
    payload = b"\x00\x3c\x00\x00" + size.to_bytes(8, "big") + props
    return b"\x02\x00\x01" + len(payload).to_bytes(4, "big") + payload + END


def body(data: bytes) -> bytes:
    return b"\x03\x00\x01" + len(data).to_bytes(4, "big") + data + END


def test_deliveries_are_handed_out_one_by_one_between_heartbeats():
    heartbeat = b"\x08\x00\x00\x00\x00\x00\x00" + END
    wire = (deliver(5) + content_header(5) + body(b"hello") + heartbeat + deliver(6)
            + content_header(5, b"reply.q") + body(b"world"))
    reader = Reader(1, "r", 4096, wire)
    assert bytes(reader.next_delivery()) == b"hello" and reader.tag == 5
    assert bytes(reader.next_delivery()) == b"world" and reader.tag == 6
    assert reader.reply_to() == b"reply.q"
    assert reader.next_delivery() is None


def test_a_delivery_in_pieces_waits_for_the_rest_and_bodies_are_joined():
    wire = deliver(1) + content_header(10) + body(b"01234") + body(b"56789")
    reader = Reader(1, "r", 4096, wire[:-3])
    assert reader.next_delivery() is None
    reader = Reader(1, "r", 4096, wire)
    assert bytes(reader.next_delivery()) == b"0123456789"


def test_a_streams_consume_names_where_to_start():
    """x-stream-offset in Basic.Consume's arguments: a long string or a signed long."""
    assert stream_offset_table("first") == (
        b"\x00\x00\x00\x1a"  # table of 26 bytes
        b"\x0fx-stream-offset" b"S\x00\x00\x00\x05first")
    assert stream_offset_table(300) == (
        b"\x00\x00\x00\x19\x0fx-stream-offset" b"l\x00\x00\x00\x00\x00\x00\x01\x2c")
    arguments = stream_offset_table(7)
    frame_bytes = consume_frame(1, "q", no_ack=False, arguments=arguments)
    assert frame_bytes.endswith(b"\x00" + arguments + END)  # no flags, then the table


def test_a_streams_delivery_says_its_offset_among_its_headers():
    """A stream's deliveries carry x-stream-offset (a long) in their headers table, here
    after another header and before delivery mode; reply_to is still found after them."""
    table = (b"\x01aS\x00\x00\x00\x02xy"  # "a": a long string
             b"\x01bt\x01"  # "b": a boolean
             b"\x0fx-stream-offset" b"l" + (2**40).to_bytes(8, "big"))
    props = (b"\x32\x00"  # headers (bit 13), delivery mode (12), reply-to (9)
             + len(table).to_bytes(4, "big") + table + b"\x02" + b"\x02rq")
    payload = b"\x00\x3c\x00\x00" + (2).to_bytes(8, "big") + props
    header = b"\x02\x00\x01" + len(payload).to_bytes(4, "big") + payload + END
    reader = Reader(1, "r", 4096, deliver(1) + header + body(b"ok"))
    assert bytes(reader.next_delivery()) == b"ok"
    assert reader.stream_offset() == 2**40
    assert reader.reply_to() == b"rq"
    reader = Reader(1, "r", 4096, deliver(1) + content_header(2) + body(b"ok"))
    reader.next_delivery()
    with pytest.raises(DriverError, match="without x-stream-offset"):
        reader.stream_offset()


def test_confirms_are_counted_and_nacks_closes_and_cancels_raised():
    def method(class_id: int, method_id: int, args: bytes) -> bytes:
        payload = class_id.to_bytes(2, "big") + method_id.to_bytes(2, "big") + args
        return b"\x01\x00\x01" + len(payload).to_bytes(4, "big") + payload + END

    acks = [method(60, 80, (3).to_bytes(8, "big") + b"\x01"),  # up to 3 (multiple)
            method(60, 80, (5).to_bytes(8, "big") + b"\x00"),  # 5 alone
            method(60, 80, (4).to_bytes(8, "big") + b"\x00")]  # 4 alone
    reader = Reader(1, "r", 4096, acks[0] + acks[1])
    reader.published = 5
    assert reader.next_delivery() is None
    assert reader.confirmed == 3  # 5 is confirmed alone; 4 is not yet
    reader = Reader(1, "r", 4096, b"".join(acks))
    reader.published = 5
    assert reader.next_delivery() is None
    assert reader.confirmed == 5
    reader = Reader(1, "r", 4096, method(60, 120, (4).to_bytes(8, "big") + b"\x00"))
    with pytest.raises(DriverError, match="refused publish 4"):
        reader.next_delivery()
    close = method(20, 40, b"\x01\x94\x14NOT_FOUND - no queue" + bytes(4))  # 404, 20 chars
    with pytest.raises(DriverError, match="closed the channel \\(404 NOT_FOUND - no queue\\)"):
        Reader(1, "r", 4096, close).next_delivery()
    with pytest.raises(DriverError, match="cancelled the consumer"):
        Reader(1, "r", 4096, method(60, 30, b"\x04ctag\x00")).next_delivery()
