"""Raw TCP through the sixnines relay (drivers/tcp/driver.py)."""

from sixnines.drivers.tcp.driver import TcpDriver
from sixnines.drivers.tcp.options import TcpOptions

__all__ = ["TcpDriver", "TcpOptions"]
