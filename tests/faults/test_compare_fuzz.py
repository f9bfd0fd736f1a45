"""`sixnines compare` on a real pair of results, one summary mangled at random per case.

Each case takes one value anywhere in one side's summary.json (the results directory's or
one run's report/summary.json) and puts something else there: NaN, infinities, negatives,
numbers too large for any run, strings, escape sequences and markup, nesting past any
document, the wrong kind of value, nothing. Whatever it is, `compare` either compares
(exit 0 or 1, the verdict line agreeing with the exit code, `--json` parseable and
agreeing too) or refuses it as bad input in one line naming the damaged file (exit 2);
never a traceback, never a control character on the terminal, and neither side's files
touched. A value no analysis can write (NaN, infinity, a negative figure, a newer schema)
must be refused.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.faults.support import analysed, control_characters, sixnines

pytestmark = [pytest.mark.integration, pytest.mark.unchecked_results]

CASES = 160
#: Two runs (two message sizes) of the faults' small run.
PAIR_SCENARIO = """
name: fuzz
systems: [{name: tcp, driver: tcp}]
workload: {message_size: [64, 128], rate: 1000, duration: 1s, warmup: 0s}
"""
DIGITS = "9" * 5000  # more digits than Python's int() reads
DEEP = "[" * 5000 + "]" * 5000
#: What each mutation puts in place of the value (None: the key is removed).
MUTATIONS: dict[str, Any] = {
    "nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"), "negate": None,
    "huge-float": 1e308, "huge-int": 10**30, "digits": "@DIGITS@", "deep": "@DEEP@",
    "string": "lots", "escapes": "\x1b]0;owned\x07\x1b[31m[bold]x\n", "empty-object": {},
    "empty-list": [], "null": None, "true": True, "zero": 0, "delete": None,
    "newer-schema": 999,
}
MUST_REFUSE = {"nan", "inf", "-inf", "deep", "digits"}
#: Fields whose negative values compare refuses (orchestrator.results.summaries).
NON_NEGATIVE = {"sent", "received", "delivered", "lost", "unknown", "duplicated", "reordered",
                "unexpected", "send_rate", "receive_rate", "density_us", "clock_bound_ns"}
LATENCIES = {"latency_us", "service_time_us", "send_lag_us", "saturation_latency_us"}


@dataclass(frozen=True)
class Mangled:
    file: Path  # the summary changed
    path: tuple  # where in it
    kind: str
    old: Any

    def must_refuse(self) -> bool:
        if self.kind in MUST_REFUSE:
            return True
        if self.kind == "newer-schema":
            return self.path[-1] == "schema_version"
        number = isinstance(self.old, int | float) and not isinstance(self.old, bool)
        counted = self.path[-1] in NON_NEGATIVE or (len(self.path) >= 2
                                                    and self.path[-2] in LATENCIES)
        return self.kind == "negate" and number and self.old > 0 and counted


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pair")
    return analysed(root / "a", PAIR_SCENARIO), analysed(root / "b", PAIR_SCENARIO)


def places(value: Any, path: tuple = ()) -> list[tuple]:
    """Every key and list item of a JSON value, as paths from its root."""
    found = [path] if path else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += places(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += places(child, (*path, index))
    return found


def mangle(file: Path, kind: str, rng: random.Random) -> Mangled:
    """One value of `file`'s JSON, drawn, replaced as `kind` says (or removed)."""
    body = json.loads(file.read_text())
    path = rng.choice(places(body))
    if kind == "newer-schema":
        path = (*path[:path.index("runs") + 2], "schema_version") if "runs" in path \
            else ("schema_version",)
    parent = body
    for key in path[:-1]:
        parent = parent[key]
    old = parent[path[-1]] if not (isinstance(parent, dict) and path[-1] not in parent) \
        else None
    if kind == "delete":
        del parent[path[-1]]
    elif kind == "negate":
        parent[path[-1]] = -old if isinstance(old, int | float) and not isinstance(old, bool) \
            else old
    else:
        parent[path[-1]] = MUTATIONS[kind]
    text = json.dumps(body).replace('"@DIGITS@"', DIGITS).replace('"@DEEP@"', DEEP)
    file.write_text(text)
    return Mangled(file, path, kind, old)


def files_of(directory: Path) -> dict[str, int]:
    return {str(path.relative_to(directory)): path.stat().st_size
            for path in directory.rglob("*") if path.is_file()}


@pytest.mark.parametrize("case", range(CASES))
def test_compare_survives_any_mangled_summary(pair: tuple[Path, Path], tmp_path: Path,
                                              case: int) -> None:
    rng = random.Random(case)
    sides = [Path(shutil.copytree(side, tmp_path / name)) for side, name in zip(pair, "ab",
                                                                               strict=True)]
    victim = rng.randrange(2)
    run_dirs = [sorted(path for path in side.iterdir() if (path / "report").is_dir())[0]
                for side in sides]
    single = rng.random() < 0.3  # the run-directory form
    targets = run_dirs if single else sides
    summary = targets[victim] / ("report/summary.json" if single else "summary.json")
    kinds = list(MUTATIONS)
    mangled = mangle(summary, kinds[case % len(kinds)], rng)  # each kind as often
    before = [files_of(side) for side in sides]
    as_json = rng.random() < 0.5
    done = sixnines("compare", *targets, *(["--json"] if as_json else []))
    try:
        judge(done, mangled, as_json)
        assert [files_of(side) for side in sides] == before, "compare changed a file"
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)  # damaged summaries: not for later checks


def judge(done, mangled: Mangled, as_json: bool) -> None:
    what = f"{mangled.kind} at {mangled.path} of {mangled.file}"
    assert "Traceback" not in done.stderr, f"{what}:\n{done.stderr}"
    assert not control_characters(done.stdout + done.stderr), f"{what}:\n{done.stderr}"
    assert done.returncode in (0, 1, 2), f"{what}: exit {done.returncode}\n{done.stderr}"
    if done.returncode == 2:
        lines = done.stderr.splitlines()
        assert done.stdout == "" and len(lines) == 1, f"{what}:\n{done.stderr}"
        assert lines[0].startswith(f"{mangled.file}: "), f"{what}:\n{done.stderr}"
        return
    assert not mangled.must_refuse(), f"{what}: compared (exit {done.returncode})"
    if as_json:
        assert json.loads(done.stdout)["regression"] is (done.returncode == 1), what
        return
    verdict = done.stderr.splitlines()[-1]
    assert "run(s) compared" in verdict, f"{what}:\n{done.stderr}"
    assert ("no regression" in verdict) is (done.returncode == 0), f"{what}: {verdict}"
