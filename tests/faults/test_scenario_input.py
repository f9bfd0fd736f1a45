"""Hostile and impossible scenario files: each is refused as `FILE:LINE: PATH: MESSAGE` lines
with exit 2, naming the bound it broke, with no traceback, no hang, bounded memory, and
nothing started.

Every file is validated by one worker process under `prlimit --as` (see validate_worker), so
an alias bomb or /dev/zero that got through would fail its test, not take the machine. A few
cases also go through `python -m sixnines validate` and `run` themselves.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sixnines.orchestrator.scenario.matrix import MAX_RUN_ID
from sixnines.orchestrator.scenario.problems import shown
from tests.faults.validate_worker import MEMORY_CAP, ROOT, judge, validate_all

MINIMAL = """\
name: mini
systems:
  - {name: tcp, driver: tcp}
workload:
  message_size: 64
  rate: 1000
  duration: 1s
"""
#: Lines of MINIMAL's workload fields; a field not there is appended at line 8.
WORKLOAD_LINES = {"message_size": 5, "rate": 6, "duration": 7}
#: A scenario with `cases:` (lines 5 and 6 are the cases).
CASES = """\
name: cased
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, duration: 1s}
cases:
  - {name: slow, rate: 100}
  - {name: fast, rate: 1000}
"""

Make = Callable[[Path], Path]


def text(content: str | bytes, name: str = "scenario.yaml") -> Make:
    """A maker of a file holding `content` in the case's directory."""
    def make(directory: Path) -> Path:
        path = directory / name
        data = content if isinstance(content, bytes) else content.encode("utf-8")
        path.write_bytes(data)
        return path
    return make


def workload(field: str, value: object) -> Make:
    """MINIMAL with one workload field set to `value` (written as is)."""
    if field in WORKLOAD_LINES:
        old = re.search(rf"  {field}: .*\n", MINIMAL)[0]
        return text(MINIMAL.replace(old, f"  {field}: {value}\n"))
    return text(f"{MINIMAL}  {field}: {value}\n")


def top(line: str) -> Make:
    """MINIMAL with one more top-level line (line 8)."""
    return text(f"{MINIMAL}{line}\n")


#: `Case.line` when the problem has a line but which one is a detail of where counting stops.
SOME_LINE = 0


@dataclass(frozen=True)
class Case:
    """A file to validate and the problem it must give: on `line` (None: no line can be
    known; `SOME_LINE`), at `where` ("" for the file as a whole), with all of `words`."""

    id: str
    make: Make
    line: int | None
    where: str
    words: tuple[str, ...] = ()


# --- 1. characters YAML refuses -----------------------------------------------------------

REFUSED_CHARACTERS = [
    Case(f"char-{ord(char):04x}", text(MINIMAL.replace("rate: 1000", f"rate: 10{char}00")),
         6, "", ("invalid YAML", f"#x{ord(char):04x}", "column 11"))
    for char in ("\x00", "\x07", "\x1b", "\x7f", "\ufffe")
]

# --- 2. alias bombs -----------------------------------------------------------------------


def laughs(kind: str) -> str:
    """A billion laughs: nine levels, each using the one before nine times (in a list, or
    as mappings merged with `<<`)."""
    lines = ["lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, 10):
        uses = ", ".join([f"*lol{level - 1}"] * 9)
        value = f"{{<<: [{uses}], own: 1}}" if kind == "merge" else f"[{uses}]"
        if kind == "merge" and level == 1:
            value = "{" + ", ".join(f"k{k}: *lol0" for k in range(9)) + "}"
        lines.append(f"lol{level}: &lol{level} {value}")
    return MINIMAL + "\n".join(lines) + "\n"


ALIAS_BOMBS = [
    Case(f"bomb-{kind}", text(laughs(kind)), SOME_LINE, "", ("invalid YAML", "50,000 values"))
    for kind in ("list", "merge")
]

# --- 3. deep nesting ----------------------------------------------------------------------

ANCHOR_CHAIN = "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 40))
DEEP_NESTING = [
    Case("deep-flow", top("x: " + "[" * 5000 + "]" * 5000), 8, "", ("32 levels",)),
    Case("deep-block", top("x:\n" + "".join(" " * d + f"k{d}:\n" for d in range(1, 400))),
         # the root mapping is level 1 and k{d} is on line 8 + d, in level d + 1
         40, "", ("32 levels",)),
    Case("deep-aliases", top("a0: &a0 [1]\n" + ANCHOR_CHAIN), SOME_LINE, "", ("32 levels",)),
]

# --- 4. files that are no scenario --------------------------------------------------------


def fifo(directory: Path) -> Path:
    os.mkfifo(directory / "fifo.yaml")
    return directory / "fifo.yaml"


def sparse(size: int, name: str = "big.yaml") -> Make:
    def make(directory: Path) -> Path:
        with open(directory / name, "wb") as file:
            file.truncate(size)
        return directory / name
    return make


def inventory(target: Make | str) -> Make:
    """A valid scenario whose `inventory:` is `target` (a maker, or a path as written)."""
    def make(directory: Path) -> Path:
        name = target if isinstance(target, str) else target(directory).name
        return text(f"{MINIMAL}inventory: {name}\n")(directory)
    return make


def directory_itself(directory: Path) -> Path:
    (directory / "a-directory").mkdir()
    return directory / "a-directory"


GARBAGE = bytes(range(256)) * 4
NOT_SCENARIO_FILES = [
    Case("dev-zero", lambda _: Path("/dev/zero"), None, "", ("not a regular file",)),
    Case("fifo", fifo, None, "", ("not a regular file",)),
    Case("one-gigabyte", sparse(1 << 30), None, "", ("limit of 1 MiB", "1,073,741,824")),
    Case("just-over-a-megabyte", text("#" * (1 << 20) + "\n"), None, "", ("limit of 1 MiB",)),
    Case("directory", directory_itself, None, "", ("is a directory",)),
    Case("binary-garbage", text(GARBAGE), 2, "", ("not UTF-8", "offset 128")),  # after \n
    Case("latin-1", text(MINIMAL.encode() + "name: é\n".encode("latin-1")), 8, "",
         ("not UTF-8",)),
    Case("inventory-dev-zero", inventory("/dev/zero"), 8, "inventory",
         ("/dev/zero", "not a regular file")),
    Case("inventory-fifo", inventory(fifo), 8, "inventory", ("not a regular file",)),
    Case("inventory-one-gigabyte", inventory(sparse(1 << 30, "hosts.yaml")), 8, "inventory",
         ("limit of 1 MiB",)),
    Case("inventory-garbage", inventory(text(GARBAGE, "hosts.yaml")), 8, "inventory",
         ("not UTF-8",)),
    Case("inventory-nul-in-name", inventory('"hosts\\0.yaml"'), 8, "inventory",
         ("embedded null byte",)),
]

# --- 5. sweeps too large to run -----------------------------------------------------------


def sweep(fields: dict[str, int], extra: str = "") -> Make:
    """MINIMAL with each field swept over `count` distinct values."""
    values = {"message_size": lambda i: 64 + i, "rate": lambda i: 1000 + i,
              "duration": lambda i: f"{i + 1}s", "warmup": lambda i: f"{i}s",
              "drain": lambda i: f"{i}s", "producers": lambda i: i + 1,
              "consumers": lambda i: i + 1, "connections": lambda i: i + 1,
              "seed": lambda i: i}
    body = "".join(f"  {field}: [{', '.join(str(values[field](i)) for i in range(count))}]\n"
                   for field, count in fields.items())
    kept = [line for line in MINIMAL.splitlines(keepends=True)[:7]
            if line.split(":")[0].strip() not in fields]
    return text("".join(kept) + body + extra)


SWEEPS = [
    Case("sweep-100^3", sweep(dict.fromkeys(("message_size", "rate", "duration"), 100)), 4,
         "workload", ("1,000,000 runs", "limit of 10,000", "split the scenario")),
    Case("sweep-40^6", sweep(dict.fromkeys(("message_size", "rate", "duration", "warmup",
                                            "producers", "consumers"), 40)), 4,
         "workload", ("4,096,000,000 runs", "limit of 10,000")),
    Case("sweep-with-other-errors", sweep(dict.fromkeys(("message_size", "rate", "drain"), 100),
                                          extra="colour: red\n"), 4, "workload",
         ("1,000,000 runs",)),
    Case("sweep-in-cases", text(CASES.replace("rate: 100}", "rate: 100, message_size: [" +
                                              ", ".join(str(64 + i) for i in range(101)) +
                                              "], seed: [" + ", ".join(map(str, range(100)))
                                              + "]}")), 4, "cases", ("10,101 runs",)),
]

# --- 6. numbers and names past their bounds -----------------------------------------------

#: External broker addresses `run` could not connect to as written: (id, address, words).
EXTERNAL_ADDRESSES = [
    ("5000-characters", "a" * 4994 + ":7000", ("must be at most 4096 characters",)),
    ("host-of-300", "a." * 150 + "b:7000", ("longer than 253 characters",)),
    ("label-of-64", "a" * 64 + ".lab:7000", ("1 to 63 characters",)),
    ("empty-label", "broker..lab:7000", ("1 to 63 characters",)),
    ("space", "broker lab:7000", ("letters, digits, '-' and '_'",)),
    ("not-ipv4", "10.0.0.256:7000", ("is not an IPv4 address",)),
    ("not-ipv6", "[::g]:7000", ("is not an IPv6 address",)),
    ("port-0", "127.0.0.1:0", ("from 1 to 65535",)),
    ("port-99999", "127.0.0.1:99999", ("from 1 to 65535",)),
]
BOUNDS = [
    Case("rate-1e30", workload("rate", "1e30"), 6, "workload.rate",
         ("must be at most 100M msg/s",)),
    Case("rate-float-1e30", workload("rate", "1.0e+30"), 6, "workload.rate",
         ("must be at most 100M msg/s",)),
    Case("rate-1e999", workload("rate", "1e999"), 6, "workload.rate",
         ("must be at most 100M msg/s",)),
    Case("rate-tiny", workload("rate", "1.0e-300"), 6, "workload.rate",
         ("must be at least 0.001 msg/s",)),
    Case("duration-million-hours", workload("duration", "1000000h"), 7, "workload.duration",
         ("must be at most 168h",)),
    Case("duration-1e300", workload("duration", "1.0e+300"), 7, "workload.duration",
         ("must be at most 168h",)),
    Case("warmup-two-hours", workload("warmup", "2h"), 8, "workload.warmup",
         ("must be at most 1h",)),
    Case("drain-1e12", workload("drain", 10**12), 8, "workload.drain", ("must be at most 1h",)),
    Case("size-2GB", workload("message_size", "2GB"), 5, "workload.message_size",
         ("must be at most 1GiB",)),
    Case("size-1e30", workload("message_size", 10**30), 5, "workload.message_size",
         ("must be at most 1GiB",)),
    *(Case(f"{field}-100000", workload(field, 100_000), 8, f"workload.{field}",
           ("must be at most 1,000",)) for field in ("producers", "consumers", "connections")),
    Case("messages-1e18", text(MINIMAL.replace("rate: 1000", "rate: max\n  messages: "
                                               f"{10**18}")), 7, "workload.messages",
         ("must be at most 10,000,000,000",)),
    Case("seed-negative", workload("seed", -1), 8, "workload.seed", ("must be at least 0",)),
    Case("seed-2^32", workload("seed", 2**32), 8, "workload.seed",
         ("must be at most 4,294,967,295",)),
    Case("cpu-sample-two-hours", top("cpu_sample: 2h"), 8, "cpu_sample", ("must be at most 1h",)),
    Case("throughput-window-1e18", top(f"throughput_window: {10**18}"), 8, "throughput_window",
         ("must be at most 10,000,000,000",)),
    Case("scenario-name-300", text(MINIMAL.replace("name: mini", "name: " + "n" * 300)), 1,
         "name", ("must be at most 64 characters",)),
    Case("system-name-300", text(MINIMAL.replace("name: tcp", "name: " + "s" * 300)), 3,
         "systems[0].name", ("must be at most 64 characters",)),
    Case("case-name-300", text(CASES.replace("name: slow", "name: " + "c" * 300)), 5,
         "cases[0].name", ("must be at most 64 characters",)),
    Case("host-name-300", top("hosts: [{name: " + "h" * 300 + ", address: 10.0.0.1}]"), 8,
         "hosts[0].name", ("must be at most 64 characters",)),
    Case("port-huge", top(f"hosts: [{{name: h, address: 10.0.0.1, port: {10**30}}}]"), 8,
         "hosts[0].port", ("must be at most 65,535",)),
    Case("link-rate", top("hosts: [{name: h, address: a, link: {rate: 100000gbit}}]"), 8,
         "hosts[0].link.rate", ("must be at most 1000gbit",)),
    Case("link-delay", top("hosts: [{name: h, address: a, link: {rate: 1gbit, delay: 1h}}]"),
         8, "hosts[0].link.delay", ("from 0 to 10s",)),
    Case("output-path-5000", top("output: " + "o" * 5000), 8, "output",
         ("must be at most 4096 characters",)),
    Case("output-with-nul", top('output: "runs\\0"'), 8, "output", ("control characters",)),
    *(Case(f"external-{id_}", text(MINIMAL.replace("driver: tcp}", "driver: tcp, broker: "
                                                  f"{{external: '{address}'}}}}")), 3,
           "systems[0].broker.external", words)
      for id_, address, words in EXTERNAL_ADDRESSES),
    Case("ssh-address-label-of-64", top("hosts: [{name: h, address: " + "a" * 64 + ".lab}]"),
         8, "hosts[0].address", ("1 to 63 characters",)),
    Case("container-address-not-ipv4", top("hosts: [{name: h, docker: 'unix:///x', "
                                           "address: 10.0.0.256}]"), 8,
         "hosts[0].address", ("is not an IPv4 address",)),
    Case("hosts-1001", top("hosts: [" + ", ".join(f"{{name: h{i}, address: a}}"
                                                    for i in range(1001)) + "]"), 8, "hosts",
         ("must have at most 1,000 items",)),
]

# --- 7. whatever else a file may hold -----------------------------------------------------



def numeric(field: str, value: str) -> Case:
    """`value` in the numeric `field`, wherever a scenario writes that field."""
    id_ = f"{field}={value}"
    if field in ("cpu_sample", "throughput_window"):
        return Case(id_, top(f"{field}: {value}"), 8, field)
    if field == "port":
        return Case(id_, top(f"hosts: [{{name: h, address: a, port: {value}}}]"), 8,
                    "hosts[0].port")
    if field == "messages":
        return Case(id_, text(MINIMAL.replace("rate: 1000", f"rate: max\n  messages: {value}")),
                    7, "workload.messages")
    return Case(id_, workload(field, value), WORKLOAD_LINES.get(field, 8), f"workload.{field}")


NUMERIC_FIELDS = ("message_size", "rate", "duration", "warmup", "drain", "producers",
                  "consumers", "connections", "seed", "messages", "cpu_sample",
                  "throughput_window", "port")
NON_FINITE = [numeric(field, value) for field in NUMERIC_FIELDS
              for value in (".nan", ".inf", "-.inf")]

OTHERS = [
    Case("int-of-5000-digits", workload("rate", "9" * 5000), 6, "", ("cannot be read as int",)),
    Case("int-of-4000-digits", workload("rate", "9" * 4000), 6, "workload.rate",
         ("must be at most 100M msg/s",)),
    Case("exponent-of-9-digits", workload("rate", "1e999999999"), 6, "workload.rate",
         ("is not a rate",)),
    Case("number-text-too-long", workload("message_size", "'" + "0" * 100 + "64'"), 5,
         "workload.message_size", ("at most 32 characters",)),
    Case("integer-key", top("1: one"), 8, "[1]", ("a key must be a string",)),
    Case("null-key", top("~: nothing"), 8, "None", ("a key must be a string",)),
    Case("list-key", top("? [a, b]\n: x"), 8, "", ("a mapping key must be a plain value",)),
    Case("key-with-newline", top('"a\\nb": 1'), 8, "'a\\nb'", ("unknown field",)),
    Case("key-of-100k", top('? "' + "k" * 100_000 + '"\n: 1'), 8, shown("k" * 100_000),
         ("unknown field",)),
    Case("python-object", top("x: !!python/object/apply:os.system [echo hi]"), 8, "",
         ("unsupported tag",)),
    Case("python-name", top("x: !!python/name:os.system ''"), 8, "",
         ("could not determine a constructor",)),
    Case("unknown-tag", top("x: !shell rm"), 8, "", ("could not determine a constructor",)),
    Case("bad-timestamp", top("x: !!timestamp yesterday"), 8, "",
         ("cannot be read as timestamp",)),
    Case("bad-bool", top("x: !!bool maybe"), 8, "", ("cannot be read as bool",)),
    Case("set", top("x: !!set {a, b}"), 8, "", ("unsupported tag",)),
    Case("recursive-alias", top("x: &x [*x]"), 8, "", ("recursive alias",)),
    Case("long-line", text(MINIMAL.replace("name: mini", "name: " + "n" * 900_000)), 1,
         "name", ("must be at most 64 characters",)),
    Case("two-documents", text(MINIMAL + "---\n" + MINIMAL), 8, "",
         ("expected a single document",)),
    Case("bom-inside", workload("rate", "\ufeff1000"), 6, "workload.rate", ("is not a rate",)),
    Case("empty", text(""), None, "", ("the file is empty",)),
    Case("a-list", text("- 1\n- 2\n"), 1, "", ("not a mapping",)),
    Case("many-problems", workload("message_size", "[" + ", ".join(["x"] * 5000) + "]"), 5,
         "workload.message_size[0]", ("is not a size",)),
    Case("huge-list", workload("message_size", "[" + ", ".join(["64"] * 60_000) + "]"), 5, "",
         ("50,000 values",)),
]



# --- valid files at the edges -------------------------------------------------------------

LONG = "x" * 64
#: 64-character names and long-written values in many swept fields (512 runs).
LONG_RUN_IDS = (
    f"name: {LONG}\nsystems: [{{name: {LONG}, driver: tcp}}]\nworkload: {{"
    "message_size: ['0000000000000000000000000064', 65], "
    "rate: ['1000.000000000000000000000', 1001], duration: ['1.00000000000000000s', 2s], "
    "warmup: ['0.00000000000000000s', 1s], drain: ['0.00000000000000000s', 1s], "
    "producers: [1, 2], consumers: [1, 2], connections: [1, 2], seed: [1234567890, 1]}"
    f"\ncases: [{{name: {LONG}}}]\n")
VALID = {
    "bom-and-crlf": text("\ufeff" + MINIMAL.replace("\n", "\r\n")),
    "long-run-ids": text(LONG_RUN_IDS),
}

ALL = [*REFUSED_CHARACTERS, *ALIAS_BOMBS, *DEEP_NESTING, *NOT_SCENARIO_FILES, *SWEEPS,
       *BOUNDS, *NON_FINITE, *OTHERS]
#: Longest line a problem may print: a value or key from the file is quoted short.
MAX_LINE = 700

Validated = dict[str, tuple[Path, dict[str, Any], Path]]


@pytest.fixture(scope="module")
def validated(tmp_path_factory: pytest.TempPathFactory) -> Validated:
    """Case id -> (its file, the outcome of validating it, the worker's cwd), all from one
    worker process under a memory cap."""
    root = tmp_path_factory.mktemp("cases")
    cwd = tmp_path_factory.mktemp("cwd")
    makers = {case.id: case.make for case in ALL} | VALID
    paths = {}
    for id_, make in makers.items():
        (root / id_).mkdir()
        paths[id_] = make(root / id_)
    outcomes = validate_all(list(paths.values()), cwd, per_file_s=20, total_s=240)
    return {id_: (path, outcomes[str(path)], cwd) for id_, path in paths.items()}


def check(case: Case, validated: Validated) -> None:
    path, outcome, cwd = validated[case.id]
    assert judge(outcome) is None, judge(outcome)
    assert outcome["code"] == 2, outcome["stderr"]
    line = {None: "", SOME_LINE: r":\d+"}.get(case.line, f":{case.line}")
    where = rf"{re.escape(str(path))}{line}: " + (re.escape(f"{case.where}: ") if case.where
                                                  else "")
    lines = outcome["stderr"].splitlines()
    found = [text for text in lines if re.match(where, text)
             and all(word in text for word in case.words)]
    assert found, f"no line matching {where!r} with {case.words}:\n{outcome['stderr'][:3000]}"
    assert max(map(len, lines)) < MAX_LINE + len(str(path)), "a problem line is too long"
    assert not (cwd / "runs").exists(), "validate must not start anything"


def ids(cases: list[Case]) -> list[str]:
    return [case.id for case in cases]


@pytest.mark.parametrize("case", REFUSED_CHARACTERS, ids=ids(REFUSED_CHARACTERS))
def test_characters_yaml_refuses(case: Case, validated) -> None:
    check(case, validated)


@pytest.mark.parametrize("case", ALIAS_BOMBS, ids=ids(ALIAS_BOMBS))
def test_alias_bombs(case: Case, validated) -> None:
    check(case, validated)
    assert validated[case.id][1]["seconds"] < 10


@pytest.mark.parametrize("case", DEEP_NESTING, ids=ids(DEEP_NESTING))
def test_deep_nesting(case: Case, validated) -> None:
    check(case, validated)


@pytest.mark.parametrize("case", NOT_SCENARIO_FILES, ids=ids(NOT_SCENARIO_FILES))
def test_files_that_are_no_scenario(case: Case, validated) -> None:
    check(case, validated)


@pytest.mark.parametrize("case", SWEEPS, ids=ids(SWEEPS))
def test_sweeps_too_large_are_counted_not_expanded(case: Case, validated) -> None:
    check(case, validated)
    assert validated[case.id][1]["seconds"] < 5


@pytest.mark.parametrize("case", BOUNDS, ids=ids(BOUNDS))
def test_numbers_and_names_past_their_bounds(case: Case, validated) -> None:
    check(case, validated)


@pytest.mark.parametrize("case", NON_FINITE, ids=ids(NON_FINITE))
def test_nan_and_infinity_in_every_numeric_field(case: Case, validated) -> None:
    check(case, validated)


@pytest.mark.parametrize("case", OTHERS, ids=ids(OTHERS))
def test_other_hostile_input(case: Case, validated) -> None:
    check(case, validated)


def test_at_most_a_hundred_problems_are_printed(validated) -> None:
    path, outcome, _ = validated["many-problems"]
    lines = outcome["stderr"].splitlines()
    assert len(lines) == 101
    assert lines[-1] == f"{path}: and 4,900 more problems (fix the ones above first)"


def test_a_byte_order_mark_and_crlf_lines_are_fine(validated: Validated) -> None:
    path, outcome, _ = validated["bom-and-crlf"]
    assert (outcome["code"], outcome["stderr"].splitlines()[0]) == (0, f"{path}: ok, 1 run(s)")


def test_run_ids_stay_short_however_long_the_names_and_labels(validated: Validated,
                                                              tmp_path: Path) -> None:
    """Ids are cut, stay unique, and a directory can be made of each."""
    _, outcome, _ = validated["long-run-ids"]
    assert judge(outcome) is None and outcome["code"] == 0, outcome["stderr"]
    listing = outcome["stderr"].split("\nestimate:\n")[0]  # the run ids, before the estimate
    run_ids = [line.strip() for line in listing.splitlines()[1:]]
    assert len(run_ids) == len(set(run_ids)) == 512
    assert max(map(len, run_ids)) == MAX_RUN_ID
    for run_id in run_ids[:3]:
        (tmp_path / run_id).mkdir()


# --- the real command line ----------------------------------------------------------------


def sixnines(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python -m sixnines ARGS` in `cwd`, its address space capped."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(["prlimit", f"--as={MEMORY_CAP}", sys.executable, "-m",
                           "sixnines", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize(("command", "case"), [
    ("validate", ALIAS_BOMBS[0]), ("validate", DEEP_NESTING[0]), ("validate", SWEEPS[1]),
    ("validate", NOT_SCENARIO_FILES[0]), ("validate", NOT_SCENARIO_FILES[1]),
    ("run", ALIAS_BOMBS[1]), ("run", NOT_SCENARIO_FILES[7]),
    *(("run", case) for case in BOUNDS if case.id.startswith("external-")),
], ids=lambda x: x if isinstance(x, str) else x.id)
def test_the_command_line_refuses_and_starts_nothing(command: str, case: Case,
                                                     tmp_path: Path) -> None:
    path = case.make(tmp_path)
    done = sixnines(tmp_path, command, str(path))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert all(re.match(rf"{re.escape(str(path))}(:\d+)?: ", line)
               for line in done.stderr.splitlines()), done.stderr
    assert all(word in done.stderr for word in case.words)
    assert not (tmp_path / "runs").exists()


def test_a_recipe_name_too_long_for_a_file_name(tmp_path: Path) -> None:
    long = MINIMAL.replace("driver: tcp}", "driver: redis, broker: {recipe: " + "r" * 300 + "}}")
    path = text(long)(tmp_path)
    outcome = validate_all([path], tmp_path)[str(path)]
    assert judge(outcome) is None, judge(outcome)


# --- files that are not the document expected: named, never quoted -----------------------

HASH = "$6$rounds=5000$Zk1sb3cK$Q2hhbmdlTWVQbGVhc2VJdElzTm90QVJlYWxIYXNo"
SECRET_FILES = {
    "shadow": "".join(f"user{i}:{HASH}{i}:20228:0:99999:7:::\n" for i in range(29)),
    "private-key": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{HASH}\n"
                   "-----END OPENSSH PRIVATE KEY-----\n",
    "credentials-json": f'{{"token": "{HASH}", "user": "admin"}}\n',
    "env-file": f"API_KEY: {HASH}\nDB_PASSWORD: {HASH}x\n",
    "yaml-alias": f"hosts: *{HASH[3:20]}\n",
    "yaml-tag": f"x: !{HASH[3:20]} y\n",
}


def quotes_the_secret(text: str) -> bool:
    """Whether any piece of the hash (its salt, any ten characters of it) was printed."""
    secret = HASH[3:]
    return any(secret[start:start + 10] in text for start in range(len(secret) - 9))


@pytest.mark.parametrize("content", SECRET_FILES.values(), ids=SECRET_FILES.keys())
def test_an_inventory_that_is_no_inventory_is_named_never_quoted(content: str,
                                                                 tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text(content)
    text(f"{MINIMAL}inventory: {secret}\n")(tmp_path)
    done = sixnines(tmp_path, "validate", "scenario.yaml")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert not quotes_the_secret(done.stdout + done.stderr), done.stderr
    assert re.fullmatch(rf"{re.escape(str(secret))}:\d+: [^\n]+\n", done.stderr), done.stderr


@pytest.mark.parametrize("content", SECRET_FILES.values(), ids=SECRET_FILES.keys())
def test_a_scenario_that_is_no_scenario_is_named_never_quoted(content: str,
                                                              tmp_path: Path) -> None:
    path = text(content, "secret")(tmp_path)
    done = sixnines(tmp_path, "validate", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert not quotes_the_secret(done.stdout + done.stderr), done.stderr
    assert all(line.startswith(f"{path}:") for line in done.stderr.splitlines())


@pytest.mark.parametrize("content", SECRET_FILES.values(), ids=SECRET_FILES.keys())
def test_a_recipe_that_is_no_recipe_is_named_never_quoted(content: str, tmp_path: Path) -> None:
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "mine.yaml").write_text(content)
    text(MINIMAL.replace("driver: tcp}", "driver: redis, broker: {recipe: mine}}"))(tmp_path)
    done = sixnines(tmp_path, "validate", "scenario.yaml", "--recipes", "recipes")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert not quotes_the_secret(done.stdout + done.stderr), done.stderr
    assert re.fullmatch(r"scenario\.yaml:3: systems\[0\]\.broker\.recipe: broker recipe "
                        r"recipes/mine\.yaml(:\d+)?: [^\n]+\n", done.stderr), done.stderr
