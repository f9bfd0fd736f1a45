"""Message sizes that vary: a distribution, and the sizes a sender's ring draws from it.

A distribution is one of: uniform between two sizes (both included), lognormal by its
median and 99th percentile (truncated to [the header, its 99.999th percentile], so it has
a largest size a ring and a system can hold), weighted choices, or the sizes of a user's
file (each line one size, drawn with equal weight). The controller reads a file; what
travels to agents (`to_message`) is already numbers.

Sizes are drawn before the run, never per message: a sender's ring has `sized_slots`
frames of its own sizes, drawn from its seed (`ring_sizes`), and message `seq` has the
size of slot `seq % slots` — the same on every run with that seed, and computable by
anyone who knows the distribution, the producer's seed and the run's key period (its
receivers' records do). With keys (formats.keys) the ring holds whole periods of them, so
each slot keeps one key as well as one size, and no size is below the keyed header.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sixnines.formats.keys import MIN_KEYED_SIZE, whole_periods
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

    def mean(self, floor: int) -> float:
        """The mean size drawn (`draw`'s, a lognormal's below `floor` raised to it): what
        a count of bytes is in messages."""
        if self.kind == UNIFORM:
            return (self.low + self.high) / 2
        if self.kind == LOGNORMAL:  # E[min(max(X, a), b)] of X = exp(mu + sigma Z)
            mu, sigma = math.log(self.median), self.sigma
            low, high = max(floor, self.smallest), self.largest
            alpha, beta = ((math.log(x) - mu) / sigma for x in (low, high))
            inside = math.exp(mu + sigma * sigma / 2) * (_cdf(beta - sigma) - _cdf(alpha - sigma))
            return low * _cdf(alpha) + inside + high * (1 - _cdf(beta))
        return float(np.average(self.values, weights=self.weights))

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


def _cdf(z: float) -> float:
    """The standard normal's CDF."""
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def sized_slots(largest: int, key_period: int = 1) -> int:
    """How many frames a ring of sizes up to `largest` holds (the sizes' period): with
    keys, whole periods of `key_period` keys."""
    return whole_periods(max(MIN_RING_SLOTS, min(MAX_RING_SLOTS, RING_BYTES // largest)),
                         key_period)


def ring_sizes(sizes: Sizes, seed: int, floor: int, slots: int) -> np.ndarray:
    """The sizes of a sender's `slots` ring slots, drawn from its seed: message `seq` has
    size `ring_sizes(...)[seq % slots]`."""
    rng = np.random.default_rng([seed, SIZES_STREAM])
    return sizes.draw(slots, rng, floor)


def sizes_of(ring: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The size of each message numbered `seq` of a sender with this ring (int32)."""
    return ring[seq % len(ring)].astype(np.int32)


def sender_seed(run_seed: int, producer_id: int) -> int:
    """The seed of a sender's ring (its fill and its sizes), from the run's."""
    return run_seed * 1000 + producer_id


class DrawnSizes:
    """Every producer's ring of sizes in a run, each drawn once when first asked: the
    size of any message, by its producer and number, on either side of the run. A keyed
    run's (`key_period`: the keys each connection drew) holds whole periods of keys, its
    sizes none below the keyed header."""

    def __init__(self, sizes: Sizes, run_seed: int, key_period: int | None = None) -> None:
        self.sizes = sizes
        self.run_seed = run_seed
        self.slots = sized_slots(sizes.largest, key_period or 1)
        self.floor = HEADER_SIZE if key_period is None else MIN_KEYED_SIZE
        self._rings: dict[int, np.ndarray] = {}

    def ring(self, producer_id: int) -> np.ndarray:
        ring = self._rings.get(producer_id)
        if ring is None:
            ring = self._rings[producer_id] = ring_sizes(
                self.sizes, sender_seed(self.run_seed, producer_id), self.floor, self.slots)
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
