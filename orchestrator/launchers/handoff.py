"""`python -m sixnines.orchestrator.launchers.handoff COMMAND...`: run COMMAND with a standard input
handed over on ours, so that a secret reaches a process on another host without passing
through its disk, its argv (`ps`) or its environment.

Whoever started us (through any launcher) writes one JSON line, `{"stdin": TEXT}`. TEXT goes
into a fresh pipe whose writing end is closed, and COMMAND is exec'd with that pipe as its
standard input: it reads TEXT, then end of input (`redis-server ... -` reading config,
`nats-server -c /dev/stdin`, `rabbitmqctl add_user NAME` reading the password). An exec keeps
the pid, so the launcher's process (group) is still the command's.
"""

from __future__ import annotations

import json
import os
import sys

#: TEXT is written whole before the exec, so it must fit a pipe's buffer (64 KiB on Linux).
MAX_INPUT = 60_000


def handoff_argv(python: str, argv: list[str]) -> list[str]:
    return [python, "-m", "sixnines.orchestrator.launchers.handoff", *argv]


def handoff_line(text: str) -> str:
    return json.dumps({"stdin": text})


def _input_text() -> bytes:
    """TEXT from the first line of our standard input; the error never quotes the line."""
    line = sys.stdin.buffer.readline(4 * MAX_INPUT)
    try:
        text = json.loads(line)["stdin"].encode()
    except (ValueError, KeyError, TypeError, AttributeError):
        raise SystemExit('handoff: expected {"stdin": TEXT} on standard input') from None
    if len(text) > MAX_INPUT:
        raise SystemExit(f"handoff: the input is over {MAX_INPUT} bytes")
    return text


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit(
            "usage: python -m sixnines.orchestrator.launchers.handoff COMMAND [ARG...]")
    text = _input_text()
    read, write = os.pipe()
    os.write(write, text)
    os.close(write)
    os.dup2(read, 0)
    os.close(read)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        raise SystemExit(f"handoff: cannot run {argv[0]}: {exc.strerror}") from None


if __name__ == "__main__":
    main(sys.argv[1:])
