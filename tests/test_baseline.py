"""`sixnines compare --baseline ROOT --last N RUN_B` (orchestrator/results/baseline.py) on
synthetic nights built as the analysis builds real ones (tests/test_compare.py): which
nights are pooled, that their distributions add as histograms do, and that the band covers
the nights' spread."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sixnines.formats import hdr
from sixnines.formats.layout import SUMMARY_FILE
from sixnines.orchestrator.cli import EXIT_BAD_INPUT, EXIT_BROKEN, EXIT_NOT_OK, EXIT_OK
from sixnines.orchestrator.results.baseline import load_baseline, passing_nights
from sixnines.orchestrator.results.compare import load_side
from tests.test_compare import (
    compare,
    latencies,
    results,
    run_summary,
    verdicts,
    write_results,
)

NIGHTS = ("20261123-030000", "20261124-030000", "20261125-030000", "20261126-030000")
TONIGHT = "20261127-030000"


def nights(root: Path, changes: dict[str, dict] | None = None) -> list[Path]:
    """Four passing nights of the four quickstart runs (oldest first) under `root`;
    `changes` maps a night to summary fields of its first run."""
    return [results(root / "synthetic" / stamp, index + 1,
                    {"01-tcp-message_size=64": (changes or {}).get(stamp, {})})
            for index, stamp in enumerate(NIGHTS)]


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> tuple[Path, Path]:
    """Four passing nights under a root (left as they are), and tonight's results."""
    work = tmp_path_factory.mktemp("nights")
    nights(work / "runs")
    (work / "runs" / "empty").mkdir()
    return work / "runs", results(work / TONIGHT, 9)


def baseline_nights(code_out: tuple[int, str, str]) -> list[str]:
    return [Path(night).name for night in json.loads(code_out[1])["baseline_nights"]]


def test_the_newest_passing_nights_before_b_are_pooled(tmp_path):
    root = tmp_path / "runs"
    nights(root, {NIGHTS[2]: {"status": "partial"}})
    results(root / "synthetic" / "20261128-030000", 8)  # after tonight: not yet known
    tonight = results(root / "synthetic" / TONIGHT, 9)
    other = results(root / "other" / "20261126-040000", 10)
    body = json.loads((other / SUMMARY_FILE).read_text())
    (other / SUMMARY_FILE).write_text(json.dumps({**body, "scenario": "another"}))
    assert [night.name for night in passing_nights(root, 2, tonight)] == [NIGHTS[3],
                                                                          NIGHTS[1]]
    out = compare("--baseline", root, "--last", "7", tonight, "--json")
    assert out[0] == EXIT_OK, out[2]
    assert baseline_nights(out) == [NIGHTS[3], NIGHTS[1], NIGHTS[0]]
    assert json.loads(out[1])["a"] == str(root)
    assert "pooled from the last 3 passing night(s)" in compare(
        "--baseline", root, tonight)[2]


def test_b_itself_and_nights_not_analysed_are_left_out(tmp_path):
    root = tmp_path / "runs"
    night = nights(root)[-1]
    (root / "synthetic" / "20261126-120000" / "01-tcp").mkdir(parents=True)
    (root / "synthetic" / "20261126-120000" / "01-tcp" / "manifest.json").write_text("{}")
    out = compare("--baseline", root, "--last", "2", night, "--json")
    assert baseline_nights(out) == [NIGHTS[2], NIGHTS[1]]


def test_pooled_distributions_add_as_histograms_do(tmp_path):
    """The pooled percentiles, read off the nights' .hgrm files, are those of all the
    nights' samples together (to HDR and .hgrm resolution), and the count their sum."""
    samples = [latencies(seed, count=count) for seed, count in ((1, 20_000), (2, 5_000),
                                                               (3, 40_000))]
    for stamp, values in zip(NIGHTS, samples, strict=False):
        write_results(tmp_path / "runs" / stamp, [(run_summary("01-tcp", "tcp", 64, values),
                                                   values)])
    tonight = write_results(tmp_path / TONIGHT, [(run_summary("01-tcp", "tcp", 64,
                                                              samples[0]), samples[0])])
    (pooled,) = load_baseline(tmp_path / "runs", 3, tonight).runs
    together = np.concatenate(samples)
    exact = hdr.percentile_values(hdr.counts_of(together)) / 1000
    assert pooled.latency_us.count == len(together)
    for key, value in zip(hdr.PERCENTILE_KEYS[:4], exact, strict=False):
        assert pooled.latency_us.figure(key) == pytest.approx(value, rel=0.03), key
    assert pooled.latency_us.max == together.max() / 1000
    assert pooled.latency_us.mean == pytest.approx(together.mean() / 1000, rel=1e-6)


def test_the_band_covers_every_nights_own_figure(tmp_path):
    """A night 30% slower at p99 among the baseline widens the band to it: B at that level
    is within what the nights spanned, though a fixed reference (the newest night) would
    flag it."""
    slow = latencies(5, scale=1.3)
    root = tmp_path / "runs"
    write_results(root / NIGHTS[0], [(run_summary("01-tcp", "tcp", 64, slow), slow)])
    for index, stamp in enumerate(NIGHTS[1:3]):
        values = latencies(6 + index)
        write_results(root / stamp, [(run_summary("01-tcp", "tcp", 64, values), values)])
    b_values = latencies(9, scale=1.25)
    tonight = write_results(tmp_path / TONIGHT, [(run_summary("01-tcp", "tcp", 64, b_values),
                                                  b_values)])
    (pooled,) = (side := load_baseline(root, 3, tonight)).runs
    down, up = side.tail(pooled).half_widths("p50")
    nights_p50 = [load_side(root / stamp).runs[0].latency_us.p50 for stamp in NIGHTS[:3]]
    assert pooled.latency_us.p50 * np.exp(up) >= max(nights_p50)
    assert pooled.latency_us.p50 * np.exp(-down) <= min(nights_p50)
    assert compare("--baseline", root, "--last", "3", tonight)[0] == EXIT_OK
    assert compare(root / NIGHTS[2], tonight)[0] == EXIT_NOT_OK


def test_a_slower_tonight_is_a_regression_against_the_pooled_nights(tmp_path, shared):
    root = shared[0]
    tonight = results(tmp_path / TONIGHT, 9, tail=2.0)
    out = compare("--baseline", root, "--last", "3", tonight, "--json")
    assert out[0] == EXIT_NOT_OK
    assert verdicts(out)["01-tcp-message_size=64"]["p99"] == "regression"


def test_broken_tonight_exits_3_even_against_a_baseline(tmp_path, shared):
    root = shared[0]
    tonight = results(tmp_path / TONIGHT, 9, {"03-zmq-message_size=64": {"status": "failed"}})
    code, _, text = compare("--baseline", root, tonight)
    assert code == EXIT_BROKEN
    assert "cannot be judged: 1 of 4 run(s) failed or corrupt: 03-zmq-message_size=64 " \
        "(failed)" in text


@pytest.mark.parametrize(("args", "words"), [
    (lambda root, b: ["--baseline", root / "nowhere", b], "nowhere: no such directory"),
    (lambda root, b: ["--baseline", root / "empty", b], "no passing night of scenario "
                                                         "synthetic before"),
    (lambda root, b: ["--baseline", root, root / "synthetic" / NIGHTS[0], b],
     "give RUN_A RUN_B, or --baseline ROOT [--last N] RUN_B"),
    (lambda root, b: ["--last", "3", root / "synthetic" / NIGHTS[0], b],
     "--last needs --baseline ROOT"),
    (lambda root, b: [b], "give RUN_A RUN_B"),
    (lambda root, b: ["--junit", root / "missing" / "x.xml", b, b],
     "--junit: no directory"),
])
def test_bad_arguments_are_one_line_and_exit_2(shared, args, words):
    code, out, text = compare(*args(*shared))
    assert code == EXIT_BAD_INPUT and out == ""
    assert len(text.splitlines()) == 1 and words in text, text


@pytest.mark.parametrize("last", ["0", "-1", "two"])
def test_last_is_a_whole_number_of_nights(tmp_path, last):
    with pytest.raises(SystemExit) as exit_:
        compare("--baseline", tmp_path, "--last", last, tmp_path)
    assert exit_.value.code == EXIT_BAD_INPUT
