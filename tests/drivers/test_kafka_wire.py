"""The kafka driver's own wire decisions (records and batches are the clients' to encode):
round-trip topics, the producer id a reply is routed by, record size limits."""

from __future__ import annotations

from sixnines.drivers.kafka.wire import producer_id, record_bytes, reply_prefix, requests_topic


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
