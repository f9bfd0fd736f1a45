"""`content:`, what messages carry after their header, as a scenario writes it.

One canonical text per value, so that it sweeps, names runs and records in the manifest's
params like any other field: `random`, `zeros`, `text`, `file=PATH`, `compressibility=R`.
A file may also write the last two as one-key mappings (`{file: PATH}`,
`{compressibility: 0.6}`). The fill itself is formats.fill's; a sample file is read here,
relative to the scenario file, and bounded (formats.fill.MAX_SAMPLE_BYTES).
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

from sixnines.formats.fill import COMPRESSIBLE, FILE, MAX_SAMPLE_BYTES, RANDOM, TEXT, ZEROS, Fill
from sixnines.orchestrator.scenario.problems import shown
from sixnines.orchestrator.scenario.side_files import read_side_file

SIMPLE = (RANDOM, ZEROS, TEXT)
RATIO_KEY = "compressibility"
FORMS = f"{', '.join(SIMPLE)}, {{{FILE}: PATH}} or {{{RATIO_KEY}: RATIO}}"


def parse_content(value: object) -> str:
    """`value` as written, in its canonical text; ValueError naming the accepted forms."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, given),) = value.items()
    elif isinstance(value, str) and "=" in value:
        key, given = (part.strip() for part in value.split("=", 1))
    elif isinstance(value, str) and value.strip().lower() in SIMPLE:
        return value.strip().lower()
    else:
        raise ValueError(f"must be {FORMS} (got {shown(value)})")
    if key == FILE:
        if not isinstance(given, str) or not given.strip() or not given.isprintable():
            raise ValueError(f"{FILE}: must be a path (got {shown(given)})")
        return f"{FILE}={given.strip()}"
    if key == RATIO_KEY:
        ratio = _ratio(given)
        return f"{RATIO_KEY}={ratio:g}"
    raise ValueError(f"unknown content {shown(key)}: must be {FORMS}")


def _ratio(given: object) -> float:
    ratio = math.nan
    if isinstance(given, int | float | str) and not isinstance(given, bool):
        with contextlib.suppress(ValueError):
            ratio = float(given)
    if not 0 < ratio <= 1:
        raise ValueError(f"{RATIO_KEY}: must be a ratio compressed/original in (0, 1], "
                         f"e.g. 0.6 (got {shown(given)})")
    return ratio


def sample_path(content: str, scenario_dir: Path) -> Path | None:
    """The sample file a `file=PATH` content names (relative to the scenario's folder)."""
    if not content.startswith(f"{FILE}="):
        return None
    return scenario_dir / Path(content.split("=", 1)[1]).expanduser()


def read_sample(path: Path) -> bytes:
    """The sample's bytes; ValueError saying why it cannot be a fill."""
    data = read_side_file(path, MAX_SAMPLE_BYTES,
                          advice=" (a sender's ring holds no more; cut a smaller sample)")
    if not data:
        raise ValueError(f"{shown(str(path))} is empty")
    return data


def fill_of(content: str, scenario_dir: Path) -> Fill:
    """The fill agents build from `content` (its sample read now); ValueError for a sample
    that cannot be read."""
    path = sample_path(content, scenario_dir)
    if path is not None:
        return Fill(kind=FILE, sample=read_sample(path))
    if content.startswith(f"{RATIO_KEY}="):
        return Fill(kind=COMPRESSIBLE, ratio=float(content.split("=", 1)[1]))
    return Fill(kind=content)
