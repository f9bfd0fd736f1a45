"""A backlog run as the manifest plans it (workload `backlog:`; docs/design.md, "Backlog
build and drain"); the summary's figures of it are formats.summary.BacklogFigures.

The plan is instants every agent knew before the start: consumers read nothing from the
start instant until `release_ns`, and the drain is watched until `drain_within_ns` after
it. The figures come from the records alone (spark_jobs.backlog_pass): the backlog built
is what was sent before the release, and it is gone when what every consumer still has to
receive of what was sent falls to DRAINED_SHARE of it.
"""

from __future__ import annotations

from pydantic import Field

from sixnines.formats.document import Document

#: The backlog is gone once what a consumer still has to receive of what was sent is at
#: most this share of the backlog built (at least one message): a live system always has
#: some messages in flight, and its backlog must not wait for none.
DRAINED_SHARE = 0.01


class BacklogPlan(Document):
    """The workload's `backlog`, resolved for the run (manifest `workload.backlog`)."""

    build: str
    """The build as the scenario gave it: "N messages", "NB" (bytes) or "Nns" (time)."""
    release_ns: int = Field(ge=0)
    """When consumers start reading, ns from the start instant (the warm-up's start)."""
    drain_within_ns: int = Field(gt=0)
    """How long after the release the drain is watched."""
