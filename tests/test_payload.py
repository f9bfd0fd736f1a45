"""The message header and the frame layouts built on it (formats/payload.py)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from sixnines.formats.payload import HEADER, HEADER_SIZE, build_frames, frame_dtype

# producer_id u32, seq u64, intended_ns i64, sent_ns i64, packed little-endian
OFFSETS = {"producer_id": 0, "seq": 4, "intended_ns": 12, "sent_ns": 20}
PACKED = struct.Struct("<IQqq")


def test_header_is_28_packed_bytes_with_the_documented_offsets():
    assert HEADER.itemsize == HEADER_SIZE == 28 == PACKED.size
    assert list(HEADER.names) == list(OFFSETS)
    for name, offset in OFFSETS.items():
        assert HEADER.fields[name][1] == offset
    assert HEADER.fields["producer_id"][0] == np.dtype("<u4")
    assert HEADER.fields["seq"][0] == np.dtype("<u8")
    assert HEADER.fields["intended_ns"][0] == np.dtype("<i8")
    assert HEADER.fields["sent_ns"][0] == np.dtype("<i8")


def test_header_bytes_match_struct_packing():
    header = np.zeros(1, dtype=HEADER)
    header[0] = (7, 2**40 + 3, -5, 1_234_567_890_123)
    assert header.tobytes() == PACKED.pack(7, 2**40 + 3, -5, 1_234_567_890_123)


@pytest.mark.parametrize("size", [28, 64, 1000])
def test_frame_dtype_places_fields_after_the_prefix(size):
    prefix_len = 4
    dtype = frame_dtype(prefix_len, size)
    assert dtype.itemsize == prefix_len + size
    for name, offset in OFFSETS.items():
        assert dtype.fields[name][1] == prefix_len + offset


def test_frame_dtype_without_prefix_matches_the_header_offsets():
    dtype = frame_dtype(0, 64)
    assert dtype.itemsize == 64
    for name, offset in OFFSETS.items():
        assert dtype.fields[name][1] == offset


def test_frame_dtype_reads_and_writes_header_fields_in_a_batch():
    prefix, size, count = b"\xaa\xbb\xcc\xdd", 40, 3
    buf = np.zeros(count * (len(prefix) + size), dtype=np.uint8)
    frames = buf.view(frame_dtype(len(prefix), size))
    assert len(frames) == count
    frames["producer_id"] = 9
    frames["seq"] = [10, 11, 12]
    frames["intended_ns"] = [100, 200, 300]
    frames["sent_ns"] = -1
    raw = buf.tobytes()
    for k in range(count):
        start = k * (len(prefix) + size) + len(prefix)
        assert PACKED.unpack_from(raw, start) == (9, 10 + k, 100 * (k + 1), -1)


@pytest.mark.parametrize("size", [0, 1, 27])
def test_sizes_below_the_header_are_refused(size):
    with pytest.raises(ValueError, match="28"):
        frame_dtype(4, size)


@pytest.mark.parametrize("size", [1, 27])
def test_build_frames_refuses_sizes_below_the_header(size):
    with pytest.raises(ValueError):
        build_frames(b"\x00\x00\x00\x00", size, 2, seed=0)


def test_build_frames_exact_length_prefix_and_zeroed_header():
    prefix, size, count = b"\x01\x02\x03\x04", 64, 50
    stride = len(prefix) + size
    buf = build_frames(prefix, size, count, seed=1)
    assert buf.dtype == np.uint8
    assert buf.nbytes == count * stride
    frames = buf.reshape(count, stride)
    assert (frames[:, : len(prefix)] == np.frombuffer(prefix, np.uint8)).all()
    assert not frames[:, len(prefix) : len(prefix) + HEADER_SIZE].any()
    # the fill is random, not zero
    assert frames[:, len(prefix) + HEADER_SIZE :].any()


def test_build_frames_without_prefix():
    buf = build_frames(b"", 28, 10, seed=3)
    assert buf.nbytes == 280
    assert not buf.any()  # a message of exactly the header size is all header


def test_fill_is_incompressible():
    prefix, size = b"\x00\x00\x00\x00", 64
    stride = len(prefix) + size
    count = (64 * 1024) // (size - HEADER_SIZE) + 1
    frames = build_frames(prefix, size, count, seed=42).reshape(count, stride)
    fill = frames[:, len(prefix) + HEADER_SIZE :].tobytes()[: 64 * 1024]
    assert len(fill) == 64 * 1024
    assert len(zlib.compress(fill, 9)) > 0.95 * len(fill)


def test_seeds_make_the_fill_reproducible_and_distinct():
    a = build_frames(b"P", 100, 20, seed=5)
    b = build_frames(b"P", 100, 20, seed=5)
    c = build_frames(b"P", 100, 20, seed=6)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_every_frame_has_its_own_fill():
    frames = build_frames(b"", 128, 8, seed=9).reshape(8, 128)
    fills = {bytes(row[HEADER_SIZE:]) for row in frames}
    assert len(fills) == 8


def test_frames_carry_the_driver_suffix_after_the_exact_size():
    prefix, suffix, size, count = b"PUB x 64\r\n", b"\r\n", 64, 5
    buf = build_frames(prefix, size, count, seed=4, suffix=suffix)
    stride = len(prefix) + size + len(suffix)
    assert len(buf) == count * stride
    frames = buf.reshape(count, stride)
    for frame in frames:
        assert bytes(frame[: len(prefix)]) == prefix
        assert bytes(frame[-len(suffix):]) == suffix
    view = buf.view(frame_dtype(len(prefix), size, len(suffix)))
    assert len(view) == count and (view["seq"] == 0).all()
