"""What decides whether Kafka keeps an acknowledged record: the producer's `acks` (0: none
asked, 1: the leader's log, all: every in-sync replica's) and idempotence, the topic's
replication factor and `min.insync.replicas` (with acks=all, how many replicas must have
it), and how often the broker flushes its log to disk (`flush.messages`, `flush.ms`:
Kafka's default leaves it to the OS and relies on replicas instead). The broker reports
the topic's with DescribeConfigs and its metadata."""

from __future__ import annotations

from collections.abc import Mapping

from sixnines.drivers.kafka.options import KafkaOptions
from sixnines.formats.durability import Setting

#: The topic settings read back (DescribeConfigs), besides the replication factor.
TOPIC_CONFIGS = ("min.insync.replicas", "flush.messages", "flush.ms",
                 "unclean.leader.election.enable")
#: Kafka's "never" for a flush interval (Long.MAX_VALUE): the OS flushes when it will.
NEVER = str(2**63 - 1)


def asked(options: KafkaOptions) -> dict[str, Setting]:
    """acks and the replication factor of topics the driver creates, as the options say;
    idempotence off, both clients' default, which the driver keeps."""
    return {"acks": str(options.acks), "enable.idempotence": False,
            "replication.factor": options.replication}


def label(settings: Mapping[str, Setting]) -> str:
    """"acks=A, rf=N", then "min.isr=M" with acks=all (it counts only then),
    "idempotent" when on, and "flush every N msgs" / "flush every N ms" when the broker
    flushes more often than Kafka's default (never: the OS decides)."""
    parts = [f"acks={settings.get('acks')}", f"rf={settings.get('replication.factor')}"]
    if settings.get("acks") == "all" and settings.get("min.insync.replicas") is not None:
        parts.append(f"min.isr={settings['min.insync.replicas']}")
    if settings.get("enable.idempotence"):
        parts.append("idempotent")
    for name, unit in (("flush.messages", "msgs"), ("flush.ms", "ms")):
        value = settings.get(name)
        if value is not None and str(value) != NEVER:
            parts.append(f"flush every {value} {unit}")
    return ", ".join(parts)
