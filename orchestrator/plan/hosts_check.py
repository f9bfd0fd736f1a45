"""What a nightly job checks before it runs anything: every host of an inventory (or of a
scenario, with its inventory) reached in parallel and asked, in one round trip, what a run
there will need — Python and the sixnines bundle, free disk in its work directory, cores,
its clock against the controller's, the programs of the broker recipes it will start, and
ports on its own address. One verdict per host, each naming what is wrong.

A run finds the same things out, but one at a time and minutes in (a host's disk after the
broker of another started); the check says them all at once, for every host, before a run
is started. Given a scenario, it checks the hosts against that plan: the disk the runs
write on each host (orchestrator.plan.footprint), the recipes of the broker host. Given an
inventory alone, against a stated minimum (`MIN_FREE_BYTES` of the SSH launcher).

Hosts are reached as a run reaches them (orchestrator.launchers): host keys checked against
known_hosts, never accepted unseen; keys and passwords only from files and the SSH agent.
The connections run in threads, one per host: each check waits on the network, not on CPU
(docs/design.md, "Checking hosts").
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sixnines.formats.atomic import human_bytes as human
from sixnines.orchestrator.launchers.base import LaunchError
from sixnines.orchestrator.scenario.hosts import ContainerHost, HostSpec, SshHost
from sixnines.orchestrator.scenario.overrides import Override

#: Most hosts checked at once: each is a thread waiting on its connection.
MAX_PARALLEL = 32
#: A wall clock further off the controller's than this (beyond the measurement's own
#: uncertainty) is a problem: manifests, run ids and the history order nights by it.
MAX_CLOCK_OFFSET_S = 1.0

#: Run by the host's Python: argv[1] its work directory, argv[2] what to look for (JSON:
#: programs, the address and how many ports to bind, the bundle's marker file). Prints the
#: facts as one JSON line; its clock is read last, as close to the answer as it can be.
PROBE = """\
import json, os, platform, shutil, socket, sys, time
workdir, ask = sys.argv[1], json.loads(sys.argv[2])
facts = {"python": platform.python_version(), "machine": platform.machine(),
         "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
         else os.cpu_count()}
try:
    os.makedirs(workdir, exist_ok=True)
    facts["free_bytes"] = shutil.disk_usage(workdir).free
except OSError as error:
    facts["workdir_error"] = error.strerror or str(error)
try:
    from importlib.metadata import version
    facts["sixnines"] = version("sixnines")
except Exception:
    facts["sixnines"] = None
marker = ask.get("bundle_marker")
facts["bundle_installed"] = bool(marker) and os.path.isfile(marker)
path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
facts["missing"] = [p for p in ask["programs"]
                    if not (os.access(p, os.X_OK) if "/" in p else shutil.which(p, path=path))]
bound = []
try:
    for _ in range(ask["ports"]):
        probe = socket.socket(socket.AF_INET6 if ":" in ask["address"] else socket.AF_INET)
        bound.append(probe)
        probe.bind((ask["address"], 0))
except OSError as error:
    facts["ports_error"] = error.strerror or str(error)
facts["time_ns"] = time.time_ns()
print(json.dumps(facts))
"""


@dataclass(frozen=True)
class Needs:
    """What a plan asks of one host: disk in its work directory, the programs of the broker
    recipes it starts and the ports they listen on (chosen free at run time, on the host's
    own address)."""

    disk: int
    programs: tuple[str, ...] = ()
    ports: int = 1


@dataclass
class HostVerdict:
    """One host's check: the facts found (in words) and the problems (each naming what and
    why); `what` names the problems' kinds for the summary line."""

    host: str
    facts: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    what: list[str] = field(default_factory=list)

    def problem(self, kind: str, text: str) -> None:
        self.problems.append(text)
        self.what.append(kind)

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        head = f"{self.host} ok" if self.ok else f"{self.host} NOT OK: {'; '.join(self.problems)}"
        return "; ".join([head, *self.facts]) if self.facts else head


@dataclass(frozen=True)
class Bundled:
    """The sixnines a run would put on a host that names no `python:` of its own."""

    build_id: str
    target: tuple[str, str]  # the Python ("X.Y") and machine its wheels are for
    version: str

    @classmethod
    def here(cls) -> Bundled:
        from sixnines import __version__
        from sixnines.orchestrator.launchers.bundle import build_id, controller_target

        return cls(build_id(), controller_target(), __version__)


def check_hosts(hosts: Sequence[HostSpec], needs: Callable[[HostSpec], Needs],
                ours: Bundled) -> list[HostVerdict]:
    """Every host checked at once (`MAX_PARALLEL` at a time); verdicts in the hosts'
    order."""
    if not hosts:
        return []

    def one(spec: HostSpec) -> HostVerdict:
        if isinstance(spec, SshHost):
            return _check_ssh(spec, needs(spec), ours)
        return _check_container(spec)

    with ThreadPoolExecutor(min(MAX_PARALLEL, len(hosts)), thread_name_prefix="check") as pool:
        return list(pool.map(one, hosts))


def _check_ssh(spec: SshHost, needs: Needs, ours: Bundled) -> HostVerdict:
    import paramiko  # only when an SSH host is checked (the `remote` extra)

    from sixnines.orchestrator.launchers.ssh import SshLauncher

    verdict = HostVerdict(spec.name)
    launcher = SshLauncher(spec)
    workdir = str(launcher.root)
    marker = f"{workdir}/venvs/{ours.build_id}/COMPLETE" if launcher.needs_bundle else ""
    ask = {"programs": list(needs.programs), "address": launcher.address,
           "ports": needs.ports, "bundle_marker": marker}
    step = "unreachable"
    try:
        launcher.connect()
        step, sent = "python", time.time_ns()
        facts = launcher.python_facts(PROBE, workdir, json.dumps(ask))
        clock = _best_reading(launcher, (facts.get("time_ns"), sent, time.time_ns()))
    except (LaunchError, OSError, paramiko.SSHException) as exc:
        verdict.problem(step, f"{step}: {exc}" if step == "unreachable" else str(exc))
        return verdict
    finally:
        launcher.close()
    verdict.facts.append(f"{launcher.user}@{launcher.address}:{launcher.port}")
    _judge_python(verdict, facts, launcher, ours)
    _judge_disk(verdict, facts, workdir, needs.disk)
    verdict.facts.append(f"{facts.get('cores')} cores")
    _judge_clock(verdict, *clock)
    _judge_programs(verdict, facts.get("missing") or [], needs.programs)
    _judge_ports(verdict, facts.get("ports_error"), needs.ports, launcher.address)
    return verdict


def _judge_python(verdict: HostVerdict, facts: dict, launcher, ours: Bundled) -> None:
    from sixnines.orchestrator.launchers.ssh import MIN_PYTHON

    found = str(facts.get("python"))
    verdict.facts.append(f"Python {found} ({launcher.python})")
    if tuple(int(part) for part in found.split(".")[:2] if part.isdigit()) < MIN_PYTHON:
        verdict.problem("python", f"Python {found}: sixnines needs "
                                  f"{'.'.join(map(str, MIN_PYTHON))} or newer")
        return
    if not launcher.needs_bundle:  # the inventory names an environment with sixnines
        there = facts.get("sixnines")
        if there is None:
            verdict.problem("sixnines", f"{launcher.python} has no sixnines installed: "
                                        "install it there, or drop the host's `python:` to "
                                        "have the bundle installed")
        elif there != ours.version:
            verdict.problem("sixnines", f"sixnines {there} there, {ours.version} here: install "
                                        "the same version on both")
        else:
            verdict.facts.append(f"sixnines {there}")
        return
    target = (".".join(found.split(".")[:2]), str(facts.get("machine")))
    python, machine = ours.target
    if target != ours.target:
        verdict.problem("bundle", f"Python {target[0]} on {target[1]} there, the bundle is "
                                  f"built for Python {python} on {machine}: run "
                                  "the controller with the same Python, or name an "
                                  "environment with sixnines installed as the host's `python:`")
    elif facts.get("bundle_installed"):
        verdict.facts.append(f"bundle {ours.build_id} installed")
    else:
        verdict.facts.append("bundle not installed yet (the first run installs it)")


def _judge_disk(verdict: HostVerdict, facts: dict, workdir: str, need: int) -> None:
    if "workdir_error" in facts:
        verdict.problem("workdir", f"work directory {workdir} cannot be made: "
                                   f"{facts['workdir_error']}")
        return
    free = int(facts.get("free_bytes") or 0)
    verdict.facts.append(f"{human(free)} free in {workdir} (needs {human(need)})")
    if free < need:
        verdict.problem("disk", f"only {human(free)} free in {workdir}, a run needs about "
                                f"{human(need)} there: free some space, or give the host "
                                "another `workdir`")


def clock_offset(remote_ns: int, sent_ns: int, answered_ns: int) -> tuple[float, float]:
    """The remote clock minus the controller's, in seconds, and its uncertainty: the remote
    time was read somewhere between sending and the answer, so the midpoint is off by at
    most half the round trip."""
    middle = (sent_ns + answered_ns) / 2
    return (remote_ns - middle) / 1e9, (answered_ns - sent_ns) / 2e9


#: Readings of a host's clock by `date` (after the probe's own): the one with the shortest
#: round trip bounds the offset best.
CLOCK_READINGS = 3


def _best_reading(launcher, probe: tuple) -> tuple:
    """(remote ns, sent ns, answered ns) of the reading with the shortest round trip: the
    probe's (a Python start-up wide) or one of `date +%s%N`'s (an exec wide) where the
    host's date prints nanoseconds."""
    readings = [probe]
    for _ in range(CLOCK_READINGS):
        sent = time.time_ns()
        done = launcher.run(["date", "+%s%N"], timeout_s=10)
        answered = time.time_ns()
        text = done.output.strip()
        if done.code != 0 or not text.isdigit():
            break
        readings.append((int(text), sent, answered))
    return min(readings, key=lambda reading: reading[2] - reading[1])


def _judge_clock(verdict: HostVerdict, remote_ns, sent_ns: int, answered_ns: int) -> None:
    if not isinstance(remote_ns, int):
        verdict.problem("clock", "its clock could not be read")
        return
    offset, within = clock_offset(remote_ns, sent_ns, answered_ns)
    verdict.facts.append(f"clock {offset * 1e3:+.1f} ms ±{within * 1e3:.1f} ms")
    if abs(offset) - within > MAX_CLOCK_OFFSET_S:
        verdict.problem("clock", f"its clock is {offset:+.1f} s off the controller's: "
                                 "synchronise both (chrony, systemd-timesyncd): run times "
                                 "and the order of nights come from the clocks")


def _judge_programs(verdict: HostVerdict, missing: list[str], programs: tuple[str, ...]) -> None:
    if missing:
        verdict.problem("programs", f"{', '.join(missing)} not installed (a broker recipe "
                                    "placed there runs it)")
    elif programs:
        verdict.facts.append(f"{', '.join(programs)} found")


def _judge_ports(verdict: HostVerdict, error, ports: int, address: str) -> None:
    if error:
        verdict.problem("ports", f"cannot listen on {address} ({error}): is it the host's "
                                 "own address?")
    else:
        verdict.facts.append(f"{ports} port(s) free on {address}")


def _check_container(spec: ContainerHost) -> HostVerdict:
    """A container host: its Docker API must answer; what runs there comes in images."""
    from sixnines.orchestrator.launchers.container import ContainerLauncher  # docker SDK

    verdict = HostVerdict(spec.name)
    launcher = ContainerLauncher(spec.name, spec.docker, address=spec.address)
    try:
        launcher.connect()
        verdict.facts.append(f"Docker API answers at {spec.docker}")
    except LaunchError as exc:
        verdict.problem("unreachable", f"unreachable: {exc}")
    finally:
        launcher.close()
    return verdict


def summary(verdicts: list[HostVerdict]) -> str:
    """The closing line: all good, or which hosts have which problems."""
    bad = [v for v in verdicts if not v.ok]
    if not bad:
        return f"{len(verdicts)} host(s) ok"
    named = ", ".join(f"{v.host} ({', '.join(dict.fromkeys(v.what))})" for v in bad)
    return f"{len(bad)} of {len(verdicts)} host(s) not ok: {named}"


def needs_of(scenario=None) -> Callable[[HostSpec], Needs]:
    """What each host must offer: given a scenario, the disk its runs write there (at least
    the launcher's minimum) and, on its broker host, the programs and ports of its broker
    recipes; given none, the minimum alone. RecipeError for a recipe that cannot say."""
    from sixnines.orchestrator.launchers.ssh import MIN_FREE_BYTES

    if scenario is None:
        return lambda spec: Needs(MIN_FREE_BYTES)
    from sixnines.orchestrator.plan.footprint import estimate
    from sixnines.orchestrator.scenario.matrix import expand
    from sixnines.orchestrator.scenario.recipes import load_recipe, programs

    host_disk = estimate(expand(scenario), scenario.placement.agents).host_disk
    recipes = [load_recipe(system.broker.recipe) for system in scenario.systems
               if system.broker.kind == "recipe"]
    broker = Needs(0, tuple(dict.fromkeys(p for r in recipes for p in programs(r))),
                   max([len(r.ports) for r in recipes] or [1]))

    def needs(spec: HostSpec) -> Needs:
        disk = max(MIN_FREE_BYTES, host_disk.get(spec.name, 0))
        if spec.name == scenario.placement.broker:
            return Needs(disk, broker.programs, broker.ports)
        return Needs(disk)

    return needs


def load_target(file: str, overrides: Sequence[Override] = ()
                ) -> tuple[tuple[HostSpec, ...], object | None]:
    """The hosts `file` names and, when it is a scenario, the scenario (its hosts with its
    inventory's) with `overrides` set over it; ScenarioError with every problem and its
    line otherwise (an inventory takes no override)."""
    from sixnines.orchestrator.scenario.model import (
        SCENARIO_KEYS,
        Problem,
        ScenarioError,
        load_inventory,
        load_scenario,
    )
    from sixnines.orchestrator.scenario.yaml_source import (
        SourceError,
        YamlSyntaxError,
        parse,
        read_source,
    )

    try:
        data = parse(read_source(Path(file))).data
    except (SourceError, YamlSyntaxError):
        data = None  # said with its line by load_inventory
    if isinstance(data, dict) and SCENARIO_KEYS & set(data):
        scenario = load_scenario(file, overrides)
        return scenario.hosts, scenario
    hosts = load_inventory(file)
    if overrides:
        raise ScenarioError(file, [Problem("", None, f"{file} is an inventory, which takes "
                                           "no override (they set fields of a scenario)",
                                           overrides[0].named)])
    return hosts, None
