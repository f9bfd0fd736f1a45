"""ZeroMQ through a `zmq.proxy` broker (drivers/zmq/driver.py)."""

from sixnines.drivers.zmq.driver import ZmqDriver
from sixnines.drivers.zmq.options import ZmqOptions

__all__ = ["ZmqDriver", "ZmqOptions"]
