"""Message keys: none, N keys drawn uniformly, or Zipf(s) over N keys.

Production traffic is keyed (a user, an order, a device) and skewed: the key decides a
Kafka partition, a RabbitMQ routing key, a subject, so a hot key concentrates load. The
keys are drawn before the start, from the run's seed, and never in the send loop: each
sending connection (a producer id) cycles through its own `period` pre-drawn keys, so the
key of message `seq` is `keys_of(...)[seq % period]`. A sender's ring holds a multiple of
`period` frames (or the whole schedule), so every ring slot keeps one key for the run and
the key index is written into the frame once (at KEY_OFFSET, the first 4 bytes after the
header), never per message. The analysis derives each message's key the same way from
(producer id, seq) and the record in the manifest.

Draws are stratified: the `period` keys of a connection are the inverse CDF at evenly
spaced points (one random offset), shuffled, so each key's share matches its probability
within 1/period, not within a sampling error.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from sixnines.formats.payload import HEADER_SIZE

NONE = "none"
#: The key index sits right after the header, little-endian (the fill's first 4 bytes).
KEY_OFFSET = HEADER_SIZE
KEY_STRUCT = struct.Struct("<I")
MIN_KEYED_SIZE = HEADER_SIZE + KEY_STRUCT.size
#: Largest keyed message: a ring holds at least MIN_PERIOD frames (16 MiB at this size).
MAX_KEYED_SIZE = 1 << 20
MAX_KEYS = 1 << 16
#: Keys pre-drawn per connection: at most MAX_PERIOD, fewer for large messages so that a
#: ring of a multiple of them stays within about RING_BUDGET bytes.
MAX_PERIOD = 4096
MIN_PERIOD = 16
RING_BUDGET = 4 << 20
FRAMING_ALLOWANCE = 512  # a driver's prefix and suffix, at most (a pre-encoded command)
KEYS_STREAM = 0x6B657973  # "keys": the draws' own random stream of the seed


@dataclass(frozen=True)
class KeySpace:
    """`count` keys, uniform (zipf None) or Zipf with exponent `zipf`."""

    count: int
    zipf: float | None = None

    @property
    def distribution(self) -> str:
        return "uniform" if self.zipf is None else f"zipf({self.zipf:g})"

    def text(self) -> str:
        """The canonical text (a scenario's value, the `prepare` message, run ids)."""
        return f"count={self.count}" + ("" if self.zipf is None else f",zipf={self.zipf:g}")

    @classmethod
    def parse(cls, text: str) -> KeySpace | None:
        """The key space `text` (canonical) names; None for `none`."""
        if text == NONE:
            return None
        fields = dict(part.split("=", 1) for part in text.split(","))
        zipf = fields.get("zipf")
        return cls(int(fields["count"]), None if zipf is None else float(zipf))

    @classmethod
    def of(cls, text: str) -> KeySpace:
        """The key space `text` names, which is not `none` (a record of drawn keys)."""
        space = cls.parse(text)
        if space is None:
            raise ValueError("no key space: messages carried no key")
        return space

    def probabilities(self) -> np.ndarray:
        ranks = np.arange(1, self.count + 1, dtype=np.float64)
        weights = np.ones_like(ranks) if self.zipf is None else ranks ** -self.zipf
        return weights / weights.sum()

    def name(self, index: int) -> str:
        """Key `index` as text of one width for every key (`k007` of 1000): a subject or
        routing key of the same length for every key keeps frames of one stride."""
        return f"k{index:0{len(str(self.count - 1))}d}"


def period(message_size: int) -> int:
    """How many keys each connection pre-draws for messages of `message_size` bytes: a
    power of two, MIN_PERIOD..MAX_PERIOD."""
    fits = RING_BUDGET // (message_size + FRAMING_ALLOWANCE)
    return max(MIN_PERIOD, min(MAX_PERIOD, 1 << max(fits, 1).bit_length() - 1))


def keys_of(space: KeySpace, seed: int, producer_id: int, length: int) -> np.ndarray:
    """Connection `producer_id`'s `length` pre-drawn key indexes (uint32), the same for
    the same seed."""
    rng = np.random.default_rng([KEYS_STREAM, seed, producer_id])
    points = (np.arange(length) + rng.random()) / length
    cdf = np.cumsum(space.probabilities())
    drawn = np.minimum(np.searchsorted(cdf, points, side="right"), space.count - 1)
    return rng.permutation(drawn).astype(np.uint32)


def whole_periods(slots: int, key_period: int) -> int:
    """`slots` rounded down to a multiple of `key_period` (at least one period): a ring
    of that many slots gives slot k the key `k % key_period` for the whole run (a ring of
    one size here; a ring of sizes that vary, formats.sizes.sized_slots)."""
    return max(key_period, slots - slots % key_period)


def keyed_slots(slots: int, count: int, key_period: int) -> int:
    """A keyed ring of one size: `slots` (what the ring would hold) in whole periods, or
    the whole schedule of `count` messages when that is no more (then no slot is
    reused)."""
    if count <= max(slots, key_period):
        return count
    return whole_periods(slots, key_period)


def slot_keys(drawn: np.ndarray, slots: int) -> np.ndarray:
    """The key of each of a ring's `slots` (uint32 LE): slot k carries `drawn[k % period]`."""
    return drawn[np.arange(slots) % len(drawn)].astype("<u4")


def write_keys(frames: np.ndarray, slots: int, prefix_len: int, drawn: np.ndarray,
               key_prefixes: tuple[bytes, ...] = ()) -> None:
    """Write key `drawn[k % len(drawn)]` into slot k of a ring of `slots` frames of one
    size laid end to end (formats.payload.build_frames), at KEY_OFFSET after the driver's
    prefix, and with `key_prefixes` (one per key index, each `prefix_len` long) that key's
    prefix."""
    stride = len(frames) // slots
    write_keys_at(frames, np.arange(slots, dtype=np.int64) * stride, prefix_len,
                  slot_keys(drawn, slots), key_prefixes)


def write_keys_at(frames: np.ndarray, starts: np.ndarray, prefix_len: int, keys: np.ndarray,
                  key_prefixes: tuple[bytes, ...] = ()) -> None:
    """Write key index `keys[k]` (uint32 LE) into the frame at byte `starts[k]` of
    `frames`, at KEY_OFFSET after its `prefix_len`-byte prefix, and with `key_prefixes`
    (one per key index, each `prefix_len` long) that key's prefix as the frame's prefix."""
    at = (starts + prefix_len + KEY_OFFSET)[:, None] + np.arange(KEY_STRUCT.size)
    frames[at] = keys.view(np.uint8).reshape(len(keys), KEY_STRUCT.size)
    if key_prefixes:
        table = np.frombuffer(b"".join(key_prefixes), np.uint8).reshape(-1, prefix_len)
        frames[starts[:, None] + np.arange(prefix_len)] = table[keys]


def drawn_counts(space: KeySpace, seed: int, key_period: int, producer_ids: Iterable[int]
                 ) -> np.ndarray:
    """How often each key was drawn over the connections `producer_ids` (one period each):
    the hottest key is its argmax."""
    counts = np.zeros(space.count, dtype=np.int64)
    for producer in producer_ids:
        counts += np.bincount(keys_of(space, seed, producer, key_period), minlength=space.count)
    return counts


def message_keys(space: KeySpace, seed: int, key_period: int, producer_id: np.ndarray,
                 seq: np.ndarray) -> np.ndarray:
    """The key index of each message (producer id, seq), as its sender drew it."""
    out = np.empty(len(seq), dtype=np.int64)
    for producer in np.unique(producer_id):
        mine = producer_id == producer
        drawn = keys_of(space, seed, int(producer), key_period)
        out[mine] = drawn[seq[mine] % key_period]
    return out
