"""Matrix expansion: systems × swept fields (or × cases), order, run ids and resolved params."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from sixnines.orchestrator.scenario.matrix import CASE_KEY, MAX_RUN_ID, expand, safe_label
from sixnines.orchestrator.scenario.model import CaseScenario, Mode, load_scenario, parse_scenario

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


def test_repeats_interleave_cases_and_systems_and_say_which_repeat_they_are() -> None:
    runs = expand(parse_scenario(SWEEP.replace("  rate: [1000, 2000]", "  rate: 1000")
                                 + "repeat: 3\n"))
    assert [r.run_id for r in runs[:5]] == [
        "01-tcp-message_size=64-repeat=1", "02-tcp-message_size=1KB-repeat=1",
        "03-zmq-message_size=64-repeat=1", "04-zmq-message_size=1KB-repeat=1",
        "05-tcp-message_size=64-repeat=2"]
    assert [(r.system.name, r.swept["message_size"], r.repeat.number) for r in runs] == [
        (system, size, number) for number in (1, 2, 3) for system in ("tcp", "zmq")
        for size in ("64", "1KB")]
    assert {(r.repeat.of, r.repeat.case) for r in runs} == {
        (3, "message_size=64"), (3, "message_size=1KB")}
    assert runs[0].params == runs[4].params  # a repeat runs the same point


def test_a_case_run_once_has_no_repeat() -> None:
    assert all(r.repeat is None and not r.run_id.endswith("-repeat=1")
               for r in expand(parse_scenario(SWEEP)))


def test_a_cut_run_id_keeps_its_repeat() -> None:
    system, case = "s" * 64, "c" * 64
    runs = expand(parse_scenario(f"""\
name: long
systems: [{{name: {system}, driver: tcp}}]
workload: {{rate: 1000, duration: 1s}}
cases: [{{name: {case}, message_size: 64}}]
repeat: 2
"""))
    assert [len(r.run_id) for r in runs] == [MAX_RUN_ID] * 2
    assert [r.run_id[-12:] for r in runs] == ["...-repeat=1", "...-repeat=2"]
    assert [r.repeat.case for r in runs] == [case, case]  # the manifest keeps it whole


def test_params_are_resolved_and_json_ready() -> None:
    run = expand(parse_scenario(SWEEP))[2]
    assert run.params == {
        "mode": "one-way",
        "message_size": 1024,
        "rate": 1000.0,
        "messages": None,
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


# --- cases: named combinations instead of a product ------------------------------------------

CLASSIC = """\
name: classic
systems:
  - {name: tcp, driver: tcp}
  - {name: zmq, driver: zmq}
workload:
  duration: 30s
  warmup: 5s
  producers: 1
  consumers: 1
cases:
  - {message_size: 256, rate: 3000}
  - {message_size: 1KB, rate: 3000}
  - {message_size: 5KB, rate: 2000}
  - {message_size: 1KB, rate: 20000, connections: 25}
  - {message_size: 1MB, rate: 100}
"""
#: The first case named, the last named and sweeping its rate.
SMALL = ("{message_size: 256, rate: 3000}", "{name: small, message_size: 256, rate: 3000}")
BIG = ("{message_size: 1MB, rate: 100}", "{name: big, message_size: 1MB, rate: [100, 200]}")


def test_classic_cases_are_five_runs_per_system() -> None:
    scenario = parse_scenario(CLASSIC)
    assert isinstance(scenario, CaseScenario)
    runs = expand(scenario)
    assert [r.run_id for r in runs] == [
        "01-tcp-message_size=256-rate=3000",
        "02-tcp-message_size=1KB-rate=3000",
        "03-tcp-message_size=5KB-rate=2000",
        "04-tcp-message_size=1KB-rate=20000-connections=25",
        "05-tcp-message_size=1MB-rate=100",
        "06-zmq-message_size=256-rate=3000",
        "07-zmq-message_size=1KB-rate=3000",
        "08-zmq-message_size=5KB-rate=2000",
        "09-zmq-message_size=1KB-rate=20000-connections=25",
        "10-zmq-message_size=1MB-rate=100",
    ]
    resolved = [(r.workload.message_size, r.workload.rate, r.workload.connections) for r in runs]
    assert resolved[:5] == [
        (256, 3000.0, 1),
        (1024, 3000.0, 1),
        (5120, 2000.0, 1),
        (1024, 20000.0, 25),
        (1024 * 1024, 100.0, 1),
    ]
    assert resolved[5:] == resolved[:5]
    for run in runs:  # the base reaches every case
        assert run.workload.duration_ns == 30_000_000_000
        assert run.workload.warmup_ns == 5_000_000_000
        assert (run.workload.producers, run.workload.consumers) == (1, 1)
        assert run.workload.mode is Mode.ONE_WAY
    assert runs[3].params["connections"] == 25
    assert runs[3].params["drain_ns"] == 5_000_000_000  # untouched defaults still resolved
    assert runs[3].swept == {"message_size": "1KB", "rate": "20000", "connections": "25"}


def test_lists_expand_within_a_case() -> None:
    text = CLASSIC.replace("  consumers: 1\n", "  consumers: [1, 2]\n").replace(
        "{message_size: 5KB, rate: 2000}", "{message_size: 5KB, rate: [2000, 4k]}"
    )
    runs = expand(parse_scenario(text.replace("  - {name: zmq, driver: zmq}\n", "")))
    assert len(runs) == 12  # the base list doubles every case, the case list doubles one more
    assert [r.run_id for r in runs[4:8]] == [
        "05-tcp-message_size=5KB-rate=2000-consumers=1",
        "06-tcp-message_size=5KB-rate=2000-consumers=2",
        "07-tcp-message_size=5KB-rate=4k-consumers=1",
        "08-tcp-message_size=5KB-rate=4k-consumers=2",
    ]
    rates_consumers = [(r.workload.rate, r.workload.consumers) for r in runs[4:8]]
    assert rates_consumers == [(2000.0, 1), (2000.0, 2), (4000.0, 1), (4000.0, 2)]
    assert runs[6].swept == {"message_size": "5KB", "rate": "4k", "consumers": "1"}


def test_a_case_overrides_a_base_list() -> None:
    text = CLASSIC.replace("  producers: 1\n", "  producers: [1, 2]\n").replace(
        "{message_size: 1MB, rate: 100}", "{message_size: 1MB, rate: 100, producers: 4}"
    )
    runs = expand(parse_scenario(text))
    assert len(runs) == 2 * (4 * 2 + 1)
    assert runs[8].run_id == "09-tcp-message_size=1MB-rate=100-producers=4"
    assert runs[8].workload.producers == 4


def test_named_cases_name_their_runs() -> None:
    runs = expand(parse_scenario(CLASSIC.replace(*SMALL).replace(*BIG)))
    ids = [r.run_id for r in runs]
    assert ids[:7] == [
        "01-tcp-small",
        "02-tcp-message_size=1KB-rate=3000",
        "03-tcp-message_size=5KB-rate=2000",
        "04-tcp-message_size=1KB-rate=20000-connections=25",
        "05-tcp-big-rate=100",  # a name stands for the case's fields, not for what it sweeps
        "06-tcp-big-rate=200",
        "07-zmq-small",
    ]
    assert runs[0].swept == {CASE_KEY: "small", "message_size": "256", "rate": "3000"}
    assert runs[5].swept == {CASE_KEY: "big", "message_size": "1MB", "rate": "200"}
    assert all(re.fullmatch(r"[A-Za-z0-9._=-]+", i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_cases_dump_and_reload_to_the_same_runs() -> None:
    scenario = parse_scenario(CLASSIC.replace(*BIG))
    dumped = scenario.model_dump(mode="json")
    base = {"duration": "30000000000ns", "warmup": "5000000000ns", "producers": 1, "consumers": 1}
    assert dumped["workload"] == base
    assert dumped["cases"][0] == {"message_size": 256, "rate": 3000.0}
    assert dumped["cases"][4] == {"name": "big", "message_size": 1048576, "rate": [100.0, 200.0]}
    again = parse_scenario(yaml.safe_dump(dumped))
    assert again.model_dump(mode="json") == dumped
    assert [r.params for r in expand(again)] == [r.params for r in expand(scenario)]
