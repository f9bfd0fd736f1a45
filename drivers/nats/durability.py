"""What NATS keeps of a message: core NATS nothing (a message reaches the subscribers
connected when it is published: at most once); JetStream stores every publish in a stream
(in memory or in files, on R servers) and acknowledges it to the publisher once stored.
The server reports a stream's storage and replicas in its stream info."""

from __future__ import annotations

from collections.abc import Mapping

from sixnines.drivers.nats.options import NatsOptions
from sixnines.formats.durability import Setting

#: Why core NATS is not asked: there is nothing stored to ask about.
CORE = "core NATS stores nothing: a message reaches the subscribers connected when it is " \
       "published (at most once)"


def asked(options: NatsOptions) -> dict[str, Setting]:
    """core; or JetStream with the storage and replicas of a stream the driver creates,
    publishes acknowledged once stored, and consumers that acknowledge nothing (ack
    policy none: the run counts what arrives, the stream does not redeliver)."""
    if options.mode == "core":
        return {"mode": "core"}
    return {"mode": "jetstream", "storage": options.storage, "replicas": options.replicas,
            "publish_acks": True, "ack_policy": "none"}


def of_stream(config) -> dict[str, Setting]:
    """What a stream's configuration (nats-py's StreamConfig) says of durability."""
    storage = config.storage
    return {"mode": "jetstream", "storage": str(getattr(storage, "value", storage)),
            "replicas": config.num_replicas, "publish_acks": not config.no_ack}


def label(settings: Mapping[str, Setting]) -> str:
    """"core"; "jetstream, <storage>, R<replicas>", and "no publish acks" when the stream
    acknowledges no publish."""
    if settings.get("mode") == "core":
        return "core"
    parts = ["jetstream", str(settings.get("storage")), f"R{settings.get('replicas')}"]
    if settings.get("publish_acks") is False:
        parts.append("no publish acks")
    return ", ".join(parts)
