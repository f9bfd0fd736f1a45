"""Kafka protocol: topics on a Kafka-compatible broker, through confluent-kafka or kafka-python.

One-way mode is fan-out without consumer-group rebalances: every receiver assigns itself
its lane's partitions (p with p % lane.count == lane.index, `Lane`), starting at the end
offsets it looked up when it was created, so every consumer gets every message, its
connections dividing them (`group: true` instead gives each receiver connection a consumer
group of its own, of which it reads the lane's share). A sender writes to partition
`connection_id % partitions`, so each sender's messages stay in order. A topic the driver
creates gets one partition per connection unless the `partitions` option says otherwise;
a lane that would read no partition is refused. A topic named in the scenario is used as
it is (created if missing); one left out is the run's own (`resource_options`), deleted with
its round-trip topics at the end.

Round trip: requests go to `<topic>.req`, replies to `<topic>.reply.<requester id>` (created
by the requester before it sends); the responder reads the requests topic and produces each
request, unchanged, to the reply topic named by the producer id in its header.

The clients live in drivers/kafka/confluent.py and drivers/kafka/kafka_python.py; both
are imported with this module, so a host without the `kafka` extra is refused when a
scenario is validated, as for every other system. Every figure measured here comes from
whatever Kafka-protocol broker the run used (the recipe's note says which): the driver
speaks the protocol, it does not make a broker Apache Kafka.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import ClassVar

from sixnines.drivers.base import (
    LENGTH_WORD,
    SOLE_LANE,
    Credential,
    Driver,
    DriverError,
    DriverOptions,
    Framing,
    Lane,
    LengthCutSender,
    WorkloadShape,
    split_address,
)
from sixnines.drivers.kafka import confluent, durability, kafka_python
from sixnines.drivers.kafka.options import KafkaOptions
from sixnines.drivers.kafka.wire import (
    MAX_MESSAGE_BYTES,
    created_partitions,
    lane_partitions,
    record_bytes,
    reply_prefix,
    requests_topic,
    run_topic,
)
from sixnines.formats.durability import Setting
from sixnines.formats.keys import NONE
from sixnines.formats.payload import HEADER_SIZE
from sixnines.formats.vocabulary import Mode

CONNECT_TIMEOUT_S = 5.0  # both clients retry forever by default: a run fails within this


class KafkaDriver(Driver):
    name = "kafka"
    Options: ClassVar[type[KafkaOptions]] = KafkaOptions
    options: KafkaOptions  # what Options validated
    needs_responder = True
    carries_keys = "the record key: the client's partitioner picks the partition from it"

    def __init__(self, address: str, options: KafkaOptions,
                 credential: Credential | None = None) -> None:
        super().__init__(address, options, credential)
        self.host, self.port = split_address(address, self.name)
        self.label = f"kafka at {address}"
        self.partitions: dict[str, int] = {}  # topics known to exist: partition count
        self.record_bytes = record_bytes(0)
        self._backend: confluent.ConfluentBackend | kafka_python.PythonBackend | None = None

    @classmethod
    def workload_problems(cls, options: DriverOptions, workload: WorkloadShape) -> list[str]:
        if not isinstance(options, KafkaOptions):
            return []  # invalid options (still a dict): the scenario loader reports them
        problems = []
        if workload.message_size > MAX_MESSAGE_BYTES:
            problems.append(f"kafka: {workload.message_size}-byte messages exceed the "
                            f"{MAX_MESSAGE_BYTES}-byte limit this driver configures")
        connections = workload.connections
        if (workload.mode == Mode.ONE_WAY and options.partitions is not None
                and options.partitions < connections):
            problems.append(
                f"kafka: partitions {options.partitions} is fewer than the workload's "
                f"{connections} connections: a consumer's connections divide the topic's "
                f"partitions, so connection {options.partitions} and above would read "
                f"nothing; set option partitions to at least {connections}, or leave it "
                "out (one per connection)")
        return problems

    @classmethod
    def key_problems(cls, options: DriverOptions, workload: WorkloadShape) -> list[str]:
        if (workload.keys != NONE and isinstance(options, KafkaOptions)
                and options.client != "confluent"):
            return [f"kafka: keys need option client 'confluent' (the {options.client} "
                    "client does not carry them here)"]
        return []

    def _size_for(self, message_size: int) -> None:
        """Records above Kafka's default 1 MB limit need it raised on the topics the driver
        creates, the producers and the consumers alike (an existing topic keeps its own)."""
        self.record_bytes = record_bytes(message_size)

    # -- connecting ------------------------------------------------------------------------

    @property
    def backend(self) -> confluent.ConfluentBackend | kafka_python.PythonBackend:
        """The chosen client's backend, connected on first use: a refused port fails at
        once, anything else within CONNECT_TIMEOUT_S."""
        if self._backend is None:
            try:
                socket.create_connection((self.host, self.port), CONNECT_TIMEOUT_S).close()
            except OSError as exc:
                reason = exc.strerror or str(exc) or type(exc).__name__
                raise DriverError(f"{self.label}: cannot connect ({reason})") from None
            backend = confluent.ConfluentBackend if self.options.client == "confluent" \
                else kafka_python.PythonBackend
            self._backend = backend(self, CONNECT_TIMEOUT_S)
        return self._backend

    def topic(self, name: str, partitions: int | None = None) -> int:
        """Create `name` with `partitions` (default: the option, else one) unless it
        exists; its partition count."""
        if name not in self.partitions:
            count = partitions or self.options.partitions or 1
            self.partitions[name] = self.backend.ensure_topic(name, count)
        return self.partitions[name]

    def _one_way_topic(self, lane: Lane) -> int:
        topic = self.options.topic
        return self.topic(topic, created_partitions(self.options.partitions, lane))

    # -- durability (drivers/kafka/durability.py) -------------------------------------------

    def durability_asked(self) -> dict[str, Setting]:
        return durability.asked(self.options)

    def durability_unasked(self) -> str | None:
        return None

    def durability_actual(self) -> dict[str, Setting]:
        """The one-way topic's settings, else (a round trip's run) the requests topic's,
        read with confluent-kafka's admin client whichever client the run uses."""
        admin = confluent.ConfluentBackend(self, CONNECT_TIMEOUT_S)
        topic = self.options.topic
        return admin.topic_settings([topic, requests_topic(topic)])

    @classmethod
    def durability_label(cls, settings: Mapping[str, Setting]) -> str:
        return durability.label(settings)

    @classmethod
    def stores_messages(cls, options: DriverOptions) -> bool:
        return True  # the log: a consumer reads from its offsets whenever it reads

    @classmethod
    def resource_options(cls, options: DriverOptions) -> tuple[str, ...]:
        return ("topic",)

    def remove_resources(self, per_run, workload) -> list[str]:
        """The run's topic, its round-trip topics (`<topic>.req`, `<topic>.reply.<id>`)."""
        if "topic" not in per_run:
            return []
        try:
            return self.backend.delete_topics(run_topic(self.options.topic))
        finally:  # its client goes now, not with a collected cycle: it would keep retrying
            self._backend = None  # a broker stopped after the run, logging as it goes

    # -- connections ------------------------------------------------------------------------

    def sender(self, message_size: int, connection_id: int, lane: Lane = SOLE_LANE):
        """Messages are handed to the client's producer one by one (it batches them into
        produce requests itself): `sent_ns` is when a message was handed to the client.
        Whichever receiver lane reads the partition gets them: senders need no lane."""
        self._size_for(message_size)
        partitions = self._one_way_topic(lane)
        sender = self.backend.sender(self.options.topic, confluent.BY_KEY if self.keys
                                     else connection_id % partitions)
        return LengthCutSender(sender) if self.sizes_vary else sender

    def receiver(self, message_size: int, connection_id: int, lane: Lane = SOLE_LANE):
        self._size_for(message_size)
        topic = self.options.topic
        count = self._one_way_topic(lane)
        mine = lane_partitions(count, lane)
        if not mine:
            raise DriverError(
                f"{self.label}: topic {topic!r} has {count} partition"
                f"{'s' if count > 1 else ''}, fewer than the "
                f"{lane.count} connections dividing it: connection {lane.index} would read "
                f"none (give the topic at least {lane.count} partitions, or use fewer "
                "connections)")
        receiver = self.backend.receiver(topic, mine, message_size)
        if self.sizes_vary:
            receiver.smallest = HEADER_SIZE
        return receiver

    @classmethod
    def carries_varying_sizes(cls, options: DriverOptions, largest: int) -> bool:
        return True  # a record's value has its own length

    def framing(self, message_size: int, lane: Lane = SOLE_LANE) -> Framing:
        """Nothing around a message; when sizes vary, its length word before it, which
        `LengthCutSender` reads to hand the client one message at a time."""
        return Framing(prefix=LENGTH_WORD.pack(message_size)) if self.sizes_vary else Framing()

    def receive_framing(self, message_size: int) -> Framing:
        return Framing()

    def requester(self, message_size: int, connection_id: int):
        self._size_for(message_size)
        requests = requests_topic(self.options.topic)
        replies = f"{reply_prefix(self.options.topic)}{connection_id}"
        receiver = self.backend.receiver(replies, list(range(self.topic(replies))),
                                         message_size)
        return self.backend.sender(requests, connection_id % self.topic(requests)), receiver

    def responder(self, message_size: int, connection_id: int):
        self._size_for(message_size)
        requests = requests_topic(self.options.topic)
        return self.backend.responder(requests, self.topic(requests), message_size,
                                      reply_prefix(self.options.topic))
