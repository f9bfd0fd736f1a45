"""The message header every sixnines message carries, and the frame layouts built on it.

One codec for every driver (OMB let each driver stamp its own clock; we don't): the
framework writes the header, drivers only move bytes. A frame is the driver's prefix
(e.g. a TCP length word, a pre-encoded PUBLISH command), the message — header, then fill
up to the exact requested size (formats.fill: random unless the workload says otherwise) —
and the driver's suffix (e.g. a protocol's CRLF).
"""

from __future__ import annotations

import struct

import numpy as np

from sixnines.formats.fill import RANDOM_FILL, Fill

HEADER = np.dtype(
    [
        ("producer_id", "<u4"),
        ("seq", "<u8"),
        ("intended_ns", "<i8"),
        ("sent_ns", "<i8"),
    ]
)
"""Packed little-endian header: 28 bytes at the start of every message."""

HEADER_SIZE = HEADER.itemsize
HEADER_STRUCT = struct.Struct("<IQqq")  # the same header, for one message at a time
STAMP_STRUCT = struct.Struct("<Qqq")  # seq, intended_ns, sent_ns: what a sender writes
STAMP_OFFSET = 4  # after producer_id, which a sender's ring holds already
assert HEADER.fields is not None and HEADER.names is not None  # a structured dtype
assert HEADER_STRUCT.size == HEADER_SIZE and HEADER.fields["seq"][1] == STAMP_OFFSET
HEADER_FIELDS, HEADER_NAMES = HEADER.fields, HEADER.names


def frame_dtype(prefix_len: int, message_size: int, suffix_len: int = 0) -> np.dtype:
    """A structured dtype viewing one frame (prefix + message + suffix) of a batch."""
    if message_size < HEADER_SIZE:
        raise ValueError(f"message_size {message_size} is below the {HEADER_SIZE}-byte header")
    names = list(HEADER_NAMES)
    offsets = [prefix_len + HEADER_FIELDS[name][1] for name in names]
    formats = [HEADER_FIELDS[name][0] for name in names]
    return np.dtype(
        {
            "names": names,
            "formats": formats,
            "offsets": offsets,
            "itemsize": prefix_len + message_size + suffix_len,
        }
    )


def build_frames(prefix: bytes, message_size: int, count: int, seed: int,
                 suffix: bytes = b"", fill: Fill = RANDOM_FILL) -> np.ndarray:
    """`count` frames laid end to end: driver prefix, zeroed header, fill, driver suffix.

    The fills are consecutive cuts of the fill's stream (`Fill.stream`), one per frame:
    random by default, so that no compressor (Kafka batches, TLS, zstd links) can shrink
    the payload below its requested size unless the workload asks for a compressible one.
    """
    frame_dtype(len(prefix), message_size)  # refuses sizes below the header
    stride = len(prefix) + message_size + len(suffix)
    buf = np.empty(count * stride, dtype=np.uint8)
    frames = buf.reshape(count, stride)
    frames[:, : len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
    frames[:, stride - len(suffix) :] = np.frombuffer(suffix, dtype=np.uint8)
    body = len(prefix) + HEADER_SIZE
    frames[:, len(prefix) : body] = 0
    length = message_size - HEADER_SIZE
    frames[:, body : body + length] = fill.stream(count * length, seed).reshape(count, length)
    return buf


def fills_of(frames: np.ndarray, prefix_len: int, message_size: int, count: int) -> bytes:
    """The fills of `count` frames built by `build_frames`, end to end (what a compressor
    of a batch of them sees, headers aside)."""
    body = prefix_len + HEADER_SIZE
    return frames.reshape(count, -1)[:, body : prefix_len + message_size].tobytes()


def build_sized_frames(framings: list[tuple[bytes, bytes]], sizes: np.ndarray, seed: int,
                       fill: Fill = RANDOM_FILL) -> tuple[np.ndarray, np.ndarray]:
    """Frames of varying sizes laid end to end, frame k being `framings[k]` (its driver
    prefix and suffix) around a message of `sizes[k]` bytes (zeroed header, fill): the
    buffer, and each frame's offset in it (k + 1 entries: the last is the end). The fills
    are consecutive cuts of one stream, as `build_frames` cuts them."""
    frame_dtype(0, int(sizes.min()))  # refuses sizes below the header
    lengths = np.array([len(prefix) + int(size) + len(suffix)
                        for (prefix, suffix), size in zip(framings, sizes, strict=True)])
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    buf = np.empty(int(offsets[-1]), dtype=np.uint8)
    stream = fill.stream(int((sizes - HEADER_SIZE).sum()), seed)
    taken = 0
    for k, ((prefix, suffix), size) in enumerate(zip(framings, sizes, strict=True)):
        at, body = int(offsets[k]), int(offsets[k]) + len(prefix) + HEADER_SIZE
        length = int(size) - HEADER_SIZE
        buf[at : at + len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
        buf[at + len(prefix) : body] = 0
        buf[body : body + length] = stream[taken : taken + length]
        buf[body + length : int(offsets[k + 1])] = np.frombuffer(suffix, dtype=np.uint8)
        taken += length
    return buf, offsets
