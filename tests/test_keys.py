"""Message keys (formats.keys) without a process: the draws' shares and determinism, the
ring's slots keyed once so that a message's key is the one the analysis derives, and the
scenario's forms of `keys`."""

from __future__ import annotations

import numpy as np
import pytest

from sixnines.agents.recording import PiecePool
from sixnines.agents.schedule import Pieces
from sixnines.agents.streams import SizedOutStream
from sixnines.drivers.base import Framing, Sender
from sixnines.formats.keys import (
    KEY_OFFSET,
    MAX_PERIOD,
    MIN_PERIOD,
    KeySpace,
    keyed_slots,
    keys_of,
    message_keys,
    period,
    write_keys,
)
from sixnines.formats.payload import HEADER_STRUCT, build_frames
from sixnines.formats.sizes import CHOICES, DrawnSizes, Sizes, sized_slots
from sixnines.orchestrator.scenario.keys import parse_keys

ZIPF = KeySpace(100, 1.1)


def test_zipf_shares_follow_the_distribution_within_one_draw():
    drawn = keys_of(ZIPF, seed=7, producer_id=3, length=MAX_PERIOD)
    shares = np.bincount(drawn, minlength=ZIPF.count) / len(drawn)
    expected = ZIPF.probabilities()
    assert np.all(np.abs(shares - expected) <= 1 / MAX_PERIOD + 1e-12)
    assert shares[0] == shares.max() and shares[0] > 5 * shares[20]  # the hot key


def test_uniform_keys_are_drawn_equally():
    drawn = keys_of(KeySpace(16), seed=1, producer_id=0, length=1024)
    assert np.all(np.bincount(drawn, minlength=16) == 64)


def test_draws_are_the_same_for_a_seed_and_differ_across_seeds_and_connections():
    one = keys_of(ZIPF, seed=5, producer_id=2, length=512)
    assert np.array_equal(one, keys_of(ZIPF, seed=5, producer_id=2, length=512))
    assert not np.array_equal(one, keys_of(ZIPF, seed=6, producer_id=2, length=512))
    assert not np.array_equal(one, keys_of(ZIPF, seed=5, producer_id=3, length=512))


def test_the_period_shrinks_with_the_message_and_stays_a_power_of_two():
    sizes = [32, 1024, 64 << 10, 1 << 20]
    periods = [period(size) for size in sizes]
    assert periods[0] == MAX_PERIOD and periods[-1] == MIN_PERIOD
    assert periods == sorted(periods, reverse=True)
    assert all(p & (p - 1) == 0 for p in periods)


@pytest.mark.parametrize(("slots", "count", "key_period", "expected"), [
    (40_000, 10**6, 4096, 36_864),  # rounded down to whole periods
    (4, 10**6, 16, 16),  # at least one period
    (40_000, 3_000, 4096, 3_000),  # the whole schedule: no slot reused
])
def test_a_keyed_ring_holds_whole_periods_or_the_whole_schedule(slots, count, key_period,
                                                                 expected):
    assert keyed_slots(slots, count, key_period) == expected


def test_each_slot_carries_the_key_the_analysis_derives_for_its_messages():
    prefix, size, key_period, slots = b"PFX", 64, 16, 48
    frames = build_frames(prefix, size, slots, seed=1)
    drawn = keys_of(ZIPF, seed=9, producer_id=4, length=key_period)
    write_keys(frames, slots, len(prefix), drawn)
    at = len(prefix) + KEY_OFFSET
    in_ring = frames.reshape(slots, -1)[:, at : at + 4].copy().view("<u4").ravel()
    seq = np.arange(5 * slots)  # message seq goes out of slot seq % slots
    derived = message_keys(ZIPF, 9, key_period, np.full(len(seq), 4), seq)
    assert np.array_equal(in_ring[seq % slots], derived)


class Collecting(Sender):
    """Keeps every byte sent."""

    def __init__(self) -> None:
        self.sent = bytearray()

    def send(self, frames: memoryview, count: int) -> None:
        self.sent += frames

    def close(self) -> None:
        pass


def test_a_ring_of_sizes_that_vary_carries_each_message_s_key_and_size():
    """Every message of a keyed ring of varying sizes goes out at the size and with the key
    (in its body, and named by its size's framing) the analysis derives for it."""
    mix = Sizes(CHOICES, values=(40, 300, 100_000), weights=(0.5, 0.4, 0.1))
    key_period = period(mix.largest)
    drawn_sizes = DrawnSizes(mix, run_seed=2, key_period=key_period)
    producer, count = 3, 2 * drawn_sizes.slots + 7  # the ring goes round twice
    assert drawn_sizes.slots % key_period == 0 and sized_slots(mix.largest) % key_period

    def framing_of(size: int) -> Framing:  # a prefix naming the key and the size
        prefixes = tuple(b"%s|%06d|" % (ZIPF.name(index).encode(), size)
                         for index in range(ZIPF.count))
        return Framing(prefixes[0], b"\n", prefixes)

    sender = Collecting()
    pool = PiecePool(Pieces("fixed", 1e9, count), count, producer, None)
    stream = SizedOutStream(sender, framing_of, drawn_sizes.ring(producer), pool, producer,
                            seed=1, keys=keys_of(ZIPF, 2, producer, key_period))
    stream.arm(0)
    stream.pump(10**12)
    while stream.next < count:
        stream.pump(10**12)
    seqs = np.arange(count)
    keys = message_keys(ZIPF, 2, key_period, np.full(count, producer), seqs)
    sizes = drawn_sizes.column(np.full(count, producer), seqs)
    at, prefix_len = 0, len(framing_of(64).prefix)
    for seq in seqs.tolist():
        name, size = bytes(sender.sent[at : at + prefix_len]).decode().split("|")[:2]
        body = at + prefix_len
        key = int.from_bytes(sender.sent[body + KEY_OFFSET : body + KEY_OFFSET + 4], "little")
        assert HEADER_STRUCT.unpack_from(sender.sent, body)[:2] == (producer, seq)
        assert (name, int(size), key) == (ZIPF.name(int(keys[seq])), sizes[seq], keys[seq])
        at = body + int(size) + 1
    assert at == len(sender.sent)


@pytest.mark.parametrize(("written", "canonical"), [
    ("none", "none"), (None, "none"), ({"count": 10}, "count=10"),
    ({"count": 1000, "zipf": 1.1}, "count=1000,zipf=1.1"), ("count=5, zipf=2", "count=5,zipf=2"),
])
def test_every_form_reads_as_one_canonical_text(written, canonical):
    assert parse_keys(written) == canonical
    space = KeySpace.parse(canonical)
    assert (space.text() if space else "none") == canonical
