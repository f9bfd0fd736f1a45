"""Message sizes drawn from a distribution: the same on every run with a seed, the shape
each distribution promises, the ring of frames built from them, and the scenario forms."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from pydantic import ValidationError

from sixnines.drivers.tcp.wire import frame_prefix
from sixnines.formats.payload import HEADER_SIZE, HEADER_STRUCT, build_sized_frames
from sixnines.formats.sizes import (
    CHOICES,
    LOGNORMAL,
    UNIFORM,
    DrawnSizes,
    Sizes,
    histogram,
    ring_sizes,
    sized_slots,
)
from sixnines.orchestrator.scenario.sizes import SizeDistribution, header_problem

WEIGHTED = Sizes(CHOICES, values=(64, 1024, 65536), weights=(0.7, 0.25, 0.05))
MANY = 200_000


def test_a_seed_draws_the_same_ring_every_time_and_another_seed_another():
    slots = sized_slots(65536)
    first = ring_sizes(WEIGHTED, 7, HEADER_SIZE, slots)
    assert np.array_equal(first, ring_sizes(WEIGHTED, 7, HEADER_SIZE, slots))
    assert not np.array_equal(first, ring_sizes(WEIGHTED, 8, HEADER_SIZE, slots))
    assert len(first) == slots == 512


def test_a_message_has_its_producers_ring_slot_size_on_both_sides():
    drawn = DrawnSizes(WEIGHTED, run_seed=3)
    producers = np.array([0, 1, 0, 1, 0], np.int32)
    seqs = np.array([0, 0, 1, 600, 512 + 5], np.int64)
    column = drawn.column(producers, seqs)
    ring0, ring1 = (ring_sizes(WEIGHTED, seed, HEADER_SIZE, 512) for seed in (3000, 3001))
    assert column.tolist() == [ring0[0], ring1[0], ring0[1], ring1[600 % 512], ring0[5]]


def test_uniform_draws_every_size_between_its_bounds_evenly():
    drawn = Sizes(UNIFORM, low=100, high=199).draw(MANY, np.random.default_rng(1),
                                                   HEADER_SIZE)
    assert drawn.min() == 100 and drawn.max() == 199
    assert abs(drawn.mean() - 149.5) < 0.5
    counts = np.bincount(drawn - 100)
    assert counts.min() > 0.8 * MANY / 100


def test_lognormal_has_its_median_and_p99_and_is_cut_at_the_header():
    sizes = Sizes(LOGNORMAL, median=512, p99=16384)
    drawn = sizes.draw(MANY, np.random.default_rng(2), HEADER_SIZE)
    assert abs(np.median(drawn) / 512 - 1) < 0.03
    assert abs(np.percentile(drawn, 99) / 16384 - 1) < 0.08
    assert drawn.min() >= HEADER_SIZE and drawn.max() <= sizes.largest
    assert sizes.largest == math.floor(512 * (16384 / 512) ** (4.264890793922602 /
                                                              2.3263478740408408))


def test_weighted_choices_come_in_their_weights():
    drawn = WEIGHTED.draw(MANY, np.random.default_rng(3), HEADER_SIZE)
    shares = {size: float(np.mean(drawn == size)) for size in (64, 1024, 65536)}
    assert shares == pytest.approx({64: 0.7, 1024: 0.25, 65536: 0.05}, abs=0.01)


def test_the_histogram_counts_sizes_by_power_of_two():
    assert histogram(np.array([64, 100, 127, 128, 1024, 65536])) == {
        "2^6": 3, "2^7": 1, "2^10": 1, "2^16": 1}


def test_a_ring_of_varying_sizes_holds_each_frame_at_its_own_length():
    sizes = np.array([40, 100, 28], np.int64)
    framings = [(frame_prefix(int(size)), b"\r\n") for size in sizes]
    buf, offsets = build_sized_frames(framings, sizes, seed=5)
    assert offsets.tolist() == [0, 46, 152, 186]
    for k, size in enumerate(sizes.tolist()):
        frame = buf[offsets[k] : offsets[k + 1]].tobytes()
        assert frame[:4] == frame_prefix(size) and frame.endswith(b"\r\n")
        assert HEADER_STRUCT.unpack_from(frame, 4) == (0, 0, 0, 0)
        assert len(frame) == 4 + size + 2


def test_every_written_form_reads_into_its_numbers(tmp_path):
    (tmp_path / "sizes.txt").write_text("# sizes seen\n64\n\n1KB\n64\n")
    forms = {
        "uniform": ({"uniform": [64, "4KB"]}, Sizes(UNIFORM, low=64, high=4096)),
        "lognormal": ({"lognormal": {"median": 512, "p99": "16KB"}},
                      Sizes(LOGNORMAL, median=512, p99=16384)),
        "bare weights": ({64: 0.7, "1KB": 0.3},
                         Sizes(CHOICES, values=(64, 1024), weights=(0.7, 0.3))),
        "weighted": ({"weighted": {"1KB": 1, 64: 3}},
                     Sizes(CHOICES, values=(64, 1024), weights=(3.0, 1.0))),
        "file": ({"file": "sizes.txt"},
                 Sizes(CHOICES, values=(64, 1024, 64), weights=(1.0, 1.0, 1.0))),
    }
    for written, expected in forms.values():
        assert SizeDistribution.model_validate(written).sizes(tmp_path) == expected


@pytest.mark.parametrize(("written", "says"), [
    ({"uniform": [64]}, "uniform: must be [LOW, HIGH]"),
    ({"uniform": [1000, 64]}, "LOW must be below HIGH"),
    ({"lognormal": {"median": 512}}, "lognormal: must be {median: SIZE, p99: SIZE}"),
    ({"lognormal": {"median": 512, "p99": 100}}, "p99 must be above the median"),
    ({64: 0}, "weight of 64 must be a number above 0"),
    ({"uniform": [64, 128], "file": "x"}, "a distribution is one of"),
])
def test_a_malformed_distribution_says_what_is_wrong(written, says):
    with pytest.raises(ValidationError, match=re.escape(says)):
        SizeDistribution.model_validate(written)


def test_sizes_below_the_header_are_refused_and_a_lognormal_needs_its_median_above_it():
    assert "smallest size, 10 B" in header_problem(Sizes(UNIFORM, low=10, high=100))
    assert "median 20 B" in header_problem(Sizes(LOGNORMAL, median=20, p99=1024))
    assert header_problem(Sizes(LOGNORMAL, median=64, p99=65536)) is None
    assert header_problem(WEIGHTED) is None


def test_a_file_line_that_is_not_a_size_is_named(tmp_path):
    (tmp_path / "sizes.txt").write_text("64\nlots\n")
    with pytest.raises(ValueError, match="line 2"):
        SizeDistribution.model_validate({"file": "sizes.txt"}).sizes(tmp_path)

