"""Raw TCP through the sixnines relay: the brokerless baseline every system is held to."""

from __future__ import annotations

from drivers.base import Driver, DriverOptions


class TcpOptions(DriverOptions):
    nodelay: bool = True
    """TCP_NODELAY on every connection (Nagle off), as latency benchmarks expect."""


class TcpDriver(Driver):
    name = "tcp"
    Options = TcpOptions
    has_builtin_broker = True
