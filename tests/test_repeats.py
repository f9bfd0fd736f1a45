"""Repeated cases (orchestrator.results.repeats): the repeats' histograms add into one
distribution — the same figures as one analysis of every repeat's values together — and
each figure's spread across the repeats; then how the console and the page show them.
The repeats here are made by the analysis' own code from known values; a real run with
`repeat: 2` is tests/integration/test_repeats_run.py."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console

from sixnines.formats.layout import HISTOGRAMS_FILE, REPORT_DIR
from sixnines.formats.manifest import Repeat
from sixnines.formats.run_histograms import write_histograms
from sixnines.formats.summary import RATES_SPREAD, RunSummary
from sixnines.formats.vocabulary import Metric
from sixnines.orchestrator.reports import write_reports
from sixnines.orchestrator.results.console_tables import print_tables
from sixnines.orchestrator.results.repeats import repeated_cases
from sixnines.spark_jobs.histograms import Buckets
from sixnines.spark_jobs.summarize import metric_summary
from tests.test_summary import analysed

PARAMS = {"mode": "one-way", "message_size": 64, "rate": 1000.0, "schedule": "fixed"}


def latencies(scale: float, seed: int) -> np.ndarray:
    """20,000 latencies in ns: a body near `scale` µs and a tail ×30."""
    rng = np.random.default_rng(seed)
    body = rng.lognormal(np.log(scale * 1000), 0.2, 19_800)
    return np.concatenate([body, body[:200] * 30]).astype(np.int64)


def repeat(tmp_path, run_id: str, system: str, number: int, values: np.ndarray,
           rate: float) -> RunSummary:
    """A repeat as the analysis leaves it: its summary and its histograms.json."""
    metrics = {Metric.LATENCY: Buckets.of(values),
               Metric.SERVICE_TIME: Buckets.of(values // 2),
               Metric.SEND_LAG: Buckets.of(np.full(len(values), 1500, dtype=np.int64))}
    (tmp_path / run_id / REPORT_DIR).mkdir(parents=True)
    write_histograms(tmp_path / run_id / REPORT_DIR / HISTOGRAMS_FILE,
                     {name: vars(buckets) for name, buckets in metrics.items()})
    whole = analysed()  # every field, as the analysis writes them
    for name, value in {
            "run_id": run_id, "system": system, "params": PARAMS,
            "repeat": Repeat(number=number, of=2, case="message_size=64"),
            **dict.fromkeys(("sent", "received", "delivered"), len(values)),
            "send_rate": rate, "receive_rate": rate - 1,
            **{name.summary_field: metric_summary(buckets.metric())
               for name, buckets in metrics.items()}}.items():
        setattr(whole, name, value)
    return whole


def two_systems(tmp_path) -> tuple[list[RunSummary], dict[str, np.ndarray]]:
    values = {"01": latencies(50, 1), "02": latencies(80, 2), "03": latencies(60, 3),
              "04": latencies(75, 4)}
    runs = [repeat(tmp_path, "01-tcp-message_size=64-repeat=1", "tcp", 1, values["01"], 1000),
            repeat(tmp_path, "02-zmq-message_size=64-repeat=1", "zmq", 1, values["02"], 990),
            repeat(tmp_path, "03-tcp-message_size=64-repeat=2", "tcp", 2, values["03"], 1010),
            repeat(tmp_path, "04-zmq-message_size=64-repeat=2", "zmq", 2, values["04"], 995)]
    return runs, values


def test_repeats_merge_per_case_into_the_distribution_of_all_their_values(tmp_path):
    runs, values = two_systems(tmp_path)
    tcp, zmq = repeated_cases(tmp_path, runs)
    assert (tcp.system, tcp.case, tcp.runs) == (
        "tcp", "message_size=64",
        ["01-tcp-message_size=64-repeat=1", "03-tcp-message_size=64-repeat=2"])
    assert tcp.merged_from == tcp.runs and tcp.merged.run_id == "tcp-message_size=64"
    together = metric_summary(Buckets.of(np.concatenate([values["01"], values["03"]])).metric())
    merged = tcp.merged.latency_us
    assert merged.count == 40_000 == tcp.merged.sent == tcp.merged.delivered
    for key in ("p50", "p90", "p99", "p99.9", "max", "mean"):
        assert merged.figure(key) == together.figure(key), key  # histograms add
    # ... which is not what averaging the repeats' percentiles gives
    average = (runs[0].latency_us.p99_9 + runs[2].latency_us.p99_9) / 2
    assert merged.p99_9 != average
    assert zmq.merged.latency_us.count == 40_000
    assert tcp.merged.send_rate == 1005 and tcp.merged.status == "ok"


def test_the_spread_is_each_figure_across_the_repeats(tmp_path):
    runs, _ = two_systems(tmp_path)
    tcp = repeated_cases(tmp_path, runs)[0]
    p99 = tcp.spread["latency_us"]["p99"]
    low, high = sorted((runs[0].latency_us.p99, runs[2].latency_us.p99))
    assert (p99.repeats, p99.min, p99.median, p99.max) == (2, low, low, high)
    assert abs(p99.band_pct - 100 * (high / low - 1)) < 1e-9
    assert set(tcp.spread) == {"latency_us", "service_time_us", "send_lag_us", RATES_SPREAD}
    assert round(tcp.spread[RATES_SPREAD]["send_rate"].band_pct, 9) == 1.0
    assert tcp.spread["send_lag_us"]["p50"].band_pct == 0.0


def test_a_repeat_without_its_histograms_is_left_out_of_the_merge_and_named(tmp_path):
    runs, _ = two_systems(tmp_path)
    (tmp_path / runs[2].run_id / REPORT_DIR / HISTOGRAMS_FILE).unlink()
    failed = RunSummary(run_id="05-tcp-x-repeat=3", system="tcp", params=PARAMS,
                        status="failed", problems=["broker did not start"],
                        repeat=Repeat(number=3, of=3, case="message_size=64"))
    tcp = repeated_cases(tmp_path, [*runs, failed])[0]
    assert tcp.runs[-1] == "05-tcp-x-repeat=3" and tcp.merged.status == "failed"
    assert tcp.merged_from == ["01-tcp-message_size=64-repeat=1"]
    assert tcp.merged.latency_us.count == 20_000
    assert tcp.merged.notes[0].startswith("03-tcp-message_size=64-repeat=2: not merged: no ")
    assert tcp.merged.problems == ["05-tcp-x-repeat=3: failed"]
    assert tcp.spread["latency_us"]["p50"].repeats == 2  # its figures still spread


def test_runs_not_repeated_make_no_case(tmp_path):
    runs, _ = two_systems(tmp_path)
    assert repeated_cases(tmp_path, [run.model_copy(update={"repeat": None})
                                     for run in runs]) == []


def test_the_console_and_the_page_show_the_merge_and_the_spread(tmp_path):
    runs, _ = two_systems(tmp_path)
    cases = repeated_cases(tmp_path, runs)
    out = io.StringIO()
    print_tables(runs, Console(file=out, width=160), cases)
    text = out.getvalue()
    assert "tcp-message_size=64  ok  2 of 2 repeats merged: 01-tcp-message_size=64-repeat=1," \
        in text and "03-tcp-message_size=64-repeat=2" in text
    assert "sent 40,000" in text and "band %" in text and "repeats min" in text
    assert "send 1,005 msg/s 0.0613 MB/s (band 1.0%)" in text
    band = f"{cases[0].spread['latency_us']['p99'].band_pct:.1f}"
    assert band in text
    page = write_reports(tmp_path, runs, cases=cases).read_text()
    assert '<section id="repeats"><h2>Repeats</h2>' in page
    assert '<a href="#repeats">Repeats</a>' in page
    assert "2 of 2 repeats merged" in page and band in page
