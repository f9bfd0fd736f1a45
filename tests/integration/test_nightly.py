"""deploy/nightly run for real: nightly.sh against SSH hosts of the test bed (deploy/testbed)
with a tiny scenario, twice (the second night prunes the first's raw chunks); a host that
does not answer stops the night before it runs (exit 3), a configuration without a
scenario is bad input (exit 2); no value of the configuration but its paths is printed;
and the systemd units pass `systemd-analyze verify`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.integration.testbed import Testbed, needs_bed, testbed
from tests.test_junit import junit_cases

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
NIGHTLY = ROOT / "deploy" / "nightly"
SIXNINES = Path(sys.executable).parent / "sixnines"
SECRET = "s3cr3t-never-printed"

@pytest.fixture(scope="module")
def bed() -> Testbed:
    with testbed(2) as made:
        yield made


def configure(tmp_path: Path, bed: Testbed, **inventory_changes: dict) -> Path:
    """An inventory of the bed's hosts using this environment's sixnines (the hosts share
    this machine's files), a tiny scenario over it, and the env file naming both."""
    hosts = yaml.safe_load(bed.inventory.read_text())["hosts"]
    for host in hosts:
        host.update({"python": sys.executable, **inventory_changes.get(host["name"], {})})
    inventory = tmp_path / "hosts.yaml"
    inventory.write_text(yaml.safe_dump({"hosts": hosts}))
    scenario = tmp_path / "nightly.yaml"
    scenario.write_text(textwrap.dedent(f"""\
        name: nightly
        systems: [{{name: tcp, driver: tcp}}]
        workload: {{message_size: 64, rate: 500, duration: 1s, warmup: 0s}}
        inventory: {inventory}
        placement: {{broker: h1, agents: [h1, h2]}}
        """))
    env = tmp_path / "nightly.env"
    env.write_text(textwrap.dedent(f"""\
        # as deploy/nightly/nightly.env
        SIXNINES={SIXNINES}
        NIGHTLY_SCENARIO="{scenario}"
        NIGHTLY_ROOT={tmp_path / "root"}
        NIGHTLY_KEEP_RAW=1
        SOME_TOKEN={SECRET}
        """))
    return env


def nightly(env: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(NIGHTLY / "nightly.sh"), str(env)], capture_output=True,
                          text=True, timeout=500, stdin=subprocess.DEVNULL)


def nights(root: Path) -> list[Path]:
    return sorted(path.parent for path in root.glob("nightly/*/summary.json"))


def chunks(night: Path) -> list[Path]:
    return sorted(night.glob("*/agents/*/messages-*.parquet"))


@needs_bed
def test_two_nights_then_the_first_is_pruned(tmp_path: Path, bed: Testbed) -> None:
    env = configure(tmp_path, bed)
    first = nightly(env)
    output = first.stdout + first.stderr
    assert first.returncode == 0, output
    assert "h1 ok;" in first.stdout and "h2 ok;" in first.stdout
    (night,) = nights(tmp_path / "root")
    assert '"status": "ok"' in (night / "summary.json").read_text()
    assert chunks(night)
    assert SECRET not in output
    second = nightly(env)
    assert second.returncode == 0, second.stdout + second.stderr
    older, newer = nights(tmp_path / "root")
    assert older == night and not chunks(older) and chunks(newer)
    assert f"{older}: " in second.stdout and "reclaimed" in second.stdout
    assert SECRET not in second.stdout + second.stderr
    # the history's JUnit and page, where nightly.env puts them by default: two nights
    # are too few to judge, each series skipped
    assert junit_cases(tmp_path / "root" / "junit.xml")["skipped"]
    assert (tmp_path / "root" / "history.html").stat().st_size > 0


@needs_bed
def test_a_host_not_ready_stops_the_night_before_it_runs(tmp_path: Path, bed: Testbed) -> None:
    subnet = bed.hosts[0].address.rsplit(".", 1)[0]
    done = nightly(configure(tmp_path, bed, h2={"address": f"{subnet}.250"}))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "h2 NOT OK: unreachable" in done.stdout
    assert "a host is not ready (above); nothing was run" in done.stderr
    assert not list((tmp_path / "root").glob("nightly/*"))


def test_a_configuration_without_a_scenario_is_bad_input(tmp_path: Path) -> None:
    env = tmp_path / "nightly.env"
    env.write_text(f"SIXNINES={SIXNINES}\nNIGHTLY_ROOT={tmp_path / 'root'}\n")
    done = nightly(env)
    assert done.returncode == 2, done.stderr
    assert f"{env}: NIGHTLY_SCENARIO is not set" in done.stderr
    env.write_text("echo hello from the env file\n")  # data, never run
    done = nightly(env)
    assert done.returncode == 2 and f"{env}:1: not a KEY=VALUE line" in done.stderr
    assert "hello" not in done.stdout


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_the_units_verify(tmp_path: Path) -> None:
    """The service and timer as shipped, with the install paths they name pointed at this
    checkout (verify requires ExecStart's program to exist)."""
    for unit in ("sixnines-nightly.service", "sixnines-nightly.timer"):
        text = (NIGHTLY / unit).read_text()
        (tmp_path / unit).write_text(
            text.replace("/opt/sixnines/deploy", str(ROOT / "deploy"))
            .replace("/etc/sixnines/nightly.env", str(NIGHTLY / "nightly.env")))
    done = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "sixnines-nightly.timer"),
                           str(tmp_path / "sixnines-nightly.service")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sixnines-nightly" not in done.stderr, done.stderr
