"""The kafka driver's own wire decisions (records and batches are the clients' to encode):
round-trip topics, the producer id a reply is routed by, record size limits, which
partitions a lane reads."""

from __future__ import annotations

from sixnines.drivers.base import SOLE_LANE, Lane
from sixnines.drivers.kafka.wire import (
    created_partitions,
    lane_partitions,
    producer_id,
    record_bytes,
    reply_prefix,
    requests_topic,
)


def test_round_trip_topics_derive_from_the_topic():
    assert requests_topic("bench") == "bench.req"
    assert reply_prefix("bench") + "7" == "bench.reply.7"


def test_a_reply_goes_to_the_producer_id_in_the_header():
    # header: producer id u32 LE, seq u64, intended i64, sent i64 (docs/design.md, Files)
    header = b"\x07\x01\x00\x00" + bytes(24)
    assert producer_id(header + b"payload") == 263
    assert producer_id(memoryview(b"\xff\xff\xff\xff" + bytes(24))) == 4294967295


def test_records_above_a_megabyte_raise_the_limit_with_headroom():
    assert record_bytes(0) == 1_000_000
    assert record_bytes(256) == 1_000_000
    assert record_bytes(2_000_000) == 2_000_000 + 65_536


def test_a_lane_reads_every_partition_p_with_p_mod_lanes_equal_to_its_index():
    assert lane_partitions(4, SOLE_LANE) == [0, 1, 2, 3]
    assert lane_partitions(5, Lane(0, 2)) == [0, 2, 4]
    assert lane_partitions(5, Lane(1, 2)) == [1, 3]
    assert lane_partitions(2, Lane(2, 3)) == []  # refused by the driver: it would read nothing
    lanes = [lane_partitions(7, Lane(index, 3)) for index in range(3)]
    assert sorted(p for lane in lanes for p in lane) == list(range(7))  # each once


def test_a_created_topic_has_one_partition_per_lane_unless_the_option_says():
    assert created_partitions(None, SOLE_LANE) == 1
    assert created_partitions(None, Lane(2, 4)) == 4
    assert created_partitions(6, Lane(2, 4)) == 6
    assert created_partitions(1, SOLE_LANE) == 1
