"""Options of the rabbitmq driver."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, model_validator

from sixnines.drivers.base import LoginOptions

GUEST = "guest"  # RabbitMQ's default user, whose password is its name
CLASSIC: Final = "classic"  # the one queue type that may be exclusive (a connection's own queue)


class RabbitmqOptions(LoginOptions):
    exchange: str = Field("sixnines", max_length=127)
    """A fanout exchange (declared durable) giving each receiver connection its own queue:
    fan-out. With several connections each lane has one, "<exchange>.<lane>". "" is the
    default exchange: one named queue per lane, shared by its consumers (so one consumer).
    Left out, each run has exchanges of its own (`<scenario>-<run id>-<suffix>`), deleted
    at the end unless the system says `keep_resources: true`; named, they are never
    deleted."""
    queue: str = Field("sixnines", min_length=1, max_length=127)
    """The queue of the default-exchange form ("<queue>.<lane>" with several connections);
    round trip uses "<queue>.requests". Quorum and stream queues cannot be exclusive, so
    with them each receiver connection of the fanout form has a named queue,
    "<queue>.consumer-<id>", and each requester its reply queue, "<queue>.requester-<id>".
    Left out, the run's own name, its queues deleted at the end as its exchanges are;
    named, they stay (a consumer's own one still bound to its exchange)."""
    queue_type: Literal["classic", "quorum", "stream"] = CLASSIC
    """The x-queue-type of every queue the driver declares. classic: a fanout exchange's
    and a requester's queues are exclusive to their connection, gone with it. quorum
    (replicated, always on disk) and stream (an append-only log: each consumer reads it
    from the run's first message, and from where it stopped after a reconnect) need
    `persistent: true`; a stream also a prefetch and acknowledgements."""
    persistent: bool = False
    """delivery_mode 2 on every message and durable queues (the broker writes to disk)."""
    confirms: bool = False
    """Publisher confirms, counted as they arrive without slowing the send loop."""
    prefetch: int = Field(1000, ge=0)
    """basic.qos prefetch count: unacknowledged deliveries in flight (0: unlimited)."""
    auto_ack: bool = False
    """Consume without acknowledgements (the broker pushes as fast as it can; no prefetch)."""
    username: str = GUEST
    """The user to log in as. Only RabbitMQ's default user, guest, has a known password
    (guest, which RabbitMQ accepts over loopback only: the recipe's node on loopback), so
    only guest may go without password_env or password_file."""
    vhost: str = "/"
    """The virtual host to connect to."""

    @model_validator(mode="after")
    def _password_known(self) -> RabbitmqOptions:
        if self.username != GUEST and self.password_env is None and self.password_file is None:
            raise ValueError(f"username {self.username!r} needs password_env or password_file "
                             f"(only RabbitMQ's default user {GUEST!r} has a known password)")
        return self

    @model_validator(mode="after")
    def _queue_type_possible(self) -> RabbitmqOptions:
        if self.queue_type == CLASSIC:
            return self
        if not self.persistent:
            raise ValueError(f"queue_type {self.queue_type} needs persistent: true (its "
                             "queues are durable and keep every message on disk whatever "
                             "a message's delivery mode: transient would be a wrong label)")
        if self.queue_type == "stream" and (self.auto_ack or self.prefetch == 0):
            raise ValueError("queue_type stream needs acknowledgements and a prefetch "
                             "(RabbitMQ refuses a stream consumer with auto_ack: true or "
                             "prefetch: 0)")
        return self
