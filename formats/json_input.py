"""JSON files read back from a results directory, bounded before they are parsed.

A results directory is untrusted input: people copy them between machines, attach them to
tickets and download colleagues' nightly results. A file too big to be one sixnines wrote,
or nested deeper than any of its documents, is refused with one line naming it, before a
parser reads it whole or recurses into it (a `[[[[…` of a few kilobytes otherwise ends in
a RecursionError deep inside the reader).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sixnines.formats.run_files import RefusedPath, open_regular

#: Deeper than any document sixnines writes (a manifest nests about six levels).
MAX_DEPTH = 64


class RefusedJson(ValueError):
    """A JSON file that is not read: too big, too deep, or not JSON. A ValueError, so the
    readers' `except (OSError, ValueError)` names the file as for any garbled one."""


def read_json(path: Path, max_bytes: int) -> Any:
    """The JSON value in `path`, or RefusedJson saying why it is not read (OSError when it
    cannot be read at all). Only a regular file is read: opened without waiting, a FIFO put
    in its place cannot hang the reader."""
    try:
        source = open_regular(path)
    except RefusedPath as refused:
        raise RefusedJson(str(refused).removeprefix(f"{path}: ")) from None
    with source:
        data = source.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise RefusedJson(f"larger than {max_bytes:,} bytes, more than sixnines writes")
    try:
        value = json.loads(data)
    except RecursionError as error:
        raise RefusedJson(f"nested more than {MAX_DEPTH} levels deep") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RefusedJson(f"not valid JSON ({error})") from error
    if _depth_exceeds(value, MAX_DEPTH):
        raise RefusedJson(f"nested more than {MAX_DEPTH} levels deep")
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests more than `limit` containers deep (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False
