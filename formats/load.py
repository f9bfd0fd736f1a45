"""The two kinds of load a run can put on a system, what each measures, and which agent
writes which of its metrics.

open-loop: senders follow a schedule (`rate: 2000`); latency is measured from the intended
send time, with service time and send lag beside it (docs/design.md rules 1-2).

saturation: throughput mode (`rate: max`, a message count): no schedule, senders go as fast
as the system takes. A message's intended time is its send time, so the only latency is
receive − send under saturation: `saturation_latency`, never reported as, plotted with or
compared against open-loop latency. Its headline is throughput.
"""

from __future__ import annotations

from collections.abc import Mapping

from sixnines.formats.summary import RunSummary
from sixnines.formats.vocabulary import MAX_RATE, Load, Metric, Role

#: The metrics each load measures; the other metrics of a summary stay empty (count 0).
METRICS = {
    Load.OPEN_LOOP: (Metric.LATENCY, Metric.SERVICE_TIME, Metric.SEND_LAG),
    Load.SATURATION: (Metric.SATURATION_LATENCY,),
}
#: The latency of each load: its histogram, humps and nines.
HEADLINE = {Load.OPEN_LOOP: Metric.LATENCY, Load.SATURATION: Metric.SATURATION_LATENCY}
#: The hlog tags an agent of each role writes (agents.roles `sent_rows`, `received_rows`),
#: looked up by the role as a manifest or an hlog spells it.
TAGS_BY_ROLE: dict[Load, dict[str, tuple[Metric, ...]]] = {
    Load.OPEN_LOOP: {Role.PRODUCER: (Metric.SEND_LAG,),
                     Role.CONSUMER: (Metric.LATENCY, Metric.SERVICE_TIME),
                     Role.REQUESTER: (Metric.LATENCY, Metric.SERVICE_TIME, Metric.SEND_LAG)},
    Load.SATURATION: {Role.PRODUCER: (), Role.CONSUMER: (Metric.SATURATION_LATENCY,),
                      Role.REQUESTER: (Metric.SATURATION_LATENCY,)},
}
#: (summary field, label) of the latency each load measures, as reports show it.
LATENCY = {load: (metric.summary_field, metric.label) for load, metric in HEADLINE.items()}


def load_of(params: Mapping[str, object]) -> Load:
    """The load of a run from its workload parameters (the manifest's or summary's `params`)."""
    return Load.SATURATION if params.get("rate") == MAX_RATE else Load.OPEN_LOOP


def run_load(summary: RunSummary) -> Load:
    """The summary's `load`; a run the analysis never saw (failed) by its parameters."""
    return summary.load or load_of(summary.params)


def saturation(summary: RunSummary) -> bool:
    return run_load(summary) == Load.SATURATION


def latency_of(summary: RunSummary) -> tuple[str, str]:
    """(summary field, label) of the run's latency."""
    return LATENCY[run_load(summary)]
