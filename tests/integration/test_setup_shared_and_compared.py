"""Results someone else can trust without asking, from one real two-system run through the
CLI (the builtin relay and ZeroMQ proxy, real agents, analysed by their sidecars): the
console's setup of each system and its side-by-side table, MB/s beside msg/s, parameters
in words, summary.csv's new columns; and `compare` of results with nothing in common, or
another experiment, through the real command."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from sixnines import __version__
from sixnines.formats.layout import CSV_FILE, SUMMARY_FILE
from tests.faults.support import line_with, refused, sixnines

SCENARIO = """
name: shared
systems:
  - {name: relay, driver: tcp}
  - {name: proxy, driver: zmq}
workload: {message_size: 1kb, rate: 1000, duration: 1s, warmup: 0s}
"""
#: The one-word verdicts a run of this scenario may get on a busy machine.
VERDICTS = ("ok", "behind", "saturated", "lossy", "partial")


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """(results directory, the console's output) of `sixnines run` of SCENARIO."""
    work = tmp_path_factory.mktemp("shared")
    (work / "scenario.yaml").write_text(SCENARIO)
    done = sixnines("run", "scenario.yaml", "--output", "runs", cwd=work,
                    env={"COLUMNS": "100"})
    assert done.returncode in (0, 1), done.stderr  # 1: a run partial on a busy machine
    assert "Traceback" not in done.stderr
    return work / done.stdout.strip().splitlines()[-1], done.stderr


def test_the_console_says_what_each_system_ran_with(shared):
    _, text = shared
    for system, driver in (("relay", "tcp: nodelay true"), ("proxy", "zmq: hwm")):
        block = text[text.index(f"{system} ran with:"):]
        lines = block.splitlines()[1:8]
        assert lines[0].startswith("  broker: builtin (sixnines' own, for "), lines
        assert lines[1].startswith(f"  driver: {driver}"), lines
        assert lines[2] == "  durability: none (no durability: messages live in memory " \
                           "only, nothing is stored or acknowledged)", lines
        machine = lines[3]
        assert re.fullmatch(r"  machines: local: .*\d+ CPUs, kernel \S+, [\d.]+ GB", machine)
        assert lines[4].startswith("  placement: broker on local; local: ")
        assert lines[5].startswith("  CPU placement: ")
        assert lines[6].startswith(f"  sixnines: {__version__} (Python ")


def test_mb_s_beside_msg_s_and_parameters_in_words(shared):
    _, text = shared
    rates = line_with(text, "send ", " msg/s ", " MB/s  receive ")
    sent, mb_s = re.search(r"send ([\d,]+) msg/s ([\d.]+) MB/s", rates).groups()
    assert float(mb_s) == pytest.approx(float(sent.replace(",", "")) * 1024 / 2**20, rel=0.01)
    assert "message_size 1 KB, rate 1,000 msg/s" in text and "duration 1 s" in text
    assert "duration_ns" not in text and "null" not in text


def test_a_side_by_side_table_ends_a_multi_system_scenario(shared):
    _, text = shared
    table = text[text.rindex("side by side"):]
    assert re.search(r"system +p50 µs +p99 +p99\.9 +max +msg/s +MB/s +lost +verdict", table)
    for system in ("relay", "proxy"):
        row = line_with(table, f"{system} ").split()
        assert row[0] == system and row[-1] in VERDICTS, row
        assert row[-2] == "0" and float(row[-3]) > 0  # lost; MB/s
    assert "latency µs from the intended send time" in table


def test_summary_csv_has_the_broker_bytes_and_warnings(shared):
    results, _ = shared
    with open(results / CSV_FILE, newline="", encoding="utf-8") as rows:
        table = list(csv.DictReader(rows))
    assert [row["system"] for row in table] == ["relay", "proxy"]
    for row in table:
        assert row["broker_kind"] == "builtin"
        assert float(row["receive_bytes_per_s"]) == pytest.approx(
            float(row["receive_rate"]) * 1024)
        assert isinstance(json.loads(row["warnings"]), list)
        assert json.loads(row["problems"]) == []


def _edited(results: Path, dest: Path, change) -> Path:
    """A copy of the results whose summary.json's runs `change` edited."""
    shutil.copytree(results, dest)
    body = json.loads((dest / SUMMARY_FILE).read_text())
    for run in body["runs"]:
        change(run)
    (dest / SUMMARY_FILE).write_text(json.dumps(body))
    return dest


def test_compare_with_nothing_in_common_says_so_and_exits_2(shared, tmp_path):
    """The same runs as if of other systems (a RabbitMQ result against a NATS one): no
    run matches; one line, exit 2, not "regression" with "only in A/B" lines."""
    results, _ = shared
    other = _edited(results, tmp_path / "other", lambda run: run.update(
        system={"relay": "rabbitmq", "proxy": "nats"}[run["system"]]))
    line = refused(sixnines("compare", results, other))
    assert "nothing in common to compare: no run of B matches one of A" in line
    assert "A holds relay, proxy, B rabbitmq, nats" in line


def test_compare_of_another_message_size_is_not_the_same_experiment(shared, tmp_path):
    results, _ = shared
    bigger = _edited(results, tmp_path / "bigger",
                     lambda run: run["params"].update(message_size=4096))
    done = sixnines("compare", results, bigger)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stderr.split())
    assert "! not the same experiment: message_size 1 KB → 4 KB: figures shown, not judged" \
        in text
    assert "improved" not in text and "2 not the same experiment" in text
