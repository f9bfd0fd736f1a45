"""`sixnines compare --junit FILE` (orchestrator/results/compare_checks.py) on synthetic
results (tests/test_compare.py): a test case per system × case × figure checked, valid
against the JUnit schema, regressions failed with their evidence, figures not comparable
skipped with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

from sixnines.formats.layout import SUMMARY_FILE
from sixnines.orchestrator.cli import EXIT_BROKEN, EXIT_NOT_OK, EXIT_OK
from sixnines.orchestrator.results.store import FIGURE_KEYS
from tests.test_compare import compare, results
from tests.test_junit import schema_errors

CHECKED = [*(f"latency {key}" for key in FIGURE_KEYS), "send_rate", "receive_rate", "status",
           "lost", "unknown", "duplicated"]


def cases(path: Path) -> dict[tuple[str, str], ElementTree.Element]:
    """The file's test cases by (classname, name), once it is known to be valid."""
    assert schema_errors(path) == []
    return {(case.get("classname"), case.get("name")): case
            for case in ElementTree.parse(path).iter("testcase")}


def outcome(case: ElementTree.Element) -> str:
    return case[0].tag if len(case) else "passed"


def test_every_system_case_and_figure_is_a_test_case(tmp_path):
    a, b = results(tmp_path / "a", 1), results(tmp_path / "b", 2)
    code, _, _ = compare(a, b, "--junit", tmp_path / "compare.xml")
    assert code == EXIT_OK
    found = cases(tmp_path / "compare.xml")
    classnames = ["tcp.message_size=64", "tcp.message_size=1024", "zmq.message_size=64",
                  "zmq.message_size=1024"]
    assert sorted(found) == sorted([("compare", "judged results usable"),
                                    *((c, name) for c in classnames for name in CHECKED)])
    assert {outcome(case) for case in found.values()} == {"passed", "skipped"}
    skipped = found[("tcp.message_size=64", "latency p99.99")].find("skipped")
    assert "fewer than 10 samples above p99.99 in A or B (a run needs 100,000)" in \
        skipped.get("message")
    assert "nothing lies above the max" in \
        found[("tcp.message_size=64", "latency max")].find("skipped").get("message")
    suites = ElementTree.parse(tmp_path / "compare.xml").findall("testsuite")
    assert [suite.get("name") for suite in suites] == [
        "compare", "tcp message_size=64", "tcp message_size=1024", "zmq message_size=64",
        "zmq message_size=1024"]


def test_a_regression_fails_its_case_with_the_evidence(tmp_path):
    a = results(tmp_path / "a", 1)
    b = results(tmp_path / "b", 2, {"02-tcp-message_size=1KB": {"status": "partial",
                                                                  "lost": 12}}, tail=2.0)
    code, out, _ = compare(a, b, "--json", "--junit", tmp_path / "compare.xml")
    assert code == EXIT_NOT_OK
    pair = json.loads(out)["pairs"][0]
    p99 = next(figure for figure in pair["figures"] if figure["key"] == "p99")
    found = cases(tmp_path / "compare.xml")
    failure = found[("tcp.message_size=64", "latency p99")].find("failure")
    assert failure.get("message") == (
        f"latency p99 regression: A {p99['a']:,.1f} µs, B {p99['b']:,.1f} µs, change "
        f"{p99['change_pct']:+.1f}%, tolerance {p99['tolerance_pct']:.0f}%: B above A by "
        "more than the tolerance (A's and B's sampling bands in quadrature, at least 10%) "
        "and by more than 5 µs")
    assert f"\nA: {p99['a']:,.1f} µs, run 01-tcp-message_size=64 (ok) of {a}\n" in failure.text
    assert f"\nB: {p99['b']:,.1f} µs, run 01-tcp-message_size=64 (ok) of {b}\n" in failure.text
    assert failure.text.endswith("\nwhy: B above A by more than the tolerance (A's and B's "
                                 "sampling bands in quadrature, at least 10%) and by more "
                                 "than 5 µs")
    status = found[("tcp.message_size=1024", "status")].find("failure")
    assert status.get("message") == "status ok → partial"
    assert found[("tcp.message_size=1024", "lost")].find("failure").get("message") == \
        "lost 0 → 12"
    assert outcome(found[("tcp.message_size=1024", "duplicated")]) == "passed"
    assert outcome(found[("compare", "judged results usable")]) == "passed"


def test_a_run_missing_from_b_and_a_broken_b_fail_cases_of_their_own(tmp_path):
    a = results(tmp_path / "a", 1)
    body = json.loads((a / SUMMARY_FILE).read_text())
    body["runs"][0]["status"] = "corrupt"
    b = tmp_path / "b"
    b.mkdir()
    (b / SUMMARY_FILE).write_text(json.dumps({**body, "runs": body["runs"][:3]}))
    code, _, _ = compare(a, b, "--junit", tmp_path / "compare.xml")
    assert code == EXIT_BROKEN
    found = cases(tmp_path / "compare.xml")
    assert found[("compare", "judged results usable")].find("failure").get("message") == \
        f"{b}: 1 of 3 run(s) failed or corrupt: 01-tcp-message_size=64 (corrupt)"
    missing = found[("compare", "zmq 04-zmq-message_size=1KB present in B")].find("failure")
    assert missing.get("message") == ("run 04-zmq-message_size=1KB (zmq) of A has no match "
                                      "in B: coverage lost")


def test_dots_in_a_case_cannot_split_jenkins_package_and_class(tmp_path):
    a = results(tmp_path / "a", 1)
    body = json.loads((a / SUMMARY_FILE).read_text())
    for index, run in enumerate(body["runs"]):
        run["params"]["rate"] = 1000.5 + index
    (a / SUMMARY_FILE).write_text(json.dumps(body))
    compare(a, a, "--junit", tmp_path / "compare.xml")
    assert ("tcp.message_size=64 rate=1000_5", "latency p50") in cases(tmp_path / "compare.xml")
