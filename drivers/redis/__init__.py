"""Redis pub/sub and streams (drivers/redis/driver.py)."""

from sixnines.drivers.redis.driver import RedisDriver
from sixnines.drivers.redis.options import RedisOptions

__all__ = ["RedisDriver", "RedisOptions"]
