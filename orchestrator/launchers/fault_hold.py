"""Holds a fault on a host in place (a partition's firewall rules, a slow link's qdisc, a
broker's data disk frozen or full), and takes it away whatever happens to the controller.

Started on the host before the measured run (launchers.held_faults), it checks nothing but
waits: `go` on its input applies the fault's commands and answers `held`; `undo`, the end of
its input, SIGTERM or SIGHUP (the guard stopping its group as the controller dies) runs the
undo commands, answers `undone` and exits. A deadline counted from `go` is the last bound:
should the controller hang and the guard never act, the fault is still taken away. Every
undo command is run even when one before it fails (a rule already gone must not keep the
next from being removed); the first failure is the answer.

Only the standard library here: it starts fast on any host with the bundle.

    python -m sixnines.orchestrator.launchers.fault_hold --deadline S APPLY_JSON UNDO_JSON
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

COMMAND_TIMEOUT_S = 10.0
#: nft, iptables, tc and ip live in sbin, which a non-login shell's PATH may lack.
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
READY, HELD, UNDONE = "ready", "held", "undone"
#: Where a program a fault needs comes from (Debian's packages), for the one line that says
#: it is missing.
PACKAGES = {"nft": "nftables", "iptables": "iptables", "ip6tables": "iptables",
            "tc": "iproute2", "ip": "iproute2"}


def _program(argv: list[str]) -> str:
    """The command's program as found (its bare name when it is not)."""
    return shutil.which(argv[0], path=SEARCH_PATH) or argv[0]


def found(names: list[str]) -> list[str]:
    """Those of the programs `names` this host has (looked for as the holder looks)."""
    return [name for name in names if shutil.which(name, path=SEARCH_PATH) is not None]


def _run(commands: list[list[str]], keep_going: bool = False) -> str | None:
    """Each command in turn, up to the first failure (with `keep_going`, all of them); the
    first failure, in words (None: all succeeded)."""
    first = None
    for argv in commands:
        failed = _run_one(argv)
        if failed is not None and not keep_going:
            return failed
        first = first or failed
    return first


def _run_one(argv: list[str]) -> str | None:
    try:
        done = subprocess.run([_program(argv), *argv[1:]], capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{argv[0]}: {exc}"
    if done.returncode != 0:
        return f"{' '.join(argv)} (exit {done.returncode}): {done.stderr.strip()[-300:]}"
    return None


def _missing_line(names: list[str]) -> str:
    """`failed ...`: the programs not found here, each with the package it comes with."""
    named = [f"{name} (Debian package {PACKAGES[name]})" if name in PACKAGES else name
             for name in names]
    return f"failed {', '.join(named)} not found on this host"


def _say(line: str) -> None:
    print(line, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sixnines.orchestrator.launchers.fault_hold")
    parser.add_argument("--deadline", type=float, required=True, metavar="S",
                        help="undo at the latest S seconds after `go`")
    parser.add_argument("apply", help="JSON list of commands that put the fault in place")
    parser.add_argument("undo", help="JSON list of commands that take it away")
    args = parser.parse_args(argv)
    apply, undo = json.loads(args.apply), json.loads(args.undo)
    events: queue.Queue[str] = queue.Queue()
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, lambda *_: events.put("undo"))

    def read() -> None:
        for line in sys.stdin:
            events.put(line.strip())
        events.put("undo")  # the controller's end

    programs = {argv[0] for argv in apply + undo}
    missing = sorted(programs - set(found(sorted(programs))))
    if missing:  # said before the run starts, not at the fault's time
        _say(_missing_line(missing))
        return 1
    threading.Thread(target=read, daemon=True).start()
    _say(READY)
    held, deadline_at = False, None
    while True:
        timeout = None if deadline_at is None else max(0.0, deadline_at - time.monotonic())
        try:
            event = events.get(timeout=timeout)
        except queue.Empty:
            event = "undo"
        if event == "go" and not held:
            held, deadline_at = True, time.monotonic() + args.deadline
            failed = _run(apply)
            if failed is not None:
                _run(undo, keep_going=True)  # what was half applied
                _say(f"failed {failed}")
                return 1
            _say(HELD)
        elif event == "undo":
            failed = _run(undo, keep_going=True) if held else None
            _say(UNDONE if failed is None else f"failed {failed}")
            return 0 if failed is None else 1


if __name__ == "__main__":
    sys.exit(main())
