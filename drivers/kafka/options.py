"""Options of the kafka driver."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sixnines.drivers.base import LoginOptions

TOPIC_CHARS = r"^[A-Za-z0-9._-]{1,200}$"


class KafkaOptions(LoginOptions):
    """Kafka protocol options.

    `client`: confluent (confluent-kafka, librdkafka's C client; the default) or
    kafka-python (pure Python, the baseline). confluent is the default because the
    generator must not be the bottleneck: one process sending 256-byte messages through
    this driver's sender as fast as it can, to noida-db on the 2-core dev VM, got ~285k
    msg/s delivered with confluent (one message per call; ~340k in batches of 64) and
    ~10-12k msg/s with kafka-python, whose Python I/O thread competes with the sender for
    the GIL. Open loop at 50k msg/s asked (benchmarks/bench_kafka.py), confluent sent all
    50k/s, kafka-python ~18k/s. With `linger_ms: 0` each isolated produce call wakes
    librdkafka's I/O thread (~10-30 µs a call here; ~2 µs with linger_ms > 0).
    """

    client: Literal["confluent", "kafka-python"] = "confluent"
    """The client library: confluent (librdkafka) keeps up with the schedule; kafka-python
    is the pure-Python baseline (measured: see the options' description)."""
    topic: str = Field("sixnines", pattern=TOPIC_CHARS)
    """One-way topic; round trip uses `<topic>.req` and `<topic>.reply.<id>`. Left out,
    each run has a topic of its own (`<scenario>-<run id>-<suffix>`, a partition per
    connection), deleted with its round-trip topics at the end unless the system says
    `keep_resources: true`. Named, it is yours: used as it is (created if missing), a run
    with more connections than it has partitions refused before the first message, never
    deleted. (`sixnines` is the name outside a scenario's runs: driver tests.)"""
    partitions: int | None = Field(None, ge=1)
    """Partitions of topics the driver creates (an existing topic is used as it is). None
    (the default): the one-way topic gets one per connection (a consumer's connections
    divide the partitions, so each needs one: one with one connection), round-trip topics
    one. A number: every topic gets that many; one-way needs at least one per connection."""
    replication: int = Field(1, ge=1)
    """Replication factor of topics the driver creates."""
    acks: Literal[0, 1, "all"] = 1
    """Producer acknowledgements: 0 none, 1 the leader's, all every in-sync replica's."""
    linger_ms: int = Field(0, ge=0)
    """0 sends at once (latency runs); > 0 lets the client batch (throughput runs)."""
    batch_size: int | None = Field(None, ge=1)
    """Producer batch size in bytes (None: the client's default)."""
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "none"
    """Producer compression codec."""
    group: bool = False
    """False: each receiver assigns itself its lane's partitions (no group coordination,
    no rebalance delay). True: each receiver connection joins a consumer group of its own
    (consumers still fan out) and reads the lane's share of what the group assigns it (all
    partitions: it is the only member); joining takes about half the session timeout (6 s
    here)."""
    fetch_wait_ms: int = Field(10, ge=0)
    """How long the broker may hold a fetch for data to arrive (latency vs requests)."""
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    """SASL over plaintext; needs `username` and one of `password_env`/`password_file`."""

    @model_validator(mode="after")
    def _credentials(self) -> KafkaOptions:
        refs = (self.password_env is not None) + (self.password_file is not None)
        if self.sasl_mechanism is None:
            if self.username is not None or refs:
                raise ValueError("username/password_env/password_file need sasl_mechanism")
        elif self.username is None or refs != 1:
            raise ValueError("sasl_mechanism needs username and exactly one of "
                             "password_env, password_file")
        return self
