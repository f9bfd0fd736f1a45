"""Parameters and figures as people write them (formats/wording.py), read back by the
scenario's own parsers where they are a scenario's values."""

from __future__ import annotations

import pytest

from sixnines.formats.wording import megabytes_text, params_text, value_text
from sixnines.orchestrator.scenario.units import parse_duration, parse_size


def test_a_run_s_parameters_read_as_a_scenario_writes_them():
    params = {"mode": "one-way", "message_size": 1024, "rate": 5000.0, "messages": None,
              "schedule": "fixed", "duration_ns": 5_000_000_000, "warmup_ns": 500_000_000,
              "producers": 3, "seed": None}
    assert params_text(params) == (
        "mode one-way, message_size 1 KB, rate 5,000 msg/s, schedule fixed, duration 5 s, "
        "warmup 500 ms, producers 3")
    assert params_text(params, ["message_size", "nothing"]) == "message_size 1 KB"


@pytest.mark.parametrize("name, value, words", [
    ("message_size", 64, "64 B"), ("message_size", 1536, "1.5 KB"),
    ("message_size", 4 * 1024**2, "4 MB"), ("duration_ns", 250_000, "250 µs"),
    ("drain_ns", 0, "0 s"), ("rate", "max", "max"), ("rate", 2500.5, "2,500.5 msg/s"),
    ("messages", 1_000_000, "1,000,000"), ("cross_host_latency", True, "true"),
    ("message_size", {"weighted": {"64": 0.7, "1024": 0.25, "65536": 0.05}},
     "64 B 0.7, 1 KB 0.25, 64 KB 0.05"),
    ("message_size", {"uniform": [64, 4096]}, "uniform 64 B…4 KB"),
    ("message_size", {"lognormal": [512, 16384]}, "lognormal median 512 B, p99 16 KB"),
    ("message_size", {"file": "sizes.txt"}, "sizes of sizes.txt"),
])
def test_each_kind_of_value(name, value, words):
    assert value_text(name, value) == words


def test_sizes_and_durations_read_back_as_the_scenario_reads_them():
    assert parse_size(value_text("message_size", 1536)) == 1536
    assert parse_duration(value_text("duration_ns", 2_500_000_000)) == 2_500_000_000


def test_mb_s_is_binary_as_the_sizes_are():
    assert megabytes_text(1000 * 1024) == "0.977"  # 1,000 msg/s of 1 KB
    assert megabytes_text(2**20 * 250) == "250"
    assert megabytes_text(None) == "-"
