"""RabbitMQ's durability rules on values alone: what a broker's refusal of an inequivalent
declare says of the queue (texts as RabbitMQ 3.10 words them), the label, and the queue
types the options refuse without what they need (the broker itself: tests/integration/
test_rabbitmq.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sixnines.drivers.rabbitmq.durability import asked, label, refused
from sixnines.drivers.rabbitmq.options import RabbitmqOptions

PREFIX = "PRECONDITION_FAILED - inequivalent arg "


@pytest.mark.parametrize("text, found", [
    (PREFIX + "'x-queue-type' for queue 'q' in vhost '/': received 'classic' but current "
     "is 'quorum'", ("x-queue-type", "quorum")),
    (PREFIX + "'x-queue-type' for queue 'q' in vhost '/': received none but current is "
     "the value 'stream' of type 'longstr'", ("x-queue-type", "stream")),
    (PREFIX + "'x-queue-type' for queue 'q' in vhost '/': received the value 'quorum' of "
     "type 'longstr' but current is none", ("x-queue-type", "none")),
    (PREFIX + "'durable' for queue 'q' in vhost '/': received 'false' but current is "
     "'true'", ("durable", "true")),
])
def test_a_refusal_names_the_argument_and_the_queues_own_value(text, found):
    assert refused(text) == found


def test_a_refusal_of_something_else_is_not_read_as_a_value():
    with pytest.raises(ValueError, match="names no inequivalent argument"):
        refused("PRECONDITION_FAILED - invalid property 'non-durable' for queue 'q'")


def test_the_label_says_persistent_only_for_delivery_mode_2_into_a_durable_queue():
    settings = asked(RabbitmqOptions(queue_type="quorum", persistent=True, confirms=True))
    assert label(settings) == "confirms, quorum, persistent"
    assert label({**settings, "durable": False}) == "confirms, quorum, transient"
    assert label(asked(RabbitmqOptions())) == "no confirms, classic, transient"


@pytest.mark.parametrize("options, refusal", [
    ({"queue_type": "quorum"}, "queue_type quorum needs persistent: true"),
    ({"queue_type": "stream"}, "queue_type stream needs persistent: true"),
    ({"queue_type": "stream", "persistent": True, "auto_ack": True},
     "stream needs acknowledgements and a prefetch"),
    ({"queue_type": "stream", "persistent": True, "prefetch": 0},
     "stream needs acknowledgements and a prefetch"),
])
def test_queue_types_are_refused_without_what_they_need(options, refusal):
    with pytest.raises(ValidationError, match=refusal):
        RabbitmqOptions(**options)
    RabbitmqOptions(queue_type="quorum", persistent=True, auto_ack=True, prefetch=0)
