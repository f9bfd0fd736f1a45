"""Console tables (orchestrator/results/console_tables.py)."""

from __future__ import annotations

import io

from rich.console import Console

from sixnines.formats.summary import RunSummary
from sixnines.orchestrator.results.console_tables import print_tables, run_table, supported


def test_a_percentile_needs_a_sample_above_it():
    assert supported("p99.99", 10_000)
    assert not supported("p99.999", 10_000)
    assert supported("p99.9999", 1_000_000)
    assert supported("max", 1)


FIGURES = {"p50": 70.0, "p90": 80.0, "p99": 150.0, "p99.9": 1400.0, "p99.99": 3000.0,
           "p99.999": 3500.0, "p99.9999": 3500.0, "max": 3500.0, "mean": 75.0, "count": 20_000}
SUMMARY = {"run_id": "01-tcp", "status": "ok", "sent": 20_000, "received": 20_000, "lost": 0,
           "duplicated": 0, "reordered": 0, "send_rate": 2000.0, "receive_rate": 2000.0,
           "latency_us": FIGURES, "service_time_us": FIGURES, "send_lag_us": FIGURES,
           "latency_pairs": {"same_clock": 20_000, "cross_clock": 0, "excluded": 0},
           "clock_bound_ns": None}


def rendered(summary: dict) -> str:
    out = io.StringIO()
    Console(file=out, width=160).print(run_table(RunSummary.model_validate(summary)))
    return out.getvalue()


def test_the_table_shows_every_figure_and_marks_unsupported_ones():
    text = rendered(SUMMARY)
    for header in ("p50", "p99.9999", "max", "count", "latency", "send lag"):
        assert header in text
    assert "3,500" in text and "20,000" in text
    assert "too few samples" in text
    assert "± clock" not in text  # every figure on one clock: nothing to bound


def test_cross_host_figures_carry_their_clock_bound():
    summary = {**SUMMARY, "clock_bound_ns": 48_000,
               "latency_pairs": {"same_clock": 12_000, "cross_clock": 8_000, "excluded": 0}}
    text = rendered(summary)
    lines = text.splitlines()
    header = [cell.strip() for cell in next(line for line in lines if "p50" in line).split("┃")]
    rows = {cells[1]: cells for cells in ([c.strip() for c in line.split("│")]
                                          for line in lines if line.startswith("│"))}
    bound = header.index("± clock")
    assert header[bound - 1] == "max"  # beside the percentiles
    assert rows["latency"][bound] == rows["service"][bound] == "48.0"
    assert rows["send lag"][bound] == ""  # one agent's clock: nothing to bound
    assert ("± clock: 8,000 deliveries timed across hosts, both ends put on the controller's "
            "clock; figures may be off by up to 48.0 µs") in " ".join(text.split())


def printed(summary: dict) -> str:
    out = io.StringIO()
    print_tables([RunSummary.model_validate(summary)], Console(file=out, width=100))
    return out.getvalue()


def test_a_corrupt_run_is_one_line_and_its_problems_unwrapped():
    """No figures to show, so no table; each problem (a long path) stays on one line."""
    problem = "/results/" + "x" * 120 + "/agents/consumer-0/messages.parquet: cut short"
    text = printed({"run_id": "01-tcp", "status": "corrupt", "problems": [problem]})
    assert text.splitlines() == ["01-tcp  corrupt: its files fail their checks, no figures",
                                 f"  ! {problem}"]


def test_deliveries_of_unknown_fate_are_shown_beside_the_losses():
    assert "lost 0  duplicated" in rendered(SUMMARY)  # nothing unknown: nothing said
    text = rendered({**SUMMARY, "status": "partial", "received": 10_000, "unknown": 20_000})
    assert "lost 0  unknown 20,000  duplicated 0" in text


def test_problems_are_red_warnings_yellow_and_facts_dim():
    """What asks for action stands out; a fact of every run (windows left out of the
    throughput figures) is there, dim, never an alarm."""
    fact = ("receiver throughput: 1,144 windows of 100 messages undefined (a stream's first "
            "read or batch, which has no time before it, or a span of 0 ns): left out")
    summary = {**SUMMARY, "problems": ["agent consumer-0 died"], "notes": [fact],
               "warnings": ["system pushed back: send lag p99 is 1,724,908 µs"]}
    out = io.StringIO()
    print_tables([RunSummary.model_validate(summary)],
                 Console(file=out, width=300, force_terminal=True, color_system="standard"))
    lines = {text: line for line in out.getvalue().splitlines()
             for text in ("consumer-0 died", "system pushed back", "windows of 100")
             if text in line}
    red, yellow, dim = "\x1b[31m", "\x1b[33m", "\x1b[2m"
    assert red in lines["consumer-0 died"]
    assert yellow in lines["system pushed back"] and red not in lines["system pushed back"]
    assert dim in lines["windows of 100"]
    assert red not in lines["windows of 100"] and yellow not in lines["windows of 100"]
    assert "!" not in lines["windows of 100"]



def test_a_run_with_faults_gets_a_fault_table_after_its_own():
    window = {"from_s": 0.0, "to_s": 1.0, "count": 1000, "p99_us": 150.0, "max_us": 200.0}
    fault = {"index": 0, "action": "pause", "target": "broker", "outcome": "done",
             "at_s": 1.5, "effective_s": 1.5, "end_s": 2.5, "before": window,
             "during": {**window, "p99_us": 990_000.0}, "after": window,
             "max_in_window_us": 1_000_100.0, "band_us": 1150.0, "recovered": True,
             "recovered_s": 0.03, "backlog": 998,
             "delivery": {"sent": 1000, "delivered": 1000, "lost": 0, "unknown": 0,
                          "duplicated": 0, "reordered": 0}}
    never = {**fault, "index": 1, "at_s": 3, "recovered": False, "recovered_s": None,
             "delivery": {**fault["delivery"], "lost": 7}}
    out = io.StringIO()
    print_tables([RunSummary.model_validate({**SUMMARY, "faults": [fault, never]})],
                 Console(file=out, width=200))
    text = out.getvalue()
    assert text.index("faults") > text.index("send lag")  # after the run's table
    row = next(line for line in text.splitlines() if " 1.5 " in line)
    for cell in ("pause", "broker", "150.0", "990,000", "1,000,100", "30 ms", "998"):
        assert cell in row
    assert "never" in next(line for line in text.splitlines() if " 3 " in line)
    assert "faults" not in rendered(SUMMARY)
