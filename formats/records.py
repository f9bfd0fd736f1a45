"""Columns of the per-agent `messages.parquet` file: one row per message.

Producers write one row per message sent (`recv_ns`, `consumer_id`, `rx_index` null);
consumers one row per message received; requesters both: one row per request, as a
producer's, and one per reply, as a consumer's (its own connection as `consumer_id`).
Results recorded before requesters wrote chunks hold one row per request, with `recv_ns`
null when no reply came. `warmup` is true for messages whose intended send time falls in
the warm-up window: recorded, never part of the results.

In throughput mode (`rate: max`) there is no schedule: `intended_ns` is the send time
(= `sent_ns`), so recv − intended is saturation latency, and the warm-up is the first
`warmup` of sending.
"""

from __future__ import annotations

import pyarrow as pa

MESSAGES = pa.schema(
    [  # type: ignore[arg-type]  # pyarrow-stubs: a bool field beside int ones joins to object
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

#: Messages per sender/receiver overhead and throughput window (SO_n, RO_n, ST_n, RT_n)
#: unless the scenario sets `throughput_window`; the manifest records the one used.
DEFAULT_THROUGHPUT_WINDOW = 100

#: `cpu.parquet`: one row per CPU sample of an agent (its own process) or of the broker
#: monitor (the broker's process tree on its host), every `cpu_sample` interval plus one at
#: the start and one at the end. `t_ns` is the sampler's host clock (agents.streams.clock),
#: `cpu_ns` the user + system CPU time used since the process started (monotone), and
#: `messages` the role's running count when it was taken: sent for producers and
#: requesters, received for consumers and responders, null for the monitor.
#: `loop_run_ns` and `loop_wait_ns` are the kernel's account of the agent's loop thread
#: (/proc/<pid>/task/<tid>/schedstat, monotone): time on a CPU, and time runnable but
#: waiting for one; whatever else passed it was blocked in a call. Null for the monitor,
#: where the kernel keeps no such account, and in files written before they existed
#: (which lack the two columns).
CPU = pa.schema(
    [
        pa.field("t_ns", pa.int64(), nullable=False),
        pa.field("cpu_ns", pa.int64(), nullable=False),
        pa.field("messages", pa.int64()),
        pa.field("loop_run_ns", pa.int64()),
        pa.field("loop_wait_ns", pa.int64()),
    ]
)
