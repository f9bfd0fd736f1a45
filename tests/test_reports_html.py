"""The HTML report and the gnuplot files (orchestrator/reports/), from synthetic results:
runs with and without series.json, a hostile scenario text, a failed run, a cross-host run
and a throughput-mode run. `synthetic_results` is shared with the browser test."""

from __future__ import annotations

import html
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sixnines.formats.layout import MANIFEST_FILE
from sixnines.formats.manifest import (
    AgentEntry,
    BrokerRecord,
    Manifest,
    Sixnines,
    Workload,
)
from sixnines.formats.summary import RunSummary
from sixnines.formats.vocabulary import Metric
from sixnines.orchestrator.reports import nines, sweeps, write_reports
from sixnines.orchestrator.reports.inputs import read_hgrm
from sixnines.orchestrator.reports.model import Axis, Figure, Line, slugify
from sixnines.orchestrator.reports.svg import AREA_H, MAX_POINTS, render
from sixnines.orchestrator.reports.ticks import logarithmic, percent, ticks
from sixnines.orchestrator.results.overview import swept

HOSTILE = "<script>alert(1)</script>"
ZERO_SPAN = ("receiver throughput: 1,144 windows of 100 messages undefined (a stream's first "
             "read or batch, which has no time before it, or a span of 0 ns): left out")
PLACED = "host local: producer-0 on CPU 1; everything else sixnines runs there keeps off CPU 1"
KEYS = ("p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "p99.9999")


def figures(p50: float, count: int = 20_000) -> dict:
    """Percentiles like a real run's: a tail ×40 the median; past what `count` supports,
    HdrHistogram reports the max."""
    values = dict(zip(KEYS, (p50, p50 * 1.3, p50 * 2, p50 * 15, p50 * 30, p50 * 40, p50 * 40),
                      strict=True))
    return {**values, "max": p50 * 40, "mean": p50 * 1.1, "count": count}


def summary(run_id: str, system: str, size: int, p50: float, **extra) -> dict:
    body = {
        "run_id": run_id, "system": system,
        "params": {"mode": "one-way", "message_size": size, "rate": 2000.0,
                   "schedule": "fixed", "seed": None},
        "status": "ok", "problems": [], "warnings": [],
        "sent": 20_000, "received": 20_000, "lost": 0, "duplicated": 0, "reordered": 0,
        "send_rate": 2000.0, "receive_rate": 1999.9, "density_us": 500.0,
        "latency_us": figures(p50), "service_time_us": figures(p50 * 0.98),
        "send_lag_us": figures(1.2),
        "latency_pairs": {"same_clock": 20_000, "cross_clock": 0, "excluded": 0},
        "clock_bound_ns": None,
        "broker": {"kind": "builtin", "recipe": None, "version": None, "note": None},
    }
    body.update(extra)
    return body


def parsed(summaries: list[dict]) -> list[RunSummary]:
    """The summaries as the reports take them."""
    return [RunSummary.model_validate(summary) for summary in summaries]


def series(seed: int, windows: int, bimodal: bool) -> dict:
    """A per-message analysis result shaped like spark_jobs' series.json."""
    rng = np.random.default_rng(seed)
    n = [(i + 1) * 100 for i in range(windows)]
    mean = 70 + 10 * rng.random(windows)
    mean[windows // 2] = 2500.0  # one stall: the peak a user zooms into
    t = np.linspace(0.01, 10, windows)
    edges = np.logspace(1, 4, 61)
    centres = np.sqrt(edges[:-1] * edges[1:])
    counts = 5000 * np.exp(-((np.log(centres) - math.log(75)) ** 2) / 0.02)
    if bimodal:
        counts += 60 * np.exp(-((np.log(centres) - math.log(1300)) ** 2) / 0.02)
    ps = [0, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999]
    return {
        "window": 100,
        "latency": {"n": n, "t_s": t.tolist(), "min_us": (mean * 0.8).tolist(),
                    "mean_us": mean.tolist(), "max_us": (mean * 1.6).tolist()},
        "service_time": {"n": n, "min_us": (mean * 0.78).tolist(),
                         "mean_us": (mean * 0.97).tolist(), "max_us": (mean * 1.5).tolist()},
        # the first window of M messages has no throughput yet
        "sender_throughput": {"t_s": [None, *t[1:].tolist()],
                              "msg_s": [None, *(2000 + 30 * rng.standard_normal(windows - 1))
                                        .tolist()]},
        "receiver_throughput": {"t_s": t.tolist(),
                                "msg_s": (2000 + 60 * rng.standard_normal(windows)).tolist()},
        "histogram": {"edges_us": edges.tolist(), "counts": np.round(counts).astype(int)
                      .tolist()},
        "humps": {"count": 2, "modes_us": [75.0, 1300.0]} if bimodal
        else {"count": 1, "modes_us": [75.0]},
        "nines": {"p": ps, "latency_us": [55, 72, 90, 150, 1100, 2400, 2900, 2900],
                  "service_time_us": [54, 70, 88, 148, 1090, 2390, 2890, 2890]},
    }


HGRM = """       Value     Percentile TotalCount 1/(1-Percentile)

      58.239 0.000000000000          1           1.00
      71.807 0.500000000000      10000           2.00
      88.831 0.900000000000      18000          10.00
     152.831 0.990000000000      19800         100.00
    1380.351 0.999000000000      19980        1000.00
    3069.951 0.999900000000      19998       10000.00
    3510.271 0.999950020042      20000       20008.02
    3510.271 1.000000000000      20000
#[Mean    =       78.640, StdDeviation   =       76.017]
#[Max     =     3510.271, TotalCount     =    20000.000]
#[Buckets =           32, SubBuckets     =         2048]
# Values in microseconds (ns / 1000); exact max = 2800.000 us
"""


#: A rate shape (formats.shape.RateShape as JSON): 1k msg/s with a burst of 4k at 5 s.
BURSTS = {"kind": "bursts", "label": "1k msg/s, bursts of 4k for 1s every 5s", "steps": [],
          "segments": [{"start_ns": 0, "end_ns": 5 * 10**9, "rate": 1000.0, "to": 1000.0},
                       {"start_ns": 5 * 10**9, "end_ns": 6 * 10**9, "rate": 4000.0,
                        "to": 4000.0},
                       {"start_ns": 6 * 10**9, "end_ns": 10 * 10**9, "rate": 1000.0,
                        "to": 1000.0}]}
#: A relay paused 1 s at 4 s: latency per 10 ms interval climbing to 1 s, no receipt.
TIMELINE = {"t_s": [i / 100 for i in range(1000)],
            "p50_us": [80.0 if not 400 <= i < 500 else (500 - i) * 1e4 for i in range(1000)],
            "p99_us": [150.0 if not 400 <= i < 500 else (500 - i) * 1e4 for i in range(1000)],
            "max_us": [200.0 if not 400 <= i < 500 else (500 - i) * 1e4 for i in range(1000)],
            "received_msg_s": [2000.0 if not 400 <= i < 500 else 0.0 for i in range(1000)]}
FAULT = {"index": 0, "action": "pause", "target": "broker", "outcome": "done", "at_s": 4.0,
         "effective_s": 4.0, "end_s": 5.0, "interval_ms": 10.0, "max_in_window_us": 1e6,
         "recovered": True, "recovered_s": 0.02, "backlog": 2000, "drained_s": 0.02}


def synthetic_results(base: Path) -> tuple[Path, list[dict]]:
    """A results directory as `sixnines run` leaves it, before the report is written."""
    results = base / "quickstart" / "20260101-120000"
    summaries = [
        summary("01-tcp-message_size=64", "tcp", 64, 70.0, notes=[ZERO_SPAN],
                cpu_placement=[PLACED]),
        summary("02-tcp-message_size=1KB", "tcp", 1024, 76.0,
                warnings=["generator saturated: send lag p99 is 1,500 µs (over 1,000 µs)"]),
        summary("03-zmq-message_size=64", "zmq", 64, 120.0, lost=12, received=19_988),
        summary("04-zmq-message_size=1KB", "zmq", 1024, 125.0, clock_bound_ns=48_000,
                latency_pairs={"same_clock": 0, "cross_clock": 20_000, "excluded": 0}),
        summary(f"05-{HOSTILE}", HOSTILE, 64, 90.0,
                broker={"kind": "recipe", "recipe": "redpanda", "version": "1",
                        "note": f"not Apache Kafka {HOSTILE}"}),
        summary("06-kafka-max", "kafka", 256, 900.0, load="saturation",
                latency_us={"count": 0}, service_time_us={"count": 0},
                send_lag_us={"count": 0}, saturation_latency_us=figures(900.0)),
        {"run_id": "07-nats", "system": "nats", "params": {"message_size": 64},
         "status": "failed", "problems": ["broker did not start"]},
    ]
    summaries[5]["params"]["rate"] = "max"
    summaries[2]["params"]["shape"] = BURSTS
    summaries[2]["faults"] = [FAULT]
    for s in summaries:
        (results / s["run_id"].replace("/", "_") / "report").mkdir(parents=True)
    report = lambda i: results / summaries[i]["run_id"] / "report"  # noqa: E731
    (report(0) / "series.json").write_text(json.dumps(series(1, 10_000, bimodal=True)))
    (report(2) / "series.json").write_text(json.dumps(
        {**series(2, 300, bimodal=False), "timeline": TIMELINE}))
    (report(3) / "series.json").write_text("{not json")
    (report(0) / "latency.hgrm").write_text(HGRM)
    (results / "summary.json").write_text(json.dumps({"scenario": "quickstart",
                                                      "runs": summaries}))
    for index, placed in ((0, [PLACED]), (1, [PLACED])):
        write_manifest(results, summaries[index], "tcp", {"nodelay": True}, placed)
    for index, placed in ((2, [PLACED]), (3, [])):  # runs of one system that differ
        write_manifest(results, summaries[index], "zmq", {"hwm": 1000}, placed,
                       agents_on="lab-2")
    return results, summaries


#: The machine the synthetic runs ran on, as host_facts records it.
MACHINE = {"hostname": "bench-1", "kernel": "6.1.0-test", "python": "3.11.7",
           "cpu_count": 48, "cpu_model": "Test CPU 9000", "memory_bytes": 64 * 1024**3}
LAB_2 = {**MACHINE, "hostname": "lab-2", "cpu_count": 8, "cpu_model": "Lab CPU 2"}


def write_manifest(results: Path, summary: dict, driver: str, options: dict,
                   placed: list[str], agents_on: str = "local", **broker: object) -> Path:
    """A run's manifest.json as the controller writes it: what the run ran with."""
    facts = LAB_2 if agents_on != "local" else MACHINE
    agents = [AgentEntry(id=f"{role}-0", role=role, host=agents_on, host_facts=facts)
              for role in ("producer", "consumer")]
    manifest = Manifest(
        sixnines=Sixnines(version="9.9.9", protocol=6), scenario="quickstart",
        run_id=summary["run_id"], system=summary["system"], driver=driver,
        driver_options=options, params=summary["params"], status=summary["status"],
        broker=BrokerRecord.model_validate(
            {"system": summary["system"], "kind": "builtin", "host": "local", **broker}),
        controller={"host": MACHINE, "versions": {"sixnines": "9.9.9"}}, agents=agents,
        cpu_placement=placed, created_at=1.7e9, swept={}, problems=[],
        workload=Workload.model_validate(summary["params"]), cross_host_latency=False,
        placement={"broker": "local", "agents": [agents_on]}, hosts={},
        cpu_sample_ns=10**9, throughput_window=100, monitor=None)
    path = results / summary["run_id"] / MANIFEST_FILE
    path.write_text(manifest.text())
    return path


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, str, list[dict]]:
    results, summaries = synthetic_results(tmp_path_factory.mktemp("results"))
    page = write_reports(results, parsed(summaries))
    return page, page.read_text(encoding="utf-8"), summaries


def test_the_page_is_written_into_the_results_report_directory(written):
    page, _, _ = written
    assert page.name == "index.html" and page.parent.name == "report"
    assert page.parent.parent.name == "20260101-120000"


def test_the_page_is_self_contained(written):
    _, text, _ = written
    links = re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", text, re.IGNORECASE)
    assert links, "the page links its sections"
    assert not [u for u in links if re.match(r"(https?:)?//", u, re.IGNORECASE)]
    assert "<link" not in text and "<img" not in text and "@import" not in text
    assert "url(" not in text  # no fonts or images pulled in by the styles
    assert text.count("<script") == 1 and "<script>" in text  # the inline one only


def test_every_system_and_run_appears(written):
    _, text, summaries = written
    for s in summaries:
        if HOSTILE not in s["system"]:
            assert s["system"] in text
            assert s["run_id"] in text


def test_hostile_text_is_escaped_everywhere(written):
    _, text, _ = written
    assert HOSTILE not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "not Apache Kafka &lt;script&gt;" in text  # the broker note, escaped


def test_the_summary_table_carries_the_warnings(written):
    _, text, _ = written
    assert "generator saturated" in text
    assert "12 messages lost" in text
    assert "may be off by up to 48.0 µs" in text  # the cross-host run's clock bound
    assert "± clock" in text
    assert "broker did not start" in text
    assert "saturation latency" in text  # the throughput-mode run
    assert "multi-modal latency: 2 humps: modes at 75 µs, 1.3k µs" in text
    # 20,000 samples cannot support p99.999 and beyond: those cells are dimmed
    assert 'class="dim"' in text


def test_facts_are_in_the_run_s_details_never_coloured(written):
    """A window left out of the throughput figures is how every run is measured, not an
    alarm: in the run's folded notes, beside its CPU placement; not in the summary table,
    not red, not amber."""
    _, text, _ = written
    summary_table = text[text.index('id="summary"'):text.index('id="percentiles"')]
    assert "windows of 100 messages undefined" not in summary_table
    run = text[text.index('<article id="run-01-tcp'):]
    run = run[:run.index("</article>")]
    facts = re.search(r'<details class="facts"><summary>notes \(2\)</summary>(.*?)</details>',
                      run)
    assert facts and "windows of 100 messages undefined" in facts[1]
    assert "CPU placement: host local: producer-0 on CPU 1" in facts[1]
    assert not re.search(r'class="(bad|warn)"[^<]*windows of 100', text)


def setup_facts(text: str) -> dict[str, list[str]]:
    """The setup section's table: fact → each system's text (unescaped)."""
    section = text[text.index('<section id="setup">'):]
    section = section[:section.index("</section>")]
    rows = re.findall(r'<tr data-fact="([^"]+)">(.*?)</tr>', section)
    return {fact: [html.unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for fact, row in rows}


def test_the_setup_says_what_each_system_ran_with(written):
    """From the runs' manifests, a column per system: broker, driver options, machines,
    placement, CPU placement, sixnines' version; where a system's runs differ, each run
    is named; a system without a readable manifest says so."""
    _, text, _ = written
    facts = setup_facts(text)
    head = text[text.index('<section id="setup">'):]
    assert re.findall(r'<thead><tr><th class="text"></th>(.*?)</tr>', head)[0].count("<th") == 5
    assert facts["broker"][:2] == ["builtin (sixnines' own, for tcp) on local",
                                   "builtin (sixnines' own, for zmq) on local"]
    assert facts["driver"][:2] == ["tcp: nodelay true", "zmq: hwm 1000"]
    assert facts["machines"][0] == "local: Test CPU 9000, 48 CPUs, kernel 6.1.0-test, 64 GB"
    assert facts["machines"][1] == ("local: Test CPU 9000, 48 CPUs, kernel 6.1.0-test, 64 GB; "
                                    "lab-2: Lab CPU 2, 8 CPUs, kernel 6.1.0-test, 64 GB")
    assert facts["placement"][1] == "broker on local; lab-2: producer-0, consumer-0"
    assert facts["CPU placement"][0] == PLACED
    assert facts["CPU placement"][1] == (
        f"03-zmq-message_size=64: {PLACED}; 04-zmq-message_size=1KB: none (no busy loop, "
        "or none asked for)")
    assert facts["sixnines"][:2] == ["9.9.9 (Python 3.11.7)"] * 2
    assert facts["sixnines"][2:] == ["not recorded"] * 3  # 05 … 07: no manifest
    assert "kafka: no readable manifest for 06-kafka-max" in text
    assert '<a href="#setup">Setup</a>' in text


def test_parameters_read_as_people_write_them_with_mb_s_beside_msg_s(written):
    """`message_size 1 KB, rate 2,000 msg/s`, not `message_size=1024, seed=null`; 1 KB at
    2,000 msg/s is 1.95 MB/s (1 MB = 1,048,576 bytes), 64 B 0.122 MB/s."""
    _, text, _ = written
    run = text[text.index('<article id="run-02-tcp'):]
    run = run[:run.index("</article>")]
    assert "system tcp · mode one-way, message_size 1 KB, rate 2,000 msg/s, schedule fixed" \
        in run
    assert "send 2,000 msg/s, 1.95 MB/s · receive 2,000 msg/s, 1.95 MB/s" in run
    assert not re.search(r"=null|=None|message_size=1024|seed", text)
    summary_table = text[text.index('id="summary"'):text.index('id="setup"')]
    row = re.search(r'<tr><td class="text"><a href="#run-01-tcp.*?</tr>', summary_table)[0]
    assert "<td>2,000</td><td>0.122</td><td>2,000</td><td>0.122</td>" in row
    assert '<td class="text" title="mode one-way, message_size 64 B, rate 2,000 msg/s, ' \
        'schedule fixed">message_size 64 B, rate 2,000 msg/s</td>' in row  # swept: rate max


def test_a_recipe_broker_and_driver_options_and_never_a_secret(tmp_path):
    """The recipe, its version and note, every driver option (where a password comes from,
    never a password); the broker's command, environment and login are not shown."""
    results = tmp_path / "r" / "20260101-120000"
    run = summary("01-rabbitmq", "rabbitmq", 1024, 80.0)
    (results / run["run_id"]).mkdir(parents=True)
    write_manifest(results, run, "rabbitmq",
                   {"confirms": True, "prefetch": 250, "password_env": "RABBIT_PASSWORD"},
                   [], kind="recipe", recipe="rabbitmq", version="3.10.8\nmore output",
                   note="a private node", command=["rabbitmq-server", "--cookie=c00kie"],
                   env={"RABBITMQ_DEFAULT_PASS": "(from the environment)"},
                   auth={"credential": "per-run (the secret is not recorded)",
                         "user": "sixnines"})
    text = write_reports(results, parsed([run])).read_text(encoding="utf-8")
    facts = setup_facts(text)
    assert facts["broker"] == ["rabbitmq 3.10.8 (recipe) on local; note: a private node"]
    assert facts["driver"] == [
        "rabbitmq: confirms true, prefetch 250, password_env RABBIT_PASSWORD"]
    for hidden in ("c00kie", "RABBITMQ_DEFAULT_PASS", "more output", "per-run"):
        assert hidden not in text, hidden


def test_the_summary_table_fits_the_page_with_the_rates_first(written):
    """Fewer columns: the percentiles to p99.99 and the max, the send rate before the
    receive rate, what was lost; every count is in the run's section (the browser test
    measures the width)."""
    _, text, _ = written
    head = re.search(r'id="summary".*?<thead>(.*?)</thead>', text)[1]
    titles = re.findall(r"<th[^>]*>(.*?)</th>", head)
    assert titles == ["run", "system", "parameters", "status", "latency p50", "p90", "p99",
                      "p99.9", "p99.99", "max", "± clock", "count", "send msg/s",
                      "send MB/s", "recv msg/s", "recv MB/s", "lost", "unknown"]
    run = text[text.index('<article id="run-03-zmq'):]
    assert "sent 20,000 · received 19,988" in run[:run.index("</article>")]


def test_runs_without_series_say_a_reanalysis_is_needed(written):
    _, text, _ = written
    assert text.count("need the per-message analysis") == 5  # 02, 04 (unreadable), 05 … 07
    assert "series.json is unreadable" in text
    assert "sixnines report RESULTS_DIR" in text


def test_every_plot_is_drawn_and_has_gnuplot_files(written):
    page, text, _ = written
    report = page.parent
    slugs = re.findall(r'<figure class="plot" id="fig-([^"]+)"', text)
    expected = {"nines-latency", "nines-service_time", "nines-saturation_latency",
                "sweep-message_size-latency-log", "sweep-message_size-latency-linear",
                "sweep-message_size-throughput", "sweep-message_size-bytes",
                "sweep-message_size-density",
                "run-01-tcp-message_size_64-latency", "run-01-tcp-message_size_64-throughput",
                "run-01-tcp-message_size_64-histogram", "run-03-zmq-message_size_64-histogram"}
    assert expected <= set(slugs)
    assert not [s for s in slugs if s.startswith("run-02")]  # no series.json there
    for slug in slugs:
        assert (report / f"{slug}.dat").is_file() and (report / f"{slug}.gp").is_file()


def _blocks(dat: str) -> list[list[list[float]]]:
    """A gnuplot data file's blocks (separated by two blank lines) as rows of numbers."""
    blocks = []
    for block in re.split(r"\n\n\n", dat):
        rows = [[float(v) for v in line.split()] for line in block.splitlines()
                if line.strip() and not line.startswith("#")]
        blocks.append(rows)
    return blocks


def test_the_nines_data_file_holds_one_curve_per_measured_open_loop_run(written):
    page, _, _ = written
    dat = (page.parent / "nines-latency.dat").read_text()
    blocks = _blocks(dat)
    assert len(blocks) == 5  # 01 … 05; 06 is throughput mode, 07 failed
    for rows in blocks:
        xs = [r[0] for r in rows]
        assert xs == sorted(xs) and xs[-1] == pytest.approx(math.log10(20_000))
        assert all(r[1] > 0 for r in rows)
    first = blocks[0]  # from latency.hgrm: capped at the exact max, which ends the curve
    assert len(first) == 7 and first[-1][1] == 2800.0 and max(r[1] for r in first) == 2800.0
    gp = (page.parent / "nines-latency.gp").read_text()
    assert "set logscale y 10" in gp and "'90%%' 1" in gp and "'99.99%%' 4" in gp
    assert "here.'nines-latency.dat' index 0" in gp and "index 4" in gp


def test_the_per_run_data_files_keep_every_point(written):
    page, _, _ = written
    blocks = _blocks((page.parent / "run-01-tcp-message_size_64-latency.dat").read_text())
    assert [len(b) for b in blocks] == [10_000, 10_000, 10_000]  # band, mean, service
    assert max(row[2] for row in blocks[0]) == pytest.approx(2500 * 1.6)
    histogram = (page.parent / "run-01-tcp-message_size_64-histogram.gp").read_text()
    assert "with steps" in histogram and "mode 1.3k µs" in histogram


@pytest.mark.integration  # runs gnuplot
@pytest.mark.skipif(shutil.which("gnuplot") is None, reason="gnuplot is not installed")
def test_gnuplot_draws_every_script_from_any_directory(written, tmp_path):
    page, _, _ = written
    scripts = sorted(page.parent.glob("*.gp"))
    done = subprocess.run(["gnuplot", *map(str, scripts)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    for script in scripts:
        png = script.with_suffix(".png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_a_long_series_is_decimated_but_keeps_its_peak():
    ys = [10.0] * 50_000
    ys[31_337] = 5000.0
    figure = Figure("long", "long", Axis("n"), Axis("µs", "log"),
                    lines=(Line("latency", list(range(50_000)), ys, "#000"),))
    html = render(figure)
    path = re.search(r'<path class="s"[^>]* d="([^"]*)"', html).group(1)
    points = path.count("M") + path.count("L")
    assert points <= MAX_POINTS
    top = min(float(y) for y in re.findall(r"[ML][\d.]+ ([\d.]+)", path))
    assert top == pytest.approx(AREA_H * (1 - (math.log10(5000) - 1) / 3), abs=0.01)


def test_nines_labels_and_ticks():
    assert [percent(x) for x in (0, 1, 2, 3, 6)] == ["0%", "90%", "99%", "99.9%", "99.9999%"]
    assert [label for _, label in ticks("nines", 0, 5)] == [
        "0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
    assert percent(3.5, 0.5) == "99.97%"
    assert logarithmic(10, 100_000) == [10, 100, 1000, 10_000, 100_000]
    assert logarithmic(10, 100) == [10, 20, 50, 100]
    assert len(logarithmic(20, 30)) >= 2  # inside one decade: linear ticks


def test_a_curve_stops_where_the_sample_count_does():
    run = nines.RunInputs(RunSummary.model_validate(summary("01", "tcp", 64, 70.0)))  # only
    # the summary: its 7 percentiles
    xs, ys, source = nines.curve(run, Metric.LATENCY)
    assert source == "summary"
    assert xs[:4] == pytest.approx([math.log10(2), 1, 2, 3])
    assert len(xs) == 5 + 1 and xs[-1] == pytest.approx(math.log10(20_000))  # p99.999 … out
    assert ys[-1] == 70.0 * 40


def test_hgrm_files_are_read(tmp_path):
    (tmp_path / "latency.hgrm").write_text(HGRM)
    dist = read_hgrm(tmp_path / "latency.hgrm")
    assert len(dist.values) == 8 and dist.percentiles[0] == 0 and dist.values[1] == 71.807
    assert read_hgrm(tmp_path / "missing.hgrm") is None


def test_only_numeric_swept_parameters_get_plots():
    runs = [summary(f"0{i}", system, size, 70.0) for i, (system, size) in
            enumerate([("tcp", 64), ("tcp", 1024), ("zmq", 64), ("zmq", 1024)])]
    runs[0]["params"]["schedule"] = "poisson"
    assert swept(parsed(runs)) == ["message_size", "schedule"]
    plots = sweeps.figures(parsed(runs))
    assert list(plots) == ["message_size"]
    log_plot = plots["message_size"][0]
    assert log_plot.x.scale == "log" and log_plot.y.scale == "log"
    assert {line.name for line in log_plot.lines} >= {"zmq, schedule=fixed p50",
                                                      "zmq, schedule=fixed p99"}


def _size_sweep(mode: str) -> list[dict]:
    """tcp and zmq at 64 B and 1 KB, as the analysis leaves them: measured bytes/s (unlike
    rate × size: a receiver stream's share) and density."""
    runs = []
    for i, (system, size) in enumerate([("tcp", 64), ("tcp", 1024), ("zmq", 64), ("zmq", 1024)]):
        run = summary(f"0{i}", system, size, 70.0, density_us=10.0 * (i + 1) ** 2,
                      throughput={"bytes_per_s": {"sender": 1000.0 * i, "receiver": 900.0 * i}})
        run["params"]["mode"] = mode
        runs.append(run)
    return runs


def test_a_size_sweep_plots_measured_bytes_and_density():
    plots = {f.slug: f for f in sweeps.figures(parsed(_size_sweep("one-way")))["message_size"]}
    volume = plots["sweep-message_size-bytes"]
    assert [line.ys for line in volume.lines] == [[0.0, 900.0], [0.0, 1000.0],
                                                  [1800.0, 2700.0], [2000.0, 3000.0]]
    assert volume.caption.startswith("As measured by the analysis;")
    density = plots["sweep-message_size-density"]
    assert [(line.name, line.ys) for line in density.lines] == [("tcp", [10.0, 40.0]),
                                                                 ("zmq", [90.0, 160.0])]
    assert density.x.scale == "log" and density.y.scale == "log"  # 10 … 160 µs
    assert "Latency (p50, p99)" in plots["sweep-message_size-latency-log"].title


def test_bytes_fall_back_to_rate_times_size_and_density_is_optional():
    runs = _size_sweep("one-way")
    for run in runs:
        del run["throughput"], run["density_us"]
    plots = {f.slug: f for f in sweeps.figures(parsed(runs))["message_size"]}
    assert plots["sweep-message_size-bytes"].lines[0].ys == [1999.9 * 64, 1999.9 * 1024]
    assert "message size × messages/s" in plots["sweep-message_size-bytes"].caption
    assert "sweep-message_size-density" not in plots


def test_a_round_trip_sweep_says_round_trip_latency():
    plots = sweeps.figures(parsed(_size_sweep("round-trip")))["message_size"]
    for figure in plots[:2]:  # log and linear axes
        assert "Round-trip latency (p50, p99)" in figure.title
        assert figure.y.label == "round-trip latency (µs)"
    mixed = _size_sweep("round-trip")
    for run in mixed[:2]:  # tcp one way, zmq round trip: curves "tcp, mode=one-way" …
        run["params"]["mode"] = "one-way"
    assert sweeps.figures(parsed(mixed))["message_size"][0].y.label == "latency (µs)"


def _saturated(run: dict) -> dict:
    """A throughput-mode run as the analysis leaves it: saturation latency only."""
    run["params"]["rate"] = "max"
    run.update(load="saturation", latency_us={"count": 0},
               saturation_latency_us=run["latency_us"])
    return run


def test_saturation_latency_is_plotted_apart_from_open_loop_latency():
    runs = _size_sweep("one-way")
    for run in runs[:2]:  # tcp in throughput mode, zmq open loop: curves "tcp, rate=max" …
        _saturated(run)
    plots = {f.slug: f for f in sweeps.figures(parsed(runs))["message_size"]}
    saturation = plots["sweep-message_size-saturation_latency-log"]
    assert saturation.y.label == "saturation latency (µs)"
    assert [line.name for line in saturation.lines] == ["tcp, rate=max p50", "tcp, rate=max p99"]
    open_loop = plots["sweep-message_size-latency-linear"]
    assert [line.name for line in open_loop.lines] == ["zmq, rate=2000.0 p50",
                                                       "zmq, rate=2000.0 p99"]
    assert open_loop.lines[0].colour != saturation.lines[0].colour
    assert len(plots["sweep-message_size-throughput"].lines) == 4  # rates side by side


def test_slugs_cannot_leave_the_report_directory():
    assert slugify("../../etc/passwd") == "etc_passwd"
    assert slugify(HOSTILE) == "script_alert_1___script"
    assert slugify("...") == "plot"
