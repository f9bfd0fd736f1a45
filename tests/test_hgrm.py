"""formats.hgrm writes what the hdrh package writes for the same histogram, byte for byte
(hdrh is the oracle here; the product no longer walks its buckets in Python)."""

from __future__ import annotations

import io

import numpy as np
import pytest

from sixnines.formats import hdr, hgrm

US = 1000.0


def hdrh_text(counts: np.ndarray) -> str:
    """hdrh's output, its standard deviation scaled like every other value (it leaves it
    in the recorded unit)."""
    histogram = hdr.to_hdrh(counts)
    out = io.BytesIO()
    histogram.output_percentile_distribution(out, US)
    deviation = f"{histogram.get_stddev() / US:12.3f}"
    return "".join(line[:line.index("StdDeviation")] + f"StdDeviation   = {deviation}]\n"
                   if line.startswith("#[Mean") else line
                   for line in out.getvalue().decode("ascii").splitlines(keepends=True))


def _spread(rng: np.random.Generator, n: int, sigma: float) -> np.ndarray:
    return hdr.counts_of(np.clip(rng.lognormal(10, sigma, n), 0, hdr.HIGHEST).astype(np.int64))


def _cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    huge = np.zeros(hdr.COUNTS_LEN, dtype=np.int64)
    huge[[100, 5000, 20000]] = [10**9, 3, 7]
    return {
        "empty": np.zeros(hdr.COUNTS_LEN, dtype=np.int64),
        "one zero": hdr.counts_of(np.array([0])),
        "one value": hdr.counts_of(np.array([5])),
        "one bucket": hdr.counts_of(np.full(10, 123_456)),
        "the highest": hdr.counts_of(np.array([1, hdr.HIGHEST])),
        **{f"{n} spread": _spread(rng, n, 1.5) for n in (2, 3, 100, 20_000)},
        "wide": _spread(rng, 200_000, 4.0),
        "a billion in one bucket": huge,
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_the_same_text_as_hdrh(name: str) -> None:
    counts = _cases()[name]
    assert hgrm.hgrm_text(counts, US) == hdrh_text(counts)


def test_footer_follows() -> None:
    text = hgrm.hgrm_text(hdr.counts_of(np.array([1000])), US, "# exact max = 1.000 us\n")
    assert text.endswith("#[Buckets =           32, SubBuckets     =         2048]\n"
                         "# exact max = 1.000 us\n")
