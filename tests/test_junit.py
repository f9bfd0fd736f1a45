"""The JUnit writer (orchestrator/results/junit.py): every document it writes is valid
against the Ant JUnit schema CI tools validate against (tests/junit_schema/JUnit.xsd),
whatever the names and messages hold."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from xml.etree import ElementTree

import pytest
import xmlschema

from sixnines.formats.atomic import WriteFailure
from sixnines.orchestrator.results.junit import CaseOutcome, Check, junit_document, write_junit

SCHEMA = xmlschema.XMLSchema(Path(__file__).parent / "junit_schema" / "JUnit.xsd")
ESCAPES = "\x1b]0;owned\x07\x1b[31m\x00\ud800"


def schema_errors(document: bytes | str | Path) -> list[str]:
    """What makes `document` invalid against the JUnit schema, in words (none when valid)."""
    text = document.read_bytes() if isinstance(document, Path) else document
    return [f"{error.path}: {error.reason}" for error in SCHEMA.iter_errors(text.decode()
            if isinstance(text, bytes) else text)]


def junit_cases(path: Path) -> dict[str, list[tuple[str, str]]]:
    """The JUnit file's test cases by outcome ("passed", "failure", "skipped"),
    [(classname, name)], once it is valid against the schema."""
    assert schema_errors(path) == [], path.read_text()
    found: dict[str, list[tuple[str, str]]] = {"passed": [], "failure": [], "skipped": []}
    for case in ElementTree.parse(path).iter("testcase"):
        found[case[0].tag if len(case) else "passed"].append((case.get("classname"),
                                                               case.get("name")))
    return found


CHECKS = [
    Check("tcp message_size=64", "latency p50", "tcp.message_size=64", CaseOutcome.PASSED,
          "same"),
    Check("tcp message_size=64", "latency p99", "tcp.message_size=64", CaseOutcome.FAILED,
          "latency p99 regression: A 120.0 µs, B 250.0 µs, change +108.3%, tolerance 14%",
          "A: 120.0 µs\nB: 250.0 µs\nwhy: beyond the tolerance"),
    Check("tcp message_size=64", "latency max", "tcp.message_size=64", CaseOutcome.SKIPPED,
          "latency max not comparable: nothing lies above the max", "why: never judged"),
    Check("zmq", "receive_rate", "zmq", CaseOutcome.PASSED),
]


def test_passed_failed_and_skipped_checks_make_a_valid_document():
    document = junit_document(CHECKS, {"threshold_pct": "10"}, datetime(2026, 11, 27, 3))
    assert schema_errors(document) == []
    suites = ElementTree.fromstring(document).findall("testsuite")
    assert [(s.get("name"), s.get("id"), s.get("tests"), s.get("failures"), s.get("skipped"))
            for s in suites] == [("tcp message_size=64", "0", "3", "1", "1"),
                                 ("zmq", "1", "1", "0", "0")]
    assert suites[0].get("timestamp") == "2026-11-27T03:00:00"
    assert suites[1].find("properties/property").attrib == {"name": "threshold_pct",
                                                            "value": "10"}
    cases = {case.get("name"): case for case in suites[0].findall("testcase")}
    assert list(cases["latency p50"]) == []  # a pass has no place for a message
    failure = cases["latency p99"].find("failure")
    assert failure.get("message") == CHECKS[1].message and failure.get("type") == "sixnines"
    assert failure.text == "A: 120.0 µs\nB: 250.0 µs\nwhy: beyond the tolerance"
    skipped = cases["latency max"].find("skipped")
    assert skipped.get("message") == CHECKS[2].message and skipped.text == "why: never judged"
    assert cases["latency p99"].get("classname") == "tcp.message_size=64"


def test_no_checks_is_still_a_valid_document():
    assert schema_errors(junit_document([])) == []


def test_control_characters_from_results_files_are_written_escaped():
    """Names come from results files; XML 1.0 allows no control character, and a CI page
    is one more place that shows them."""
    hostile = Check(f"tcp{ESCAPES}", f"p99{ESCAPES}", f"tcp.{ESCAPES}", CaseOutcome.FAILED,
                    f"message{ESCAPES}\nforged", f"line one{ESCAPES}\nline two\r")
    document = junit_document([hostile])
    assert schema_errors(document) == []
    case = ElementTree.fromstring(document).find("testsuite/testcase")
    assert case.get("name") == "p99\\x1b]0;owned\\x07\\x1b[31m\\x00\\ud800"
    assert case.find("failure").get("message").endswith("\\nforged")
    assert case.find("failure").text == (
        "line one\\x1b]0;owned\\x07\\x1b[31m\\x00\\ud800\nline two\\r")


def test_a_check_needs_a_suite():
    with pytest.raises(ValueError, match="suite name"):
        Check(" ", "p99", "tcp", CaseOutcome.PASSED)


def test_the_file_is_written_whole_or_not_at_all(tmp_path):
    path = write_junit(tmp_path / "compare.xml", CHECKS)
    assert schema_errors(path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["compare.xml"]
    with pytest.raises(WriteFailure, match=f"cannot write {tmp_path / 'missing' / 'x.xml'}"):
        write_junit(tmp_path / "missing" / "x.xml", CHECKS)
    assert not (tmp_path / "missing").exists()


def test_the_schema_catches_what_ci_servers_reject():
    """The vendored schema is the strict one: a document that breaks it is caught (a
    failure without its type, a suite without its counts)."""
    document = junit_document(CHECKS).decode()
    assert schema_errors(document.replace(' type="sixnines"', ""))
    assert schema_errors(document.replace(' failures="1"', ""))
