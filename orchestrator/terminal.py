"""Text from files, made safe to print on a terminal.

Results directories travel between machines, and every name and figure in them may have
been written by someone else: a run id holding `ESC]0;…` retitles the terminal window,
`ESC[2J` clears it, `ESC[31m` recolours what follows, and a newline forges a line of
output. Every printer of text that came from a file (a summary, a manifest, a directory's
name, a server's reply) passes it through `printable`, or `markup` where rich parses the
text for styles (where `[bold]` in a run id must print as written).
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from rich.console import Console
from rich.markup import escape


def printable(text: object) -> str:
    """`text` with every character a terminal would act on or not show (control
    characters, line breaks, bidirectional overrides, zero-width ones) written as its
    Python escape (`\\x1b`, `\\n`, `\\u202e`)."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else char.encode("unicode_escape").decode()
                   for char in text)


def printable_lines(text: object) -> str:
    """`printable` line by line: a message of several lines sixnines wrote keeps them."""
    return "\n".join(map(printable, str(text).split("\n")))


def markup(text: object) -> str:
    """`printable(text)` for a rich markup string: its square brackets print as written."""
    return escape(printable(text))


def console_for(stream: TextIO | None = None) -> Console:
    """A console on `stream` (stderr): a terminal's own width; a log or a pipe 132 columns,
    room for the whole percentile table, unless COLUMNS says otherwise."""
    console = Console(file=stream or sys.stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 132
    return console
