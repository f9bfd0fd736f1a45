"""The per-message series on a real run: one producer → one consumer over the tcp relay, run
by the real runner, then analysed as `sixnines run` analyses it."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from sixnines.formats.chunks import message_files
from sixnines.formats.layout import REPORT_DIR, SERIES_FILE
from sixnines.formats.manifest import Manifest
from sixnines.formats.vocabulary import Load, Role
from sixnines.orchestrator.run.runner import RunSettings
from sixnines.spark_jobs import (
    agent_rows,
    delivery,
    distribution,
    run_merge,
    series,
    series_pass,
)
from sixnines.spark_jobs.analyze import analyze_run, main
from tests.integration.support import execute, points

pytestmark = pytest.mark.integration

RATE = 5000
WINDOW = 50
SCENARIO = f"""
name: series
systems: [{{name: tcp, driver: tcp}}]
workload: {{message_size: 64, rate: {RATE}, duration: 1s, warmup: 200ms, producers: 1,
            consumers: 1}}
"""
SERIES_KEYS = {"window", "load", "latency", "service_time", "saturation_latency",
               "sender_throughput", "receiver_throughput", "histogram", "humps", "nines", "cpu"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("series") / "run"
    settings = RunSettings("series", throughput_window=WINDOW)  # the scenario's field
    manifest = execute(points(SCENARIO)[0], run_dir, settings=settings)
    assert manifest["status"] == "ok", manifest["problems"]
    assert manifest["throughput_window"] == WINDOW
    return run_dir, manifest


@pytest.fixture(scope="module")
def summary(spark, run):
    """Analysed with the window the manifest records (no --window)."""
    return analyze_run(spark, run[0])


def _measured_by_seq(run_dir, manifest, role: str) -> dict[str, np.ndarray]:
    """The measured rows of the agent holding `role`, by seq (warm-up as Spark judges it:
    from the producer's schedule, the same instant on both agents)."""
    agent = next(a for a in manifest["agents"] if a["role"] == role)
    table = pq.read_table(message_files(run_dir / "agents" / agent["id"])).to_pydict()
    start = next(a["t0_ns"] for a in manifest["agents"] if a["role"] == "producer")
    intended = np.array(table["intended_ns"])
    keep = intended >= start + manifest["workload"]["warmup_ns"]
    order = np.argsort(np.array(table["seq"])[keep], kind="stable")
    return {name: np.array(table[name])[keep][order]
            for name in ("seq", "intended_ns", "sent_ns", "recv_ns") if table[name][0] is not None}


def test_overhead_identity_on_real_timestamps(run):
    """M·(RO_n − SO_n) = S_n − S_{n−M} with S_n = recv − sent of the n-th message: derived
    in tests/test_series.py; it needs FIFO delivery and no loss, which TCP gives, and
    holds to the nanosecond where both ends of a window are alone with their timestamps
    (a read of several spreads its messages: series)."""
    run_dir, manifest = run
    sent = _measured_by_seq(run_dir, manifest, "producer")
    got = _measured_by_seq(run_dir, manifest, "consumer")
    assert np.array_equal(sent["seq"], got["seq"])  # nothing lost, nothing extra
    assert np.all(np.diff(got["recv_ns"]) >= 0) and np.all(np.diff(sent["sent_ns"]) >= 0)

    read = Manifest.model_validate(manifest)
    analysed = run_merge.AnalysedRun(read, agent_rows.message_paths(run_dir, read), WINDOW,
                                     Load.OPEN_LOOP, delivery.Expected())
    spans = {}
    for agent in run_merge.agent_files([analysed]):
        side = series.SENDER if agent.role == Role.PRODUCER else series.RECEIVER
        (stream,) = series_pass.stream_windows(agent_rows.read_rows(agent), side,
                                              agent.agent_index, WINDOW)
        spans[side] = stream.span
    so, ro = spans[series.SENDER], spans[series.RECEIVER]
    service = got["recv_ns"] - sent["sent_ns"]
    assert len(ro) == len(so) == len(service) - WINDOW > 4000
    alone = _alone(got["recv_ns"]) & _alone(sent["sent_ns"])  # one message per timestamp
    exact = alone[WINDOW:] & alone[:-WINDOW]  # where a message's time is its timestamp
    assert np.count_nonzero(exact) > 1000
    assert np.array_equal((ro - so)[exact], (service[WINDOW:] - service[:-WINDOW])[exact])
    assert np.any(ro != so)  # not trivially: the two ends' overheads do differ


def _alone(stamps: np.ndarray) -> np.ndarray:
    """Whether each message is the only one with its timestamp."""
    _, inverse, counts = np.unique(stamps, return_inverse=True, return_counts=True)
    return counts[inverse] == 1


def test_summary_fields(run, summary):
    throughput = summary["throughput"]
    assert throughput["window"] == WINDOW
    for side in ("sender", "receiver"):
        figures = throughput[f"{side}_msg_s"]
        # windows with messages of a stream's first timestamp but its last: counted, left out
        undefined = throughput["zero_span_windows"][side]
        assert figures["count"] + undefined == summary["sent"] - WINDOW
        assert figures["lower_median"] == pytest.approx(RATE, rel=0.05)
        assert figures["mean"] >= figures["lower_median"] * 0.95
        assert 0 <= figures["robust_deviation"] < figures["mean"]
        assert figures["p50"] <= figures["p99.9999"] <= figures["max"]
    assert throughput["bytes_per_s"]["sender"] == pytest.approx(64 * RATE, rel=0.05)
    assert throughput["bytes_per_s"]["receiver"] == pytest.approx(64 * RATE, rel=0.05)
    assert summary["density_us"] == pytest.approx(1e6 / RATE, rel=0.05)
    latency = summary["latency_us"]
    assert latency["lower_median"] <= latency["p50"] <= latency["lower_median"] * 1.001
    assert 0 < latency["robust_deviation"] < latency["max"]
    assert summary["humps"]["count"] >= 1 and len(summary["humps"]["modes_us"]) == \
        summary["humps"]["count"]
    multi_modal = [w for w in summary["warnings"] if w.startswith("latency is multi-modal")]
    assert len(multi_modal) == (summary["humps"]["count"] > 1)


def test_series_file(run, summary):
    document = json.loads((run[0] / REPORT_DIR / SERIES_FILE).read_text())
    assert set(document) == SERIES_KEYS
    assert document["window"] == WINDOW
    assert document["load"] == "open-loop"  # an open-loop run: no saturation curve
    assert document["saturation_latency"]["n"] == []
    count = summary["latency_us"]["count"]
    for name in ("latency", "service_time"):
        curve = document[name]
        assert set(curve) == {"n", "t_s", "min_us", "mean_us", "max_us"}
        assert 1000 < len(curve["n"]) <= series.MAX_POINTS < count  # downsampled
        assert curve["n"][0] == 0 and curve["n"] == sorted(set(curve["n"]))
        # each bucket's intended time, within the measured stretch, in order
        assert len(curve["t_s"]) == len(curve["n"]) and curve["t_s"] == sorted(curve["t_s"])
        assert all(0.2 <= t <= 1.3 for t in curve["t_s"])
        assert all(lo <= mean <= hi for lo, mean, hi in
                   zip(curve["min_us"], curve["mean_us"], curve["max_us"], strict=True))
    assert max(document["latency"]["max_us"]) == summary["latency_us"]["max"]
    for name in ("sender_throughput", "receiver_throughput"):
        curve = document[name]
        assert 0 < len(curve["t_s"]) <= series.MAX_POINTS
        assert all(0.2 <= t <= 1.3 for t in curve["t_s"])  # seconds since the run's start
        assert np.median(curve["msg_s"]) == pytest.approx(RATE, rel=0.05)
    histogram = document["histogram"]
    assert len(histogram["edges_us"]) == len(histogram["counts"]) + 1
    assert sum(histogram["counts"]) == count
    assert document["humps"] == summary["humps"]
    nines = document["nines"]
    assert nines["p"] == list(distribution.NINES)
    assert nines["latency_us"] == sorted(nines["latency_us"])
    assert nines["latency_us"][1] == summary["latency_us"]["p50"]
    assert nines["service_time_us"][-1] <= summary["service_time_us"]["max"]


def test_window_flag_is_checked(tmp_path, capsys):
    (tmp_path / "manifest.json").write_text("{}")
    with pytest.raises(SystemExit) as exited:
        main(["--window", "0", str(tmp_path)])
    assert exited.value.code == 2
    assert "--window" in capsys.readouterr().err
