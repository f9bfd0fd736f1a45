"""The two kinds of load a run can put on a system, and what each one measures.

open-loop: senders follow a schedule (`rate: 2000`); latency is measured from the intended
send time, with service time and send lag beside it (docs/design.md rules 1-2).

saturation: throughput mode (`rate: max`, a message count): no schedule, senders go as fast
as the system takes. A message's intended time is its send time, so the only latency is
receive − send under saturation: `saturation_latency`, never reported as, plotted with or
compared against open-loop latency. Its headline is throughput.
"""

from __future__ import annotations

from typing import Any

from sixnines.formats.vocabulary import MAX_RATE, Load, Role

OPEN_LOOP, SATURATION = Load.OPEN_LOOP, Load.SATURATION

#: The metrics each load measures; the other metrics of a summary stay empty (count 0).
METRICS = {
    OPEN_LOOP: ("latency", "service_time", "send_lag"),
    SATURATION: ("saturation_latency",),
}
#: The latency of each load: its histogram, humps and nines.
HEADLINE = {OPEN_LOOP: "latency", SATURATION: "saturation_latency"}
#: The hlog tags an agent of each role writes (agents.roles `_describe`).
TAGS_BY_ROLE = {
    OPEN_LOOP: {Role.PRODUCER: ("send_lag",), Role.CONSUMER: ("latency", "service_time"),
                Role.REQUESTER: ("latency", "service_time", "send_lag")},
    SATURATION: {Role.PRODUCER: (), Role.CONSUMER: ("saturation_latency",),
                 Role.REQUESTER: ("saturation_latency",)},
}


def load_of(params: dict[str, Any]) -> str:
    """The load of a run from its workload parameters (the manifest's or summary's `params`)."""
    return SATURATION if params.get("rate") == MAX_RATE else OPEN_LOOP


def saturation_warnings(counts: dict[str, int], params: dict[str, Any]) -> list[str]:
    """Throughput mode ends honestly: say when the time cap (`duration`) stopped the senders
    before every message went out, or when the warm-up took every message."""
    if load_of(params) != SATURATION:
        return []
    warnings = []
    planned, sent = params.get("messages"), counts["sent"] + counts["warmup_sent"]
    if isinstance(planned, int) and sent < planned:
        cap_s = int(params.get("duration_ns") or 0) / 1e9
        warnings.append(f"time cap reached: {sent:,} of the {planned:,} messages sent "
                        f"(warm-up + duration {cap_s:,.3g} s); rates are over what was sent")
    if sent and not counts["sent"]:
        warnings.append("every message was sent within the warm-up: nothing measured "
                        "(shorten `warmup` or send more `messages`)")
    return warnings
