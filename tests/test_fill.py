"""The fill after the header (formats.fill): each kind built into a real ring of frames, its
compression measured as the agents measure it, and the same bytes for the same seed."""

from __future__ import annotations

import numpy as np
import pytest

from sixnines.formats.fill import (
    COMPRESSIBLE,
    FILE,
    MIN_TOLERANCE_BYTES,
    RANDOM,
    RATIO_TOLERANCE,
    TEXT,
    WORDS,
    ZEROS,
    Fill,
    measured_ratios,
)
from sixnines.formats.payload import HEADER_SIZE, build_frames, fills_of

PREFIX, SUFFIX = b"\x01\x02\x03\x04", b"\r\n"
SIZE = 1024
COUNT = -(-MIN_TOLERANCE_BYTES // (SIZE - HEADER_SIZE)) * 2  # twice the tolerance's floor
SAMPLE = bytes(range(256)) * 3 + b"a sample of the user's own data\n"
KINDS = [Fill(), Fill(ZEROS), Fill(TEXT), Fill(FILE, sample=SAMPLE), Fill(COMPRESSIBLE, 0.6)]


def ring_fills(fill: Fill, seed: int = 7, size: int = SIZE, count: int = COUNT) -> bytes:
    frames = build_frames(PREFIX, size, count, seed, SUFFIX, fill)
    return fills_of(frames, len(PREFIX), size, count)


def test_every_codec_is_measured():
    """zstd and lz4 come with the `compression` extra, which the tests install."""
    assert set(measured_ratios(b"x" * 1000)) == {"gzip", "zstd", "lz4"}


@pytest.mark.parametrize("target", [0.02, 0.1, 0.3, 0.6, 0.9, 1.0])
def test_a_compressible_fill_hits_its_target_for_every_codec(target):
    ratios = measured_ratios(ring_fills(Fill(COMPRESSIBLE, target)))
    assert len(ratios) == 3
    for codec, ratio in ratios.items():
        assert abs(ratio - target) <= RATIO_TOLERANCE, (codec, ratio, target)


@pytest.mark.parametrize("fill", KINDS, ids=lambda fill: fill.kind)
def test_the_same_seed_builds_the_same_ring_and_frames_keep_their_framing(fill):
    first, again = ring_fills(fill, seed=3), ring_fills(fill, seed=3)
    assert first == again
    frames = build_frames(PREFIX, SIZE, 4, 3, SUFFIX, fill).reshape(4, -1)
    assert (frames[:, :4] == np.frombuffer(PREFIX, np.uint8)).all()
    assert (frames[:, -2:] == np.frombuffer(SUFFIX, np.uint8)).all()
    assert not frames[:, 4 : 4 + HEADER_SIZE].any()  # the header, stamped when sent


@pytest.mark.parametrize("fill", [Fill(), Fill(TEXT), Fill(COMPRESSIBLE, 0.5)],
                         ids=lambda fill: fill.kind)
def test_another_seed_builds_other_bytes(fill):
    assert ring_fills(fill, seed=3) != ring_fills(fill, seed=4)


def test_random_does_not_compress_and_zeros_do():
    assert min(measured_ratios(ring_fills(Fill())).values()) >= 0.99
    assert max(measured_ratios(ring_fills(Fill(ZEROS))).values()) <= 0.01
    assert ring_fills(Fill(ZEROS)) == bytes(COUNT * (SIZE - HEADER_SIZE))


def test_text_is_sentences_of_the_word_list_and_compresses_as_prose():
    text = ring_fills(Fill(TEXT)).decode("ascii")
    words = text.replace(",", " ").replace(".", " ").lower().split()
    assert set(words[1:-1]) <= set(WORDS)  # the ends may be cut mid-word
    assert len(set(words)) > 100 and ". " in text
    assert 0.2 < measured_ratios(text.encode())["gzip"] < 0.5


def test_a_sample_file_is_cut_into_messages_in_order_and_starts_over():
    fills = ring_fills(Fill(FILE, sample=SAMPLE), size=HEADER_SIZE + 100, count=30)
    assert fills == (SAMPLE * 4)[: 30 * 100]


def test_a_fill_travels_to_agents_whole():
    for fill in [*KINDS, Fill(FILE, sample=bytes(range(256)))]:
        assert Fill.from_message(fill.to_message()) == fill
    assert Fill.from_message({"kind": RANDOM}) == Fill()
