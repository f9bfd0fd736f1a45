"""A run's own broker resources (docs/design.md, "Every run its own topic").

Each driver option naming a topic, stream, queue or subject (`Driver.resource_options`)
that the scenario leaves out gets a name of this run's, so every run of a sweep starts
clean: the agents create what the run needs under it as they connect (a Kafka topic with a
partition per connection, a JetStream stream, RabbitMQ exchanges), and the controller
deletes it once the agents are gone, unless the system says `keep_resources: true`. An
option the scenario names is the user's: used as it is, checked by the agents before the
first message, never deleted. The names and what became of them are in the manifest
(`resources`); `driver_options` there says "(per run)" for those options, so the runs of
one system still show one setup.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace

from sixnines.drivers.base import Credential, DriverError
from sixnines.formats.manifest import Resources
from sixnines.orchestrator.scenario.matrix import RunPoint

logger = logging.getLogger(__name__)

#: Longest parts of a name taken from the scenario and the run id: names stay short enough
#: for every broker with a lane's or a round trip's suffix added (Kafka takes 249 bytes,
#: RabbitMQ 255, a JetStream stream 255; ours are at most 64).
SCENARIO_PART, RUN_PART = 24, 32
SUFFIX_BYTES = 3  # six hex digits: two runs of one id in one second do not collide
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")  # what a Kafka topic, a stream or subject token refuse


def resource_name(scenario: str, run_id: str, suffix: str | None = None) -> str:
    """`<scenario>-<run id>-<suffix>`, each part cut to its length, in the characters every
    broker takes (letters, digits, '-' and '_': a '.' would split a NATS subject, and is
    what lanes and round trips append)."""
    parts = (_safe(scenario)[:SCENARIO_PART], _safe(run_id)[:RUN_PART],
             suffix or secrets.token_hex(SUFFIX_BYTES))
    return "-".join(part for part in parts if part)


def _safe(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-")


@dataclass(frozen=True)
class RunResources:
    """The run's point as its agents get it (the run's names in its driver options), and
    the manifest's record of those names."""

    point: RunPoint
    record: Resources | None  # None: the driver names nothing on a broker

    @classmethod
    def of(cls, point: RunPoint, scenario: str) -> RunResources:
        system = point.system
        driver, options = system.driver_class(), system.checked_options
        left_out = [name for name in driver.resource_options(options)
                    if name not in options.model_fields_set]
        if not left_out:
            return cls(point, None)
        named = dict.fromkeys(left_out, resource_name(scenario, point.run_id))
        own = driver.Options.model_validate({**options.model_dump(), **named})
        return cls(replace(point, system=system.model_copy(update={"options": own})),
                   Resources(named=named, kept=system.keep_resources))

    def remove(self, address: str, credential: Credential | None,
               largest_size: Callable[[], int]) -> None:
        """Delete the run's resources from the broker at `address`, recording what was
        deleted, or why not, in `record`: a failure is a note, never silent.
        `largest_size`: the run's message size (a distribution's largest), asked here, as
        its file of sizes may be the very thing that failed the run."""
        record = self.record
        assert record is not None
        system = self.point.system
        try:
            driver = system.driver_at(address, credential)
            record.removed = driver.remove_resources(
                set(record.named), self.point.workload.driver_view(largest_size()))
        except Exception as exc:  # a third-party driver's too: the run is recorded still
            self.leave(str(exc) if isinstance(exc, DriverError)
                       else f"{type(exc).__name__}: {exc}")

    def leave(self, why: str) -> None:
        """Record (and say) that the run's resources stay on the broker, and why."""
        record = self.record
        assert record is not None
        note = f"not deleted: {', '.join(sorted(set(record.named.values())))} ({why})"
        record.notes = [*record.notes, note]  # assigned: a document writes what is set
        logger.warning("%s: %s", self.point.run_id, note)
