"""`sixnines hosts check` against SSH hosts of the test bed (deploy/testbed): every host
good; then a host whose work directory is on a small disk, one that does not answer, one
whose key is not in known_hosts, and a broker host lacking its recipe's program, each named
on its own line with exit 1; a broken inventory refused with its file and line (exit 2)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.faults.support import line_with, refused, sixnines
from tests.integration.testbed import Testbed, testbed

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(180),
    pytest.mark.skipif(os.geteuid() != 0, reason="the test bed needs root"),
    pytest.mark.skipif(shutil.which("sshd", path="/usr/sbin:/sbin:/usr/bin") is None,
                       reason="needs openssh-server (deploy/setup.sh --test)"),
]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bed() -> Testbed:
    with testbed(3) as made:
        yield made


def inventory(tmp_path: Path, bed: Testbed, **changes: dict) -> Path:
    """The bed's inventory with some hosts' fields changed ({"h2": {"workdir": ...}})."""
    hosts = yaml.safe_load(bed.inventory.read_text())["hosts"]
    for host in hosts:
        host.update(changes.get(host["name"], {}))
    path = tmp_path / "hosts.yaml"
    path.write_text(yaml.safe_dump({"hosts": hosts}))
    return path


@contextlib.contextmanager
def small_disk_on(bed: Testbed, host: str, path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs at `path` as host `host` sees it: mounted inside its sshd's mount
    namespace (`ip netns exec` gave it one of its own, which mounts made here do not
    reach)."""
    sshd = (bed.dir / host / "sshd.pid").read_text().strip()
    enter = ["nsenter", "--mount", "--target", sshd]
    path.mkdir(parents=True)
    subprocess.run([*enter, "mount", "-t", "tmpfs", "-o", "size=3M", "tmpfs", str(path)],
                   check=True, capture_output=True)
    try:
        yield path
    finally:
        subprocess.run([*enter, "umount", "--lazy", str(path)], check=False)


def host_lines(stdout: str) -> dict[str, str]:
    return {line.split()[0]: line for line in stdout.splitlines()}


def test_every_host_good(tmp_path: Path, bed: Testbed) -> None:
    done = sixnines("hosts", "check", bed.inventory)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = host_lines(done.stdout)
    assert sorted(lines) == ["h1", "h2", "h3"]
    for host in bed.hosts:
        line = lines[host.name]
        assert line.startswith(f"{host.name} ok;"), line
        for fact in (f"root@{host.address}:22", "Python 3.", "free in /var/tmp/sixnines",
                     "cores", "clock ", f"port(s) free on {host.address}"):
            assert fact in line, line
    assert "3 host(s) ok" in done.stderr


def test_each_bad_host_is_named(tmp_path: Path, bed: Testbed) -> None:
    subnet = bed.hosts[0].address.rsplit(".", 1)[0]
    with small_disk_on(bed, "h2", tmp_path / "small") as small:
        path = inventory(tmp_path, bed, h2={"workdir": str(small / "sixnines")},
                         h3={"address": f"{subnet}.250"})
        done = sixnines("hosts", "check", path)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = host_lines(done.stdout)
    assert lines["h1"].startswith("h1 ok;")
    assert lines["h2"].startswith("h2 NOT OK: only "), lines["h2"]
    assert f"free in {small / 'sixnines'}, a run needs about 1.0 GB" in lines["h2"]
    assert lines["h3"].startswith(f"h3 NOT OK: unreachable: host h3 (root@{subnet}.250:22)")
    line_with(done.stderr, "2 of 3 host(s) not ok: h2 (disk), h3 (unreachable)")
    assert "Traceback" not in done.stderr


def test_an_unknown_host_key_is_refused_not_accepted(tmp_path: Path, bed: Testbed) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("".join(line for line in bed.hosts[0].known_hosts.read_text()
                             .splitlines(keepends=True) if not line.startswith(
                                 bed.hosts[0].address + " ")))
    done = sixnines("hosts", "check", inventory(tmp_path, bed, h1={"known_hosts": str(known)}))
    assert done.returncode == 1, done.stdout + done.stderr
    line = host_lines(done.stdout)["h1"]
    assert "NOT OK: unreachable" in line and "its host key is not in" in line, line
    assert known.read_text().count(bed.hosts[0].address) == 0  # nothing was added


def test_a_broker_program_missing_on_the_broker_host(tmp_path: Path, bed: Testbed) -> None:
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    redis = (ROOT / "deploy" / "recipes" / "redis.yaml").read_text()
    (recipes / "nowhere.yaml").write_text(
        redis.replace("name: redis", "name: nowhere")
        .replace("command: [redis-server,", "command: [sixnines-no-such-server,"))
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(textwrap.dedent(f"""\
        name: checked
        systems: [{{name: r, driver: redis, broker: {{recipe: nowhere}}}}]
        workload: {{message_size: 64, rate: 100, duration: 1s, warmup: 0s}}
        inventory: {bed.inventory}
        placement: {{broker: h1, agents: [h2, h3]}}
        """))
    done = sixnines("hosts", "check", scenario, "--recipes", recipes)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = host_lines(done.stdout)
    assert lines["h1"].startswith("h1 NOT OK: sixnines-no-such-server not installed"), lines
    assert "redis-server" not in lines["h1"]
    assert lines["h2"].startswith("h2 ok;") and lines["h3"].startswith("h3 ok;")
    line_with(done.stderr, "1 of 3 host(s) not ok: h1 (programs)")


def test_a_bad_inventory_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text("hosts:\n  - {name: h1, address: 10.0.0.1}\n"
                    "  - {name: h2, address: b, prot: 22}\n")
    line = refused(sixnines("hosts", "check", path))
    assert line == f"{path}:3: hosts[1].prot: unknown field (did you mean 'port'?)"
    path.write_text("hosts:\n  - {name: h1, address: 10.0.0.1}\n  - {name: h1, address: b}\n")
    assert refused(sixnines("hosts", "check", path)) == (
        f"{path}:3: hosts[1].name: host name 'h1' is given twice")
    path.write_text("hosts: []\n")
    assert "names no hosts" in refused(sixnines("hosts", "check", path))


def test_a_python_that_cannot_run_is_named(tmp_path: Path, bed: Testbed) -> None:
    done = sixnines("hosts", "check", inventory(tmp_path, bed,
                                                h3={"python": "/nonexistent/bin/python"}))
    assert done.returncode == 1, done.stdout + done.stderr
    line = host_lines(done.stdout)["h3"]
    assert line.startswith("h3 NOT OK: host h3 (") and \
        "cannot run /nonexistent/bin/python there (exit 127)" in line, line
    line_with(done.stderr, "1 of 3 host(s) not ok: h3 (python)")
