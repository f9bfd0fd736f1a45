"""What a message carries after its header: the fill, as a byte stream cut into messages.

Random bytes (the default) defeat every compressor; production data does not, and a broker
that compresses (Kafka batches, a zstd link) wins or loses on that. So the fill is one of
`random`, `zeros`, `text` (English-like words of our own list), a user's sample `file`,
or `compressible` to a target ratio. A sender's ring takes consecutive cuts of the stream,
one per message (formats.payload.build_frames): it is all built before the run starts.

The ratio is compressed size / original size of the fills (headers and driver framing
excluded: the header is stamped at send time), for gzip (zlib level 6, Kafka's default),
zstd (level 3, Kafka's default) and lz4 (frame format, default level); `measured_ratios`
takes those installed (gzip always: zlib is in the standard library).
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

RANDOM, ZEROS, TEXT, FILE, COMPRESSIBLE = "random", "zeros", "text", "file", "compressible"
KINDS = (RANDOM, ZEROS, TEXT, FILE, COMPRESSIBLE)
#: Largest sample file: a ring holds at most a few MiB of frames, so more would not be sent
#: (and the file travels to every agent in its `prepare` line).
MAX_SAMPLE_BYTES = 4 << 20
#: How far a `compressible` fill's measured ratio may be from its target, for each codec,
#: on a ring of at least MIN_TOLERANCE_BYTES of fill (below, the codecs' own framing of a
#: few dozen bytes weighs in).
RATIO_TOLERANCE = 0.02
MIN_TOLERANCE_BYTES = 64 << 10
#: A compressible fill is blocks of this many bytes, each random bytes then zeros: long
#: enough that a zero run costs every codec a few bytes, short enough to mix within a ring.
BLOCK = 1024
#: Measured on 4 MiB fills: the mean of the three codecs' ratios is about
#: RANDOM_SHARE_COST + (1 + RANDOM_SHARE_SLOPE) × the random share (their framing and the
#: zero runs' matches); the share is set so that the mean hits the target.
RANDOM_SHARE_COST = 0.0047
RANDOM_SHARE_SLOPE = 0.002


@dataclass(frozen=True)
class Fill:
    """A fill as the controller sends it to agents (`to_message`, `from_message`)."""

    kind: str = RANDOM
    ratio: float | None = None  # compressible: the target, compressed / original
    sample: bytes = b""  # file: the user's sample data

    def to_message(self) -> dict:
        message: dict = {"kind": self.kind}
        if self.ratio is not None:
            message["ratio"] = self.ratio
        if self.sample:
            message["sample"] = base64.b64encode(self.sample).decode("ascii")
        return message

    @classmethod
    def from_message(cls, message: dict) -> Fill:
        sample = message.get("sample")
        return cls(kind=message["kind"], ratio=message.get("ratio"),
                   sample=base64.b64decode(sample) if sample else b"")

    def describe(self) -> str:
        """In words, as the manifest and the console show it."""
        if self.kind == COMPRESSIBLE:
            return f"compressibility {self.ratio:g}"
        if self.kind == FILE:
            return f"file ({len(self.sample):,} bytes)"
        return self.kind

    def stream(self, nbytes: int, seed: int) -> np.ndarray:
        """The first `nbytes` of this fill's stream (uint8), the same for the same seed."""
        rng = np.random.default_rng(seed)
        if self.kind == RANDOM:
            return rng.integers(0, 256, size=nbytes, dtype=np.uint8)
        if self.kind == ZEROS:
            return np.zeros(nbytes, dtype=np.uint8)
        if self.kind == TEXT:
            return _cycled(english_like(min(nbytes, MAX_SAMPLE_BYTES), rng), nbytes)
        if self.kind == FILE:
            return _cycled(np.frombuffer(self.sample, dtype=np.uint8), nbytes)
        if self.kind == COMPRESSIBLE and self.ratio is not None:
            return compressible(self.ratio, nbytes, rng)
        raise ValueError(f"unknown fill {self.kind!r} (one of {', '.join(KINDS)})")


RANDOM_FILL = Fill()


def _cycled(data: np.ndarray, nbytes: int) -> np.ndarray:
    """`data` repeated to `nbytes` (a sample shorter than the ring starts over)."""
    if data.size == 0:
        raise ValueError("the fill's sample is empty")
    return np.resize(data, nbytes)


def compressible(ratio: float, nbytes: int, rng: np.random.Generator) -> np.ndarray:
    """Blocks of BLOCK bytes, each a run of random bytes then zeros, the random share set
    so that the codecs' ratio is `ratio` (random rounding per block keeps shares between
    whole bytes)."""
    share = min(1.0, max(0.0, (ratio - RANDOM_SHARE_COST) / (1 + RANDOM_SHARE_SLOPE)))
    blocks = -(-nbytes // BLOCK)
    randoms = np.floor(share * BLOCK + rng.random(blocks)).astype(np.int64)
    noise = rng.integers(0, 256, size=(blocks, BLOCK), dtype=np.uint8)
    noise[np.arange(BLOCK)[None, :] >= randoms[:, None]] = 0
    return noise.reshape(-1)[:nbytes]


#: Common English words, most frequent first; `english_like` draws them Zipf-like, so the
#: text compresses as prose does (about 0.3–0.4 with gzip), not as a repeated phrase.
_WORD_TEXT = (
    "the of and to a in is it you that he was for on are with as his they be at one have "
    "this from or had by hot word but what some we can out other were all there when up use "
    "your how said an each she which do their time if will way about many then them write "
    "would like so these her long make thing see him two has look more day could go come did "
    "number sound no most people my over know water than call first who may down side been "
    "now find any new work part take get place made live where after back little only round "
    "man year came show every good me give our under name very through just form sentence "
    "great think say help low line differ turn cause much mean before move right boy old too "
    "same tell does set three want air well also play small end put home read hand port "
    "large spell add even land here must big high such follow act why ask men change went "
    "light kind off need house picture try us again animal point mother world near build "
    "self earth father head stand own page should country found answer school grow study "
    "still learn plant cover food sun four between state keep eye never last let thought "
    "city tree cross farm hard start might story saw far sea draw left late run while press "
    "close night real life few north open seem together next white children begin got walk "
    "example ease paper group always music those both mark often letter until mile river car "
    "feet care second book carry took science eat room friend began idea fish mountain stop "
    "once base hear horse cut sure watch color face wood main enough plain girl usual young "
    "ready above ever red list though feel talk bird soon body dog family direct pose leave "
    "song measure door product black short numeral class wind question happen complete ship "
    "area half rock order fire south problem piece told knew pass since top whole king space "
    "heard best hour better true during hundred five remember step early hold west ground "
    "interest reach fast verb sing listen six table travel less morning ten simple several "
    "vowel toward war lay against pattern slow center love person money serve appear road "
    "map rain rule govern pull cold notice voice unit power town fine certain fly fall lead "
    "cry dark machine note wait plan figure star box noun field rest correct able pound done "
    "beauty drive stood contain front teach week final gave green oh quick develop ocean "
    "warm free minute strong special mind behind clear tail produce fact street inch "
    "multiply nothing course stay wheel full force blue object decide surface deep moon "
    "island foot system busy test record boat common gold possible plane stead dry wonder "
    "laugh thousand ago ran check game shape equate miss brought heat snow tire bring yes "
    "distant fill east paint language among"
)
WORDS = tuple(_WORD_TEXT.split())
_SENTENCE_WORDS = (4, 18)  # shortest and longest sentence, in words
_LOWER = np.array(WORDS, dtype=object)
_CAPITAL = np.array([word.capitalize() for word in WORDS], dtype=object)


def english_like(nbytes: int, rng: np.random.Generator) -> np.ndarray:
    """Exactly `nbytes` of English-like text: sentences of Zipf-drawn words, capitalised,
    ending in a full stop, a comma in the middle of a long one (built by numpy indexing:
    a sender builds megabytes of it per connection before the start)."""
    weights = 1.0 / np.arange(1, len(WORDS) + 1)
    count = nbytes // 4 + 2 * _SENTENCE_WORDS[1]  # words of 1+ letters and a separator
    drawn = rng.choice(len(WORDS), size=count, p=weights / weights.sum())
    lengths = rng.integers(*_SENTENCE_WORDS, endpoint=True, size=count // _SENTENCE_WORDS[0])
    ends = np.cumsum(lengths)
    lengths, ends = lengths[ends <= count], ends[ends <= count]
    starts = ends - lengths
    words = _LOWER[drawn[: ends[-1]]]
    words[starts] = _CAPITAL[drawn[starts]]
    separators = np.full(words.size, " ", dtype=object)
    long = lengths > 2 * _SENTENCE_WORDS[0]
    separators[starts[long] + lengths[long] // 2] = ", "
    separators[ends - 1] = ". "
    text = "".join(np.stack([words, separators], axis=1).ravel().tolist())
    return _cycled(np.frombuffer(text.encode("ascii"), dtype=np.uint8), nbytes)


def _codecs() -> dict[str, Callable[[bytes], bytes]]:
    """The compressors installed, by name (zstd and lz4 come with the `compression` extra)."""
    codecs: dict[str, Callable[[bytes], bytes]] = {"gzip": lambda data: zlib.compress(data, 6)}
    try:
        import zstandard
    except ImportError:
        pass
    else:
        codecs["zstd"] = zstandard.ZstdCompressor(level=3).compress
    try:
        import lz4.frame
    except ImportError:
        pass
    else:
        codecs["lz4"] = lz4.frame.compress
    return codecs


def measured_ratios(fills: bytes | memoryview) -> dict[str, float]:
    """Compressed / original size of `fills` as one batch, for each codec installed."""
    data = bytes(fills)
    if not data:
        return {}
    return {name: round(len(compress(data)) / len(data), 4)
            for name, compress in _codecs().items()}
