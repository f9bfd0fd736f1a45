"""A backlog built and drained as a user runs it: the real CLI against Kafka (noida-db) and
RabbitMQ started from their recipes, consumers held while producers keep 1,000 msg/s
until 1,000 messages are queued, then released; and a bound too short for any drain,
which gets its verdict (draining 1,024 messages within 1 ms would take a consumer
receiving a million a second); and on Redis streams a backlog of sizes that vary, built
in bytes. The report shows each backlog and marks its instants on the run's timeline;
`compare` judges a drain against another of the same backlog."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from sixnines.formats.chunks import message_files
from sixnines.formats.manifest import Manifest
from sixnines.formats.sizes import CHOICES, DrawnSizes, Sizes
from tests.integration.report_pages import (
    compare,
    compared_rows,
    edited_copy,
    number,
    plot_data,
    run_section,
    table_rows,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

RELEASE_S = 1.0  # 1,000 messages at 1,000 msg/s from the start (no warm-up)
SCENARIO = """
name: backlog
systems:
  - {name: kafka, driver: kafka, broker: {recipe: kafka-noida}}
  - {name: rabbitmq, driver: rabbitmq, broker: {recipe: rabbitmq}}
workload: {message_size: 100, rate: 1k, warmup: 0, duration: 2s, drain: 2s}
cases:
  - {name: drains, backlog: {build: 1k messages, drain_within: 1s}}
  - {name: bound, backlog: {build: 100KB, drain_within: 1ms}}
"""


def run_scenario(work: Path, scenario: str) -> tuple[Path, str, dict[str, dict]]:
    """`sixnines run` of `scenario` in `work`, which went well: its results directory,
    its console and its runs' summaries by run id."""
    (work / "backlog.yaml").write_text(scenario)
    done = subprocess.run([sys.executable, "-m", "sixnines", "run", "backlog.yaml", "--output",
                           str(work / "out")], cwd=work, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = Path(done.stdout.strip().splitlines()[-1])
    runs = json.loads((results / "summary.json").read_text())["runs"]
    return results, done.stdout + done.stderr, {run["run_id"]: run for run in runs}


@pytest.fixture(scope="module")
def backlog_runs(tmp_path_factory) -> tuple[Path, str, dict[str, dict]]:
    return run_scenario(tmp_path_factory.mktemp("backlog"), SCENARIO)


def first_receipt_s(run_dir: Path) -> float:
    """When the consumer's first message came, s after the producer's first intended time
    (the start instant: one producer, no phase, one host's clock)."""
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    column: dict[str, list[int]] = {"producer": [], "consumer": []}
    for agent in manifest.agents:
        if agent.role in column:
            name = "intended_ns" if agent.role == "producer" else "recv_ns"
            for path in message_files(run_dir / "agents" / agent.id):
                column[agent.role] += pq.read_table(path, columns=[name]).column(0).to_pylist()
    return (np.min(column["consumer"]) - np.min(column["producer"])) / 1e9


@pytest.mark.parametrize("system", ["kafka", "rabbitmq"])
def test_the_backlog_builds_while_consumers_hold_then_drains(backlog_runs, system):
    results, console, runs = backlog_runs
    number = {"kafka": "01", "rabbitmq": "03"}[system]
    run = runs[f"{number}-{system}-drains"]
    assert run["status"] == "ok", run["problems"]
    assert run["lost"] == 0 and run["received"] == run["sent"] == 2000
    backlog = run["backlog"]
    # what was sent before the release, none of it read (a send or two may go late)
    assert 950 <= backlog["built_messages"] <= 1000
    assert backlog["built_bytes"] == 100 * backlog["built_messages"]
    assert backlog["released_at_s"] == RELEASE_S and backlog["drain_within_s"] == 1.0
    assert first_receipt_s(results / run["run_id"]) >= RELEASE_S - 0.001
    assert backlog["drained"] is True, backlog["verdict"]
    assert 0 < backlog["drained_in_s"] < 1.0
    assert backlog["drained_at_s"] == pytest.approx(RELEASE_S + backlog["drained_in_s"])
    # (a drain of a few ms may see no send: the producers go at one a ms)
    assert backlog["drain_rate"] > max(backlog["send_rate"], 1000)
    assert backlog["verdict"].startswith(f"drained {backlog['built_messages']:,} messages")
    # the backlog's messages waited for the release (half a second on average), the live
    # ones did not
    held, live = backlog["backlog_latency_us"], backlog["live_latency_us"]
    assert held["count"] == 1000 and held["p50"] > 300_000
    assert live["count"] > 0 and live["p50"] < held["p50"] / 10
    assert "backlog: " in console and "live messages" in console
    assert "backlog 1000 messages, drained within 1 s" in console


@pytest.mark.parametrize("system", ["kafka", "rabbitmq"])
def test_a_drain_longer_than_its_bound_gets_a_verdict(backlog_runs, system):
    """100 KB is 1,024 messages of 100 B, built by 1.024 s; no consumer drains them in
    1 ms."""
    _, _, runs = backlog_runs
    number = {"kafka": "02", "rabbitmq": "04"}[system]
    run = runs[f"{number}-{system}-bound"]
    assert run["status"] == "ok", run["problems"]
    backlog = run["backlog"]
    assert backlog["released_at_s"] == pytest.approx(1.024)
    assert backlog["drained"] is False
    assert backlog["drained_at_s"] is None and backlog["drained_in_s"] is None
    assert backlog["left_messages"] > 0
    assert backlog["verdict"].startswith("not drained within 0.001 s: consumers at")
    assert backlog["live_latency_us"]["count"] == 0
    # it did drain once the bound was past: every message arrived
    assert run["lost"] == 0 and run["received"] == run["sent"]


RUN_IDS = ("01-kafka-drains", "02-kafka-bound", "03-rabbitmq-drains", "04-rabbitmq-bound")


def test_the_report_shows_each_backlog_and_marks_its_instants(backlog_runs):
    results, _, runs = backlog_runs
    page = (results / "report" / "index.html").read_text()
    for run_id in RUN_IDS:
        backlog = runs[run_id]["backlog"]
        section = run_section(page, run_id)
        assert html.escape(backlog["verdict"]) in section
        ((built, size, released, bound, drained_at, drained_in, drain_rate, send_rate,
          left),) = table_rows(section, "backlog")
        assert (number(built), number(size)) == (backlog["built_messages"],
                                                 backlog["built_bytes"])
        assert number(released) == pytest.approx(backlog["released_at_s"], abs=5e-4)
        assert number(bound) == backlog["drain_within_s"]
        for cell, rate in ((drain_rate, backlog["drain_rate"]),
                           (send_rate, backlog["send_rate"])):
            assert cell == "–" if rate is None else number(cell) == pytest.approx(rate, abs=0.5)
        if backlog["drained"]:
            assert number(drained_at) == pytest.approx(backlog["drained_at_s"], abs=5e-4)
            assert number(drained_in) == pytest.approx(backlog["drained_in_s"], abs=5e-4)
            assert left == "–"
        else:
            assert (drained_at, drained_in) == ("–", "–")
            assert number(left) == backlog["left_messages"]
        held = backlog["backlog_latency_us"]
        assert f"<td>{held['count']:,}</td>" in section.split("backlog messages", 1)[1]
        # the timeline: the receive rate against the intended 1,000 msg/s, and the hold,
        # the release and the drained instant (or the bound's end) marked where they were
        script = (results / "report" / f"run-{run_id}-timeline.gp").read_text()
        said = " ".join(line[2:] for line in script.splitlines() if line.startswith("# "))
        assert backlog["verdict"] in said  # the caption, in the script's opening comment
        marked = {label: float(x) for label, x in re.findall(
            r"set label \d+ '([^']*)' at ([-\d.e]+), graph", script)}
        assert marked["consumers held"] == 0  # no warm-up: held from the measured start
        assert marked[f"released {backlog['released_at_s']:g} s"] == pytest.approx(
            backlog["released_at_s"])
        if backlog["drained"]:
            (drained,) = [x for label, x in marked.items() if label.startswith("drained +")]
            assert drained == pytest.approx(backlog["drained_at_s"])
        else:
            assert marked[f"bound {backlog['drain_within_s']:g} s: not drained"] == \
                pytest.approx(backlog["released_at_s"] + backlog["drain_within_s"])
        data = plot_data(results / "report" / f"run-{run_id}-timeline.dat")
        assert set(data["intended msg/s"][:, 1]) == {1000.0}
        received = data["received msg/s"]
        # nothing received while the consumers were held
        assert received[received[:, 0] < backlog["released_at_s"] - 0.01, 1].sum() == 0


def test_compare_judges_a_drain_against_another_of_the_same_backlog(backlog_runs,
                                                                    tmp_path):
    results, _, runs = backlog_runs
    original = results / "01-kafka-drains"
    backlog = runs["01-kafka-drains"]["backlog"]

    def slower(summary: dict) -> None:
        drain = summary["backlog"]
        drain["drain_rate"] /= 3
        drain["drained_in_s"] *= 3
        drain["drained_at_s"] = drain["released_at_s"] + drain["drained_in_s"]

    code, lines = compare(original, edited_copy(original, tmp_path / "slower", slower))
    assert code == 1, "\n".join(lines)
    rows = compared_rows(lines)
    rate, time = rows["backlog drain rate msg/s"], rows["backlog time to drain s"]
    assert number(rate[0]) == pytest.approx(backlog["drain_rate"], rel=1e-3)
    assert rate[2] == "-66.7%" and rate[-1] == "regression"
    assert time[2] == "+200.0%" and time[-1] == "regression"
    same, lines = compare(original, original)
    assert same == 0 and compared_rows(lines)["backlog time to drain s"][-1] == ""


def test_compare_fails_a_backlog_that_no_longer_drains(backlog_runs, tmp_path):
    results, _, runs = backlog_runs
    original = results / "03-rabbitmq-drains"

    def never(summary: dict) -> None:
        drain = summary["backlog"]
        drain.update(drained=False, drained_at_s=None, drained_in_s=None, left_messages=500,
                     verdict="not drained within 1 s: consumers at 500 msg/s cannot catch "
                             "up with 1,000 msg/s (500 messages still queued)")

    junit = tmp_path / "compare.xml"
    code, lines = compare(original, edited_copy(original, tmp_path / "never", never),
                          "--junit", junit)
    text = "\n".join(lines)
    assert code == 1, text
    drained_in = runs["03-rabbitmq-drains"]["backlog"]["drained_in_s"]
    assert f"✗ backlog drained in {drained_in:.3g} s → not within 1 s (not drained" in text
    assert compared_rows(lines)["backlog time to drain s"][-1] == "not comparable"
    report = junit.read_text()
    case = report[report.index('name="backlog drained"'):]
    assert case.index("<failure") < case.index("</testcase>")


def test_compare_calls_runs_of_other_backlogs_another_experiment(backlog_runs):
    results, _, _ = backlog_runs
    code, lines = compare(results / "01-kafka-drains", results / "02-kafka-bound")
    text = "\n".join(lines)
    assert code == 0, text  # shown, not judged: the drained one is no regression
    assert ("not the same experiment: backlog 1000 messages, drained within 1 s → 100 KB, "
            "drained within 1 ms") in text
    rows = compared_rows(lines)
    assert rows["backlog drain rate msg/s"][-1] == "not the same experiment"
    assert "backlog drained in" not in text
def test_a_backlog_of_sizes_that_vary_is_built_in_bytes_of_their_mean(tmp_path):
    """Redis streams, sizes of 64 and 256 B (3 to 1: a mean of 112 B): a build of 112,000
    bytes is 1,000 messages, released at 1 s; the bytes built are the sizes the producer's
    ring drew for the messages it sent before the release."""
    sizes = Sizes(CHOICES, values=(64, 256), weights=(3.0, 1.0))
    results, console, runs = run_scenario(tmp_path, """
name: sized-backlog
systems:
  - {name: redis, driver: redis, broker: {recipe: redis}, options: {mode: streams}}
workload: {message_size: {64: 3, 256: 1}, rate: 1k, warmup: 0, duration: 2s, drain: 2s,
           seed: 5, backlog: {build: 112000B, drain_within: 1s}}
""")
    ((run_id, run),) = runs.items()
    assert run["status"] == "ok", run["problems"]
    assert run["lost"] == 0 and run["received"] == run["sent"] == 2000
    backlog = run["backlog"]
    assert backlog["released_at_s"] == RELEASE_S
    assert 950 <= backlog["built_messages"] <= 1000
    drawn = DrawnSizes(sizes, 5).column(np.zeros(backlog["built_messages"], np.int32),
                                        np.arange(backlog["built_messages"]))
    assert backlog["built_bytes"] == int(drawn.sum()) != 112 * backlog["built_messages"]
    assert first_receipt_s(results / run_id) >= RELEASE_S - 0.001
    assert backlog["drained"] is True, backlog["verdict"]
    assert "backlog 109.4 KB, drained within 1 s" in console
