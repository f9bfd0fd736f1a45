"""Message keys (formats.keys) without a process: the draws' shares and determinism, the
ring's slots keyed once so that a message's key is the one the analysis derives, and the
scenario's forms of `keys`."""

from __future__ import annotations

import numpy as np
import pytest

from sixnines.formats.keys import (
    KEY_OFFSET,
    MAX_PERIOD,
    MIN_PERIOD,
    KeySpace,
    keys_of,
    message_keys,
    period,
    ring_slots,
    write_keys,
)
from sixnines.formats.payload import build_frames
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
    assert ring_slots(slots, count, key_period) == expected


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


@pytest.mark.parametrize(("written", "canonical"), [
    ("none", "none"), (None, "none"), ({"count": 10}, "count=10"),
    ({"count": 1000, "zipf": 1.1}, "count=1000,zipf=1.1"), ("count=5, zipf=2", "count=5,zipf=2"),
])
def test_every_form_reads_as_one_canonical_text(written, canonical):
    assert parse_keys(written) == canonical
    space = KeySpace.parse(canonical)
    assert (space.text() if space else "none") == canonical
