"""Which channel (stream key) a redis connection's lane uses, and the framing a lane's sender
is given (its own PUBLISH / XADD head, sent as laid out), on bytes alone (no server)."""

from __future__ import annotations

from sixnines.drivers.base import SOLE_LANE, Framing, Lane
from sixnines.drivers.redis import RedisDriver, RedisOptions
from sixnines.drivers.redis.wire import (
    CRLF,
    lane_maxlen,
    publish_head,
    push_head,
    reply_key,
    xadd_head,
)
from sixnines.formats.keys import KeySpace


def driver(**options) -> RedisDriver:
    return RedisDriver("127.0.0.1:6379", RedisOptions(channel="ch", **options))


def test_one_lane_uses_the_channel_and_several_a_channel_each():
    pubsub = driver()
    assert pubsub.lane_channel(SOLE_LANE) == b"ch"
    assert [pubsub.lane_channel(Lane(i, 3)) for i in range(3)] == [b"ch.0", b"ch.1", b"ch.2"]


def test_one_connection_is_framed_as_before():
    """The sole lane's bytes (also every requester's) are the single-channel commands."""
    assert driver().framing(5) == driver().framing(5, SOLE_LANE) == Framing(
        b"*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$5\r\n", CRLF)
    assert driver(mode="streams", stream_maxlen=1000).framing(4) == Framing(
        b"*8\r\n$4\r\nXADD\r\n$2\r\nch\r\n$6\r\nMAXLEN\r\n$1\r\n~\r\n$4\r\n1000\r\n"
        b"$1\r\n*\r\n$1\r\nm\r\n$4\r\n", CRLF)


def test_a_lane_is_framed_with_its_own_command_head():
    assert driver().framing(5, Lane(1, 2)) == Framing(publish_head(b"ch.1", 5), CRLF)
    assert driver().framing(5, Lane(12, 13)).prefix == (
        b"*3\r\n$7\r\nPUBLISH\r\n$5\r\nch.12\r\n$5\r\n")
    streams = driver(mode="streams", stream_maxlen=1000)
    assert streams.framing(5, Lane(2, 3)) == Framing(xadd_head(b"ch.2", 334, 5), CRLF)


def test_the_receive_framing_is_one_for_all_lanes():
    """An agent's receivers share one buffer: the layout names the channel, whatever the
    lane (a lane's pushes are copied out of a longer head)."""
    assert driver().receive_framing(5) == Framing(push_head(b"ch", 5), CRLF)
    assert driver(mode="streams").receive_framing(5) == Framing()


def test_lanes_share_stream_maxlen():
    assert lane_maxlen(1_000_000, 1) == 1_000_000
    assert lane_maxlen(1000, 3) == 334
    assert lane_maxlen(1, 25) == 1


def test_no_lane_is_a_reply_channel():
    lanes = {driver().lane_channel(Lane(i, 100)) for i in range(100)}
    replies = {reply_key("ch", producer_id) for producer_id in range(1000)}
    assert not lanes & replies


def test_with_keys_each_key_has_its_own_command_head_of_one_length():
    """A stream (channel) per key below the lane's: `<lane channel>.<key>`, every key's
    head as long as the first (frames of one stride), each key's stream keeping the lane's
    share of stream_maxlen."""
    keyed = driver(mode="streams", stream_maxlen=1000)
    keyed.keys = KeySpace(12, 1.1)
    framing = keyed.framing(5, Lane(1, 2))
    assert framing.key_prefixes == tuple(xadd_head(b"ch.1.k%02d" % key, 500, 5)
                                         for key in range(12))
    assert framing.prefix == framing.key_prefixes[0]
    assert len(set(map(len, framing.key_prefixes))) == 1
    keyed = driver()
    keyed.keys = KeySpace(3)
    assert keyed.framing(5).key_prefixes == tuple(publish_head(b"ch.k%d" % key, 5)
                                                  for key in range(3))
    assert keyed.receive_framing(5) == Framing()  # pushes of several channels: copied out
