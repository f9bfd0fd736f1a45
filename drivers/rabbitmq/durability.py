"""What RabbitMQ keeps of a message: with `persistent`, messages are published with
delivery_mode 2 to durable queues (written to disk), else they live in memory; quorum and
stream queues are durable and keep every message on disk (the options refuse them
without `persistent`); with `confirms`, the broker acknowledges each publish once it has
taken responsibility for it.

AMQP 0-9-1 reports none of a queue's properties back (a declare answers with counts
only), but a declare of an existing queue with an argument that differs is refused with
PRECONDITION_FAILED naming the queue's own value ("inequivalent arg 'x-queue-type' for
queue 'q' in vhost '/': received 'classic' but current is 'quorum'"). So the broker is
asked that way: a declare that differs in `durable`, then, if needed, one that differs in
x-queue-type, each on a channel of its own (a refusal closes it) and only once a passive
declare found the queue, so a probe never creates one. A probe the broker takes means its
values are the queue's. Queues exclusive to another connection (a classic queue bound to a
fanout exchange) cannot be asked: the label then says what was asked."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pika.exceptions as errors

from sixnines.drivers.rabbitmq.options import CLASSIC, RabbitmqOptions
from sixnines.formats.durability import Setting

#: The broker's refusal of an inequivalent declare: the argument, then its current value
#: ('quorum', the value 'quorum' of type 'longstr', or none).
INEQUIVALENT = re.compile(r"inequivalent arg '([^']+)'.* current is "
                          r"(?:none|(?:the value )?'([^']*)')")


def asked(options: RabbitmqOptions) -> dict[str, Setting]:
    """Publisher confirms, the queue type and mode the driver declares, queues' durability
    and persistence (delivery_mode 2 on messages, durable queues)."""
    return {"confirms": options.confirms, "x-queue-type": options.queue_type,
            "x-queue-mode": None, "durable": options.persistent,
            "persistent": options.persistent, "delivery_mode": 2 if options.persistent else 1,
            "auto_ack": options.auto_ack}


def probe_type(asked_type: str) -> str:
    """An x-queue-type other than the one asked: a declare with it is refused, naming the
    queue's own, unless it is the queue's."""
    return "quorum" if asked_type == CLASSIC else CLASSIC


def refused(text: str) -> tuple[str, str]:
    """The argument a PRECONDITION_FAILED reply text names and the queue's current value
    of it ("none": the queue has none, e.g. no x-queue-type, so the broker's default
    type); ValueError when the text names no inequivalent argument."""
    found = INEQUIVALENT.search(text)
    if found is None:
        raise ValueError(f"the broker's refusal names no inequivalent argument ({text})")
    return found.group(1), found.group(2) or "none"


def read_back(connection, queue: str, options: RabbitmqOptions) -> dict[str, Setting]:
    """The existing `queue`'s `durable` and x-queue-type, over a pika connection, from
    declares that differ from what `options` ask: first in `durable` (which the broker
    checks first: a refusal naming x-queue-type means the durability declared is the
    queue's), then, the durability known, in x-queue-type. ValueError when a refusal
    says something else."""
    durable = not options.persistent
    found = _probe(connection, queue, durable, options.queue_type)
    if found is None:  # both as declared
        return {"durable": durable, "x-queue-type": options.queue_type}
    if found[0] == "x-queue-type":
        return {"durable": durable, "x-queue-type": found[1]}
    durable = found[1] == "true"
    other = probe_type(options.queue_type)
    found = _probe(connection, queue, durable, other)
    if found is not None and found[0] != "x-queue-type":
        raise ValueError(f"queue {queue!r}: the broker refused a declare of its own "
                         f"durability over {found[0]!r}")
    return {"durable": durable, "x-queue-type": other if found is None else found[1]}


def _probe(connection, queue: str, durable: bool, queue_type: str) -> tuple[str, str] | None:
    """Declare the existing `queue` so, on a channel of its own: None when the broker
    takes it (the queue is so), else what its refusal names (`refused`)."""
    channel = connection.channel()
    try:
        channel.queue_declare(queue, durable=durable, arguments={"x-queue-type": queue_type})
    except errors.ChannelClosedByBroker as exc:
        return refused(exc.reply_text)
    channel.close()
    return None


def label(settings: Mapping[str, Setting]) -> str:
    """"confirms" or "no confirms", the queue type, then "persistent" (messages with
    delivery_mode 2 in a durable queue) or "transient"."""
    kept = settings.get("persistent") and settings.get("durable", True)
    return ", ".join(["confirms" if settings.get("confirms") else "no confirms",
                      str(settings.get("x-queue-type")),
                      "persistent" if kept else "transient"])
