"""What RabbitMQ keeps of a message: with `persistent`, messages are published with
delivery_mode 2 to durable queues (written to disk), else they live in memory; with
`confirms`, the broker acknowledges each publish once it has taken responsibility for it.
The driver declares classic queues (no x-queue-type, no x-queue-mode). AMQP 0-9-1 reports
none of a queue's properties back (a declare answers with counts only), so the label says
what the driver asked for."""

from __future__ import annotations

from collections.abc import Mapping

from sixnines.drivers.rabbitmq.options import RabbitmqOptions
from sixnines.formats.durability import Setting

#: Why the broker is not asked.
UNASKED = "AMQP reports no queue's type or durability back: the label says what the " \
          "driver declared"


def asked(options: RabbitmqOptions) -> dict[str, Setting]:
    """Publisher confirms, the queue type and mode the driver declares, and persistence
    (delivery_mode 2 on messages, durable queues)."""
    return {"confirms": options.confirms, "x-queue-type": "classic", "x-queue-mode": None,
            "persistent": options.persistent, "delivery_mode": 2 if options.persistent else 1,
            "auto_ack": options.auto_ack}


def label(settings: Mapping[str, Setting]) -> str:
    """"confirms" or "no confirms", the queue type, then "persistent" or "transient"."""
    return ", ".join(["confirms" if settings.get("confirms") else "no confirms",
                      str(settings.get("x-queue-type")),
                      "persistent" if settings.get("persistent") else "transient"])
