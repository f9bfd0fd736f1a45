"""JUnit XML: what sixnines checked, in the file every CI server shows without a plugin.

Jenkins' `junit` step and GitLab's `artifacts:reports:junit` read the format of Apache
Ant's JUnit task, whose schema (tests/junit_schema/JUnit.xsd) is the one CI tools
validate against; this writes to it, and its strictest parts too: a `<testsuites>` without
attributes, each `<testsuite>` with its package, id, timestamp (local, no zone), hostname,
counts and time, an empty `<properties>` unless given some, then its test cases and an
empty `<system-out>` and `<system-err>`; each `<testcase>` with name, classname and time,
and at most one `<failure message type>` or `<skipped message>`, whose text is the
details. A passed check's message has no place in the format and is not written.

A check is neutral (`Check`): any command that judges figures (`compare`, a history of
nights) lists what it checked and hands the list to `write_junit`. Jenkins shows a
classname `a.b.C` as package `a.b`, class `C`; callers choose their classnames for that.
Every text passes through orchestrator.terminal: names come from results files, and a
control character (not allowed in XML 1.0) would make a file no CI reads.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from xml.etree import ElementTree

from sixnines.formats.atomic import write_atomically
from sixnines.orchestrator.terminal import printable, printable_lines

#: The kind of every failure (the schema requires one; CI servers show the message).
FAILURE_TYPE = "sixnines"


class CaseOutcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"  # nothing to judge (a figure not comparable): shown, never failed


@dataclass(frozen=True)
class Check:
    """One figure (or fact) checked: a test case of the suite it belongs to."""
    suite: str  # the test suite, e.g. "tcp message_size=1024"
    name: str  # the test case, e.g. "latency p99"
    classname: str  # what CI servers group by, e.g. "tcp.message_size=1024"
    outcome: CaseOutcome
    message: str = ""  # one line: the evidence (A, B, change, tolerance, why)
    details: str = ""  # the evidence in full, a line each

    def __post_init__(self) -> None:
        if not self.suite.strip():
            raise ValueError("a check needs a suite name")


def classname(*parts: str | None) -> str:
    """A classname of `parts` (system, case, …) joined by dots, each dot inside a part
    written `_`, so a name like "p99.9" or a version cannot split a part in two: Jenkins
    shows the last part as the class, the others as its package."""
    return ".".join(str(part).replace(".", "_") for part in parts if part)


def junit_document(checks: Sequence[Check], properties: Mapping[str, str] | None = None,
                   timestamp: datetime | None = None) -> bytes:
    """The JUnit XML of `checks`: one test suite per suite name, in the order they first
    appear, each with `properties` (what the checks were run with)."""
    stamp = (timestamp or datetime.now()).strftime("%Y-%m-%dT%H:%M:%S")
    hostname = printable(socket.gethostname()) or "localhost"
    root = ElementTree.Element("testsuites")
    suites: dict[str, list[Check]] = {}
    for check in checks:
        suites.setdefault(check.suite, []).append(check)
    for index, (name, members) in enumerate(suites.items()):
        counts = {outcome: sum(check.outcome == outcome for check in members)
                  for outcome in CaseOutcome}
        suite = ElementTree.SubElement(root, "testsuite", {
            "name": printable(name), "package": "sixnines", "id": str(index),
            "timestamp": stamp, "hostname": hostname, "tests": str(len(members)),
            "failures": str(counts[CaseOutcome.FAILED]), "errors": "0",
            "skipped": str(counts[CaseOutcome.SKIPPED]), "time": "0"})
        listed = ElementTree.SubElement(suite, "properties")
        for key, value in (properties or {}).items():
            ElementTree.SubElement(listed, "property",
                                   {"name": printable(key), "value": printable(value)})
        for check in members:
            _testcase(suite, check)
        ElementTree.SubElement(suite, "system-out")
        ElementTree.SubElement(suite, "system-err")
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)


def _testcase(suite: ElementTree.Element, check: Check) -> None:
    case = ElementTree.SubElement(suite, "testcase", {
        "name": printable(check.name), "classname": printable(check.classname), "time": "0"})
    if check.outcome == CaseOutcome.PASSED:
        return
    attributes = {"message": printable(check.message)}
    if check.outcome == CaseOutcome.FAILED:
        attributes["type"] = FAILURE_TYPE
    result = ElementTree.SubElement(case, "failure" if check.outcome == CaseOutcome.FAILED
                                    else "skipped", attributes)
    result.text = printable_lines(check.details)


def write_junit(path: Path, checks: Sequence[Check],
                properties: Mapping[str, str] | None = None,
                timestamp: datetime | None = None) -> Path:
    """`junit_document` written to `path` whole (formats.atomic), or WriteFailure."""
    return write_atomically(path, junit_document(checks, properties, timestamp))
