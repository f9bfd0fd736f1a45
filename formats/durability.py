"""What durability a run was measured with: the settings that decide whether an
acknowledged message survives a crash, as the driver asked for them and as the broker
reported running with them, and the short label every table shows next to the system's
name (`kafka (acks=all, rf=3)`).

A latency figure means little without it: Kafka with acks=1 and with acks=all, Redis with
and without an fsync every second, measure different systems. The driver writes it
(drivers.base.Driver.durability), the manifest and summary.json carry it, and `compare`
treats two runs whose labels differ as different experiments.
"""

from __future__ import annotations

from pydantic import Field

from sixnines.formats.document import Document

#: One setting's value as recorded: what the broker or the client spells it as.
Setting = str | int | bool | None


class Durability(Document):
    """The durability a run was measured with (since manifest schema_version 9, summary
    schema_version 7)."""

    label: str = Field(min_length=1)
    """The short form shown after the system's name (docs/results.md, "Durability"):
    read-back settings where the broker was asked, else those asked for
    ("acks=all, rf=3", "aof=everysec", "confirms, classic, persistent", "core", "none")."""
    asked: dict[str, Setting] = Field(default_factory=dict)
    """The settings the driver's options ask for (and client defaults it relies on)."""
    actual: dict[str, Setting] | None = None
    """The settings the broker reported running with, read over a short-lived admin
    connection once the agents had set up; None when the broker was not asked (`note`
    says why)."""
    note: str | None = None
    """What the label cannot say: why the broker was not asked, or what it means."""


def labelled(system: str | None, durability: Durability | None) -> str:
    """The system's name as tables show it: "kafka (acks=all, rf=3)"; the name alone for a
    run recorded without durability."""
    name = system or "?"
    return f"{name} ({durability.label})" if durability is not None else name
