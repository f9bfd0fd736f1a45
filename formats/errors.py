"""The one base of every error sixnines raises on purpose.

Such an error's message is already worded for the user: it names the file, host or system
and says what to do. The command line prints it as it is and exits with the error's
`exit_code` (docs/running.md, "Exit codes"), never with a traceback; a traceback means a bug.
"""

from __future__ import annotations


class SixninesError(Exception):
    """A failure sixnines anticipated: exit code 1 (a run, a host, a file)."""

    exit_code = 1


class BadInput(SixninesError):
    """Something the user gave is wrong — a scenario, an argument, a directory without
    results: exit code 2."""

    exit_code = 2
