"""The end of the console output of `sixnines run` and `sixnines report`, after each run's
own table: what each system ran with (orchestrator.results.setup), then one table side by
side, a line per system and case (a repeated case as its repeats merged), with its
headline latency, rate, loss and a one-word verdict, so systems compare at a glance.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from sixnines.formats.durability import labelled
from sixnines.formats.lag import LagCause, behind_schedule, lag_cause
from sixnines.formats.load import latency_of, saturation
from sixnines.formats.status import OK
from sixnines.formats.summary import RepeatedCase, RunSummary
from sixnines.formats.wording import megabytes_text, value_text
from sixnines.orchestrator.results.console_tables import STATUS_COLOUR, us_text
from sixnines.orchestrator.results.setup import LABELS, system_setups
from sixnines.orchestrator.terminal import markup

SIDE_BY_SIDE_KEYS = ("p50", "p99", "p99.9", "max")
#: The verdicts besides a status that is not ok, worst first, and what each means.
LOSSY, SATURATED, BEHIND = "lossy", "saturated", "behind"
VERDICTS = {
    LOSSY: "messages lost",
    SATURATED: "the system pushed back: the senders' calls blocked, latency includes it",
    BEHIND: "the senders fell behind their schedule (generator, machine or placement: "
            "see the run's warning), latency includes their lag",
}
VERDICT_COLOUR = {OK: "green", LOSSY: "red", SATURATED: "yellow", BEHIND: "yellow"}


def verdict(summary: RunSummary) -> str:
    """One word for a run: its status when not ok (partial, failed, corrupt), else lossy
    (messages lost), saturated (the senders fell behind because the system pushed back:
    formats.lag), behind (they fell behind for another reason), or ok."""
    if summary.status != OK:
        return str(summary.status)
    if summary.lost:
        return LOSSY
    if not saturation(summary) and behind_schedule(summary):
        return SATURATED if lag_cause(summary) == LagCause.SYSTEM else BEHIND
    return OK


def swept(summaries: Sequence[RunSummary]) -> list[str]:
    """Parameters with more than one value across the runs, in scenario order."""
    values: dict[str, list] = defaultdict(list)
    for summary in summaries:
        for key, value in summary.params.items():
            values[key].append(value)
    return [key for key, seen in values.items() if len({repr(v) for v in seen}) > 1]


def shown_runs(summaries: Sequence[RunSummary], cases: Sequence[RepeatedCase]
               ) -> list[RunSummary]:
    """A line each: the runs of no repeated case, then each repeated case merged."""
    return [*(run for run in summaries if run.repeat is None),
            *(case.merged for case in cases)]


def side_by_side(summaries: Sequence[RunSummary], cases: Sequence[RepeatedCase] = ()
                 ) -> Table:
    """Every system and case on one line: latency p50 … max (saturation latency in
    throughput mode, marked), the rate received in msg/s and MB/s, messages lost, the
    verdict. The case is the values of the parameters that vary between the lines."""
    runs = shown_runs(summaries, cases)
    varying = [name for name in swept(runs) if name != "seed"]
    table = Table(title="side by side" + (f" (case: {', '.join(varying)})" if varying else ""),
                  title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  padding=(0, 1, 0, 0), pad_edge=False)
    table.add_column("system", overflow="fold")
    if varying:
        table.add_column("case", overflow="fold")
    for key in (*SIDE_BY_SIDE_KEYS, "msg/s", "MB/s", "lost"):
        table.add_column(f"{key} µs" if key == "p50" else key, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for run in runs:
        figures = run.figures(latency_of(run)[0])
        word = verdict(run)
        colour = VERDICT_COLOUR.get(word) or STATUS_COLOUR.get(word, "red")
        case = ", ".join(value_text(name, run.params.get(name)) for name in varying)
        table.add_row(markup(labelled(run.system, run.durability)),
                      *([markup(case)] if varying else []),
                      *(us_text(figures.figure(key)) for key in SIDE_BY_SIDE_KEYS),
                      "-" if run.receive_rate is None else f"{run.receive_rate:,.0f}",
                      megabytes_text(run.bytes_per_s("receive_rate")),
                      "-" if run.lost is None else f"{run.lost:,}",
                      f"[{colour}]{markup(word)}[/]"
                      + (" [dim](rate: max)[/]" if saturation(run) else ""))
    words = sorted({verdict(run) for run in runs} & set(VERDICTS))
    table.caption = "\n".join([
        "latency µs from the intended send time (rate: max: saturation latency); msg/s "
        "and MB/s received (1 MB = 1,048,576 bytes)",
        *(f"{word}: {VERDICTS[word]}" for word in words)])
    table.caption_justify = "left"
    return table


def print_setups(results_dir: Path, summaries: Sequence[RunSummary], console: Console
                 ) -> None:
    """Each system's setup, a fact a line (from its runs' manifests)."""
    for setup in system_setups(results_dir, summaries):
        console.print(f"[bold]{markup(setup.system)}[/] ran with:", highlight=False)
        for label in LABELS:
            if label in setup.facts:
                console.print(f"  {label}: {markup(setup.facts[label])}", highlight=False,
                              soft_wrap=True)  # a line each, as the warnings above
        if setup.unread:
            unread = markup(", ".join(setup.unread))
            console.print(f"  [yellow]! no readable manifest for {unread}[/]", highlight=False)


def print_overview(results_dir: Path, summaries: Sequence[RunSummary],
                   cases: Sequence[RepeatedCase], console: Console) -> None:
    """What the systems ran with, then, for more than one line, the side-by-side table."""
    print_setups(results_dir, summaries, console)
    if len(shown_runs(summaries, cases)) > 1:
        console.print(side_by_side(summaries, cases))
