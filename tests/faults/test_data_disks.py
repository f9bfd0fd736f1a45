"""Disk faults on a broker's own data disk (`data_disk`), with real brokers writing to it
and the real CLI: Redis with its append-only file synced on every write, and NATS
JetStream on file storage. Answers known by construction:

- a disk stalled for 1.5 s holds the broker's writes, and with them its answers: the
  messages due in the window wait for the thaw, nothing is lost, nothing JetStream
  acknowledged goes missing;
- a full disk is what the broker makes of it, recorded: Redis exits (it cannot keep its
  append-only file), the run is partial; JetStream refuses to store, its log says why,
  and what it did not store is counted as lost;
- the disk is thawed, emptied, unmounted and removed after every end: the run's, a
  SIGTERM, and a controller SIGKILLed mid-stall (its holder alive, or killed first);
- a broker on an SSH host (the test bed) gets its disk, stalled and released, there."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sixnines.formats.layout import BROKER_DIR, BROKER_DISK, BROKER_LOG
from sixnines.orchestrator.launchers.data_disk import FILLER, lacking
from tests.faults.processes import Sixnines, command_line, still_alive_after
from tests.integration.support import missing
from tests.integration.testbed import needs_bed, testbed

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(bool(lacking()), reason=f"a data disk needs {', '.join(lacking())}"),
]

RECIPES = Path(__file__).resolve().parents[2] / "deploy" / "recipes"
NS = 1_000_000_000
STALL_AT_S, STALL_S = 1.0, 1.5
BOUND_S = 10.0  # the guard's grace (4 s) and its release, after the controller's death
NO_REDIS = pytest.mark.skipif(missing("redis-server"), reason="redis-server not installed "
                              "(deploy/setup.sh --test installs it)")
NO_NATS = pytest.mark.skipif(missing("nats-server"), reason="nats-server not installed "
                             "(deploy/setup.sh --test installs it)")
#: Redis syncing its append-only file on every write (redis-aof, made from the shipped
#: recipe in the test's own recipe directory): each XADD waits on the disk.
REDIS = ("{name: sut, driver: redis, broker: {recipe: redis-aof, data_disk: 64MB}, "
         "options: {mode: streams}, reconnect: 1s}")
JETSTREAM = ("{name: sut, driver: nats, broker: {recipe: nats, data_disk: 64MB}, "
             "options: {mode: jetstream, storage: file, max_bytes: 8388608}, reconnect: 1s}")


def scenario(tmp_path: Path, system: str, fault: str, duration: str = "4s",
             more: str = "") -> Path:
    recipes = tmp_path / "recipes"
    recipes.mkdir(exist_ok=True)
    shipped = (RECIPES / "redis.yaml").read_text()
    (recipes / "redis-aof.yaml").write_text(
        shipped.replace("name: redis\n", "name: redis-aof\n", 1).replace(
            '--appendonly, "no", --dir', '--appendonly, "yes", --appendfsync, always, --dir',
            1))
    path = tmp_path / "s.yaml"
    path.write_text(f"""
name: disk
systems: [{system}]
workload: {{message_size: 64, rate: 500, duration: {duration}, warmup: 0.5s, drain: 3s}}
{more}
faults:
  - {fault}
""")
    return path


def controller(tmp_path: Path, path: Path, *options: str) -> Sixnines:
    return Sixnines("run", str(path), "--output", "out", *options, cwd=tmp_path,
                    env={"SIXNINES_RECIPE_PATH": str(tmp_path / "recipes")})


def ran(tmp_path: Path, system: str, fault: str, more: str = ""
        ) -> tuple[int, str, Path, dict, dict]:
    """`sixnines run` to its end: exit code, console, run directory, manifest, summary."""
    path = scenario(tmp_path, system, fault, more=more)
    code, out, err = controller(tmp_path, path).finish(600)
    assert "Traceback" not in err, err
    results = tmp_path / out.strip().splitlines()[-1]
    run_dir = next(results.glob("01-*"))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    summary = json.loads((results / "summary.json").read_text())["runs"][0]
    return code, err, run_dir, manifest, summary


def measured(manifest: dict, ns: int) -> float:
    return (ns - manifest["started_at_ns"] - manifest["workload"]["warmup_ns"]) / NS


def loop_devices_of(image: Path) -> list[str]:
    return [backing.parent.parent.name
            for backing in Path("/sys/block").glob("loop*/loop/backing_file")
            if backing.read_text().strip().removesuffix(" (deleted)") == str(image.resolve())]


def released(run_dir: Path) -> None:
    """The data disk thawed (no loop device left holding it), unmounted and removed."""
    image = run_dir / BROKER_DISK
    assert not os.path.ismount(run_dir / BROKER_DIR)
    assert loop_devices_of(image) == []
    assert not image.exists()


def stalled_as_planned(manifest: dict, summary: dict) -> dict:
    """The stall's record and figures: done on time, its window's messages all delivered,
    the longest of them held about as long as the disk was frozen."""
    [stall] = manifest["faults"]
    assert (stall["outcome"], stall["tool"]) == ("done", "FIFREEZE (fsfreeze)"), stall
    assert STALL_AT_S <= measured(manifest, stall["issued_ns"]) < STALL_AT_S + 0.5
    frozen_ns = stall["undone_ns"] - stall["effective_ns"]
    assert frozen_ns == pytest.approx(STALL_S * NS, abs=0.5 * NS)
    [figures] = summary["faults"]
    print(f"\nfrozen {frozen_ns / NS:.2f} s, max in window "
          f"{figures['max_in_window_us'] / 1e6:.2f} s")
    assert figures["max_in_window_us"] * 1000 >= 0.8 * frozen_ns
    window = figures["delivery"]
    assert window["sent"] == window["delivered"] > 0
    assert window["lost"] == window["unknown"] == 0
    assert summary["lost"] == summary["unknown"] == 0
    return figures


@NO_REDIS
def test_redis_stalled_on_its_disk_answers_late_and_loses_nothing(tmp_path):
    fault = f"{{at: {STALL_AT_S}s, action: disk-stall, target: broker, for: {STALL_S}s}}"
    code, _, run_dir, manifest, summary = ran(tmp_path, REDIS, fault)
    assert code == 0 and manifest["status"] == "ok", manifest["problems"]
    stalled_as_planned(manifest, summary)
    assert manifest["broker"]["data_disk"]["bytes"] == 64 * 1024**2
    released(run_dir)
    assert not (run_dir / BROKER_DIR).exists()  # an ok run's broker data goes, as always


@NO_NATS
def test_jetstream_stalled_on_its_disk_loses_no_acknowledged_message(tmp_path):
    fault = f"{{at: {STALL_AT_S}s, action: disk-stall, target: broker, for: {STALL_S}s}}"
    code, _, run_dir, manifest, summary = ran(tmp_path, JETSTREAM, fault)
    assert code == 0 and manifest["status"] == "ok", manifest["problems"]
    figures = stalled_as_planned(manifest, summary)
    [producer] = [agent for agent in manifest["agents"] if agent["role"] == "producer"]
    assert sum(run["count"] for run in producer["acknowledged"]) >= 0.9 * producer["sent"]
    assert summary["lost_acknowledged"] == figures["delivery"]["lost_acknowledged"] == 0
    released(run_dir)


@NO_REDIS
def test_redis_on_a_full_disk_stops_and_the_run_says_so(tmp_path):
    code, err, run_dir, manifest, summary = ran(
        tmp_path, REDIS, "{at: 1s, action: disk-full, target: broker, for: 1s}")
    [full] = manifest["faults"]
    assert (full["outcome"], full["tool"]) == ("done", "fallocate"), full
    assert full["undone_ns"] - full["effective_ns"] == pytest.approx(NS, abs=0.5 * NS)
    # Redis cannot keep its append-only file, and exits (it says so on its standard
    # output, which the run does not keep)
    assert code == 1 and manifest["status"] == "partial"
    assert "sut: the broker exited (code 1) during the run" in manifest["problems"]
    assert "the broker exited" in err
    assert summary["delivered"] + summary["lost"] + summary["unknown"] == summary["sent"]
    released(run_dir)
    kept = run_dir / BROKER_DIR  # a partial run keeps the broker's data, without the filler
    assert (kept / "appendonlydir").is_dir() and not (kept / FILLER).exists()


@NO_NATS
def test_jetstream_on_a_full_disk_refuses_to_store_and_the_loss_is_counted(tmp_path):
    code, _, run_dir, manifest, summary = ran(
        tmp_path, JETSTREAM, "{at: 1s, action: disk-full, target: broker, for: 1s}")
    [full] = manifest["faults"]
    assert full["outcome"] == "done", full
    log = (run_dir / BROKER_LOG).read_text()
    assert "no space left on device" in log
    print(f"\nexit {code}, {manifest['status']}: sent {summary['sent']}, lost "
          f"{summary['lost']}, acknowledged and lost {summary['lost_acknowledged']}")
    assert summary["delivered"] + summary["lost"] + summary["unknown"] == summary["sent"]
    assert summary["faults"][0]["delivery"]["lost"] > 0  # what it could not store
    assert summary["lost_acknowledged"] == 0  # it acknowledged none of it
    released(run_dir)


def stalled(tmp_path: Path, run: Sixnines) -> Path:
    """The run directory once its disk is frozen (the fault's record says so)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for path in (tmp_path / "out").glob("disk/*/01-sut/manifest.json"):
            with_faults = json.loads(path.read_text()).get("faults") or [{}]
            if with_faults[0].get("effective_ns"):
                return path.parent
        assert run.process.poll() is None, run.stderr
        time.sleep(0.05)
    raise AssertionError(f"the disk was not frozen in time:\n{run.stderr}")


@NO_REDIS
@pytest.mark.parametrize("holder", ["holder alive", "holder killed first"])
def test_a_controller_killed_mid_stall_leaves_the_disk_thawed_and_gone(tmp_path, holder):
    """The guard stops the holder, which thaws; with the holder killed first the broker
    hangs on the frozen disk until the guard's release thaws it, then goes too."""
    path = scenario(tmp_path, REDIS, "{at: 0.5s, action: disk-stall, target: broker, "
                                     "for: 20s}", duration="30s")
    run = controller(tmp_path, path, "--no-analysis")
    run_dir = stalled(tmp_path, run)
    tree = run.snapshot()
    if holder == "holder killed first":
        [pid] = [pid for pid in tree if "fault_hold" in command_line(pid)]
        os.kill(pid, signal.SIGKILL)
    run.process.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    while os.path.ismount(run_dir / BROKER_DIR) and time.monotonic() - killed < 30:
        time.sleep(0.05)
    print(f"\nkill-to-unmounted: {time.monotonic() - killed:.2f} s")
    run.finish()
    assert time.monotonic() - killed < BOUND_S
    released(run_dir)
    assert still_alive_after(tree, BOUND_S) == {}


@NO_REDIS
def test_a_run_stopped_mid_stall_thaws_the_disk_before_it_stops_the_broker(tmp_path):
    path = scenario(tmp_path, REDIS, "{at: 0.5s, action: disk-stall, target: broker, "
                                     "for: 20s}", duration="30s")
    run = controller(tmp_path, path, "--no-analysis")
    run_dir = stalled(tmp_path, run)
    tree = run.snapshot()
    run.process.send_signal(signal.SIGTERM)
    code, _, err = run.finish()
    assert code == 143 and "Traceback" not in err, err
    assert still_alive_after(tree, 1.0) == {}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    [stall] = manifest["faults"]
    assert stall["note"] == "undone as the run ended" and stall["undone_ns"] is not None
    assert manifest["status"] == "partial"
    released(run_dir)
    assert (run_dir / BROKER_DIR / "appendonlydir").is_dir()  # kept, as a partial run's is


@NO_REDIS
@needs_bed
def test_a_broker_on_an_ssh_host_has_its_disk_stalled_and_released_there(tmp_path):
    """The same steps over SSH, in the mount namespace of the host's sshd (where the
    broker runs): nothing mounted is left there, nor a loop device here."""
    fault = f"{{at: {STALL_AT_S}s, action: disk-stall, target: broker, for: {STALL_S}s}}"
    with testbed(2) as bed:
        code, _, _, manifest, summary = ran(
            tmp_path, REDIS, fault,
            f"inventory: {bed.inventory}\nplacement: {{broker: h1, agents: [h2]}}")
        sshd = (bed.dir / "h1" / "sshd.pid").read_text().strip()
        mounts = subprocess.run(["nsenter", "-t", sshd, "-m", "cat", "/proc/self/mounts"],
                                capture_output=True, text=True, check=True).stdout
    assert code == 0 and manifest["status"] == "ok", manifest["problems"]
    stalled_as_planned(manifest, summary)
    image = Path(manifest["broker"]["data_disk"]["image"])
    assert image.is_absolute() and not image.exists()  # on h1, which shares this filesystem
    assert str(image.parent / BROKER_DIR) not in mounts
    assert loop_devices_of(image) == []
