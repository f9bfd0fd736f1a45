"""RESP2 as the redis driver writes and reads it, on bytes alone (expected bytes written
by hand from the RESP2 specification: arrays `*<n>`, bulk strings `$<len>`, integers
`:<n>`, errors `-<text>`, every element ending in CRLF)."""

from __future__ import annotations

import pytest

from sixnines.drivers.base import DriverError
from sixnines.drivers.redis.wire import (
    NEWLINE,
    StreamReplies,
    bulk,
    error_at,
    error_line,
    publish_head,
    push_head,
    reply_key,
    subscribed,
    varying_pushes,
    xadd_head,
    xread_head,
)


def test_commands_and_pushes_are_arrays_of_bulk_strings_up_to_the_message():
    assert bulk(b"abc") == b"$3\r\nabc\r\n"
    assert publish_head(b"ch", 5) == b"*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$5\r\n"
    assert push_head(b"ch", 5) == b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\n"
    assert xadd_head(b"s", 1000, 4) == (
        b"*8\r\n$4\r\nXADD\r\n$1\r\ns\r\n$6\r\nMAXLEN\r\n$1\r\n~\r\n$4\r\n1000\r\n"
        b"$1\r\n*\r\n$1\r\nm\r\n$4\r\n")
    assert subscribed([b"ch"]) == b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
    assert subscribed([b"a", b"b"]) == (b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
                                        b"*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n")
    assert xread_head([b"a", b"b"], 7, None) + bulk(b"1-0") + bulk(b"2-0") == (
        b"*10\r\n$5\r\nXREAD\r\n$5\r\nCOUNT\r\n$1\r\n7\r\n$5\r\nBLOCK\r\n$1\r\n0\r\n"
        b"$7\r\nSTREAMS\r\n$1\r\na\r\n$1\r\nb\r\n$3\r\n1-0\r\n$3\r\n2-0\r\n")
    assert xread_head([b"a"], 7, b"g") == (
        b"*11\r\n$10\r\nXREADGROUP\r\n$5\r\nGROUP\r\n$1\r\ng\r\n$1\r\nc\r\n$5\r\nCOUNT\r\n"
        b"$1\r\n7\r\n$5\r\nBLOCK\r\n$1\r\n0\r\n$7\r\nSTREAMS\r\n$1\r\na\r\n$1\r\n>\r\n")
    assert reply_key("ch", 12) == b"ch.reply.12"


def test_an_error_reply_is_found_among_other_replies():
    data = b":1\r\n:2\r\n-ERR wrong number\r\n:3\r\n"
    at = error_at(data, len(data), NEWLINE)
    assert at == 8
    assert error_line(data, at, len(data)) == "ERR wrong number"
    first = b"-NOAUTH Authentication required.\r\n"
    assert error_at(first, len(first), NEWLINE) == 0
    assert error_at(first, 10, NEWLINE) == 0  # a partial error is still an error


def test_dashes_inside_replies_are_not_errors():
    ids = b"$15\r\n1700000000000-0\r\n$15\r\n1700000000000-1\r\n"
    assert error_at(ids, len(ids), NEWLINE) == -1
    # a read that starts mid-reply (the previous read ended inside an entry id)
    assert error_at(b"-0\r\n:1\r\n", 8, ord("1")) == -1
    assert error_at(b":1\r\n:2\r\n", 8, NEWLINE) == -1


ENTRY_A = b"*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nm\r\n$4\r\nAAAA\r\n"
ENTRY_B = b"*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nm\r\n$4\r\nBBBB\r\n"
# XREAD ... STREAMS s: [[key, [entry, entry]]]
REPLY = b"*1\r\n*2\r\n$1\r\ns\r\n*2\r\n" + ENTRY_A + ENTRY_B


def replies(group: bool = False, keys: tuple[bytes, ...] = (b"s",)) -> StreamReplies:
    return StreamReplies(list(keys), 4, 8, 128, "redis at test", [b"0-0"] * len(keys), group)


def feed(parser: StreamReplies, data: bytes) -> None:
    room = parser.room()
    room[: len(data)] = data
    parser.filled(len(data))


def test_an_xread_reply_lands_payloads_in_the_callers_buffer():
    parser = replies()
    feed(parser, REPLY)
    out = bytearray(16)
    assert parser.parse(memoryview(out), 8) == 2
    assert out == b"AAAA\0\0\0\0BBBB\0\0\0\0"
    assert parser.ask and parser.after == [bulk(b"2-0")]
    assert parser.pending == [[]]


def test_a_reply_in_pieces_is_parsed_as_it_completes():
    parser = replies()
    out = memoryview(bytearray(8))
    cut = len(REPLY) - len(ENTRY_B) + 10
    feed(parser, REPLY[:cut])
    assert parser.parse(out, 4) == 1
    assert bytes(out[:4]) == b"AAAA" and not parser.ask
    feed(parser, REPLY[cut:])
    assert parser.parse(out, 4) == 1
    assert bytes(out[:4]) == b"BBBB" and parser.ask


def test_a_full_buffer_leaves_entries_for_the_next_call_and_says_it_holds_them():
    parser = replies()
    feed(parser, REPLY)
    out = memoryview(bytearray(4))
    assert parser.parse(out, 4) == 1 and bytes(out) == b"AAAA"
    assert parser.held  # the socket cannot signal ENTRY_B: the waiter must ask
    assert parser.parse(out, 4) == 1 and bytes(out) == b"BBBB"
    assert not parser.held


def test_an_entry_of_another_size_is_refused_as_soon_as_its_length_arrives():
    parser = replies()
    short = (b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n"
             b"*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nm\r\n$2\r\nAA\r\n")
    feed(parser, short)  # shorter than 4 bytes: no more bytes will complete it
    with pytest.raises(DriverError, match="unexpected entry"):
        parser.parse(memoryview(bytearray(8)), 4)


def test_a_group_reader_collects_the_ids_to_acknowledge_and_skips_xack_counts():
    parser = replies(group=True)
    feed(parser, b":2\r\n" + REPLY)
    assert parser.parse(memoryview(bytearray(8)), 4) == 2
    assert parser.pending == [[b"1-0", b"2-0"]]


def test_a_timed_out_read_asks_again():
    parser = replies()
    feed(parser, b"*-1\r\n")
    assert parser.parse(memoryview(bytearray(8)), 4) == 0
    assert parser.ask


def test_errors_and_strangers_are_refused():
    parser = replies()
    feed(parser, b"-WRONGTYPE Operation against a key\r\n")
    with pytest.raises(DriverError, match="refused a read: WRONGTYPE Operation"):
        parser.parse(memoryview(bytearray(8)), 4)
    parser = replies()
    feed(parser, REPLY.replace(b"$1\r\nm\r\n", b"$1\r\nx\r\n", 1))
    with pytest.raises(DriverError, match="unexpected entry"):
        parser.parse(memoryview(bytearray(8)), 4)


def test_a_read_of_several_streams_takes_each_one_s_entries_and_last_id():
    """XREAD ... STREAMS a b c (a stream per key): the streams with entries, in any order,
    each its own last id and (in a group) its own ids to acknowledge."""
    parser = replies(group=True, keys=(b"a", b"b", b"c"))
    entry_c = ENTRY_A.replace(b"1-0", b"5-0").replace(b"AAAA", b"CCCC")
    reply = (b"*2\r\n*2\r\n$1\r\nc\r\n*1\r\n" + entry_c
             + b"*2\r\n$1\r\na\r\n*2\r\n" + ENTRY_A + ENTRY_B)
    out, got = memoryview(bytearray(4)), []
    for piece in (reply[:7], reply[7:20], reply[20:]):  # a stream's start split too
        feed(parser, piece)
        while parser.parse(out, 4):
            got.append(bytes(out))
            assert parser.ask == (len(got) == 3)
    assert got == [b"CCCC", b"AAAA", b"BBBB"]
    assert parser.after == [bulk(b"2-0"), bulk(b"0-0"), bulk(b"5-0")]
    assert parser.pending == [[b"1-0", b"2-0"], [], [b"5-0"]]


def test_a_stream_no_reader_asked_for_is_refused():
    parser = replies(keys=(b"a", b"b"))
    feed(parser, b"*1\r\n*2\r\n$1\r\nz\r\n*1\r\n" + ENTRY_A)
    with pytest.raises(DriverError, match="unexpected entry"):
        parser.parse(memoryview(bytearray(8)), 4)


def test_pushes_of_a_channel_per_key_are_found_and_a_stranger_refused():
    """Pushes on any of a lane's keys' channels (names of one length), each its payload;
    a channel of the same length that is none of them is refused as it arrives."""
    channels = [b"ch.k0", b"ch.k1", b"ch.k2"]
    frame_at = varying_pushes("redis at test", channels, 4, 8)
    raw = bytearray(push_head(b"ch.k2", 4) + b"AAAA\r\n" + push_head(b"ch.k0", 6)
                    + b"BBBBBB\r\n")
    first = frame_at(raw, 0, len(raw))
    assert first is not None and raw[first[0] : first[1]] == b"AAAA"
    second = frame_at(raw, first[2], len(raw))
    assert second is not None and raw[second[0] : second[1]] == b"BBBBBB"
    assert second[2] == len(raw)
    stranger = bytearray(push_head(b"ch.k9", 4) + b"CCCC\r\n")
    with pytest.raises(DriverError, match="unexpected data on the subscription"):
        frame_at(stranger, 0, len(stranger))
