"""Message sizes that vary: a distribution, and the sizes a sender's ring draws from it.

A distribution is one of: uniform between two sizes (both included), lognormal by its
median and 99th percentile (truncated to [the header, its 99.999th percentile], so it has
a largest size a ring and a system can hold), weighted choices, or the sizes of a user's
file (each line one size, drawn with equal weight). The controller reads a file; what
travels to agents (`to_message`) is already numbers.

Sizes are drawn before the run, never per message: a sender's ring has `ring_slots`
frames of its own sizes, drawn from its seed (`ring_sizes`), and message `seq` has the
size of slot `seq % slots` — the same on every run with that seed, and computable by
anyone who knows the distribution and the producer's seed (its receivers' records do).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sixnines.formats.payload import HEADER_SIZE

UNIFORM, LOGNORMAL, CHOICES = "uniform", "lognormal", "choices"
#: z of the 99th percentile and of the 99.999th (where a lognormal is cut) of a normal.
Z_P99 = 2.3263478740408408
Z_CUT = 4.264890793922602
#: A ring of varying sizes holds at most this many frames, and about this many bytes of
#: its largest size (but at least MIN_RING_SLOTS frames): the messages cycle through it.
MAX_RING_SLOTS = 1024
MIN_RING_SLOTS = 16
RING_BYTES = 32 << 20
#: Mixed into a sender's seed so its sizes are not drawn from its fill's random stream.
SIZES_STREAM = 0x5123


@dataclass(frozen=True)
class Sizes:
    """A size distribution as numbers: `low`/`high` (uniform), `median`/`p99` (lognormal),
    or `values` with `weights` (weighted choices; a file's sizes with equal weights)."""

    kind: str
    low: int = 0
    high: int = 0
    median: float = 0.0
    p99: float = 0.0
    values: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()

    @property
    def sigma(self) -> float:
        return math.log(self.p99 / self.median) / Z_P99

    @property
    def smallest(self) -> int:
        if self.kind == UNIFORM:
            return self.low
        if self.kind == LOGNORMAL:
            return math.ceil(self.median * math.exp(-Z_CUT * self.sigma))
        return min(self.values)

    @property
    def largest(self) -> int:
        if self.kind == UNIFORM:
            return self.high
        if self.kind == LOGNORMAL:
            return math.floor(self.median * math.exp(Z_CUT * self.sigma))
        return max(self.values)

    def draw(self, n: int, rng: np.random.Generator, floor: int) -> np.ndarray:
        """`n` sizes (int64); a lognormal's below `floor` (the header) are raised to it."""
        if self.kind == UNIFORM:
            return rng.integers(self.low, self.high, size=n, endpoint=True, dtype=np.int64)
        if self.kind == LOGNORMAL:
            drawn = np.rint(rng.lognormal(math.log(self.median), self.sigma, size=n))
            return np.clip(drawn, max(floor, self.smallest), self.largest).astype(np.int64)
        weights = np.asarray(self.weights, dtype=np.float64)
        return np.asarray(self.values, dtype=np.int64)[
            rng.choice(len(self.values), size=n, p=weights / weights.sum())]

    def to_message(self) -> dict:
        if self.kind == UNIFORM:
            return {"kind": UNIFORM, "low": self.low, "high": self.high}
        if self.kind == LOGNORMAL:
            return {"kind": LOGNORMAL, "median": self.median, "p99": self.p99}
        return {"kind": CHOICES, "values": list(self.values), "weights": list(self.weights)}

    @classmethod
    def from_message(cls, message: dict) -> Sizes:
        return cls(kind=message["kind"], low=message.get("low", 0),
                   high=message.get("high", 0), median=message.get("median", 0.0),
                   p99=message.get("p99", 0.0), values=tuple(message.get("values", ())),
                   weights=tuple(message.get("weights", ())))


def ring_slots(largest: int) -> int:
    """How many frames a ring of sizes up to `largest` holds (the sizes' period)."""
    return max(MIN_RING_SLOTS, min(MAX_RING_SLOTS, RING_BYTES // largest))


def ring_sizes(sizes: Sizes, seed: int, floor: int) -> np.ndarray:
    """The sizes of a sender's ring slots, drawn from its seed: message `seq` has size
    `ring_sizes(...)[seq % len(...)]`."""
    rng = np.random.default_rng([seed, SIZES_STREAM])
    return sizes.draw(ring_slots(sizes.largest), rng, floor)


def sizes_of(ring: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The size of each message numbered `seq` of a sender with this ring (int32)."""
    return ring[seq % len(ring)].astype(np.int32)


def sender_seed(run_seed: int, producer_id: int) -> int:
    """The seed of a sender's ring (its fill and its sizes), from the run's."""
    return run_seed * 1000 + producer_id


class DrawnSizes:
    """Every producer's ring of sizes in a run, each drawn once when first asked: the
    size of any message, by its producer and number, on either side of the run."""

    def __init__(self, sizes: Sizes, run_seed: int) -> None:
        self.sizes = sizes
        self.run_seed = run_seed
        self._rings: dict[int, np.ndarray] = {}

    def ring(self, producer_id: int) -> np.ndarray:
        ring = self._rings.get(producer_id)
        if ring is None:
            ring = self._rings[producer_id] = ring_sizes(
                self.sizes, sender_seed(self.run_seed, producer_id), HEADER_SIZE)
        return ring

    def column(self, producer_id: np.ndarray, seq: np.ndarray) -> np.ndarray:
        """Each message's size (int32), one Python step per distinct producer."""
        out = np.empty(len(seq), dtype=np.int32)
        for pid in np.unique(producer_id).tolist():
            rows = producer_id == pid
            out[rows] = sizes_of(self.ring(pid), seq[rows])
        return out


def histogram(drawn: np.ndarray) -> dict[str, int]:
    """Counts of drawn sizes by power-of-two bin: key "2^k" counts sizes in [2^k, 2^(k+1))."""
    bins = np.floor(np.log2(np.maximum(drawn, 1))).astype(np.int64)
    found, counts = np.unique(bins, return_counts=True)
    return {f"2^{int(k)}": int(c) for k, c in zip(found, counts, strict=True)}
