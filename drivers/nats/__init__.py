"""NATS core and JetStream (drivers/nats/driver.py)."""

from sixnines.drivers.nats.driver import NatsDriver
from sixnines.drivers.nats.options import NatsOptions

__all__ = ["NatsDriver", "NatsOptions"]
