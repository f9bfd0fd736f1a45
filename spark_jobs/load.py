"""What the analysis says of a run's load besides its figures (the loads and what each
measures: formats.load)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sixnines.formats.load import load_of
from sixnines.formats.vocabulary import Load


def saturation_warnings(counts: dict[str, int], params: Mapping[str, Any]) -> list[str]:
    """Throughput mode ends honestly: say when the time cap (`duration`) stopped the senders
    before every message went out, or when the warm-up took every message."""
    if load_of(params) != Load.SATURATION:
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
