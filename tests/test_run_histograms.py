"""A run's report/histograms.json: what the analysis keeps of each metric's buckets reads
back as it was written, and a file that is not what the analysis writes is refused whole."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sixnines.formats.hdr import COUNTS_LEN
from sixnines.formats.run_histograms import (
    FIELDS,
    HistogramsRefused,
    read_histograms,
    write_histograms,
)
from sixnines.spark_jobs.histograms import Buckets


def test_the_fields_are_the_buckets_the_analysis_merges():
    assert tuple(vars(Buckets.of(np.array([5, 7], dtype=np.int64)))) == FIELDS


def test_a_metric_reads_back_as_written(tmp_path):
    values = np.array([-3, 900, 901, 1_000_000, 10**13], dtype=np.int64)  # clipped both ways
    buckets = Buckets.of(values)
    path = write_histograms(tmp_path / "h.json", {"latency": vars(buckets)})
    read = read_histograms(path)["latency"]
    for field in FIELDS:
        assert np.array_equal(read[field], getattr(buckets, field)), field
    assert (read["negative"], read["too_large"], read["max"]) == (1, 1, 10**13)
    assert Buckets(**read).metric().count == len(values)


def write(tmp_path, body) -> object:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(body))
    return path


GOOD = {"indices": [3, 9], "counts": [1, 2], "sums": [3.0, 27.0], "total": 30.0, "max": 9,
        "negative": 0, "too_large": 0}


@pytest.mark.parametrize(("change", "words"), [
    ({"indices": [9, 3]}, "indices must ascend"),
    ({"indices": [3, COUNTS_LEN]}, "indices must ascend"),
    ({"counts": [1]}, "one length"),
    ({"counts": [1, 0]}, "at least one value"),
    ({"counts": [1, 2.5]}, "whole numbers"),
    ({"sums": [3.0, 1e400]}, "finite"),
    ({"max": None}, "max must be"),
    ({"negative": -1}, "counts"),
    ({"extra": 1}, "exactly"),
])
def test_what_the_analysis_cannot_have_written_is_refused(tmp_path, change, words):
    with pytest.raises(HistogramsRefused, match=words) as refused:
        read_histograms(write(tmp_path, {"metrics": {"latency": {**GOOD, **change}}}))
    assert str(refused.value).startswith(f"{tmp_path / 'h.json'}: metrics.latency: ")


def test_a_file_that_is_no_histograms_is_refused(tmp_path):
    for body in ([], {"metrics": []}, {}):
        with pytest.raises(HistogramsRefused, match="not a run's histograms"):
            read_histograms(write(tmp_path, body))
    (tmp_path / "h.json").write_text("[" * 100 + "]" * 100)
    with pytest.raises(HistogramsRefused, match="nested more than"):
        read_histograms(tmp_path / "h.json")
