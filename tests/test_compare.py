"""`sixnines compare` (orchestrator/results/compare.py) on synthetic results built the way the
analysis builds real ones: latencies sampled from realistic distributions (a lognormal body,
a slow-path tail, rare VM stalls), HDR bucket counts, the summary's percentiles and the
run's latency.hgrm from those counts."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from sixnines.formats import hdr
from sixnines.formats.layout import MANIFEST_FILE, SUMMARY_FILE
from sixnines.formats.summary import Figures, Spread
from sixnines.orchestrator.cli import EXIT_BAD_INPUT, EXIT_BROKEN, EXIT_NOT_OK, EXIT_OK, main
from sixnines.orchestrator.results.compare import Tail, latency_figure
from sixnines.orchestrator.results.repeats import repeated_cases
from sixnines.orchestrator.results.store import FIGURE_KEYS, write_results_summary
from sixnines.orchestrator.results.summaries import read_results_summary
from tests.test_repeats import two_systems

COUNT = 20_000
PARAMS = {"mode": "one-way", "rate": 2000.0, "duration_ns": 10_000_000_000, "seed": None}
POINTS = [("tcp", 64, "64"), ("tcp", 1024, "1KB"), ("zmq", 64, "64"), ("zmq", 1024, "1KB")]


def latencies(seed: int, count: int = COUNT, shape: str = "stalls", tail: float = 1.0,
              scale: float = 1.0) -> np.ndarray:
    """Latencies in ns. `tail` stretches the slow part (a tail regression), `scale` all."""
    rng = np.random.default_rng(seed)
    values = rng.lognormal(np.log(70.0), 0.15, count)
    if shape == "stalls":  # 2% slow path, 0.1% VM stalls of 0.5–3 ms
        slow = rng.random(count) < 0.02
        values[slow] += rng.exponential(150.0 * tail, slow.sum())
        stalled = rng.random(count) < 0.001
        values[stalled] += rng.uniform(500.0, 3000.0, stalled.sum()) * tail
    elif shape == "bimodal":  # 0.5% take a slow path near 1 ms
        slow = rng.random(count) < 0.005
        values[slow] = rng.normal(1000.0 * tail, 20.0, slow.sum())
    else:  # power-law tail
        values *= 1 + rng.pareto(2.5, count) * 0.2 * tail
    return (values * scale * 1000).astype(np.int64)


def figures(values_ns: np.ndarray) -> dict:
    """The summary's latency figures (µs) as the analysis computes them."""
    counts = hdr.counts_of(values_ns)
    ladder = np.minimum(hdr.percentile_values(counts), values_ns.max()) / 1000
    return {**dict(zip(hdr.PERCENTILE_KEYS, ladder.tolist(), strict=True)),
            "max": values_ns.max() / 1000, "mean": values_ns.mean() / 1000,
            "count": len(values_ns)}


def write_hgrm(path: Path, values_ns: np.ndarray) -> None:
    with open(path, "wb") as out:
        hdr.to_hdrh(hdr.counts_of(values_ns)).output_percentile_distribution(out, 1000.0)


def run_summary(run_id: str, system: str, size: int, values_ns: np.ndarray, **fields) -> dict:
    count = len(values_ns)
    return {"run_id": run_id, "system": system, "params": {**PARAMS, "message_size": size},
            "status": "ok", "problems": [], "sent": count, "received": count, "lost": 0,
            "duplicated": 0, "reordered": 0, "send_rate": 2000.0, "receive_rate": 1999.9,
            "latency_us": figures(values_ns), "warnings": [], **fields}


def write_results(directory: Path, runs: list[tuple[dict, np.ndarray]]) -> Path:
    """A results directory: summary.json and each run's report/latency.hgrm."""
    directory.mkdir(parents=True)
    for summary, values in runs:
        report = directory / summary["run_id"] / "report"
        report.mkdir(parents=True)
        write_hgrm(report / "latency.hgrm", values)
        (report / SUMMARY_FILE).write_text(json.dumps(summary))
    body = {"scenario": "synthetic", "runs": [summary for summary, _ in runs]}
    (directory / SUMMARY_FILE).write_text(json.dumps(body))
    return directory


def results(directory: Path, seed: int, changes: dict | None = None, **shape) -> Path:
    """The four quickstart-like runs; `changes` maps a run id to summary fields to set."""
    runs = []
    for index, (system, size, label) in enumerate(POINTS):
        run_id = f"{index + 1:02d}-{system}-message_size={label}"
        values = latencies(seed * 10 + index, **(shape if run_id.startswith("01") else {}))
        runs.append((run_summary(run_id, system, size, values,
                                 **(changes or {}).get(run_id, {})), values))
    return write_results(directory, runs)


def compare(*args) -> tuple[int, str, str]:
    """`sixnines compare …` in this process: exit code, stdout, console text."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["compare", *map(str, args)])
    return code, out.getvalue(), err.getvalue()


def verdicts(code_out: tuple[int, str, str]) -> dict[str, dict[str, str]]:
    """{run_b: {figure key: verdict}} from --json output."""
    body = json.loads(code_out[1])
    return {pair["run_b"]: {f["key"]: f["verdict"] for f in pair["figures"]}
            for pair in body["pairs"]}


def test_two_runs_of_the_same_thing_stay_quiet(tmp_path):
    code, _, text = compare(results(tmp_path / "a", 1), results(tmp_path / "b", 2))
    assert code == EXIT_OK, text
    assert "4 run(s) compared, 0 regressed" in text
    assert "not comparable" in text  # p99.99 and beyond from 20,000 samples


@pytest.mark.parametrize("shape", ["stalls", "bimodal", "power-law"])
@pytest.mark.parametrize("source", ["hgrm", "ladder"])
def test_no_false_flags_across_many_pairs_of_one_distribution(shape, source):
    """Sampling noise alone never crosses the tolerance, in either direction, for the
    .hgrm bands and for the coarser ladder-only bands (a summary.json without .hgrm)."""
    flagged = []
    for seed in range(40):
        a, b = latencies(2 * seed, shape=shape), latencies(2 * seed + 1, shape=shape)
        tails = None
        if source == "hgrm":
            tails = tuple(_tail(values) for values in (a, b))
        for key in FIGURE_KEYS:
            figure = latency_figure(Figures.model_validate(figures(a)),
                                    Figures.model_validate(figures(b)), key, 10.0, tails)
            if figure.verdict in ("regression", "improved"):
                flagged.append((seed, key, figure.change_pct, figure.tolerance_pct))
    assert flagged == []


def _tail(values: np.ndarray) -> Tail:
    """The fine-grained distribution at every HDR bucket: the points a .hgrm prints a
    subset of (printing one costs ~0.2 s in Python: too slow for 240 of them)."""
    counts = hdr.counts_of(values)
    filled = np.flatnonzero(counts)
    above = len(values) - np.cumsum(counts)[filled]
    return Tail(len(values), list(zip((np.maximum(above, 1) / len(values)).tolist(),
                                      (hdr.highest_equivalent(filled) / 1000).tolist(),
                                      strict=True)))


def test_a_doubled_tail_is_a_regression(tmp_path):
    a = results(tmp_path / "a", 1)
    b = results(tmp_path / "b", 2, tail=2.0)
    code, out, _ = compare(a, b, "--json")
    assert code == EXIT_NOT_OK
    assert verdicts((code, out, ""))["01-tcp-message_size=64"]["p99"] == "regression"
    body = json.loads(out)
    assert body["regression"] is True
    regressed = [pair for pair in body["pairs"] if pair["regression"]]
    assert [pair["run_b"] for pair in regressed] == ["01-tcp-message_size=64"]
    assert any(finding.startswith("latency p99 ") for finding in regressed[0]["findings"])


def test_an_injected_p99_doubling_is_flagged_and_named(tmp_path):
    a = results(tmp_path / "a", 1)
    body = json.loads((a / SUMMARY_FILE).read_text())
    latency = body["runs"][2]["latency_us"]
    latency["p99"] *= 2
    b = write_results(tmp_path / "b", [])  # summary only: the ladder bands apply
    (b / SUMMARY_FILE).write_text(json.dumps(body))
    code, _, text = compare(a, b)
    assert code == EXIT_NOT_OK
    assert "✗ latency p99" in text and "(+100.0%" in text
    assert "1 regressed" in text


def test_a_receive_rate_drop_is_a_regression(tmp_path):
    a = results(tmp_path / "a", 1)
    b = results(tmp_path / "b", 2, {"03-zmq-message_size=64": {"receive_rate": 1400.0}})
    code, out, _ = compare(a, b, "--json")
    assert code == EXIT_NOT_OK
    assert verdicts((code, out, ""))["03-zmq-message_size=64"]["receive_rate"] == "regression"
    findings = [f for pair in json.loads(out)["pairs"] for f in pair["findings"]]
    assert findings == ["receive_rate 1,999.9 → 1,400.0 (-30.0%, tolerance 10%)"]


def test_a_thinly_sampled_percentile_is_not_comparable(tmp_path):
    """p99.99 from 20,000 samples rests on two samples: ten times higher is not news."""
    a = results(tmp_path / "a", 1)
    body = json.loads((a / SUMMARY_FILE).read_text())
    for run in body["runs"]:
        for key in ("p99.99", "p99.999", "p99.9999", "max"):
            run["latency_us"][key] *= 10
    b = tmp_path / "b"
    b.mkdir()
    (b / SUMMARY_FILE).write_text(json.dumps(body))
    code, out, _ = compare(a, b, "--json")
    assert code == EXIT_OK
    for figures_b in verdicts((code, out, "")).values():
        assert figures_b["p99.99"] == figures_b["max"] == "not comparable"


def test_tiny_latencies_do_not_flag_on_jitter(tmp_path):
    """3 µs → 4 µs is +33% but only 1 µs: under the absolute floor."""
    fast = latencies(1) // 25
    a = write_results(tmp_path / "a", [(run_summary("01-tcp", "tcp", 64, fast), fast)])
    slower = (latencies(2) // 25 * 4) // 3
    b = write_results(tmp_path / "b", [(run_summary("01-tcp", "tcp", 64, slower), slower)])
    code, out, _ = compare(a, b, "--json")
    assert code == EXIT_OK
    figure = json.loads(out)["pairs"][0]["figures"][0]
    assert figure["change_pct"] > 25 and figure["verdict"] == "same"


def test_the_threshold_sets_the_relative_floor(tmp_path):
    a = results(tmp_path / "a", 1)
    b = results(tmp_path / "b", 2, scale=1.15)
    assert compare(a, b)[0] == EXIT_NOT_OK
    assert compare(a, b, "--threshold", "20")[0] == EXIT_OK


def test_status_changes_and_losses_are_flagged(tmp_path):
    a = results(tmp_path / "a", 1)
    b = results(tmp_path / "b", 2, {"02-tcp-message_size=1KB": {"status": "partial",
                                                                  "lost": 12}})
    code, _, text = compare(a, b)
    assert code == EXIT_NOT_OK
    assert "✗ status ok → partial" in text and "✗ lost 0 → 12" in text


def test_statuses_rank_ok_partial_failed_corrupt_and_unknown_deliveries_count(tmp_path):
    """corrupt (files failing their checks) is worse than failed; deliveries of unknown
    fate (a receiver died) are flagged like losses. B holding a corrupt run cannot be
    judged: exit 3, whatever else changed."""
    a = results(tmp_path / "a", 1, {"02-tcp-message_size=1KB": {"status": "failed"}})
    b = results(tmp_path / "b", 2, {"02-tcp-message_size=1KB": {"status": "corrupt"},
                                    "01-tcp-message_size=64": {"unknown": 40}})
    code, _, text = compare(a, b)
    assert code == EXIT_BROKEN
    assert "✗ status failed → corrupt" in text and "✗ unknown 0 → 40" in text
    assert f"{b}: cannot be judged: 1 of 4 run(s) failed or corrupt: " \
        "02-tcp-message_size=1KB (corrupt)" in text


def test_a_better_status_is_a_note_not_a_regression(tmp_path):
    a = results(tmp_path / "a", 1, {"02-tcp-message_size=1KB": {"status": "partial"}})
    code, _, text = compare(a, results(tmp_path / "b", 2))
    assert code == EXIT_OK
    assert "! status partial → ok" in text


def test_runs_are_matched_by_system_and_swept_params_not_run_ids(tmp_path):
    a = results(tmp_path / "a", 1)
    body = json.loads((a / SUMMARY_FILE).read_text())
    body["runs"].reverse()
    for index, run in enumerate(body["runs"]):
        run["run_id"] = f"run-{index}"
        run["params"]["duration_ns"] = 30_000_000_000  # changed for every run: a note
    b = tmp_path / "b"
    b.mkdir()
    (b / SUMMARY_FILE).write_text(json.dumps(body))
    code, out, _ = compare(a, b, "--json")
    assert code == EXIT_OK
    pairs = json.loads(out)["pairs"]
    assert {(p["run_a"], p["run_b"]) for p in pairs} == {
        ("01-tcp-message_size=64", "run-3"), ("02-tcp-message_size=1KB", "run-2"),
        ("03-zmq-message_size=64", "run-1"), ("04-zmq-message_size=1KB", "run-0")}
    assert pairs[0]["match"] == {"message_size": 64}
    assert pairs[0]["notes"] == ["duration 10 s → 30 s"]  # measured longer: the same test
    assert pairs[0]["same_experiment"]
    assert pairs[0]["figures"][0]["verdict"] != "not the same experiment"


def test_a_run_missing_from_b_is_a_regression_a_new_one_is_not(tmp_path):
    a = results(tmp_path / "a", 1)
    body = json.loads((a / SUMMARY_FILE).read_text())
    fewer = tmp_path / "fewer"
    fewer.mkdir()
    (fewer / SUMMARY_FILE).write_text(json.dumps({**body, "runs": body["runs"][:3]}))
    code, _, text = compare(a, fewer)
    assert code == EXIT_NOT_OK and "✗ only in A: 04-zmq-message_size=1KB (zmq)" in text
    code, _, text = compare(fewer, a)
    assert code == EXIT_OK and "! only in B: 04-zmq-message_size=1KB (zmq)" in text


def test_two_single_run_directories(tmp_path):
    """Of one system, compared whatever their run ids and parameters; of two systems,
    they have nothing in common."""
    a, b = results(tmp_path / "a", 1), results(tmp_path / "b", 2)
    code, out, _ = compare(a / "01-tcp-message_size=64", b / "02-tcp-message_size=1KB",
                           "--json")
    body = json.loads(out)
    assert [(p["run_a"], p["run_b"]) for p in body["pairs"]] == [
        ("01-tcp-message_size=64", "02-tcp-message_size=1KB")]
    assert body["pairs"][0]["notes"] == [
        "not the same experiment: message_size 64 B → 1 KB: figures shown, not judged"]
    assert code == EXIT_OK and not body["regression"]
    code, out, text = compare(a / "01-tcp-message_size=64", b / "03-zmq-message_size=64")
    assert code == EXIT_BAD_INPUT and out == ""
    assert "nothing in common to compare: no run of B matches one of A" in text
    assert "A holds tcp, B zmq" in text


def test_a_changed_parameter_is_not_the_same_experiment_never_improved(tmp_path):
    """1 KB → 4 KB for every run (so not used to match): B's latency is lower, but that
    is another experiment, not an improvement (nor a regression where it is higher)."""
    a = results(tmp_path / "a", 1)
    body = json.loads((a / SUMMARY_FILE).read_text())
    for run in body["runs"]:
        run["params"]["rate"] = 4000.0
        run["latency_us"] = {key: value / 2 if key != "count" else value
                             for key, value in run["latency_us"].items()}
    b = tmp_path / "b"
    b.mkdir()
    (b / SUMMARY_FILE).write_text(json.dumps(body))
    code, _, text = compare(a, b)
    assert code == EXIT_OK, text
    assert "improved" not in text and "regression," not in text.replace("no regression", "")
    assert "! not the same experiment: rate 2,000 msg/s → 4,000 msg/s: figures shown, not " \
        "judged" in " ".join(text.split())
    assert "4 run(s) compared, 0 regressed, 4 not the same experiment" in text
    code, out, _ = compare(a, b, "--json")
    verdicts = {f["verdict"] for p in json.loads(out)["pairs"] for f in p["figures"]}
    assert verdicts == {"not the same experiment"}


def test_an_hgrm_reads_as_the_run_distribution(tmp_path):
    values = latencies(1)
    write_hgrm(tmp_path / "latency.hgrm", values)
    tail = Tail.from_hgrm(tmp_path / "latency.hgrm")
    assert tail.count == COUNT and not tail.coarse
    ladder = figures(values)
    for key, share in (("p50", 0.5), ("p90", 0.1), ("p99", 0.01), ("p99.9", 0.001)):
        assert tail.value_at(share) == pytest.approx(ladder[key], rel=0.03), key
    assert Tail.from_hgrm(tmp_path / "missing.hgrm") is None


@pytest.mark.parametrize("make, message", [
    (lambda root: root / "nowhere", "no such directory"),
    (lambda root: _recorded_only(root), "sixnines report"),
    (lambda root: _empty(root), "not a results directory"),
])
def test_bad_input_is_exit_2_with_a_message(tmp_path, make, message):
    good = results(tmp_path / "good", 1)
    code, out, text = compare(good, make(tmp_path / "bad"))
    assert code == EXIT_BAD_INPUT and out == ""
    assert message in text and "Traceback" not in text


def _empty(root: Path) -> Path:
    root.mkdir()
    return root


def _recorded_only(root: Path) -> Path:
    (root / "01-tcp").mkdir(parents=True)
    (root / "01-tcp" / MANIFEST_FILE).write_text("{}")
    return root


def test_a_bad_threshold_is_bad_input(tmp_path):
    with pytest.raises(SystemExit) as exit_:
        compare(tmp_path, tmp_path, "--threshold", "-5")
    assert exit_.value.code == EXIT_BAD_INPUT


def test_a_new_warning_is_a_note_the_same_one_with_other_figures_is_not(tmp_path):
    saturated = "generator saturated: send lag p99 is {} µs (over 1,000 µs)"
    a = results(tmp_path / "a", 1, {"01-tcp-message_size=64": {
        "warnings": [saturated.format("4,020")]}})
    b = results(tmp_path / "b", 2, {
        "01-tcp-message_size=64": {"warnings": [saturated.format("9,757")]},
        "02-tcp-message_size=1KB": {"warnings": [saturated.format("2,000")]}})
    code, out, _ = compare(a, b, "--json")
    notes = {pair["run_b"]: pair["notes"] for pair in json.loads(out)["pairs"]}
    assert notes["01-tcp-message_size=64"] == []
    assert notes["02-tcp-message_size=1KB"] == [f"new warning: {saturated.format('2,000')}"]
    assert code == EXIT_OK


def saturation_results(directory: Path, seed: int, tail: float = 1.0) -> Path:
    """The four runs in throughput mode: saturation latency, its own .hgrm, no latency."""
    directory.mkdir(parents=True)
    summaries = []
    for index, (system, size, label) in enumerate(POINTS):
        run_id = f"{index + 1:02d}-{system}-message_size={label}"
        values = latencies(seed * 10 + index, tail=tail if index == 0 else 1.0)
        summary = run_summary(run_id, system, size, values, load="saturation",
                              latency_us={"count": 0},
                              saturation_latency_us=figures(values))
        summary["params"] |= {"rate": "max", "messages": COUNT}
        report = directory / run_id / "report"
        report.mkdir(parents=True)
        write_hgrm(report / "saturation_latency.hgrm", values)
        (report / SUMMARY_FILE).write_text(json.dumps(summary))
        summaries.append(summary)
    body = {"scenario": "synthetic", "runs": summaries}
    (directory / SUMMARY_FILE).write_text(json.dumps(body))
    return directory


def test_saturation_runs_are_compared_on_saturation_latency_only(tmp_path):
    a = saturation_results(tmp_path / "a", 1)
    code, out, _ = compare(a, saturation_results(tmp_path / "b", 2), "--json")
    pairs = json.loads(out)["pairs"]
    assert code == EXIT_OK and len(pairs) == 4
    assert {f["metric"] for f in pairs[0]["figures"]} == {
        "saturation_latency_us", "send_rate", "receive_rate"}
    code, _, text = compare(a, saturation_results(tmp_path / "c", 2, tail=2.0))
    assert code == EXIT_NOT_OK and "saturation latency p99" in text


def test_saturation_and_open_loop_runs_are_never_matched(tmp_path):
    """Nothing in common: said in one line, exit 2 (not a regression of every run)."""
    open_loop, flooded = results(tmp_path / "a", 1), saturation_results(tmp_path / "b", 1)
    run = "01-tcp-message_size=64"
    for a, b in ((open_loop, flooded), (open_loop / run, flooded / run)):
        code, out, text = compare(a, b, "--json")
        assert code == EXIT_BAD_INPUT and out == "" and len(text.splitlines()) == 1
        assert "nothing in common to compare: no run of B matches one of A" in text


# --- the repeats' measured spread as the run-to-run floor ----------------------------------


def spread(band_pct: float, repeats: int = 3) -> Spread:
    return Spread(repeats=repeats, min=100.0, median=100.0, max=100 * (1 + band_pct / 100),
                  band_pct=band_pct)


def test_the_repeats_band_replaces_the_threshold_as_the_floor():
    a = Figures.model_validate(figures(latencies(1, count=200_000)))
    slower = Figures.model_validate(figures(latencies(2, count=200_000, scale=1.15)))
    assert latency_figure(a, slower, "p50", 10.0).verdict == "regression"
    wide = latency_figure(a, slower, "p50", 10.0, spreads=(spread(20.0), spread(12.0)))
    assert (wide.verdict, wide.floor_from, wide.floor_pct) == ("same", "repeats", 20.0)
    assert wide.tolerance_pct >= 20.0
    # a steady machine measured: a change the fixed 10 % would let pass is found
    a_bit = Figures.model_validate(figures(latencies(2, count=200_000, scale=1.08)))
    assert latency_figure(a, a_bit, "p50", 10.0).verdict == "same"
    narrow = latency_figure(a, a_bit, "p50", 10.0, spreads=(spread(2.0), None))
    assert (narrow.verdict, narrow.floor_from, narrow.floor_pct) == ("regression", "repeats",
                                                                    2.0)
    one = latency_figure(a, a_bit, "p50", 10.0, spreads=(spread(2.0, repeats=1), None))
    assert one.floor_from == "threshold"  # one run has no spread


def test_results_with_repeats_are_compared_case_by_case_on_their_spread(tmp_path):
    runs, _ = two_systems(tmp_path / "a")
    write_results_summary(tmp_path / "a", "repeated", runs, [],
                          repeated_cases(tmp_path / "a", runs))
    code, out, text = compare(tmp_path / "a", tmp_path / "a", "--json")
    assert code == EXIT_OK, text
    pairs = json.loads(out)["pairs"]
    assert [pair["run_a"] for pair in pairs] == ["tcp-message_size=64", "zmq-message_size=64"]
    tcp = {(f["metric"], f["key"]): f for f in pairs[0]["figures"]}
    case = read_results_summary(tmp_path / "a" / SUMMARY_FILE).repeats[0]
    p99 = tcp[("latency_us", "p99")]
    assert (p99["floor_from"], p99["floor_pct"]) == ("repeats",
                                                     case.spread["latency_us"]["p99"].band_pct)
    assert tcp[("send_rate", "send_rate")]["floor_from"] == "repeats"
    code, _, text = compare(tmp_path / "a", tmp_path / "a")
    assert "run-to-run band the repeats measured" in " ".join(text.split())


def test_runs_of_different_durability_are_shown_not_judged(tmp_path):
    """Labels that differ make another experiment (its figures not judged, the JUnit checks
    skipped naming both); a run recorded without durability against one with it is a
    note; the same label on both sides says nothing."""
    def durable(label: str) -> dict:
        return {"durability": {"label": label, "asked": {"acks": label[5:].split(",")[0]}}}
    first, second = "01-tcp-message_size=64", "02-tcp-message_size=1KB"
    third = "03-zmq-message_size=64"
    a = results(tmp_path / "a", 1, {run: durable("acks=1, rf=1")
                                    for run in (first, second, third)})
    b = results(tmp_path / "b", 2, {first: durable("acks=all, rf=1"),
                                     third: durable("acks=1, rf=1")})
    junit = tmp_path / "compare.xml"
    code, out, _ = compare(a, b, "--json", "--junit", junit)
    pairs = {pair["run_b"]: pair for pair in json.loads(out)["pairs"]}
    assert code == EXIT_OK
    assert pairs[first]["differs"] == ["durability acks=1, rf=1 → acks=all, rf=1"]
    assert {figure["verdict"] for figure in pairs[first]["figures"]} == {
        "not the same experiment"}
    assert pairs[first]["notes"] == ["not the same experiment: durability acks=1, rf=1 → "
                                     "acks=all, rf=1: figures shown, not judged"]
    assert pairs[second]["same_experiment"] and pairs[second]["notes"] == [
        "durability unknown in B (recorded without it), acks=1, rf=1 in the other: whether "
        "they measured the same durability cannot be told"]
    assert pairs[third]["same_experiment"] and pairs[third]["notes"] == []
    assert "the runs' workloads or durability differ (durability acks=1, rf=1 → acks=all, " \
           "rf=1): shown, never judged" in junit.read_text()
    _, _, text = compare(a, b)
    assert "tcp (A acks=1, rf=1; B acks=all, rf=1)" in text
    assert "zmq (acks=1, rf=1)" in text
