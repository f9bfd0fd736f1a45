"""Scenario loading: a valid file, and every kind of problem reported with path and line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from sixnines.drivers import registry
from sixnines.drivers.base import Driver
from sixnines.drivers.tcp import TcpDriver, TcpOptions
from sixnines.drivers.zmq import ZmqOptions
from sixnines.orchestrator.scenario.model import (
    CaseScenario,
    Mode,
    Problem,
    Receive,
    Scenario,
    ScenarioError,
    Schedule,
    WorkloadPoint,
    load_scenario,
    parse_scenario,
)
from sixnines.orchestrator.scenario.recipes import recipe_names
from sixnines.orchestrator.scenario.workload import MAX_RATE_CAP_NS

VALID = """\
name: demo
systems:
  - {name: tcp, driver: tcp, broker: builtin}
  - {name: zmq, driver: zmq, broker: builtin, options: {hwm: 1000}}
  - {name: my-relay, driver: tcp, broker: {external: "127.0.0.1:7000"}, options: {nodelay: false}}
workload:
  mode: one-way
  message_size: [64, 1KB]
  rate: 20k
  schedule: poisson
  duration: 10s
  warmup: 500ms
  producers: 2
  consumers: 3
  connections: 4
  receive: busy-poll
  drain: 1s
  seed: 7
hosts:
  - {name: h1, address: 10.77.0.11, user: root, key: ~/.ssh/bench, known_hosts: kh}
  - {name: pods, docker: "unix:///run/podman.sock"}
placement: {broker: h1, agents: [pods, local]}
output: out
"""

MINIMAL = """\
name: mini
systems:
  - name: tcp
    driver: tcp
workload:
  message_size: 64
  rate: 1000
  duration: 1s
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def problems(tmp_path: Path, text: str) -> list[Problem]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, text))
    assert info.value.file == str(tmp_path / "scenario.yaml")
    return info.value.problems


def only(tmp_path: Path, text: str) -> Problem:
    found = problems(tmp_path, text)
    assert len(found) == 1, found
    return found[0]


# --- valid files ------------------------------------------------------------------------


def test_valid_scenario_loads(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, VALID))
    assert scenario.name == "demo"
    assert [s.name for s in scenario.systems] == ["tcp", "zmq", "my-relay"]
    tcp, zmq, relay = scenario.systems
    assert tcp.broker.kind == "builtin"
    assert relay.broker.kind == "external"
    assert relay.broker.external == "127.0.0.1:7000"
    assert tcp.options == TcpOptions()
    assert zmq.options == ZmqOptions(hwm=1000)
    assert relay.options == TcpOptions(nodelay=False)
    assert tcp.driver_class().name == "tcp"

    w = scenario.workload
    assert w.mode == (Mode.ONE_WAY,)
    assert w.message_size == (64, 1024)
    assert w.rate == (20_000.0,)
    assert w.schedule == (Schedule.POISSON,)
    assert w.duration == (10_000_000_000,)
    assert w.warmup == (500_000_000,)
    assert (w.producers, w.consumers, w.connections) == ((2,), (3,), (4,))
    assert w.receive == (Receive.BUSY_POLL,)
    assert w.drain == (1_000_000_000,)
    assert w.seed == (7,)
    assert w.swept == ("message_size",)
    h1, pods = scenario.hosts
    assert (h1.kind, h1.address, h1.user, h1.key, h1.port) == (
        "ssh", "10.77.0.11", "root", "~/.ssh/bench", None)
    assert (pods.kind, pods.docker, pods.address) == (
        "container", "unix:///run/podman.sock", "127.0.0.1")
    assert scenario.placement.broker == "h1"
    assert scenario.placement.agents == ("pods", "local")
    assert scenario.placement.cross_host_latency is False
    assert scenario.output == "out"


def test_defaults(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, MINIMAL))
    assert scenario.systems[0].broker.kind == "builtin"
    assert scenario.systems[0].options == TcpOptions()
    assert scenario.hosts == ()
    assert (scenario.placement.broker, scenario.placement.agents) == ("local", ("local",))
    assert scenario.output == "runs"
    ((workload, labels),) = scenario.workload.expand()
    assert labels == {}
    assert workload == WorkloadPoint(
        mode="one-way",
        message_size=64,
        rate=1000.0,
        schedule="fixed",
        duration_ns=1_000_000_000,
        warmup_ns=1_000_000_000,
        producers=1,
        consumers=1,
        connections=1,
        receive="blocking",
        drain_ns=5_000_000_000,
        seed=None,
    )


def test_closed_schedule_is_fine_in_round_trip(tmp_path: Path) -> None:
    text = MINIMAL + "  mode: round-trip\n  schedule: closed\n"
    assert load_scenario(write(tmp_path, text)).workload.schedule == (Schedule.CLOSED,)


def test_dump_reloads_to_the_same_scenario(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, VALID))
    dumped = scenario.model_dump(mode="json")
    assert dumped["systems"][2]["broker"] == {"external": "127.0.0.1:7000"}
    assert dumped["systems"][0]["options"] == {"nodelay": True}
    again = parse_scenario(yaml.safe_dump(dumped))
    assert again.model_dump(mode="json") == dumped


# --- problems, each with its path and line --------------------------------------------


def test_unknown_top_level_key(tmp_path: Path) -> None:
    assert only(tmp_path, MINIMAL + "colour: red\n") == Problem(
        "colour", 9, "unknown field (expected one of: name, systems, workload, hosts, inventory, "
        "placement, output, spark_master, cpu_sample, throughput_window, loop_cpus, repeat, "
        "faults)"
    )


def test_unknown_workload_key_suggests_the_right_one(tmp_path: Path) -> None:
    problem = only(tmp_path, MINIMAL + "  conumers: 2\n")
    assert problem == Problem("workload.conumers", 9, "unknown field (did you mean 'consumers'?)")


def test_unknown_system_key(tmp_path: Path) -> None:
    text = MINIMAL.replace("    driver: tcp\n", "    driver: tcp\n    colour: red\n")
    problem = only(tmp_path, text)
    assert (problem.path, problem.line) == ("systems[0].colour", 5)
    assert problem.message.startswith("unknown field")


def test_bad_size_in_a_list(tmp_path: Path) -> None:
    text = MINIMAL.replace("message_size: 64", "message_size:\n    - 64\n    - 1 parsec")
    assert only(tmp_path, text) == Problem(
        "workload.message_size[1]", 8, "'1 parsec' is not a size: use e.g. 64, 512B, 1KB, 4MiB"
    )


def test_size_below_the_header(tmp_path: Path) -> None:
    text = MINIMAL.replace("message_size: 64", "message_size: 16")
    assert only(tmp_path, text) == Problem(
        "workload.message_size", 6, "must be at least 28 bytes (the message header)"
    )


def test_negative_rate(tmp_path: Path) -> None:
    text = MINIMAL.replace("rate: 1000", "rate: -5")
    assert only(tmp_path, text) == Problem("workload.rate", 7, "must be greater than 0 msg/s")


def test_bad_duration(tmp_path: Path) -> None:
    text = MINIMAL.replace("duration: 1s", "duration: 10 parsecs")
    assert only(tmp_path, text) == Problem(
        "workload.duration", 8, "'10 parsecs' is not a duration: use e.g. 10s, 500ms, 2m"
    )


def test_cpu_sample_interval(tmp_path: Path) -> None:
    assert load_scenario(write(tmp_path, MINIMAL)).cpu_sample == 1_000_000_000
    assert load_scenario(write(tmp_path, MINIMAL + "cpu_sample: 250ms\n")).cpu_sample == 250_000_000
    assert only(tmp_path, MINIMAL + "cpu_sample: 5ms\n") == Problem(
        "cpu_sample", 9, "must be at least 10ms (the resolution of a process's CPU time in /proc)")


def test_throughput_window(tmp_path: Path) -> None:
    assert load_scenario(write(tmp_path, MINIMAL)).throughput_window == 100
    assert load_scenario(write(tmp_path, MINIMAL + "throughput_window: 1000\n")
                         ).throughput_window == 1000
    assert only(tmp_path, MINIMAL + "throughput_window: 0\n").path == "throughput_window"
    assert only(tmp_path, MINIMAL + "throughput_window: 0\n").line == 9


def test_repeat_runs_each_case_once_unless_asked(tmp_path: Path) -> None:
    assert load_scenario(write(tmp_path, MINIMAL)).repeat == 1
    assert load_scenario(write(tmp_path, MINIMAL + "repeat: 3\n")).repeat == 3


@pytest.mark.parametrize(("written", "message"), [
    ("0", "must be at least 1"),
    ("101", "must be at most 100"),
    ("two", "must be a whole number"),
    ("2.5", "must be a whole number"),
    ("true", "must be a whole number"),
])
def test_repeat_out_of_bounds_is_named_with_its_line(tmp_path: Path, written: str,
                                                      message: str) -> None:
    assert only(tmp_path, MINIMAL + f"repeat: {written}\n") == Problem("repeat", 9, message)


def test_repeats_count_towards_the_run_limit(tmp_path: Path) -> None:
    sweep = MINIMAL.replace("message_size: 64", "message_size: [" +
                            ", ".join(str(64 + i) for i in range(101)) + "]")
    assert load_scenario(write(tmp_path, sweep + "repeat: 99\n")).repeat == 99
    problem = only(tmp_path, sweep + "repeat: 100\n")
    assert problem.path == "workload"
    assert problem.message.startswith("10,100 runs (1 system(s) × 101 workload points × 100 "
                                      "repeats) are more than the limit of 10,000"), problem


def test_closed_schedule_needs_round_trip(tmp_path: Path) -> None:
    text = MINIMAL + "  mode: [one-way, round-trip]\n  schedule: closed\n"
    problem = only(tmp_path, text)  # once, although only one of the points is wrong
    assert (problem.path, problem.line) == ("workload.schedule", 10)
    assert "'closed' needs mode 'round-trip'" in problem.message


def test_unknown_driver_lists_installed_drivers(tmp_path: Path) -> None:
    text = MINIMAL.replace("driver: tcp", "driver: nosuch")
    problem = only(tmp_path, text)
    installed = ", ".join(sorted(registry.available()))
    assert problem == Problem(
        "systems[0].driver", 4, f"no driver named 'nosuch' (installed: {installed})"
    )
    assert "tcp" in installed and "zmq" in installed


def test_bad_driver_options(tmp_path: Path) -> None:
    text = MINIMAL.replace(
        "    driver: tcp\n", "    driver: tcp\n    options:\n      nodely: true\n      nodelay: 3\n"
    )
    assert problems(tmp_path, text) == [
        Problem("systems[0].options.nodely", 6, "unknown field (did you mean 'nodelay'?)"),
        Problem("systems[0].options.nodelay", 7, "must be true or false"),
    ]


def test_keep_resources_is_true_or_false(tmp_path: Path) -> None:
    text = MINIMAL.replace("driver: tcp\n", "driver: tcp\n    keep_resources: maybe\n")
    assert only(tmp_path, text) == Problem("systems[0].keep_resources", 5,
                                           "must be true or false")


def test_keep_resources_needs_a_system_that_keeps_something(tmp_path: Path) -> None:
    text = MINIMAL.replace("driver: tcp\n", "driver: tcp\n    keep_resources: true\n")
    assert only(tmp_path, text) == Problem("systems[0].keep_resources", 5,
                                           "driver 'tcp' keeps nothing on a broker")


def test_driver_option_below_its_bound(tmp_path: Path) -> None:
    text = MINIMAL.replace("driver: tcp\n", "driver: zmq\n    options: {hwm: -1}\n")
    assert only(tmp_path, text) == Problem("systems[0].options.hwm", 5, "must be at least 0")


def test_external_broker_without_port(tmp_path: Path) -> None:
    text = MINIMAL.replace("driver: tcp\n", "driver: tcp\n    broker:\n      external: 127.0.0.1\n")
    problem = only(tmp_path, text)
    assert (problem.path, problem.line) == ("systems[0].broker.external", 6)
    assert problem.message.startswith("'127.0.0.1' is not HOST:PORT")


def test_external_broker_accepts_ipv6(tmp_path: Path) -> None:
    text = MINIMAL.replace("driver: tcp\n", "driver: tcp\n    broker: {external: '[::1]:7000'}\n")
    assert load_scenario(write(tmp_path, text)).systems[0].broker.external == "[::1]:7000"


def test_unknown_recipe(tmp_path: Path) -> None:
    text = MINIMAL.replace("driver: tcp\n", "driver: tcp\n    broker: {recipe: nosuch}\n")
    available = ", ".join(recipe_names()) or "none"
    assert only(tmp_path, text) == Problem(
        "systems[0].broker.recipe", 5, f"no broker recipe named 'nosuch' (available: {available})"
    )


def test_builtin_broker_needs_driver_support(tmp_path: Path, monkeypatch) -> None:
    class Bare(Driver):
        name = "bare"

    real_load = registry.load
    monkeypatch.setattr(registry, "load", lambda n: Bare if n == "bare" else real_load(n))
    text = MINIMAL.replace("driver: tcp\n", "driver: bare\n    broker: builtin\n")
    problem = only(tmp_path, text)
    assert (problem.path, problem.line) == ("systems[0].broker", 5)
    assert problem.message.startswith("driver 'bare' has no builtin broker")


def test_yaml_syntax_error(tmp_path: Path) -> None:
    text = MINIMAL.replace("rate: 1000", "rate: [1000")
    problem = only(tmp_path, text)
    assert problem.path == ""
    assert problem.line == 8
    assert problem.message.startswith("invalid YAML:")


def test_missing_field_points_at_the_parent(tmp_path: Path) -> None:
    text = MINIMAL.replace("  rate: 1000\n", "")
    assert only(tmp_path, text) == Problem("workload.rate", 5, "field required")


def test_placement_names_only_known_hosts(tmp_path: Path) -> None:
    text = MINIMAL + "hosts:\n  - {name: h1, address: 10.0.0.1}\nplacement:\n  broker: h1\n" \
        "  agents: [local, h2]\n"
    assert only(tmp_path, text) == Problem(
        "placement.agents[1]", 13, "unknown host 'h2' (known: h1, local)")


def test_host_names_are_unique_and_local_is_reserved(tmp_path: Path) -> None:
    text = MINIMAL + "hosts:\n  - {name: local, address: a}\n  - {name: b, address: b}\n" \
        "  - {name: b, docker: unix:///s}\n"
    assert [(p.path, p.line, p.message) for p in problems(tmp_path, text)] == [
        ("hosts[0].name", 10, "host name 'local' is reserved for the controller's machine"),
        ("hosts[2].name", 12,
         "host name 'b' is given twice (in the scenario and/or its inventory)"),
    ]


def test_a_host_field_error_names_the_field_of_its_kind(tmp_path: Path) -> None:
    text = MINIMAL + "hosts:\n  - {name: c, docker: unix:///s, adress: x}\n  - {name: s, port: 0}\n"
    assert [(p.path, p.line, p.message) for p in problems(tmp_path, text)] == [
        ("hosts[0].adress", 10, "unknown field (did you mean 'address'?)"),
        ("hosts[1].address", 11, "field required"),
        ("hosts[1].port", 11, "must be at least 1"),
    ]


def test_inventory_hosts_join_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "hosts.yaml").write_text(
        "hosts:\n  - {name: h2, address: 10.0.0.2, user: bench}\n")
    text = MINIMAL + "inventory: lab/hosts.yaml\nplacement: {agents: [h2]}\n"
    scenario = load_scenario(write(tmp_path, text))
    assert scenario.host("h2").user == "bench"
    assert scenario.placement.agents == ("h2",)


def test_inventory_problems_name_the_inventory_file_and_line(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.yaml"
    inventory.write_text("hosts:\n  - {name: h2, address: 10.0.0.2}\n  - {name: h3, user: x}\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(write(tmp_path, MINIMAL + "inventory: hosts.yaml\n"))
    assert caught.value.file == str(inventory)
    assert [(p.path, p.line) for p in caught.value.problems] == [("hosts[1].address", 3)]
    with pytest.raises(ScenarioError) as missing:
        load_scenario(write(tmp_path, MINIMAL + "inventory: nowhere.yaml\n"))
    assert missing.value.problems[0].path == "inventory"
    assert "cannot read" in missing.value.problems[0].message


def test_duplicate_system_names_and_keys(tmp_path: Path) -> None:
    text = MINIMAL + "  rate: 2000\n" + "output: a\n"
    text = text.replace("    driver: tcp\n", "    driver: tcp\n  - {name: tcp, driver: zmq}\n")
    assert problems(tmp_path, text) == [
        Problem("systems", 2, "duplicate system name 'tcp' (systems[0] and systems[1])"),
        Problem("workload.rate", 10, "duplicate key (first given at line 8)"),
    ]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = """\
name: bad name
systems:
  - name: tcp
    driver: tcp
    options: {nodely: true}
  - name: k
    driver: nosuch
workload:
  message_size: [64, 10]
  rate: -5
  duration: 10 parsecs
  producers: 0
  receive: sometimes
"""
    found = problems(tmp_path, text)
    assert [(p.path, p.line) for p in found] == [
        ("name", 1),
        ("systems[0].options.nodely", 5),
        ("systems[1].driver", 7),
        ("workload.message_size[1]", 9),
        ("workload.rate", 10),
        ("workload.duration", 11),
        ("workload.producers", 12),
        ("workload.receive", 13),
    ]
    assert found[-1].message == "must be 'blocking' or 'busy-poll'"
    assert found[-2].message == "must be at least 1"
    assert not any("Value error" in p.message or "Input should" in p.message for p in found)


def test_error_text_has_one_line_per_problem(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("rate: 1000", "rate: -5") + "colour: red\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    lines = str(info.value).splitlines()
    assert lines[0] == f"{path}:7: workload.rate: must be greater than 0 msg/s"
    assert lines[1].startswith(f"{path}:9: colour: unknown field")
    assert len(lines) == 2


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path / "nope.yaml")
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: no such file"


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "the file is empty"), ("- a\n- b\n", "the file is not a mapping")],
)
def test_not_a_scenario(tmp_path: Path, text: str, message: str) -> None:
    assert only(tmp_path, text).message.startswith(message)


# --- cases ----------------------------------------------------------------------------------

CASES = """\
name: classic
systems:
  - name: tcp
    driver: tcp
workload:
  duration: 10s
cases:
  - {message_size: 256, rate: 3000}
  - {message_size: 1KB, rate: 3000}
  - name: big
    message_size: 1MB
    rate: 100
"""
REQUIRED = "is required (not in the case nor in workload)"
FIRST, SECOND = "{message_size: 256, rate: 3000}", "{message_size: 1KB, rate: 3000}"


def second_case(fields: str, text: str = CASES) -> str:
    """`text` with the second case's flow mapping replaced by `{fields}` (line 9)."""
    return text.replace(SECOND, "{" + fields + "}")


def test_without_cases_a_scenario_is_as_before(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, VALID))
    assert type(scenario) is Scenario
    assert scenario.variants() == ((None, scenario.workload),)


def test_cases_leave_the_required_fields_to_each_case(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, CASES))
    assert isinstance(scenario, CaseScenario)
    assert scenario.workload.given == ("duration",)
    assert [case.name for case in scenario.cases] == [None, None, "big"]
    assert scenario.cases[1].given == ("message_size", "rate")
    specs = [spec for _, spec in scenario.variants()]
    assert [(s.message_size, s.rate, s.duration) for s in specs] == [
        ((256,), (3000.0,), (10_000_000_000,)),
        ((1024,), (3000.0,), (10_000_000_000,)),
        ((1024 * 1024,), (100.0,), (10_000_000_000,)),
    ]


def test_cases_may_do_without_a_workload(tmp_path: Path) -> None:
    text = CASES.replace("workload:\n  duration: 10s\n", "")
    text = text.replace("rate: 100", "rate: 100\n    duration: 1s")
    text = text.replace("3000}", "3000, duration: 2s}")
    scenario = load_scenario(write(tmp_path, text))
    assert [spec.duration for _, spec in scenario.variants()] == [
        (2_000_000_000,), (2_000_000_000,), (1_000_000_000,)
    ]


def test_unknown_key_in_a_case(tmp_path: Path) -> None:
    text = second_case("message_size: 1KB, rate: 3000, colour: red")
    problem = only(tmp_path, text)
    assert (problem.path, problem.line) == ("cases[1].colour", 9)
    assert problem.message.startswith(
        "unknown field (expected one of: mode, message_size, content, keys, rate")
    assert problem.message.endswith("backlog, name)")
    text = CASES.replace("    rate: 100\n", "    rate: 100\n    conections: 25\n")
    assert only(tmp_path, text) == Problem(
        "cases[2].conections", 13, "unknown field (did you mean 'connections'?)"
    )


def test_bad_values_in_a_case(tmp_path: Path) -> None:
    text = second_case("message_size: 1KB, rate: -5")
    text = text.replace("message_size: 1MB", "message_size: [1MB, 1 parsec]")
    assert problems(tmp_path, text) == [
        Problem("cases[1].rate", 9, "must be greater than 0 msg/s"),
        Problem(
            "cases[2].message_size[1]", 11, "'1 parsec' is not a size: use e.g. 64, 512B, 1KB, 4MiB"
        ),
    ]


def test_missing_field_in_a_case(tmp_path: Path) -> None:
    text = second_case("rate: 3000")
    assert only(tmp_path, text) == Problem("cases[1]", 9, f"message_size {REQUIRED}")
    text = CASES.replace("workload:\n  duration: 10s\n", "workload: {warmup: 1s}\n")
    duration = "field required (only rate: max may leave it out)"
    assert problems(tmp_path, text) == [
        Problem("cases[0].duration", 7, duration),
        Problem("cases[1].duration", 8, duration),
        Problem("cases[2].duration", 9, duration),
    ]


def test_missing_field_is_reported_with_the_case_s_other_problems(tmp_path: Path) -> None:
    text = second_case("rate: -5, colour: red")
    found = problems(tmp_path, text)
    assert [(p.path, p.line) for p in found] == [
        ("cases[1].rate", 9),
        ("cases[1].colour", 9),
        ("cases[1]", 9),
    ]
    assert found[-1].message == f"message_size {REQUIRED}"


def test_case_names_are_names_and_unique(tmp_path: Path) -> None:
    text = CASES.replace(FIRST, "{name: big, message_size: 256, rate: 1}")
    text = second_case("name: no good, message_size: 1KB, rate: 1", text)
    found = problems(tmp_path, text)
    assert [(p.path, p.line) for p in found] == [("cases[1].name", 9), ("cases[2].name", 10)]
    assert found[0].message.startswith("must start with a letter or digit")
    assert found[1].message == "duplicate case name 'big' (cases[0] and cases[2])"


def test_cases_must_be_a_non_empty_list_of_mappings(tmp_path: Path) -> None:
    text = CASES.split("cases:")[0] + "  message_size: 64\n  rate: 1k\ncases: []\n"
    assert only(tmp_path, text) == Problem("cases", 9, "must not be empty")
    text = CASES.replace("  - {message_size: 256, rate: 3000}\n", "  - 256\n")
    assert only(tmp_path, text) == Problem("cases[0]", 8, "must be a mapping (key: value)")


def test_closed_schedule_needs_round_trip_in_every_case(tmp_path: Path) -> None:
    text = second_case("message_size: 1KB, rate: 3000, schedule: closed")
    problem = only(tmp_path, text)
    assert (problem.path, problem.line) == ("cases[1].schedule", 9)
    assert "'closed' needs mode 'round-trip'" in problem.message

    # closed in the base: each case that does not make it round-trip is wrong, at its line
    text = CASES.replace("  duration: 10s\n", "  duration: 10s\n  schedule: closed\n")
    text = text.replace("3000}", "3000, mode: round-trip}", 1)
    assert [(p.path, p.line) for p in problems(tmp_path, text)] == [
        ("cases[1].schedule", 10),
        ("cases[2].schedule", 11),
    ]


def test_driver_workload_checks_apply_to_every_case(tmp_path: Path, monkeypatch) -> None:
    class Small(TcpDriver):
        name = "small"

        @classmethod
        def workload_problems(cls, options, workload) -> list[str]:
            return ["messages over 64KB are not supported"] if workload.message_size > 65536 else []

    real_load = registry.load
    monkeypatch.setattr(registry, "load", lambda n: Small if n == "small" else real_load(n))
    text = CASES.replace("driver: tcp", "driver: small")
    assert only(tmp_path, text) == Problem(
        "systems[0]", 3, "messages over 64KB are not supported (in cases[2])"
    )


def test_every_problem_in_a_cases_file_is_reported_at_once(tmp_path: Path) -> None:
    text = CASES.replace("  duration: 10s\n", "  duration: 10s\n  colour: red\n")
    text = text.replace(FIRST, "{message_size: 8, rate: 3000}")
    text = text.replace("    rate: 100\n", "") + "hosts: [box1]\n"
    found = problems(tmp_path, text)
    assert [(p.path, p.line) for p in found] == [
        ("workload.colour", 7),
        ("cases[0].message_size", 9),
        ("cases[2]", 11),
        ("hosts[0]", 13),
    ]
    assert found[0].message.startswith("unknown field")
    assert found[2].message == f"rate {REQUIRED}"


def test_an_unknown_key_next_to_cases_lists_cases(tmp_path: Path) -> None:
    problem = only(tmp_path, CASES + "colour: red\n")
    assert problem == Problem(
        "colour",
        13,
        "unknown field (expected one of: name, systems, workload, hosts, inventory, "
        "placement, output, spark_master, cpu_sample, throughput_window, loop_cpus, repeat, "
        "faults, cases)",
    )


def test_case_scenarios_built_in_python_are_checked_too() -> None:
    data = {
        "name": "py",
        "systems": [{"name": "tcp", "driver": "tcp"}],
        "workload": {"duration": "1s"},
        "cases": [{"rate": 5, "name": "a"}, {"message_size": 64, "rate": 5, "name": "a"}],
    }
    with pytest.raises(ValidationError) as info:
        CaseScenario.model_validate(data)
    text = str(info.value)
    assert f"cases[0]: message_size {REQUIRED}" in text
    assert "cases[1].name: duplicate case name 'a' (cases[0] and cases[1])" in text


# --- throughput mode (rate: max) ----------------------------------------------------------

MAX = MINIMAL.replace("rate: 1000\n  duration: 1s\n", "rate: max\n  messages: 100000\n")


def test_rate_max_resolves_with_a_message_count_and_the_default_cap(tmp_path: Path) -> None:
    text = MAX.replace("message_size: 64", "message_size: [64, 1KB]")
    ((small, labels), (large, _)) = load_scenario(write(tmp_path, text)).workload.expand()
    assert (small.rate, small.messages, small.message_size, large.message_size) == (
        "max", 100000, 64, 1024)
    assert small.saturation and small.duration_ns == MAX_RATE_CAP_NS == 600 * 10**9
    assert labels == {"message_size": "64"}
    capped = load_scenario(write(tmp_path, MAX + "  duration: 30s\n")).workload.expand()[0][0]
    assert capped.duration_ns == 30 * 10**9


def test_a_rate_max_scenario_dumps_and_reloads(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, MAX))
    again = parse_scenario(yaml.safe_dump(scenario.model_dump(mode="json")))
    assert again.workload.expand() == scenario.workload.expand()


def test_rate_max_needs_messages(tmp_path: Path) -> None:
    problem = only(tmp_path, MAX.replace("  messages: 100000\n", ""))
    assert (problem.path, problem.line) == ("workload.rate", 7)
    assert problem.message.startswith("rate: max needs `messages`")


def test_messages_only_with_rate_max(tmp_path: Path) -> None:
    problem = only(tmp_path, MINIMAL + "  messages: 5000\n")
    assert (problem.path, problem.line) == ("workload.messages", 9)
    assert problem.message.startswith("only with rate: max")


def test_a_fixed_rate_still_needs_a_duration(tmp_path: Path) -> None:
    assert only(tmp_path, MINIMAL.replace("  duration: 1s\n", "")) == Problem(
        "workload.duration", 5, "field required (only rate: max may leave it out)")


def test_no_schedule_but_fixed_and_no_round_trip_with_rate_max(tmp_path: Path) -> None:
    problem = only(tmp_path, MAX + "  schedule: poisson\n")
    assert (problem.path, problem.line) == ("workload.schedule", 9)
    assert problem.message.startswith("'poisson' makes no sense with rate: max")
    found = problems(tmp_path, MAX + "  mode: round-trip\n  schedule: closed\n")
    assert [(p.path, p.line) for p in found] == [("workload.rate", 7), ("workload.schedule", 10)]
    assert "needs mode 'one-way'" in found[0].message


def test_rate_max_in_a_case_is_checked_there(tmp_path: Path) -> None:
    problem = only(tmp_path, second_case("message_size: 1KB, rate: max"))
    assert (problem.path, problem.line) == ("cases[1].rate", 9)
    text = second_case("message_size: 1KB, rate: max, messages: 1000")
    assert load_scenario(write(tmp_path, text)).variants()[1][1].expand()[0][0].messages == 1000
