"""`sixnines runs`: the results directories under a root, newest first, with what a reader
needs to pick one (scenario, date, how the runs went, headline figures) before opening it.

A results directory is recognised by its contents, not its place, because a scenario's
`output:` may put results anywhere: it holds summary.json, scenario.yaml, or run
directories (with manifest.json). Directories recorded but never analysed (`--no-analysis`,
an interrupted run, a failed analysis) are listed from their manifests, with the command that
analyses them, and so are those whose summary.json cannot be what sixnines wrote
(orchestrator.results.summaries), with the reason. Every name printed may come from someone else's
files: it goes through orchestrator.terminal.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypedDict

from rich import box
from rich.console import Console
from rich.table import Table

from sixnines.formats.layout import MANIFEST_FILE, SCENARIO_FILE, SUMMARY_FILE
from sixnines.formats.load import run_load
from sixnines.formats.manifest import Manifest
from sixnines.formats.status import CORRUPT, rank
from sixnines.formats.summary import Figures, ResultsSummary, RunSummary
from sixnines.formats.vocabulary import Load, Metric
from sixnines.formats.wording import megabytes_text
from sixnines.orchestrator.results.console_tables import STATUS_COLOUR
from sixnines.orchestrator.results.store import manifest_or_problem
from sixnines.orchestrator.results.summaries import SummaryRefused, read_results_summary
from sixnines.orchestrator.terminal import markup, printable

MAX_DEPTH = 3  # <root>/<scenario>/<stamp>/: the root itself, a scenario or a results root
STAMP = re.compile(r"^(\d{8}-\d{6})(?:-\d+)?$")
HEADLINE = ("p50", "p99", "max")  # latency figures shown per run


class Headline(TypedDict):
    """What a reader scans a catalog for, per run (`--json`: one object each)."""
    run_id: str | None
    system: str | None
    durability: str | None  # its label (formats.durability); None: not recorded
    status: str | None
    load: str
    p50_us: float | None
    p99_us: float | None
    max_us: float | None
    receive_rate: float | None
    receive_bytes_per_s: float | None


@dataclass
class Entry:
    """One results directory."""
    path: Path
    scenario: str
    when: datetime
    analysed: bool
    statuses: Counter = field(default_factory=Counter)
    headlines: list[Headline] = field(default_factory=list)  # one per run
    refused: str | None = None  # why its summary.json is not read, when it is not

    def as_json(self) -> dict:
        body = {"path": str(self.path), "scenario": self.scenario,
                "date": self.when.isoformat(timespec="seconds"), "analysed": self.analysed,
                "runs": sum(self.statuses.values()), "status": dict(self.statuses),
                "headlines": self.headlines}
        if not self.analysed:
            body["hint"] = analyse_hint(self.path)
        if self.refused is not None:
            body["refused"] = self.refused
        return body


def analyse_hint(path: Path) -> str:
    return f"sixnines report {path}"


def is_results_dir(path: Path) -> bool:
    if (path / SUMMARY_FILE).is_file() or (path / SCENARIO_FILE).is_file():
        return True
    return any((child / MANIFEST_FILE).is_file() for child in _subdirs(path))


def _subdirs(path: Path) -> list[Path]:
    try:
        return [child for child in path.iterdir() if child.is_dir()]
    except OSError:  # unreadable: nothing to list there
        return []


def find_results_dirs(root: Path) -> list[Path]:
    """Every results directory at most MAX_DEPTH levels below `root` (not inside one:
    run directories are its parts)."""
    found = []
    for directory, names, _ in os.walk(root):
        path = Path(directory)
        if is_results_dir(path):
            found.append(path)
            names.clear()
        elif len(path.relative_to(root).parts) >= MAX_DEPTH:
            names.clear()
        else:
            names[:] = sorted(name for name in names if not name.startswith("."))
    return found


def entry_for(path: Path) -> Entry:
    """The summary's view when analysed, the manifests' otherwise."""
    manifests = _manifests(path)
    readable = [manifest for manifest in manifests if manifest is not None]
    summary, refused = _summary(path)
    scenario = ((summary.scenario if summary is not None else None)
                or next((m.scenario for m in readable if m.scenario), None)
                or path.parent.name)
    entry = Entry(path, scenario, recorded_when(path, readable), analysed=summary is not None,
                  refused=refused)
    statuses = ([CORRUPT if m is None else m.status for m in manifests] if summary is None
                else [run.status for run in summary.runs])
    entry.statuses = Counter(status or "unknown" for status in statuses)
    if summary is not None:
        entry.headlines = [headline(run) for run in summary.runs]
    return entry


def _summary(path: Path) -> tuple[ResultsSummary | None, str | None]:
    """summary.json, or None and why when it is there but refused (either way listed as
    not analysed)."""
    if not (path / SUMMARY_FILE).is_file():
        return None, None
    try:
        return read_results_summary(path / SUMMARY_FILE), None
    except SummaryRefused as refused:
        return None, str(refused)


def _manifests(path: Path) -> list[Manifest | None]:
    """The run directories' manifests; None for one that cannot be read (a corrupt run)."""
    return [manifest_or_problem(child)[0] for child in sorted(_subdirs(path))
            if (child / MANIFEST_FILE).is_file()]


def recorded_when(path: Path, manifests: list[Manifest]) -> datetime:
    """When the results were recorded: the stamp in the directory's name (the controller's
    local time), else the first run's creation, else the directory's modification time. A
    name shaped like a stamp but naming no time (20261399-250000) is no stamp."""
    stamp = STAMP.match(path.name)
    if stamp:
        with contextlib.suppress(ValueError):
            return datetime.strptime(stamp.group(1), "%Y%m%d-%H%M%S")
    created = [m.created_at for m in manifests if m.created_at is not None]
    return datetime.fromtimestamp(min(created) if created else path.stat().st_mtime)


def recorded_at(path: Path) -> datetime:
    """`Entry.when` of the results directory `path` without reading its summary (nor its
    manifests, when its name holds the stamp): to order many before reading a few."""
    stamped = STAMP.match(path.name) is not None
    return recorded_when(path, [] if stamped else [m for m in _manifests(path) if m is not None])


def headline(run: RunSummary) -> Headline:
    """The figures a reader scans a catalog for: latency and receive rate; of a
    throughput-mode run (load saturation) its receive rate alone, the msg/s the system
    took (its saturation latency would read as latency beside the open-loop runs)."""
    load = run_load(run)
    latency = run.figures(Metric.LATENCY.summary_field) if load != Load.SATURATION else Figures()
    durability = run.durability.label if run.durability is not None else None
    return Headline(run_id=run.run_id, system=run.system, durability=durability,
                    status=run.status, load=str(load),
                    p50_us=latency.p50, p99_us=latency.p99, max_us=latency.max,
                    receive_rate=run.receive_rate,
                    receive_bytes_per_s=run.bytes_per_s("receive_rate"))


def catalog(root: Path) -> list[Entry]:
    """Every results directory under `root`, newest first."""
    entries = [entry_for(path) for path in find_results_dirs(root)]
    return sorted(entries, key=lambda entry: (entry.when, str(entry.path)), reverse=True)


def _statuses(statuses: Counter) -> str:
    """Status counts, best first (formats.status)."""
    return " ".join(f"[{STATUS_COLOUR.get(status, 'red')}]{count} {markup(status)}[/]"
                    for status, count in sorted(statuses.items(),
                                                key=lambda item: (rank(item[0]), item[0])))


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if value < 10_000 else f"{value:,.0f}"


def catalog_table(entries: list[Entry], root: Path) -> Table:
    """One section per results directory: its line (path, then scenario and date; status
    counts), then one indented line per run (its id names its system; its durability
    label beside it) with the headline figures. Narrow enough for an 80-column terminal:
    no vertical rules, one space between columns, nothing said twice."""
    table = Table(title=f"results under {markup(root)}", title_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1, 0, 0),
                  pad_edge=False)
    table.add_column("results / run", overflow="fold")
    table.add_column("status")
    for header in (*(f"{key} µs" for key in HEADLINE), "msg/s", "MB/s"):
        table.add_column(header, justify="right", no_wrap=True)
    for entry in entries:
        table.add_row(f"[bold]{markup(_relative(entry.path, root))}[/]\n"
                      f"[dim]{markup(entry.scenario)}, "
                      f"{entry.when.strftime('%Y-%m-%d %H:%M:%S')}[/]",
                      _statuses(entry.statuses),
                      end_section=entry.analysed and not entry.headlines)
        if not entry.analysed:
            table.add_row("  [yellow]not analysed[/] (command below)", end_section=True)
        for index, run in enumerate(entry.headlines):
            table.add_row(*_run_cells(run), end_section=index == len(entry.headlines) - 1)
    return table


def _run_cells(run: Headline) -> list[str]:
    status = run["status"] or "unknown"
    rate = _number(run["receive_rate"])
    saturated = run["load"] == Load.SATURATION
    durability = run["durability"]
    return [f"  {markup(run['run_id'])}"
            + (f" [dim]({markup(durability)})[/]" if durability is not None else "")
            + (" [dim](rate: max)[/]" if saturated else ""),
            f"[{STATUS_COLOUR.get(status, 'red')}]{markup(status)}[/]",
            *(_number(value) for value in (run["p50_us"], run["p99_us"], run["max_us"])),
            f"[bold]{rate}[/]" if saturated else rate,
            megabytes_text(run["receive_bytes_per_s"])]


def _relative(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path != root else str(path)


def print_catalog(entries: list[Entry], root: Path, console: Console) -> None:
    if not entries:
        console.print(f"no results under {printable(root)}", markup=False, highlight=False)
        return
    console.print(catalog_table(entries, root))
    for entry in entries:
        if entry.refused is not None:
            console.print(printable(entry.refused), markup=False, highlight=False,
                          soft_wrap=True)
        if not entry.analysed:  # one line each, whole, to copy
            console.print(f"not analysed: run `{printable(analyse_hint(entry.path))}`",
                          markup=False, highlight=False, soft_wrap=True)
