"""Options of the rabbitmq driver."""

from __future__ import annotations

from pydantic import Field, model_validator

from sixnines.drivers.base import LoginOptions

GUEST = "guest"  # RabbitMQ's default user, whose password is its name


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
    round trip uses "<queue>.requests". Left out, the run's own name, its queues deleted
    at the end as its exchanges are."""
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
