"""`sixnines validate` over many files in one process, for tests that feed it hostile input.

Starting an interpreter per file costs ~0.5 s; this worker imports the CLI once and
validates each file named on its command line in turn, each under an alarm, printing one
JSON line per file (`file`, `code`, `stderr`, `stdout`, `error`, `seconds`) as soon as it is
done. Tests run it under `prlimit --as` and a timeout, so a regression fails the test
instead of taking the machine: `error` says what `main` raised instead of returning,
`Timeout` included. A hang in C code, which no alarm interrupts, shows as a missing line.

    python -m tests.faults.validate_worker SECONDS FILE...

`validate_all` runs it that way and returns the outcomes; `judge` says whether one is what
any input deserves: "ok" (exit 0), or exit 2 with only `FILE:LINE: ...` / `FILE: ...` lines.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: Address space of the validating process: a few times what validation needs (~150 MB),
#: far below what an alias bomb or /dev/zero would take.
MEMORY_CAP = 1 << 30


class Timeout(Exception):
    """The file took longer than its alarm."""


def _alarm(signum: int, frame: object) -> None:
    raise Timeout()


def validate(path: str, seconds: float) -> dict[str, Any]:
    """The outcome of `sixnines validate path`, stopped after `seconds`."""
    from sixnines.orchestrator.cli import main

    err, out = io.StringIO(), io.StringIO()
    code, error = None, None
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(["validate", path])
    except BaseException:  # whatever escapes `main` is the finding
        error = traceback.format_exc(limit=-8)[-4000:]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return {"file": path, "code": code, "stderr": err.getvalue(), "stdout": out.getvalue(),
            "error": error, "seconds": round(time.monotonic() - started, 3)}


def validate_all(paths: Sequence[Path], cwd: Path, per_file_s: float = 10,
                 total_s: float = 120) -> dict[str, dict[str, Any]]:
    """Outcomes of `sixnines validate` for each path (keyed by `str(path)`), from one worker
    under `prlimit --as` started in `cwd`. A file the worker never finished has an
    outcome whose `error` says so."""
    command = ["prlimit", f"--as={MEMORY_CAP}", sys.executable, "-m",
               "tests.faults.validate_worker", str(per_file_s), *map(str, paths)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=total_s)
        stdout, stderr = done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        stdout, stderr = _text(exc.stdout), _text(exc.stderr)
    outcomes = {o["file"]: o for o in map(json.loads, stdout.splitlines())}
    missing = (f"no outcome: the worker hung or died at the first file without one "
               f"(its stderr: {stderr[-2000:]!r})")
    for path in map(str, paths):
        outcomes.setdefault(path, {"file": path, "code": None, "stderr": "", "stdout": "",
                                   "error": missing, "seconds": None})
    return outcomes


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def judge(outcome: dict[str, Any]) -> str | None:
    """None when `outcome` is "ok" or a clean refusal; otherwise what is wrong with it."""
    file, stderr = re.escape(outcome["file"]), outcome["stderr"]
    if outcome["error"] is not None:
        return f"validate raised instead of returning:\n{outcome['error']}"
    if "Traceback" in stderr:
        return f"a traceback on stderr:\n{stderr[-3000:]}"
    if outcome["code"] == 0 and re.match(rf"{file}: ok, \d+ run\(s\)\n", stderr):
        return None
    if outcome["code"] == 2 and stderr and all(
            re.match(rf"{file}(:\d+)?: ", line) for line in stderr.splitlines()):
        return None
    return f"exit {outcome['code']} with stderr:\n{stderr[-3000:]}"


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGALRM, _alarm)
    seconds = float(argv[0])
    for path in argv[1:]:
        print(json.dumps(validate(path, seconds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
