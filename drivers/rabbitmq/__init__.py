"""RabbitMQ over AMQP 0-9-1 (drivers/rabbitmq/driver.py)."""

from sixnines.drivers.rabbitmq.driver import RabbitmqDriver
from sixnines.drivers.rabbitmq.options import RabbitmqOptions

__all__ = ["RabbitmqDriver", "RabbitmqOptions"]
