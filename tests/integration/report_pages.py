"""What the tests of shapes and backlogs read of a real run's results as a user does: a
run's section of the report page, the rows of one of its tables, a plot's gnuplot data
by series, `compare`'s table; and a copy of a run directory whose summary.json is edited,
for `compare` to judge against the original."""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from sixnines.orchestrator.reports.model import slugify
from tests.faults.support import sixnines


def run_section(page: str, run_id: str) -> str:
    """A run's section of the report page (its <article>)."""
    start = page.index(f'<article id="run-{slugify(run_id)}"')
    return page[start:page.index("</article>", start)]


def table_rows(section: str, css_class: str) -> list[list[str]]:
    """The text of each cell of each body row of the first table of that class."""
    table = re.search(rf'<table class="figures {css_class}">.*?<tbody>(.*?)</tbody>', section,
                      re.S)
    assert table is not None, f"no table of class {css_class}"
    return [[html.unescape(re.sub(r"<[^>]+>", "", cell))
             for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)]


def plot_data(path: Path) -> dict[str, np.ndarray]:
    """A gnuplot data file's series by name: (x, y) rows each."""
    found: dict[str, list[list[float]]] = {}
    name = ""
    for line in path.read_text().splitlines():
        if line.startswith("# block "):
            name = line.split(": ", 1)[1]
            found[name] = []
        elif line and not line.startswith("#") and name:
            found[name].append([float(value) for value in line.split()])
    return {key: np.array(rows) for key, rows in found.items()}


def edited_copy(run_dir: Path, dest: Path, change: Callable[[dict], None]) -> Path:
    """A copy of an analysed run directory whose report/summary.json `change` edits."""
    shutil.copytree(run_dir, dest)
    path = dest / "report" / "summary.json"
    summary = json.loads(path.read_text())
    change(summary)
    path.write_text(json.dumps(summary))
    return dest


def number(cell: str) -> float:
    """A figure as a table cell shows it ("2,000", "1.250")."""
    return float(cell.replace(",", ""))


def compare(a: Path, b: Path, *options: str | Path) -> tuple[int, list[str]]:
    """`sixnines compare A B` as a user runs it in a terminal 160 columns wide (rich wraps
    a figure's name at 80): its exit code and the lines it printed (on stderr: stdout is
    for --json)."""
    done = sixnines("compare", a, b, *options, env={"COLUMNS": "160"})
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr.splitlines()


def compared_rows(lines: list[str]) -> dict[str, list[str]]:
    """`compare`'s table as it prints it: each figure's name (with its unit) → its cells
    (A, B, change, tolerance, verdict)."""
    rows = [[cell.strip() for cell in line.strip().strip("│").split("│")]
            for line in lines if line.startswith("│")]
    return {row[0]: row[1:] for row in rows}
