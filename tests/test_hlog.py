"""Interval logs: exact warm-up boundaries, lossless counts, and interop with hdrh's reader."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from sixnines.formats import hdr
from sixnines.formats.hlog import (
    INTERVAL_NS,
    HlogError,
    HlogFile,
    IntervalLog,
    measured_counts,
    read_hlog,
    write_hlog,
)

S = 1_000_000_000


def edges(warmup_ns: int, end_ns: int, interval_ns: int = S) -> np.ndarray:
    """Interval boundaries (ns since t0) up to the first at or past `end_ns`."""
    log = IntervalLog(os.devnull, start_epoch_s=0.0, warmup_ns=warmup_ns,
                      interval_ns=interval_ns)
    last = int(log.interval_of(np.array([max(end_ns, 1) - 1]))[0])
    log.close()
    return np.array([log.span(k)[0] for k in range(last + 1)] + [sum(log.span(last))])
START_EPOCH_S = 1_717_000_000.125
WARMUP_NS = 2_500_000_000


def test_edges_put_warmup_end_on_a_boundary() -> None:
    assert (edges(WARMUP_NS, 5 * S) / S).tolist() == [0, 1, 2, 2.5, 3.5, 4.5, 5.5]


def test_edges_without_warmup() -> None:
    assert (edges(0, 5 * S) / S).tolist() == [0, 1, 2, 3, 4, 5]
    assert (edges(0, 4 * S + 1) / S).tolist() == [0, 1, 2, 3, 4, 5]
    assert edges(0, 0).tolist() == [0, S]


def test_edges_with_warmup_on_a_whole_interval_and_a_short_run() -> None:
    assert (edges(2 * S, 4 * S) / S).tolist() == [0, 1, 2, 3, 4]
    assert (edges(3 * S, S + 1) / S).tolist() == [0, 1, 2]
    assert (edges(WARMUP_NS, 5 * S, interval_ns=2 * S) / S).tolist() == [0, 2, 2.5, 4.5, 6.5]


@pytest.fixture(scope="module")
def run() -> dict:
    """A 6 s open-loop run at 20k msg/s whose sends are slightly shuffled."""
    rng = np.random.default_rng(7)
    n = 120_000
    offsets = np.arange(n, dtype=np.int64) * (6 * S // n) + rng.integers(-50_000, 50_000, n)
    offsets[rng.choice(n, 50, replace=False)] += rng.integers(-S, S, 50)  # out of order
    offsets = np.minimum(offsets, 6 * S - 1)
    offsets[0] = -1_000  # intended before t0: belongs to the first interval
    service_time = rng.lognormal(11, 1.2, n).astype(np.int64)
    send_lag = rng.integers(0, 20_000, n)
    metrics = {
        "service_time": service_time,
        "latency": service_time + send_lag,
        "send_lag": send_lag,
    }
    return {"offsets": offsets, "metrics": metrics}


@pytest.fixture(scope="module")
def written(run: dict, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("hlog") / "latency.hlog"
    report = write_hlog(
        path,
        start_epoch_s=START_EPOCH_S,
        series={tag: (run["offsets"], values) for tag, values in run["metrics"].items()},
        warmup_ns=WARMUP_NS,
        comment="agent p1 test",
    )
    return path, report


def test_header_and_data_lines(written: tuple[Path, dict]) -> None:
    lines = written[0].read_text().splitlines()
    assert lines[0] == "#[Histogram log format version 1.3]"
    assert lines[1].startswith(f"#[StartTime: {START_EPOCH_S:.3f} (seconds since epoch), 2024-")
    assert lines[2] == f"#[BaseTime: {START_EPOCH_S:.3f} (seconds since epoch)]"
    assert lines[3] == "#[agent p1 test]"
    assert "nanoseconds" in lines[4] and "2.500" in lines[4]
    assert lines[5] == (
        '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'
    )
    data = lines[6:]
    assert data and all(line.startswith("Tag=") for line in data)
    keys = [(float(line.split(",")[1]), line.split(",")[0][4:]) for line in data]
    assert keys == sorted(keys)  # by interval start, then tag
    assert keys[:3] == [(0.0, "latency"), (0.0, "send_lag"), (0.0, "service_time")]
    starts = sorted({start for start, _ in keys})
    assert starts == [0, 1, 2, 2.5, 3.5, 4.5, 5.5]


def test_hdrh_reader_reads_our_file(written: tuple[Path, dict], run: dict) -> None:
    reader = HistogramLogReader(str(written[0]), HdrHistogram(1, 3_600_000_000_000, 3))
    sums: dict[str, np.ndarray] = {}
    starts = []
    while (histogram := reader.get_next_interval_histogram()) is not None:
        counts = hdr.from_hdrh(histogram)
        sums[histogram.get_tag()] = sums.get(histogram.get_tag(), 0) + counts
        starts.append(histogram.get_start_time_stamp() / 1000.0)
    reader.close()
    assert reader.get_start_time_sec() == pytest.approx(START_EPOCH_S, abs=1e-3)
    assert starts[0] == pytest.approx(START_EPOCH_S, abs=1e-3)  # relative stamps + BaseTime
    assert sorted(sums) == ["latency", "send_lag", "service_time"]
    for tag, values in run["metrics"].items():
        np.testing.assert_array_equal(sums[tag], hdr.counts_of(values))


def test_read_hlog_round_trips(written: tuple[Path, dict], run: dict) -> None:
    hlog = read_hlog(written[0])
    assert hlog.start_epoch_s == pytest.approx(START_EPOCH_S, abs=1e-3)
    assert {item.tag for item in hlog.intervals} == set(run["metrics"])
    assert len(hlog.intervals) == 7 * 3
    first = hlog.intervals[0]
    assert (first.start_s, first.length_s) == (0.0, 1.0)
    interval = np.maximum(np.searchsorted(edges(WARMUP_NS, 6 * S), run["offsets"], "right") - 1, 0)
    for item in hlog.intervals:
        index = int(np.searchsorted(edges(WARMUP_NS, 6 * S) / S, item.start_s))
        values = run["metrics"][item.tag][interval == index]
        np.testing.assert_array_equal(item.counts, hdr.counts_of(values))


def test_measured_counts_exclude_warmup_exactly(written: tuple[Path, dict], run: dict) -> None:
    measured = measured_counts(read_hlog(written[0]), WARMUP_NS / S)
    keep = run["offsets"] >= WARMUP_NS
    assert 0 < keep.sum() < len(keep)
    for tag, values in run["metrics"].items():
        np.testing.assert_array_equal(measured[tag], hdr.counts_of(values[keep]))
    everything = measured_counts(read_hlog(written[0]), 0.0)
    assert int(everything["latency"].sum()) == len(run["offsets"])


def test_out_of_range_values_are_reported(tmp_path: Path) -> None:
    offsets = np.arange(6, dtype=np.int64) * 300_000_000
    values = np.array([-3, -1, 5, 7, hdr.HIGHEST + 1, 2**50], dtype=np.int64)
    report = write_hlog(
        tmp_path / "x.hlog",
        start_epoch_s=0.0,
        series={"latency": (offsets, values), "ok": (offsets, np.ones(6, dtype=np.int64))},
        warmup_ns=0,
    )
    assert report == {
        "latency": {"negative": 2, "too_large": 2},
        "ok": {"negative": 0, "too_large": 0},
    }
    counts = measured_counts(read_hlog(tmp_path / "x.hlog"), 0.0)["latency"]
    assert int(counts.sum()) == 6  # clipped into range, not dropped
    assert hdr.percentile_values(counts, [100.0])[0] >= hdr.HIGHEST


def test_interval_max_column_is_in_ms(tmp_path: Path) -> None:
    write_hlog(
        tmp_path / "m.hlog",
        start_epoch_s=10.0,
        series={"latency": (np.array([0, 1]), np.array([1_000, 2_500_000]))},
        warmup_ns=0,
    )
    line = (tmp_path / "m.hlog").read_text().splitlines()[-1]
    assert line.split(",")[:4] == ["Tag=latency", "0.000", "1.000", "2.501"]


def test_empty_run_writes_only_the_header(tmp_path: Path) -> None:
    empty = np.zeros(0, dtype=np.int64)
    report = write_hlog(
        tmp_path / "e.hlog",
        start_epoch_s=1.0,
        series={"latency": (empty, empty)},
        warmup_ns=INTERVAL_NS,
    )
    assert report == {"latency": {"negative": 0, "too_large": 0}}
    assert read_hlog(tmp_path / "e.hlog") == HlogFile(1.0, [])


@pytest.mark.parametrize("tag", ["", "bad tag", "a,b", "lat\n"])
def test_bad_tags_are_refused(tag: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tag"):
        write_hlog(
            tmp_path / "t.hlog",
            start_epoch_s=0.0,
            series={tag: (np.zeros(1), np.zeros(1))},
            warmup_ns=0,
        )


def test_mismatched_lengths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="latency"):
        write_hlog(
            tmp_path / "t.hlog",
            start_epoch_s=0.0,
            series={"latency": (np.zeros(2), np.zeros(3))},
            warmup_ns=0,
        )


def test_tags_may_cover_different_messages(tmp_path: Path) -> None:
    """A request without a reply has a send lag but no latency: per-tag offsets."""
    sent = np.array([0, 400_000_000, 1_200_000_000], dtype=np.int64)
    replied = sent[[0, 2]]
    write_hlog(
        tmp_path / "r.hlog",
        start_epoch_s=0.0,
        warmup_ns=0,
        series={
            "send_lag": (sent, np.array([5, 6, 7])),
            "latency": (replied, np.array([100, 300])),
        },
    )
    intervals = read_hlog(tmp_path / "r.hlog").intervals
    assert [(i.tag, i.start_s, int(i.counts.sum())) for i in intervals] == [
        ("latency", 0.0, 1),
        ("send_lag", 0.0, 2),
        ("latency", 1.0, 1),
        ("send_lag", 1.0, 1),
    ]


def test_a_damaged_log_names_its_file_and_line(written: tuple[Path, dict], tmp_path) -> None:
    """Cut short or bit-flipped, the decoders fail their own ways (base64, zlib, hdrh):
    always one HlogError naming the file and the line."""
    lines = written[0].read_bytes().splitlines(keepends=True)
    last = lines[-1]
    payload = last.rindex(b",") + 20
    damaged = {"cut.hlog": b"".join(lines)[: -len(last) // 2],
               "flipped.hlog": b"".join([*lines[:-1], last[:payload],
                                         bytes([last[payload] ^ 0x20]), last[payload + 1:]])}
    for name, data in damaged.items():
        (tmp_path / name).write_bytes(data)
        where = re.escape(f"{tmp_path / name}: line {len(lines)}: damaged interval")
        with pytest.raises(HlogError, match=f"^{where}"):
            read_hlog(tmp_path / name)


def test_a_log_appended_chunk_by_chunk_is_the_whole_run_s_log(run, tmp_path) -> None:
    """Chunks of a run in send order give the same file, line for line, as the whole run
    written at once: an interval is written once a chunk 5 s past it has come."""
    order = np.argsort(run["offsets"], kind="stable")
    series = {tag: (run["offsets"][order], values[order]) for tag, values in run["metrics"].items()}
    whole = tmp_path / "whole.hlog"
    write_hlog(whole, start_epoch_s=START_EPOCH_S, series=series, warmup_ns=WARMUP_NS)
    log = IntervalLog(tmp_path / "chunked.hlog", start_epoch_s=START_EPOCH_S,
                      warmup_ns=WARMUP_NS, lateness_ns=5 * S)
    for lo in range(0, len(order), 7_000):
        log.add({tag: (o[lo : lo + 7_000], v[lo : lo + 7_000]) for tag, (o, v) in series.items()})
    log.close()
    assert (tmp_path / "chunked.hlog").read_text() == whole.read_text()


def test_a_value_later_than_its_interval_s_line_gets_a_line_of_its_own(tmp_path) -> None:
    path = tmp_path / "late.hlog"
    log = IntervalLog(path, start_epoch_s=START_EPOCH_S, warmup_ns=0, lateness_ns=S)
    log.add({"latency": (np.array([100, 2 * S + 5]), np.array([1_000, 2_000]))})
    log.add({"latency": (np.array([200]), np.array([3_000]))})  # interval 0, already written
    log.add({"latency": (np.array([-5]), np.array([-1]))})  # before t0: the first interval
    assert log.close() == {"latency": {"negative": 1, "too_large": 0}}
    intervals = read_hlog(path).intervals
    assert [(i.start_s, int(i.counts.sum())) for i in intervals] == [
        (0.0, 1), (0.0, 1), (0.0, 1), (2.0, 1)]
    assert int(measured_counts(read_hlog(path), 0.0)["latency"].sum()) == 4


def test_a_killed_writer_s_log_reads_as_far_as_it_was_written(tmp_path) -> None:
    """An agent killed as it appended leaves its last line cut short, without its newline:
    read for a dead agent, that line is where the log ends; read as any other log, it is
    damage."""
    path = tmp_path / "killed.hlog"
    log = IntervalLog(path, start_epoch_s=START_EPOCH_S, warmup_ns=0, lateness_ns=S)
    log.add({"latency": (np.array([100, S + 100, 3 * S + 5]), np.array([1_000, 2_000, 3_000]))})
    log.sync()
    whole = path.read_bytes()
    lines = whole.splitlines(keepends=True)
    path.write_bytes(whole + lines[-1][: len(lines[-1]) // 2])  # the next line, cut by the kill
    read = read_hlog(path, cut_short_end=True)
    assert [(i.start_s, int(i.counts.sum())) for i in read.intervals] == [(0.0, 1), (1.0, 1)]
    assert read.end_s == 2.0
    with pytest.raises(HlogError, match="damaged interval"):
        read_hlog(path)


@pytest.mark.parametrize("in_order", [True, False])
def test_values_go_to_the_interval_their_offset_falls_in(tmp_path, in_order):
    """Offsets in order are cut by binary search, others sorted by interval: either way
    each value lands where `interval_of` puts its offset (a warm-up ending mid-interval,
    offsets before t0 and on the boundaries included)."""
    log = IntervalLog(tmp_path / "l.hlog", start_epoch_s=0.0, warmup_ns=1_500,
                      interval_ns=1_000)
    rng = np.random.default_rng(7)
    offsets = np.sort(np.concatenate([rng.integers(-500, 6_000, 2_000),
                                      [0, 999, 1_000, 1_500, 2_499, 2_500]]))
    if not in_order:
        offsets = rng.permutation(offsets)
    values = np.arange(len(offsets), dtype=np.int64)
    expected = {int(k): sorted(values[log.interval_of(offsets) == k].tolist())
                for k in np.unique(log.interval_of(offsets))}
    found = {k: sorted(v.tolist()) for k, v in log._by_interval(offsets, values).items()}
    log.close()
    assert found == expected


def test_an_hour_long_log_is_read_in_megabytes(tmp_path) -> None:
    """An agent's whole log is read at once (the analysis' hlog check): an hour of two
    tags is 7,200 intervals, 1.9 GB as dense counts arrays; kept as their nonzero counts
    it stays in tens of megabytes, and sums as before."""
    import tracemalloc

    rng = np.random.default_rng(5)
    n = 3600 * 200
    offsets = np.sort(rng.integers(0, 3600 * S, n))
    latency = rng.lognormal(11, 1.0, n).astype(np.int64) + 1
    path = tmp_path / "hour.hlog"
    write_hlog(path, start_epoch_s=START_EPOCH_S, warmup_ns=0,
               series={"latency": (offsets, latency), "service_time": (offsets, latency // 2)})
    tracemalloc.start()
    try:
        hlog = read_hlog(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(hlog.intervals) == 7200
    assert peak < 200 * 2**20, f"{peak / 2**20:.0f} MiB"
    np.testing.assert_array_equal(measured_counts(hlog, 0.0)["latency"], hdr.counts_of(latency))
