"""Options of the zmq driver."""

from __future__ import annotations

from pydantic import Field

from sixnines.drivers.base import DriverOptions


class ZmqOptions(DriverOptions):
    hwm: int = Field(1_000_000, ge=0)
    """Send/receive high-water mark in messages. ZeroMQ drops PUB messages past it; the
    default is high enough that any loss is the system's, and it is counted."""
