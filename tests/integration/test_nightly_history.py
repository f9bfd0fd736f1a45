"""Nights end to end, as a nightly job makes them: one small scenario run six times into one
root with the real CLI — its broker (the builtin tcp relay) on a test-bed SSH host, the
agents here — the last three nights with that host's link capped by the scenario's
inventory (`link: {rate: …}`, tc tbf: a slower network, a real cause of latency, here
about a thousand times the usual p50), then `sixnines history ROOT --html --junit`: the
change is found at night 4 and nowhere else (exit 1), the page marks it in Chromium, and
the JUnit file is valid against the Ant schema with that failure."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml

from tests.faults.support import line_with, sixnines
from tests.integration.chromium import CHROMIUM, history_page_loaded
from tests.integration.testbed import needs_bed, testbed
from tests.test_junit import junit_cases

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(900),
    pytest.mark.skipif(CHROMIUM is None, reason="needs headless Chromium: apt-get install "
                                                "chromium (deploy/setup.sh --test)"),
]

NORMAL, SLOWED = 3, 3  # nights
#: ~3.4 Mbit/s of 1 KiB messages through the relay; its host's egress capped below that,
#: a queue grows for the whole run (drained after it: every message arrives).
WORKLOAD = "{message_size: 1024, rate: 400, duration: 2s, warmup: 0s, drain: 5s}"
CAP = "2mbit"


@pytest.fixture(scope="module")
def nights(tmp_path_factory) -> tuple[Path, list[Path]]:
    """The root and its six nights, oldest first."""
    work = tmp_path_factory.mktemp("nightly-history")
    scenario = work / "nightly.yaml"
    with testbed(1) as bed:
        hosts = yaml.safe_load(bed.inventory.read_text())["hosts"]
        scenario.write_text(textwrap.dedent(f"""\
            name: nightly
            systems: [{{name: tcp, driver: tcp}}]
            workload: {WORKLOAD}
            inventory: {work / "hosts.yaml"}
            placement: {{broker: h1}}
            output: {work / "runs"}
            """))
        recorded = []
        for number in range(NORMAL + SLOWED):
            link = {"link": {"rate": CAP}} if number >= NORMAL else {}
            (work / "hosts.yaml").write_text(yaml.safe_dump(  # this sixnines: no bundle
                {"hosts": [{**hosts[0], "python": sys.executable, **link}]}))
            done = sixnines("run", scenario, cwd=work)
            assert done.returncode == 0, done.stderr
            recorded.append(Path(done.stdout.strip().splitlines()[-1]))
    assert len({night.name for night in recorded}) == NORMAL + SLOWED
    return work / "runs", recorded


@needs_bed
def test_history_finds_the_slowed_nights_and_nothing_else(nights, tmp_path: Path):
    root, recorded = nights
    fourth = recorded[NORMAL].name
    page, junit = tmp_path / "history.html", tmp_path / "junit.xml"
    done = sixnines("history", root, "--html", page, "--junit", junit)
    assert done.returncode == 1, done.stderr
    since = done.stderr.split("since the last night")[1].split("in the last 30 days")[0]
    assert "p50 +" in line_with(since, "✗", "nightly: tcp")

    series = json.loads(sixnines("history", root, "--json").stdout)["series"]
    found = {f"{one['metric']} {one['figure']}": change for one in series
             for change in one["changes"]}
    assert {(change["index"], change["direction"]) for change in found.values()} == \
        {(NORMAL, "regression")}  # night 4, for the worse, and nothing else
    assert found["latency p50"]["after"] > 10 * found["latency p50"]["before"]

    cases = junit_cases(junit)  # valid against the schema
    assert ("nightly.tcp", "latency p50") in cases["failure"]
    assert {name for _, name in cases["failure"]} == set(found)
    failure = next(case for case in ElementTree.parse(junit).iter("testcase")
                   if case.get("name") == "latency p50")[0]
    assert f"changed for the worse from night {fourth} on" in failure.get("message")
    assert re.search(r"after \(\+[\d,.]+%\), beyond the nights' sampling bands",
                     failure.get("message"))

    with history_page_loaded(page, tmp_path) as devtools:
        marks = devtools.evaluate("""Array.from(window.historyCharts[0].charts[0].over
            .querySelectorAll('.change'), m => ({night: m.dataset.night, text: m.textContent,
                                               regression: m.classList.contains('regression')}))""")
        assert devtools.errors() == []
    assert any(mark["text"].startswith("p50 +") for mark in marks)
    assert {(mark["night"], mark["regression"]) for mark in marks} == {(fourth, True)}
