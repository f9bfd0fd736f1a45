"""Summaries that cannot be what sixnines wrote, given to `compare` and `runs`.

`compare` refuses figures no run can produce (NaN, infinity, negative counts and
percentiles, percentiles that fall, an unknown newer schema_version, nesting past any
document's) as bad input: exit 2, one line naming the file and the field. `runs` lists
such a directory as not analysed, with the same line. Text from the files (run ids,
systems, scenario names, directory names) reaches the terminal without a control
character, and rich markup in it prints as written.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.faults.support import analysed, control_characters, refused, sixnines

pytestmark = [pytest.mark.integration, pytest.mark.unchecked_results]

ESCAPES = "\x1b]0;owned\x07\x1b[31m\x1b[2J"
MARKUP = "[bold]x[/bold]"


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """A real results directory, analysed."""
    return analysed(tmp_path_factory.mktemp("reference"))


@pytest.fixture
def copy(reference: Path, tmp_path: Path):
    """Copies of the reference, removed after the test: the damaged summaries they hold
    must not reach other tests' checks (tests/result_schemas.py)."""
    made: list[Path] = []

    def make(name: str = "b") -> Path:
        made.append(tmp_path / "copies" / name)
        return Path(shutil.copytree(reference, made[-1]))

    yield make
    shutil.rmtree(tmp_path / "copies", ignore_errors=True)


def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Apply `change` to the JSON object in `path` (NaN and infinities written as Python's
    reader takes them)."""
    body = json.loads(path.read_text())
    change(body)
    path.write_text(json.dumps(body))


def first_run(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return lambda body: change(body["runs"][0])


def set_at(*keys_and_value) -> Callable[[dict[str, Any]], None]:
    *keys, value = keys_and_value

    def change(document: dict[str, Any]) -> None:
        for key in keys[:-1]:
            document = document[key]
        document[keys[-1]] = value
    return change


IMPOSSIBLE = [
    ("nan-p99", first_run(set_at("latency_us", "p99", float("nan"))),
     "`runs[0].latency_us.p99` is nan"),
    ("infinite-p50", first_run(set_at("latency_us", "p50", float("inf"))),
     "`runs[0].latency_us.p50` is inf"),
    ("nan-send-rate", first_run(set_at("send_rate", float("nan"))), "`runs[0].send_rate` is nan"),
    ("negative-percentile", first_run(set_at("latency_us", "p50", -5.0)),
     "`runs[0].latency_us.p50` is -5.0: it cannot be negative"),
    ("negative-lost", first_run(set_at("lost", -3)), "`runs[0].lost` is -3: it cannot be negative"),
    ("negative-count", first_run(set_at("latency_us", "count", -10)),
     "`runs[0].latency_us.count` is -10"),
    ("negative-rate", first_run(set_at("receive_rate", -1.0)), "`runs[0].receive_rate` is -1.0"),
    ("falling-percentiles", first_run(set_at("latency_us", "p90", 1e9)),
     "`runs[0].latency_us.p99` is"),
    ("newer-schema", set_at("schema_version", 999),
     "`schema_version` is 999: written by a newer sixnines"),
    ("newer-run-schema", first_run(set_at("schema_version", 999)),
     "`runs[0].schema_version` is 999"),
    ("a-string-for-a-count", first_run(set_at("sent", "lots")), "`runs[0].sent`"),
]


@pytest.mark.parametrize(("change", "words"), [case[1:] for case in IMPOSSIBLE],
                         ids=[case[0] for case in IMPOSSIBLE])
def test_impossible_figures_are_bad_input(reference: Path, copy, change, words: str) -> None:
    damaged = copy()
    edit(damaged / "summary.json", change)
    line = refused(sixnines("compare", reference, damaged))
    assert line.startswith(f"{damaged / 'summary.json'}: ") and words in line, line
    assert refused(sixnines("compare", damaged, reference)) == line


def test_the_run_directory_form_is_held_to_the_same_rules(reference: Path, copy) -> None:
    damaged = copy()
    run_dir = next(path for path in damaged.iterdir() if (path / "report").is_dir())
    edit(run_dir / "report" / "summary.json", set_at("latency_us", "p99", float("nan")))
    line = refused(sixnines("compare", run_dir, run_dir))
    assert line == (f"{run_dir / 'report' / 'summary.json'}: `latency_us.p99` is nan, not a "
                    "figure (sixnines never writes one)")


@pytest.mark.parametrize("content", ["[" * 100_000 + "]" * 100_000, '{"runs": ' * 5_000],
                         ids=["nested-lists", "nested-objects"])
def test_nesting_past_any_summary_is_one_line(reference: Path, copy, content: str) -> None:
    damaged = copy()
    (damaged / "summary.json").write_text(content)
    line = refused(sixnines("compare", reference, damaged))
    assert line.startswith(f"{damaged / 'summary.json'}: unreadable: "), line


def test_a_run_summary_larger_than_any_is_refused_unread(reference: Path, copy) -> None:
    run_dir = next(path for path in copy().iterdir() if (path / "report").is_dir())
    with open(run_dir / "report" / "summary.json", "wb") as huge:
        huge.truncate(64 * 1024 * 1024)
    line = refused(sixnines("compare", run_dir, run_dir))
    assert "larger than 16,777,216 bytes" in line, line


@pytest.mark.parametrize("threshold", ["inf", "nan", "1e9", "0", "-5", "ten"])
def test_a_threshold_that_turns_every_check_off_is_bad_input(reference: Path,
                                                             threshold: str) -> None:
    done = sixnines("compare", reference, reference, "--threshold", threshold)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert f"argument --threshold: {threshold}: a percentage above 0 and at most 1,000" \
        in done.stderr


def hostile_names(body: dict[str, Any]) -> None:
    body["scenario"] = f"sc{ESCAPES}"
    body["runs"][0].update(run_id=f"{MARKUP}{ESCAPES}\nforged line", system=f"tcp{ESCAPES}")


def test_escape_sequences_from_a_summary_never_reach_the_terminal(reference: Path,
                                                                  copy) -> None:
    a, b = copy("a"), copy("b")
    for side in (a, b):
        edit(side / "summary.json", hostile_names)
    done = sixnines("compare", a, b)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    assert not control_characters(done.stdout + done.stderr), done.stderr
    assert MARKUP in done.stderr and "\\x1b]0;owned\\x07" in done.stderr
    assert "\nforged line" not in done.stderr
    as_json = sixnines("compare", a, b, "--json")
    assert not control_characters(as_json.stdout + as_json.stderr)
    assert json.loads(as_json.stdout)["pairs"][0]["run_b"] == f"{MARKUP}{ESCAPES}\nforged line"


def test_escape_sequences_in_names_never_reach_the_terminal_through_runs(reference: Path,
                                                                       copy) -> None:
    hostile = copy(f"20261127-000000{ESCAPES}")
    edit(hostile / "summary.json", hostile_names)
    done = sixnines("runs", hostile.parent)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert not control_characters(done.stdout + done.stderr), done.stderr
    assert "\\x1b]0;owned\\x07" in done.stderr and "[bold]" in done.stderr
    listed = sixnines("runs", hostile.parent, "--json")
    assert not control_characters(listed.stdout)
    assert json.loads(listed.stdout)[0]["path"] == str(hostile)


def test_runs_lists_an_impossible_summary_as_not_analysed_and_says_why(copy) -> None:
    damaged = copy()
    edit(damaged / "summary.json", first_run(set_at("latency_us", "p99", float("nan"))))
    nested = copy("c")
    (nested / "summary.json").write_text("[" * 100_000 + "]" * 100_000)
    done = sixnines("runs", damaged.parent)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert f"{damaged / 'summary.json'}: `runs[0].latency_us.p99` is nan, not a figure " \
        "(sixnines never writes one)" in lines
    assert f"{nested / 'summary.json'}: unreadable: nested more than 64 levels deep" in lines
    assert f"not analysed: run `sixnines report {damaged}`" in lines
    listed = {entry["path"]: entry for entry in json.loads(
        sixnines("runs", damaged.parent, "--json").stdout)}
    assert listed[str(damaged)]["analysed"] is False
    assert "`runs[0].latency_us.p99` is nan" in listed[str(damaged)]["refused"]
