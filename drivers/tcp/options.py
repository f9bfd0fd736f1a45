"""Options of the tcp driver."""

from __future__ import annotations

from sixnines.drivers.base import DriverOptions


class TcpOptions(DriverOptions):
    nodelay: bool = True
    """TCP_NODELAY on every connection (Nagle off), as latency benchmarks expect."""
