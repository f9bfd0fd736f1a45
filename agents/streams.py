"""The hot path: stamping and sending frames on schedule, and recording what arrives.

Nothing here allocates per message, logs, or computes statistics (docs/design.md rule 4). An
`OutStream` owns a ring of pre-built frames (header + random fill) and writes only the
header fields into it; every message already due goes out in one `send` (coalescing), or,
in throughput mode (`rate: max`), the next batch goes out at once (`blast`). Keys, when
the workload has them, are written into the ring's slots once, before the start
(formats.keys). An `Inbox` copies the headers of whatever arrived together into
preallocated columns with a handful of numpy slice copies, stamped with one receive
time. Both record into buffers from a pool (agents.recording): once a chunk, a buffer is
handed over and the next taken, an attribute swap, never a wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from sixnines.agents.recording import (
    CHUNK_NS,
    NEVER,
    Piece,
    PiecePool,
    ReceiptPool,
    Receipts,
    Recorder,
    streaming,
)
from sixnines.drivers.base import Framing, Receiver, Sender
from sixnines.formats.fill import RANDOM_FILL, Fill
from sixnines.formats.keys import keyed_slots, slot_keys, write_keys, write_keys_at
from sixnines.formats.payload import (
    HEADER_SIZE,
    HEADER_STRUCT,
    STAMP_OFFSET,
    STAMP_STRUCT,
    build_frames,
    build_sized_frames,
    fills_of,
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
    """One connection's share of a schedule, with its ring of frames.

    The schedule comes in pieces (agents.recording.PiecePool): `next` counts messages
    sent, `base` is the first of the current piece, whose rows the loop indexes; when a
    piece is sent it goes to the recorder and the next, already made, takes its place."""

    def __init__(
        self,
        sender: Sender,
        framing: Framing,
        message_size: int,
        pool: PiecePool,
        producer_id: int,
        seed: int,
        fill: Fill = RANDOM_FILL,
        keys: np.ndarray | None = None,
    ) -> None:
        prefix_len = len(framing.prefix)
        self.stride = framing.stride(message_size)
        self._begin(sender, pool, producer_id, self.stride)
        self.slots = max(1, min(self.count, RING_BYTES // self.stride))
        if keys is not None:  # a slot keeps one key: slots a multiple of the keys drawn
            self.slots = keyed_slots(self.slots, self.count, len(keys))
        self.frames = build_frames(framing.prefix, message_size, self.slots, seed,
                                   framing.suffix, fill)
        if keys is not None:
            write_keys(self.frames, self.slots, prefix_len, keys, framing.key_prefixes)
        self.message_size = message_size
        ring = self.frames.view(frame_dtype(prefix_len, message_size, len(framing.suffix)))
        ring["producer_id"] = producer_id
        self.ring_seq = ring["seq"]
        self.ring_intended = ring["intended_ns"]
        self.ring_sent = ring["sent_ns"]
        self.slot_numbers = np.arange(self.slots, dtype=np.uint64)
        self.wire = self.frames.data
        self.stamp_at = prefix_len + STAMP_OFFSET  # seq/intended/sent within a frame

    def _begin(self, sender: Sender, pool: PiecePool, producer_id: int, largest: int) -> None:
        """What every stream keeps besides its ring (one place, so a kind of stream cannot
        miss one): its sender, the schedule's first piece, where sending stands, and the
        throughput batch, sized by the `largest` frame's bytes."""
        self.producer_id = producer_id
        self.count = pool.count
        self.pool = pool
        self._use(pool.first())
        self.next = 0  # index of the next message to send
        self.batch = max(1, min(BLAST_MESSAGES, BLAST_BYTES // largest))
        self.use_sender(sender)

    def use_sender(self, sender: Sender) -> None:
        """Send on `sender` from the next message on (at the start, and after reconnecting)."""
        self.sender = sender
        self.settle = sender.settle  # bound once: called after every batch in throughput mode
        self.first_on_sender = self.next  # the first message sent on the current sender

    def fills(self) -> bytes:
        """The ring's fills end to end, headers and framing aside (to measure them)."""
        return fills_of(self.frames, self.stamp_at - STAMP_OFFSET, self.message_size,
                        self.slots)

    def _use(self, piece: Piece) -> None:
        self.piece = piece
        self.intended, self.sent = piece.intended, piece.sent
        self.intended_at, self.sent_at = piece.intended_at, piece.sent_at
        self.base, self.length = piece.start, piece.length

    def _turn(self) -> None:
        """The piece is sent: the pool takes it and gives the next (once per chunk)."""
        piece = self.pool.turn(self.piece, self.length)
        if piece is not None:
            self._use(piece)

    def close(self) -> None:
        """After the loop: hand over what was sent of the current piece."""
        self.pool.close(self.piece, self.next - self.base)

    def arm(self, t0: int) -> None:
        """Make the schedule absolute: called once, before the start instant arrives."""
        self.pool.arm(t0)

    def pump(self, now: int) -> None:
        """Send every message due at `now` in one write (up to the end of the ring or of
        the piece)."""
        i = self.next
        r = i - self.base
        intended = self.intended_at
        if r >= self.length or intended[r] > now:
            return
        k0 = i % self.slots
        limit = min(self.length, r + self.slots - k0)
        s = r + 1
        while s < limit and intended[s] <= now:
            s += 1
        k1 = k0 + s - r
        if s - r <= SCALAR_BATCH:  # the usual case below saturation: no numpy calls
            wire, stride, sent_at = self.wire, self.stride, self.sent_at
            sent_ns = clock()
            at = k0 * stride + self.stamp_at
            for row in range(r, s):
                pack_stamp(wire, at, i, intended[row], sent_ns)
                sent_at[row] = sent_ns
                i += 1
                at += stride
        else:
            np.add(self.slot_numbers[k0:k1], i - k0, out=self.ring_seq[k0:k1])
            self.ring_intended[k0:k1] = self.intended[r:s]
            sent_ns = clock()
            self.ring_sent[k0:k1] = sent_ns
            self.sent[r:s] = sent_ns
        self.sender.send(self.wire[k0 * self.stride : k1 * self.stride], s - r)
        self.next = self.base + s
        if s == self.length:
            self._turn()

    def blast(self) -> None:
        """Throughput mode: send the next batch now (up to the end of the ring) and wait
        for the system's acknowledgement of it, where it gives one (`Sender.settle`).

        There is no schedule: each message's intended time is its send time, so the
        receiver's recv − intended is saturation latency. One stamp per batch, as `pump`
        stamps a coalesced write; batches stay below the analysis' throughput window."""
        i = self.next
        r = i - self.base
        k0 = i % self.slots
        s = min(self.length, r + self.batch, r + self.slots - k0)
        k1 = k0 + s - r
        np.add(self.slot_numbers[k0:k1], i - k0, out=self.ring_seq[k0:k1])
        sent_ns = clock()
        self.ring_intended[k0:k1] = sent_ns
        self.ring_sent[k0:k1] = sent_ns
        self.intended[r:s] = sent_ns
        self.sent[r:s] = sent_ns
        self.sender.send(self.wire[k0 * self.stride : k1 * self.stride], s - r)
        self.next = self.base + s
        if s == self.length:
            self._turn()
        self.settle()

    def send_next_now(self) -> None:
        """Closed loop: send the next message now and measure it from now, as a closed-loop
        tool does (kept only to show the coordinated-omission error next to open loop)."""
        i = self.next
        r = i - self.base
        start = (i % self.slots) * self.stride
        sent_ns = clock()
        pack_stamp(self.wire, start + self.stamp_at, i, sent_ns, sent_ns)
        self.intended_at[r] = sent_ns
        self.sent_at[r] = sent_ns
        self.sender.send(self.wire[start : start + self.stride], 1)
        self.next = i + 1
        if r + 1 == self.length:
            self._turn()

    def due(self) -> int:
        """The next message's intended time."""
        return self.intended_at[self.next - self.base]


class SizedOutStream(OutStream):
    """An `OutStream` whose messages vary in size (formats.sizes): its ring's frames are
    laid end to end at their own lengths, each with the framing of its size, so a batch
    is still one contiguous slice of the ring (`offsets`), and a header is stamped where
    its frame puts it (`stamps`). Kept apart so the one-size stream runs exactly as it
    did: stamping here cannot be a strided slice, so a few messages are packed one by one
    and a larger batch is scattered byte by byte (`stamp_bytes`), the cost the sizes add.
    Keys are written into the slots once, as `OutStream` writes them: the ring of `sizes`
    holds whole periods of `keys` (formats.sizes.sized_slots)."""

    def __init__(
        self,
        sender: Sender,
        framing_of: Callable[[int], Framing],
        sizes: np.ndarray,
        pool: PiecePool,
        producer_id: int,
        seed: int,
        fill: Fill = RANDOM_FILL,
        keys: np.ndarray | None = None,
    ) -> None:
        self._begin(sender, pool, producer_id, int(sizes.max()))
        self.sizes = sizes
        self.slots = len(sizes)  # with keys, whole periods of them (formats.sizes)
        framings = {int(size): framing_of(int(size)) for size in np.unique(sizes)}
        per_slot = [framings[int(size)] for size in sizes]
        frames, offsets = build_sized_frames(
            [(framing.prefix, framing.suffix) for framing in per_slot], sizes, seed, fill)
        if keys is not None:
            _write_sized_keys(frames, offsets[:-1], sizes, framings, keys)
        self.frames = frames
        self.offsets = offsets.tolist()  # ints: slicing with numpy scalars is slower
        prefixes = np.array([len(framing.prefix) for framing in per_slot], dtype=np.int64)
        self.bodies = offsets[:-1] + prefixes  # where each slot's message starts
        self.wire = frames.data
        for at in self.bodies.tolist():
            HEADER_STRUCT.pack_into(self.wire, at, producer_id, 0, 0, 0)
        stamps = self.bodies + STAMP_OFFSET
        self.stamps = stamps.tolist()
        # each slot's stamp bytes (seq, intended, sent), for a batch's one scatter
        self.stamp_bytes = stamps[:, None] + np.arange(STAMP_STRUCT.size, dtype=np.int64)
        self.stamp_values = np.empty((self.slots, 3), dtype="<i8")
        self.slot_numbers = np.arange(self.slots, dtype="<i8")

    def fills(self) -> bytes:
        return b"".join(bytes(self.wire[body + HEADER_SIZE : body + int(size)])
                        for body, size in zip(self.bodies.tolist(), self.sizes, strict=True))

    def _stamp_send(self, i: int, r: int, s: int, k0: int, scheduled: bool) -> None:
        """Stamp rows r..s (messages i.., slots k0..) and send them in one write; unless
        `scheduled` (throughput mode, closed loop), a message's intended time is its send
        time. A few messages are packed one by one; more are scattered into their slots'
        stamp bytes with one numpy assignment (`stamp_bytes`)."""
        n, k1 = s - r, k0 + s - r
        sent_ns = clock()
        if not scheduled:
            self.intended[r:s] = sent_ns
        if n <= SCALAR_BATCH:
            wire, stamps, sent_at, intended = self.wire, self.stamps, self.sent_at, \
                self.intended_at
            for row, k in zip(range(r, s), range(k0, k1), strict=True):
                pack_stamp(wire, stamps[k], i, intended[row], sent_ns)
                sent_at[row] = sent_ns
                i += 1
        else:
            values = self.stamp_values[:n]
            np.add(self.slot_numbers[:n], i, out=values[:, 0])
            values[:, 1] = self.intended[r:s]
            values[:, 2] = sent_ns
            self.frames[self.stamp_bytes[k0:k1]] = values.view(np.uint8)
            self.sent[r:s] = sent_ns
        self.sender.send(self.wire[self.offsets[k0] : self.offsets[k1]], n)
        self.next = self.base + s
        if s == self.length:
            self._turn()

    def pump(self, now: int) -> None:
        i = self.next
        r = i - self.base
        intended = self.intended_at
        if r >= self.length or intended[r] > now:
            return
        limit = min(self.length, r + self.slots - i % self.slots)
        s = r + 1
        while s < limit and intended[s] <= now:
            s += 1
        self._stamp_send(i, r, s, i % self.slots, scheduled=True)

    def blast(self) -> None:
        i = self.next
        r = i - self.base
        k0 = i % self.slots
        self._stamp_send(i, r, min(self.length, r + self.batch, r + self.slots - k0), k0,
                         scheduled=False)
        self.settle()

    def send_next_now(self) -> None:
        i = self.next
        r = i - self.base
        self._stamp_send(i, r, r + 1, i % self.slots, scheduled=False)


def _write_sized_keys(frames: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                      framings: dict[int, Framing], keys: np.ndarray) -> None:
    """Key `keys[k % len(keys)]` into each slot k of a ring of sizes that vary (its frame
    at `starts[k]`), with its size's framing's prefix of that key where the driver names
    the key there: one size's slots at a time, each size's prefixes of one length."""
    keyed = slot_keys(keys, len(sizes))
    for size, framing in framings.items():
        rows = sizes == size
        write_keys_at(frames, starts[rows], len(framing.prefix), keyed[rows],
                      framing.key_prefixes)


class Inbox:
    """Column buffers for received messages, filled one arrival batch at a time; a full
    buffer (or, when chunks are recorded, one open for CHUNK_NS) goes to the recorder and
    the next free one takes its place (agents.recording.ReceiptPool)."""

    def __init__(self, capacity: int, framing: Framing, message_size: int,
                 recorder: Recorder | None = None) -> None:
        prefix_len = len(framing.prefix)
        self.stride = framing.stride(message_size)
        self.frame = frame_dtype(prefix_len, message_size, len(framing.suffix))
        self.buffer = bytearray(max(INBOX_BYTES, 4 * self.stride))
        self.out = memoryview(self.buffer)
        self.prefix_len = prefix_len
        self.pool = ReceiptPool(capacity, recorder)
        self.timed = recorder is not None and streaming()  # chunks closed by time too
        self.deadline = NEVER
        self.count = 0  # recorded in all
        self.overflow = 0  # arrivals beyond capacity: counted, reported, never silently lost
        self._use(self.pool.first())

    def _use(self, box: Receipts) -> None:
        self.box = box
        self.producer_id, self.seq, self.intended = box.producer_id, box.seq, box.intended
        self.sent, self.recv, self.consumer_id = box.sent, box.recv, box.consumer_id
        self.columns_at = box.views
        self.capacity = box.capacity
        box.start = self.count
        self.rows = 0  # in this buffer

    def arm(self, t0: int) -> None:
        """The first chunk closes by time CHUNK_NS after the start."""
        if self.timed:
            self.deadline = t0 + CHUNK_NS

    def _turn(self, now: int) -> bool:
        """Close the buffer and take a free one (False: there is none to take)."""
        box = self.pool.turn(self.box, self.rows)
        if box is None:
            return False
        self._use(box)
        self.deadline = now + CHUNK_NS
        return True

    def close(self) -> None:
        """After the loop: hand over the last buffer's rows."""
        self.pool.close(self.box, self.rows)

    def take(self, receiver: Receiver, consumer_id: int, timeout_ms: int) -> int:
        """Receive one batch from `receiver` and record it; returns how many arrived."""
        n = receiver.receive(self.out, self.stride, timeout_ms)
        if n:
            recv_ns = clock()
            if n <= SCALAR_BATCH and self.rows + n <= self.capacity:
                self._record_few(n, recv_ns, consumer_id)
            else:
                self._record_many(n, recv_ns, consumer_id)
            if recv_ns >= self.deadline:
                self._turn(recv_ns)
        elif self.timed and self.rows and (now := clock()) >= self.deadline:
            self._turn(now)
        return n

    def _record_many(self, n: int, recv_ns: int, consumer_id: int) -> None:
        """Record a batch with numpy slice copies, across buffers when it fills one."""
        frames = np.frombuffer(self.buffer, dtype=self.frame, count=n)
        done = 0
        while True:
            k = self.rows
            m = min(n - done, self.capacity - k)
            end = k + m
            part = frames[done : done + m]
            self.producer_id[k:end] = part["producer_id"]
            self.seq[k:end] = part["seq"]
            self.intended[k:end] = part["intended_ns"]
            self.sent[k:end] = part["sent_ns"]
            self.recv[k:end] = recv_ns
            self.consumer_id[k:end] = consumer_id
            self.rows = end
            self.count += m
            done += m
            if done == n:
                return
            if not self._turn(recv_ns):
                self.overflow += n - done
                return

    def _record_few(self, n: int, recv_ns: int, consumer_id: int) -> None:
        producer_ids, seqs, intended, sent, recv, consumers = self.columns_at
        offset = self.prefix_len
        k = self.rows
        for row in range(k, k + n):
            producer_ids[row], seqs[row], intended[row], sent[row] = unpack_header(
                self.buffer, offset)
            recv[row] = recv_ns
            consumers[row] = consumer_id
            offset += self.stride
        self.rows = k + n
        self.count += n
