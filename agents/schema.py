"""Columns of the per-agent `messages.parquet` file: one row per message.

Producers write one row per message sent (`recv_ns`, `consumer_id`, `rx_index` null);
consumers one row per message received; requesters one row per request, with `recv_ns`
null when no reply came. `warmup` is true for messages whose intended send time falls in
the warm-up window: recorded, never part of the results.
"""

from __future__ import annotations

import pyarrow as pa

MESSAGES = pa.schema(
    [
        pa.field("producer_id", pa.int32(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("size", pa.int32(), nullable=False),
        pa.field("intended_ns", pa.int64(), nullable=False),
        pa.field("sent_ns", pa.int64(), nullable=False),
        pa.field("recv_ns", pa.int64()),
        pa.field("consumer_id", pa.int32()),
        pa.field("rx_index", pa.int64()),  # receive order within the consumer
        pa.field("warmup", pa.bool_(), nullable=False),
    ]
)

MESSAGES_FILE = "messages.parquet"
HLOG_FILE = "latency.hlog"
