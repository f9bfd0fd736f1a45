"""`compare --junit`: a comparison as the checks a CI server shows (orchestrator.results.junit).

One test suite per matched case (system × swept parameters), one test case per thing
checked: every latency percentile and the max, send and receive rate, the status, and
lost, unknown and duplicated messages; with the same steps, each step's latency and
receive rate; with a backlog, its drain rate, its time to drain and whether it drained. A
regression fails its case with the evidence (A, B, the change, the tolerance and why); a
figure not comparable, or of runs that are not
the same experiment, is skipped, saying why; the rest pass (an improvement too). A run of
A that B lacks fails a case of its own, and so do judged results that cannot be judged
(compare.judged_run_broken).

Jenkins shows a classname `a.b` as package `a`, class `b`: the classname is
`<system>.<case>`, with any dot inside either written `_` so it cannot split them.
"""

from __future__ import annotations

from sixnines.orchestrator.results.compare import (
    ABSOLUTE_FLOOR_US,
    ACCOUNTING,
    DRAIN_RATE,
    MIN_TAIL_SAMPLES,
    NOT_DRAINED,
    NOT_SAME,
    ComparedFigure,
    Comparison,
    Pair,
    finding_of,
    label,
    unit,
)
from sixnines.orchestrator.results.junit import CaseOutcome, Check
from sixnines.orchestrator.results.junit import classname as junit_classname

#: The suite of what concerns the comparison as a whole.
WHOLE = "compare"
OUTCOMES = {"regression": CaseOutcome.FAILED, "not comparable": CaseOutcome.SKIPPED,
            NOT_SAME: CaseOutcome.SKIPPED}


def comparison_checks(comparison: Comparison, broken: str | None) -> list[Check]:
    """Every check of `comparison`; `broken`: why B cannot be judged, if it cannot."""
    checks = [Check(WHOLE, "judged results usable", WHOLE,
                    CaseOutcome.FAILED if broken else CaseOutcome.PASSED,
                    f"{comparison.b}: {broken}" if broken else "")]
    for pair in comparison.pairs:
        checks += _pair_checks(comparison, pair)
    for run in comparison.only_in_a:
        checks.append(Check(WHOLE, f"{run['system']} {run['run_id']} present in B", WHOLE,
                            CaseOutcome.FAILED, f"run {run['run_id']} ({run['system']}) of A has "
                            "no match in B: coverage lost"))
    return checks


def _case(pair: Pair) -> str:
    return " ".join(f"{name}={value}" for name, value in pair.match.items())


def _pair_checks(comparison: Comparison, pair: Pair) -> list[Check]:
    case = _case(pair)
    suite = f"{pair.system} {case}".strip()
    classname = junit_classname(str(pair.system), case)
    sides = (f"run {pair.run_a} ({pair.status_a}) of {_reference(comparison)}",
             f"run {pair.run_b} ({pair.status_b}) of {comparison.b}")
    checks = [_figure_check(suite, classname, figure, _rule(comparison), sides, pair.differs)
              for figure in pair.figures]
    backlog = any(figure.metric == DRAIN_RATE for figure in pair.figures)
    for name in ("status", *ACCOUNTING, *([NOT_DRAINED] if backlog else [])):
        finding = finding_of(pair, name)
        checks.append(Check(suite, name, classname,
                            CaseOutcome.FAILED if finding else CaseOutcome.PASSED, finding or "",
                            f"{finding}: {_WHY[name]}\nA: {sides[0]}\nB: {sides[1]}"
                            if finding else ""))
    return checks


_WHY = {"status": "a worse status (ok, partial, failed, corrupt) is a regression",
        NOT_DRAINED: "a backlog drained within its bound in A and not in B is a regression",
        **{name: "every message must be accounted for: any increase is a regression"
           for name in ACCOUNTING}}


def _reference(comparison: Comparison) -> str:
    if comparison.baseline_nights:
        return (f"{comparison.a}, pooled from the last {len(comparison.baseline_nights)} "
                f"passing night(s): {', '.join(comparison.baseline_nights)}")
    return comparison.a


def _rule(comparison: Comparison) -> tuple[str, float]:
    """(whose bands make the tolerance, the relative floor) in words and figures."""
    bands = ("the nights' band and B's sampling band" if comparison.baseline_nights
             else "A's and B's sampling bands")
    return bands, comparison.threshold_pct


def _figure_check(suite: str, classname: str, figure: ComparedFigure, rule: tuple[str, float],
                  sides: tuple[str, str], differs: list[str]) -> Check:
    """The figure's case; its message the evidence in one line, its details a line each;
    `differs`: what makes the runs another experiment."""
    evidence = {"A": _value(figure.a, figure), "B": _value(figure.b, figure),
                "change": _percent(figure.change_pct, "+.1f"),
                "tolerance": _percent(figure.tolerance_pct, ".0f")}
    why = _why(figure, *rule, differs)
    shown = ", ".join(f"{name} {value}" for name, value in evidence.items() if value)
    message = f"{label(figure)} {figure.verdict}: {shown}: {why}"
    evidence["A"] += f", {sides[0]}"
    evidence["B"] += f", {sides[1]}"
    details = [f"{name}: {value}" for name, value in evidence.items() if value]
    return Check(suite, label(figure), classname, OUTCOMES.get(figure.verdict, CaseOutcome.PASSED),
                 message, "\n".join([message, *details, f"why: {why}"]))


def _why(figure: ComparedFigure, bands: str, threshold_pct: float, differs: list[str]) -> str:
    latency = unit(figure) == "µs"
    if figure.verdict == NOT_SAME:
        return f"the runs' workloads or durability differ ({'; '.join(differs)}): shown, " \
               "never judged"
    if figure.verdict == "not comparable":
        if figure.a is None or figure.b is None or figure.change_pct is None:
            return "no figure in A or B"
        if figure.key == "max":
            return "nothing lies above the max: shown, never judged"
        needed = MIN_TAIL_SAMPLES / (1 - float(figure.key[1:]) / 100)
        return (f"fewer than {MIN_TAIL_SAMPLES} samples above {figure.key} in A or B "
                f"(a run needs {needed:,.0f})")
    if not latency:
        direction = "fell" if (figure.change_pct or 0) < 0 else "rose"
        return (f"{direction} by {'more' if figure.verdict != 'same' else 'no more'} than "
                f"the {threshold_pct:g}% floor")
    if figure.verdict == "same":
        return (f"within the tolerance ({bands} in quadrature, at least {threshold_pct:g}%) "
                f"or the {ABSOLUTE_FLOOR_US:g} µs floor")
    direction = "above" if figure.verdict == "regression" else "below"
    return (f"B {direction} A by more than the tolerance ({bands} in quadrature, at least "
            f"{threshold_pct:g}%) and by more than {ABSOLUTE_FLOOR_US:g} µs")


def _value(value: float | None, figure: ComparedFigure) -> str:
    return "none" if value is None else f"{value:,.1f} {unit(figure)}"


def _percent(value: float | None, spec: str) -> str:
    """The percentage, or nothing (not shown) when there is none."""
    return "" if value is None else f"{value:{spec}}%"

