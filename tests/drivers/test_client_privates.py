"""The private members of client libraries the drivers use, checked without a server.

Each driver takes its connection's socket from the client once set up (redis-py, pika) or
drives part of the client by hand (nats-py's handshake, librdkafka through ctypes). Those
members are not the clients' public API, so pyproject pins each client below the next
release that has not been checked; when a check here fails, its message names the client
and version that changed, and the driver module that must follow it."""

from __future__ import annotations

import inspect
from importlib.metadata import version


def changed(distribution: str, member: str, module: str) -> str:
    return (f"{distribution} {version(distribution)} no longer has {member}, which "
            f"{module} uses: adapt it (or keep the pin in pyproject.toml below this version)")


def test_redis_py_keeps_the_connections_socket_in_sock():
    from redis.connection import Connection

    assert hasattr(Connection(host="localhost"), "_sock"), changed(
        "redis", "Connection._sock", "drivers/redis/connection.py")


def test_pika_keeps_frame_max_socket_and_read_buffer_where_the_driver_takes_them():
    import pika
    from pika.adapters.utils.io_services_utils import _AsyncTransportBase

    assert "_impl" in inspect.getsource(pika.BlockingConnection.__init__), changed(
        "pika", "BlockingConnection._impl", "drivers/rabbitmq/connection.py")
    impl = pika.SelectConnection(pika.ConnectionParameters(host="127.0.0.1", port=1))
    try:
        for member in ("params", "_transport", "_frame_buffer", "ioloop"):
            assert hasattr(impl, member), changed(
                "pika", f"SelectConnection.{member}", "drivers/rabbitmq/connection.py")
        assert impl.params.frame_max, changed(
            "pika", "SelectConnection.params.frame_max", "drivers/rabbitmq/connection.py")
    finally:
        impl.ioloop.close()
    assert "self._sock =" in inspect.getsource(_AsyncTransportBase.__init__), changed(
        "pika", "_AsyncTransportBase._sock", "drivers/rabbitmq/connection.py")


def test_nats_py_keeps_the_members_the_lent_handshake_sets_and_cancels():
    from nats.aio.client import Client
    from nats.aio.transport import Transport

    from sixnines.drivers.nats.connection import PRIVATE_TASKS

    client = Client()
    for member in ("_transport", "_server_info", *PRIVATE_TASKS):
        assert hasattr(client, member), changed(
            "nats-py", f"Client.{member}", "drivers/nats/connection.py")
    abstract = {name for name, value in vars(Transport).items()
                if getattr(value, "__isabstractmethod__", False)}
    from sixnines.drivers.nats.connection import _LentTransport

    missing = abstract - set(vars(_LentTransport))
    assert not missing, changed("nats-py", f"Transport.{sorted(missing)}",
                                "drivers/nats/connection.py (_LentTransport)")


def test_confluent_kafka_lets_the_doorbell_reach_librdkafkas_queue():
    """Without it a multi-connection consumer polls instead of sleeping: correct, but busy
    (drivers/kafka/confluent.py, Doorbell)."""
    from confluent_kafka import Consumer

    from sixnines.drivers.kafka.confluent import Doorbell

    assert Doorbell._library() is not None, changed(
        "confluent-kafka", "its bundled librdkafka (confluent_kafka.libs)",
        "drivers/kafka/confluent.py")
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "privates",
                         "client.id": "sixnines-privates"})
    try:
        bell = Doorbell.attach(consumer, "sixnines-privates")
        try:
            assert bell._queue is not None, changed(
                "confluent-kafka", "the rd_kafka_t handle after the Consumer object header",
                "drivers/kafka/confluent.py")
        finally:
            bell.close()
    finally:
        consumer.close()


def test_kafka_python_can_stop_a_producer_that_cannot_flush():
    """A producer whose broker is gone cannot be closed through the public API (close
    flushes first); drivers/kafka/kafka_python.py force-closes its sending thread."""
    from kafka import KafkaProducer
    from kafka.producer.sender import Sender

    assert callable(getattr(Sender, "force_close", None)), changed(
        "kafka-python", "Sender.force_close", "drivers/kafka/kafka_python.py")
    assert "self._sender" in inspect.getsource(KafkaProducer.__init__), changed(
        "kafka-python", "KafkaProducer._sender", "drivers/kafka/kafka_python.py")
