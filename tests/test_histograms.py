"""The metric values of an agent's records and their HDR buckets (spark_jobs.histograms),
on a tiny hand-made run, in this process without Spark; values out of the buckets'
range."""

from __future__ import annotations

import numpy as np

from sixnines.formats import hdr
from sixnines.spark_jobs import histograms
from tests.analysis_rows import by_metric, figures, tiny_run


def test_metric_values_and_buckets(tmp_path):
    run = tiny_run(tmp_path)
    values = by_metric(run)
    assert values["send_lag"] == [5] * 4
    assert values["latency"] == [20] * 4 + [50] * 5 + [60]
    assert values["service_time"] == [15] * 4 + [45] * 5 + [55]
    counts = figures(run)[0].metrics["latency"].counts  # below 2048 ns: a bucket per value
    assert {int(b): int(counts[b]) for b in np.flatnonzero(counts)} == {20: 4, 50: 5, 60: 1}


def test_bucket_counts_out_of_range():
    buckets = histograms.Buckets.of(np.array([-3, 7, hdr.HIGHEST + 1], dtype=np.int64))
    top = int(hdr.bucket_indices(np.array([hdr.HIGHEST]))[0])
    assert (buckets.negative, buckets.too_large, buckets.max) == (1, 1, hdr.HIGHEST + 1)
    # clipped into the end buckets, each bucket's raw values summed as they were
    assert dict(zip(buckets.indices.tolist(), buckets.counts.tolist(), strict=True)) == {
        0: 1, 7: 1, top: 1}
    assert dict(zip(buckets.indices.tolist(), buckets.sums.tolist(), strict=True)) == {
        0: -3, 7: 7, top: hdr.HIGHEST + 1}
