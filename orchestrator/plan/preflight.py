"""What this machine must offer a scenario, checked before anything starts, besides the
memory and disk its runs need (orchestrator.plan.footprint): a place the results can be
written, the open files each process will hold, and for `validate`, every broker recipe's
environment variables and programs, and what a broker's data disk needs.

Each problem is one line saying what to change. A run that met them instead failed
minutes in, or at once with a traceback: `output: /dev/null` in NotADirectoryError, a
read-only directory in OSError, 50 connections under `ulimit -n 64` in "Connection reset
by peer" from a relay that had run out of files. Remote hosts are checked when they are
prepared; recipes are checked again as each run starts its broker (orchestrator.run.brokers),
where a failure is that run's, recorded, and the scenario's other runs still go on.
"""

from __future__ import annotations

import os
import resource
import shutil
from collections.abc import Iterable
from pathlib import Path

from sixnines.orchestrator.capacity.probes import heaviest
from sixnines.orchestrator.launchers import data_disk
from sixnines.orchestrator.launchers.local import environment
from sixnines.orchestrator.plan.agents import plan_agents
from sixnines.orchestrator.scenario.hosts import LOCAL
from sixnines.orchestrator.scenario.matrix import RunPoint
from sixnines.orchestrator.scenario.recipes import (
    RecipeError,
    check_renders,
    load_recipe,
    not_installed,
    programs,
)

#: Files an agent or broker process holds whatever its connections: the interpreter and
#: its libraries, pipes to the controller and its writer, logs, the files it records
#: (measured 7-14 with one connection).
FILES_PER_PROCESS = 32
#: Files per connection of an agent: its socket, and for a sender the shared buffers its
#: recording hands to its writer (measured: 7 for a tcp producer, 12 for a zmq requester,
#: whose sockets each hold three more for their mailboxes).
FILES_PER_CONNECTION = 12
#: Files per connection the scenario's agents make to a broker started here (one socket,
#: doubled for the broker's own bookkeeping).
BROKER_FILES_PER_CONNECTION = 2


def output_problem(output: Path) -> str | None:
    """Why results cannot be written under `output`: it, or the nearest part of it that
    exists, is not a directory or cannot be written (a read-only filesystem, no
    permission); None when they can."""
    for path in (output, *output.absolute().parents):
        if not os.path.lexists(path):
            continue
        if not path.is_dir():
            why = "is not a directory"
        elif not os.access(path, os.W_OK | os.X_OK):
            why = "is on a read-only filesystem" if _read_only(path) else \
                "is not writable by you"
        else:
            return None
        what = f"output {output}" if path == output else f"output {output}: {path}"
        return f"{what} {why}; choose another `output` (or --output)"
    return None


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def recipe_problems(scenario) -> list[str]:
    """Each system whose broker recipe cannot start on this machine as it stands: a
    placeholder it cannot fill (an environment variable not set), or, when the broker is
    placed here, a program it runs that is not installed."""
    problems = []
    here = scenario.placement.broker == LOCAL
    path = environment(None)["PATH"]  # as the local launcher runs it
    for index, system in enumerate(scenario.systems):
        if system.broker.kind != "recipe":
            continue
        which = f"systems[{index}] ({system.name}): recipe {system.broker.recipe}"
        try:
            recipe = load_recipe(system.broker.recipe)
            check_renders(recipe)
            missing = [name for name in programs(recipe)
                       if not _runnable(name, path)] if here else []
        except RecipeError as exc:
            problems.append(f"{which} {exc}")
            continue
        if missing:
            problems.append(f"{which}: {not_installed(missing, recipe.native.install)}")
    return problems


def data_disk_problems(scenario) -> list[str]:
    """The systems asking for a data disk (`data_disk`) for a broker placed here, when this
    machine cannot make one: not root, no mkfs.ext4, no loop devices."""
    if scenario.placement.broker != LOCAL:
        return []
    asking = [f"systems[{index}] ({system.name})"
              for index, system in enumerate(scenario.systems)
              if system.broker.data_disk is not None]
    missing = data_disk.lacking() if asking else []
    if not missing:
        return []
    return [f"{', '.join(asking)}: a data disk for the broker needs {', '.join(missing)} on "
            "this machine"]


def _runnable(name: str, path: str) -> bool:
    if "/" in name:
        return os.access(name, os.X_OK)
    return shutil.which(name, path=path) is not None


def open_file_limit(raise_to_hard: bool = False) -> int | None:
    """This process's limit of open files (None: unlimited), which the processes it
    starts inherit; first raised to the hard limit when asked, as far as the system lets
    an unprivileged process (`ulimit -n` is often lower than it need be)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if raise_to_hard and soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # the hard limit is past what the kernel allows: keep the soft one
    return None if soft == resource.RLIM_INFINITY else soft


def open_file_problems(points: Iterable[RunPoint], placement, limit: int | None) -> list[str]:
    """The runs whose processes on this machine would hold more files than `limit`: the
    first such run, with the number it needs and what to change."""
    if limit is None:
        return []
    for point in map(heaviest, points):
        process, need = _most_files(point, placement)
        if need > limit:
            return [f"run {point.run_id} needs about {need:,} open files in one process "
                    f"({process}), but the open-file limit here is {limit:,}: raise it "
                    f"(`ulimit -n {need}` in the shell that runs sixnines, or the hard limit "
                    "in /etc/security/limits.conf) or use fewer connections"]
    return []


def _most_files(point: RunPoint, placement) -> tuple[str, int]:
    """The process of `point`'s run on this machine holding the most files, in words, and
    how many it holds."""
    plans = plan_agents(point.workload, point.system.driver_class().needs_responder,
                        placement.agents)
    needs = [(f"{plan.agent_id}: {plan.connections:,} connection(s)",
              FILES_PER_PROCESS + FILES_PER_CONNECTION * plan.connections)
             for plan in plans if plan.host == LOCAL]
    if placement.broker == LOCAL and point.system.broker.kind != "external":
        connections = sum(plan.connections for plan in plans)
        needs.append((f"its broker: {connections:,} connection(s)",
                      FILES_PER_PROCESS + BROKER_FILES_PER_CONNECTION * connections))
    return max(needs, key=lambda need: need[1], default=("", 0))


def problems(scenario, points: list[RunPoint], output: Path, *, run: bool) -> list[str]:
    """Every problem above for `validate` (`run` False) or at `run`'s start: there the
    open-file limit is first raised to the hard limit, and recipes are left to each run
    (a system whose broker cannot start fails alone, saying why)."""
    found = [problem for problem in [output_problem(output)] if problem is not None]
    found += open_file_problems(points, scenario.placement,
                                open_file_limit(raise_to_hard=run) if run else _hard_limit())
    if not run:
        found += recipe_problems(scenario) + data_disk_problems(scenario)
    return found


def _hard_limit() -> int | None:
    """The open-file limit `run` will have (it raises the soft one to this)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return None if hard == resource.RLIM_INFINITY else hard
