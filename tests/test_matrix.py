"""Matrix expansion: systems × swept fields, order, run ids and resolved params."""

from __future__ import annotations

import json
import re
from pathlib import Path

from orchestrator.matrix import expand, safe_label
from orchestrator.scenario import Mode, load_scenario, parse_scenario

ROOT = Path(__file__).resolve().parents[1]

SWEEP = """\
name: sweep
systems:
  - {name: tcp, driver: tcp}
  - {name: zmq, driver: zmq}
workload:
  message_size: [64, 1KB]
  rate: [1000, 2000]
  duration: 10s
"""


def test_two_systems_two_sizes_two_rates() -> None:
    runs = expand(parse_scenario(SWEEP))
    assert len(runs) == 8
    assert [r.index for r in runs] == list(range(1, 9))
    order = [(r.system.name, r.workload.message_size, r.workload.rate) for r in runs]
    assert order == [
        ("tcp", 64, 1000.0),
        ("tcp", 64, 2000.0),
        ("tcp", 1024, 1000.0),
        ("tcp", 1024, 2000.0),
        ("zmq", 64, 1000.0),
        ("zmq", 64, 2000.0),
        ("zmq", 1024, 1000.0),
        ("zmq", 1024, 2000.0),
    ]
    assert runs[0].run_id == "01-tcp-message_size=64-rate=1000"
    assert runs[7].run_id == "08-zmq-message_size=1KB-rate=2000"
    assert len({r.run_id for r in runs}) == 8
    assert all(re.fullmatch(r"[A-Za-z0-9._=-]+", r.run_id) for r in runs)
    assert runs[3].swept == {"message_size": "1KB", "rate": "2000"}


def test_params_are_resolved_and_json_ready() -> None:
    run = expand(parse_scenario(SWEEP))[2]
    assert run.params == {
        "mode": "one-way",
        "message_size": 1024,
        "rate": 1000.0,
        "schedule": "fixed",
        "duration_ns": 10_000_000_000,
        "warmup_ns": 1_000_000_000,
        "producers": 1,
        "consumers": 1,
        "connections": 1,
        "receive": "blocking",
        "drain_ns": 5_000_000_000,
        "seed": None,
    }
    assert json.loads(json.dumps(run.params)) == run.params
    assert run.workload.mode is Mode.ONE_WAY
    assert run.workload.duration_ns == 10_000_000_000


def test_unswept_fields_stay_out_of_run_ids() -> None:
    text = SWEEP.replace("[64, 1KB]", "64").replace("[1000, 2000]", "1000")
    assert [r.run_id for r in expand(parse_scenario(text))] == ["01-tcp", "02-zmq"]


def test_run_ids_are_filesystem_safe() -> None:
    text = SWEEP.replace("[1000, 2000]", "[20k msg/s, 1.5M]").replace(
        "duration: 10s", "duration: [500 µs, 1s]"
    )
    ids = [r.run_id for r in expand(parse_scenario(text))]
    assert ids[0] == "01-tcp-message_size=64-rate=20kmsg_s-duration=500us"
    assert all(re.fullmatch(r"[A-Za-z0-9._=-]+", i) for i in ids)
    assert len(set(ids)) == len(ids) == 16
    assert safe_label("a/b c:d") == "a_bc_d"


def test_wide_matrices_pad_the_index() -> None:
    sizes = ", ".join(str(64 + i) for i in range(60))
    runs = expand(parse_scenario(SWEEP.replace("[64, 1KB]", f"[{sizes}]")))
    assert len(runs) == 240
    assert runs[0].run_id.startswith("001-tcp-")
    assert sorted(r.run_id for r in runs) == [r.run_id for r in runs]


def test_quickstart_example() -> None:
    scenario = load_scenario(ROOT / "examples" / "quickstart.yaml")
    runs = expand(scenario)
    assert [r.run_id for r in runs] == [
        "01-tcp-message_size=64",
        "02-tcp-message_size=1KB",
        "03-zmq-message_size=64",
        "04-zmq-message_size=1KB",
    ]
    assert all(r.workload.rate == 2000.0 for r in runs)
    assert runs[1].workload.warmup_ns == 2_000_000_000
