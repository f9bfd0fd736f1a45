"""The hot path: stamping and sending frames on schedule, and recording what arrives.

Nothing here allocates per message, logs, or computes statistics (docs/design.md rule 4). An
`OutStream` owns a ring of pre-built frames (header + random fill) and writes only the
header fields into it; every message already due goes out in one `send` (coalescing), or,
in throughput mode (`rate: max`), the next batch goes out at once (`blast`). An
`Inbox` copies the headers of whatever arrived together into preallocated columns with a
handful of numpy slice copies, stamped with one receive time.
"""

from __future__ import annotations

import time

import numpy as np

from sixnines.agents.schedule import touched
from sixnines.drivers.base import Framing, Receiver, Sender
from sixnines.formats.payload import (
    HEADER_STRUCT,
    STAMP_OFFSET,
    STAMP_STRUCT,
    build_frames,
    frame_dtype,
)

clock = time.perf_counter_ns  # CLOCK_MONOTONIC: one clock for every process on the host

RING_BYTES = 4 << 20
INBOX_BYTES = 4 << 20
BLAST_MESSAGES = 64  # throughput mode's batch: below the analysis' default window (100)
BLAST_BYTES = 64 << 10  # ... and at most this much, so large messages go one or a few a call
SCALAR_BATCH = 4  # up to this many messages, struct + memoryview beat numpy's call overhead
pack_stamp = STAMP_STRUCT.pack_into
unpack_header = HEADER_STRUCT.unpack_from


class OutStream:
    """One connection's share of a schedule, with its ring of frames."""

    def __init__(
        self,
        sender: Sender,
        framing: Framing,
        message_size: int,
        offsets: np.ndarray,
        producer_id: int,
        seed: int,
    ) -> None:
        self.sender = sender
        self.producer_id = producer_id
        prefix_len = len(framing.prefix)
        self.stride = framing.stride(message_size)
        self.count = len(offsets)
        self.slots = max(1, min(self.count, RING_BYTES // self.stride))
        self.frames = build_frames(framing.prefix, message_size, self.slots, seed,
                                   framing.suffix)
        ring = self.frames.view(frame_dtype(prefix_len, message_size, len(framing.suffix)))
        ring["producer_id"] = producer_id
        self.ring_seq = ring["seq"]
        self.ring_intended = ring["intended_ns"]
        self.ring_sent = ring["sent_ns"]
        self.slot_numbers = np.arange(self.slots, dtype=np.uint64)
        self.wire = memoryview(self.frames)
        self.stamp_at = prefix_len + STAMP_OFFSET  # seq/intended/sent within a frame
        self.intended = np.array(offsets, dtype=np.int64)  # ours: arm() shifts it in place
        self.intended_at = memoryview(self.intended)  # scalar reads without numpy overhead
        self.sent = touched(self.count)
        self.sent_at = memoryview(self.sent)
        self.next = 0  # index of the next message to send
        self.batch = max(1, min(BLAST_MESSAGES, BLAST_BYTES // self.stride))
        self.settle = sender.settle  # bound once: called after every batch in throughput mode

    def arm(self, t0: int) -> None:
        """Make the schedule absolute: called once, before the start instant arrives."""
        self.intended += t0

    def pump(self, now: int) -> None:
        """Send every message due at `now` in one write (up to the end of the ring)."""
        i = self.next
        intended = self.intended_at
        if i >= self.count or intended[i] > now:
            return
        k0 = i % self.slots
        limit = min(self.count, i + self.slots - k0)
        j = i + 1
        while j < limit and intended[j] <= now:
            j += 1
        k1 = k0 + j - i
        if j - i <= SCALAR_BATCH:  # the usual case below saturation: no numpy calls
            wire, stride, sent_at = self.wire, self.stride, self.sent_at
            sent_ns = clock()
            at = k0 * stride + self.stamp_at
            for n in range(i, j):
                pack_stamp(wire, at, n, intended[n], sent_ns)
                sent_at[n] = sent_ns
                at += stride
            self.sender.send(wire[k0 * stride : k1 * stride], j - i)
            self.next = j
            return
        np.add(self.slot_numbers[k0:k1], i - k0, out=self.ring_seq[k0:k1])
        self.ring_intended[k0:k1] = self.intended[i:j]
        sent_ns = clock()
        self.ring_sent[k0:k1] = sent_ns
        self.sent[i:j] = sent_ns
        self.sender.send(self.wire[k0 * self.stride : k1 * self.stride], j - i)
        self.next = j

    def blast(self) -> None:
        """Throughput mode: send the next batch now (up to the end of the ring) and wait
        for the system's acknowledgement of it, where it gives one (`Sender.settle`).

        There is no schedule: each message's intended time is its send time, so the
        receiver's recv − intended is saturation latency. One stamp per batch, as `pump`
        stamps a coalesced write; batches stay below the analysis' throughput window."""
        i = self.next
        k0 = i % self.slots
        j = min(self.count, i + self.batch, i + self.slots - k0)
        k1 = k0 + j - i
        np.add(self.slot_numbers[k0:k1], i - k0, out=self.ring_seq[k0:k1])
        sent_ns = clock()
        self.ring_intended[k0:k1] = sent_ns
        self.ring_sent[k0:k1] = sent_ns
        self.intended[i:j] = sent_ns
        self.sent[i:j] = sent_ns
        self.sender.send(self.wire[k0 * self.stride : k1 * self.stride], j - i)
        self.next = j
        self.settle()

    def send_next_now(self) -> None:
        """Closed loop: send the next message now and measure it from now, as a closed-loop
        tool does (kept only to show the coordinated-omission error next to open loop)."""
        i = self.next
        start = (i % self.slots) * self.stride
        sent_ns = clock()
        pack_stamp(self.wire, start + self.stamp_at, i, sent_ns, sent_ns)
        self.intended_at[i] = sent_ns
        self.sent_at[i] = sent_ns
        self.sender.send(self.wire[start : start + self.stride], 1)
        self.next = i + 1


class Inbox:
    """Preallocated columns for received messages, filled one arrival batch at a time."""

    def __init__(self, capacity: int, framing: Framing, message_size: int) -> None:
        prefix_len = len(framing.prefix)
        self.stride = framing.stride(message_size)
        self.frame = frame_dtype(prefix_len, message_size, len(framing.suffix))
        self.buffer = bytearray(max(INBOX_BYTES, 4 * self.stride))
        self.out = memoryview(self.buffer)
        self.capacity = capacity
        self.producer_id = touched(capacity, np.int32)
        self.seq = touched(capacity)
        self.intended = touched(capacity)
        self.sent = touched(capacity)
        self.recv = touched(capacity)
        self.consumer_id = touched(capacity, np.int32)
        self.columns_at = [memoryview(column) for column in (
            self.producer_id, self.seq, self.intended, self.sent, self.recv, self.consumer_id)]
        self.prefix_len = prefix_len
        self.count = 0
        self.overflow = 0  # arrivals beyond capacity: counted, reported, never silently lost

    def take(self, receiver: Receiver, consumer_id: int, timeout_ms: int) -> int:
        """Receive one batch from `receiver` and record it; returns how many arrived."""
        n = receiver.receive(self.out, self.stride, timeout_ms)
        if n:
            recv_ns = clock()
            k = self.count
            room = self.capacity - k
            if n > room:
                self.overflow += n - room
                n = room
            if n <= SCALAR_BATCH:
                self._record_few(n, k, recv_ns, consumer_id)
                return n
            frames = np.frombuffer(self.buffer, dtype=self.frame, count=n)
            end = k + n
            self.producer_id[k:end] = frames["producer_id"]
            self.seq[k:end] = frames["seq"]
            self.intended[k:end] = frames["intended_ns"]
            self.sent[k:end] = frames["sent_ns"]
            self.recv[k:end] = recv_ns
            self.consumer_id[k:end] = consumer_id
            self.count = end
        return n

    def _record_few(self, n: int, k: int, recv_ns: int, consumer_id: int) -> None:
        producer_ids, seqs, intended, sent, recv, consumers = self.columns_at
        offset = self.prefix_len
        for row in range(k, k + n):
            producer_ids[row], seqs[row], intended[row], sent[row] = unpack_header(
                self.buffer, offset)
            recv[row] = recv_ns
            consumers[row] = consumer_id
            offset += self.stride
        self.count = k + n
