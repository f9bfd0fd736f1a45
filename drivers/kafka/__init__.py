"""Kafka protocol through confluent-kafka or kafka-python (drivers/kafka/driver.py)."""

from sixnines.drivers.kafka.driver import KafkaDriver
from sixnines.drivers.kafka.options import KafkaOptions

__all__ = ["KafkaDriver", "KafkaOptions"]
