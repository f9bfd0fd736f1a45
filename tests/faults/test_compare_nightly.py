"""`sixnines compare` as a nightly job uses it, on real nights recorded through the CLI:
its exit codes (0 no change, 1 regression, 2 bad input, 3 tonight broken), the JUnit file
it writes for the CI server (valid against the Ant schema), and `--baseline ROOT --last N`
pooling the last passing nights. Tonight's variants are copies of a real night, edited as
the fault would leave them: every latency ten times slower, a run failed, no runs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.faults.support import analysed, line_with, refused, sixnines, unsteady_steadiness
from tests.test_junit import junit_cases as junit

pytestmark = [pytest.mark.integration, pytest.mark.unchecked_results]

LATENCY_FIGURES = ("p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "p99.9999", "max",
                   "mean", "lower_median", "robust_deviation")
FUTURE = "29991231-000000"  # tonight: after every night recorded


@pytest.fixture(scope="module")
def nights(tmp_path_factory) -> tuple[Path, list[Path]]:
    """Three real nights of one scenario under one root (oldest first), and a night whose
    run failed, recorded after them."""
    work = tmp_path_factory.mktemp("nightly")
    recorded = [analysed(work) for _ in range(3)]
    root = recorded[0].parent.parent
    failed = tonight_copy(recorded[-1], root / "faults" / "29991230-000000", set_status("failed"))
    assert failed.parent == recorded[0].parent
    return root, recorded


def tonight_copy(night: Path, dest: Path, change: Callable[[dict], None]) -> Path:
    """A copy of `night` at `dest` with `change` applied to every run summary in it (the
    results directory's and each run's own)."""
    shutil.copytree(night, dest)
    for path in [dest / "summary.json", *dest.glob("*/report/summary.json")]:
        body = json.loads(path.read_text())
        for run in body.get("runs", [body]):
            change(run)
        path.write_text(json.dumps(body))
    return dest


def set_status(status: str) -> Callable[[dict], None]:
    return lambda run: run.update(status=status)


def unsteady(run: dict) -> None:
    run["steadiness"] = unsteady_steadiness(run["latency_us"]["p99"])


def ten_times_slower(run: dict) -> None:
    """Every latency figure of a run summary times ten (its .hgrm: scale_hgrm)."""
    for key in LATENCY_FIGURES:
        if run["latency_us"].get(key) is not None:
            run["latency_us"][key] *= 10


def scale_hgrm(path: Path, factor: float) -> None:
    """The values of a .hgrm's percentile lines times `factor` (its footer left as it is)."""
    lines = []
    for line in path.read_text().splitlines(keepends=True):
        fields = line.split(maxsplit=1)
        if fields and not line.startswith("#") and fields[0][0].isdigit():
            line = f"{float(fields[0]) * factor:12.3f} {fields[1]}"
        lines.append(line)
    path.write_text("".join(lines))


@pytest.fixture(scope="module")
def slower(nights, tmp_path_factory) -> Path:
    recorded = nights[1]
    tonight = tonight_copy(recorded[-1], tmp_path_factory.mktemp("slower") / FUTURE,
                           ten_times_slower)
    for hgrm in tonight.glob("*/report/latency.hgrm"):
        scale_hgrm(hgrm, 10)
    return tonight


def test_a_night_like_the_last_ones_exits_0(nights, tmp_path):
    root, recorded = nights
    tonight = tonight_copy(recorded[-1], tmp_path / FUTURE, lambda run: None)
    done = sixnines("compare", "--baseline", root, "--last", "3", tonight, "--json",
                    "--junit", tmp_path / "compare.xml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["baseline_nights"] == [str(n) for n in reversed(recorded)]
    cases = junit(tmp_path / "compare.xml")
    assert cases["failure"] == []
    assert ("tcp", "latency p50") in cases["passed"]
    assert ("tcp", "latency p99.99") in cases["skipped"]  # 1,000 messages a night


def test_a_slower_night_exits_1_and_its_junit_says_why(nights, slower, tmp_path):
    root, recorded = nights
    done = sixnines("compare", "--baseline", root, "--last", "2", slower,
                    "--junit", tmp_path / "compare.xml")
    assert done.returncode == 1, done.stderr
    assert f"A: {root}, pooled from the last 2 passing night(s): {recorded[2]}, " \
        f"{recorded[1]}" in done.stderr
    cases = junit(tmp_path / "compare.xml")
    # tenfold slower everywhere, yet the nights' own spread (wide on a loaded machine: a
    # p50 of 52 µs one night and 1.5 ms the next) may still cover a percentile or two
    failed = [name for _, name in cases["failure"] if name.startswith("latency ")]
    assert failed, cases
    assert ("tcp", "receive_rate") in cases["passed"]
    assert ("tcp", "latency max") in cases["skipped"]
    failure = next(case for case in ElementTree.parse(tmp_path / "compare.xml").iter("testcase")
                   if case.get("name") == failed[0]).find("failure")
    assert failure.get("message").startswith(f"{failed[0]} regression: A ")
    for part in (", B ", ", change +", ", tolerance ", "the nights' band and B's sampling band"):
        assert part in failure.get("message")


def test_the_night_judged_is_never_its_own_baseline(nights):
    root, recorded = nights
    done = sixnines("compare", "--baseline", root, "--last", "3", recorded[-1], "--json")
    assert done.returncode in (0, 1), done.stderr
    assert json.loads(done.stdout)["baseline_nights"] == [str(recorded[1]), str(recorded[0])]


@pytest.mark.parametrize("change, why", [
    (set_status("failed"), "1 of 1 run(s) failed or corrupt"),
    (set_status("corrupt"), "1 of 1 run(s) failed or corrupt"),
    (unsteady, "1 of 1 run(s) unsteady"),
], ids=["failed", "corrupt", "unsteady"])
def test_a_broken_night_exits_3_not_1(nights, tmp_path, change, why):
    root, recorded = nights
    tonight = tonight_copy(recorded[-1], tmp_path / FUTURE, change)
    for args in (["--baseline", root], [recorded[0]]):
        done = sixnines("compare", *args, tonight, "--junit", tmp_path / "compare.xml")
        assert done.returncode == 3, done.stderr
        assert "Traceback" not in done.stderr
        line_with(done.stderr, f"{tonight}: cannot be judged: {why}")
        assert ("compare", "judged results usable") in junit(tmp_path / "compare.xml")["failure"]


def test_a_night_without_runs_exits_3(nights, tmp_path):
    root, recorded = nights
    tonight = tmp_path / FUTURE
    shutil.copytree(recorded[-1], tonight)
    body = json.loads((tonight / "summary.json").read_text())
    (tonight / "summary.json").write_text(json.dumps({**body, "runs": []}))
    done = sixnines("compare", "--baseline", root, tonight)
    assert done.returncode == 3, done.stderr
    line_with(done.stderr, f"{tonight}: cannot be judged: it holds no runs")


def test_bad_input_exits_2_in_one_line(nights, tmp_path):
    root, recorded = nights
    (tmp_path / "empty").mkdir()
    line = refused(sixnines("compare", "--baseline", tmp_path / "empty", recorded[-1]))
    assert "no passing night of scenario faults before" in line
    line = refused(sixnines("compare", "--baseline", root, recorded[0], recorded[1]))
    assert line == "sixnines compare: give RUN_A RUN_B, or --baseline ROOT [--last N] RUN_B"
    line = refused(sixnines("compare", recorded[0], recorded[1], "--junit",
                            tmp_path / "nowhere" / "compare.xml"))
    assert "--junit: no directory" in line
