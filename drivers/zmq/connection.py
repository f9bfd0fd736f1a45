"""ZeroMQ sockets: a client socket connected to one of the broker's ports, and the
broker's own sockets bound on three consecutive ports."""

from __future__ import annotations

import time
from collections.abc import Sequence

import zmq
from zmq.utils.monitor import recv_monitor_message

from sixnines.drivers.base import DriverError
from sixnines.drivers.zmq.wire import WELCOME, endpoint, subscribes_to

READY_TIMEOUT_MS = 10_000
BIND_ATTEMPTS = 20


#: What a connection's monitor reports (`lost`, `await_connected`).
MONITORED = zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED


def client_socket(context: zmq.Context, kind: int, host: str, port: int,
                  hwm: int, subscribe: Sequence[bytes] = ()) -> zmq.Socket:
    """A socket connecting to the broker's `port`, monitored from before it connects (its
    `get_monitor_socket()`): ZeroMQ connects and reconnects silently, only the monitor
    tells. A SUB socket's `subscribe` prefixes are set before it connects, as the welcome
    message needs."""
    sock = context.socket(kind)
    sock.setsockopt(zmq.SNDHWM, hwm)
    sock.setsockopt(zmq.RCVHWM, hwm)
    sock.setsockopt(zmq.LINGER, 0)
    for prefix in subscribe:
        sock.setsockopt(zmq.SUBSCRIBE, prefix)
    sock.get_monitor_socket(MONITORED)
    sock.connect(endpoint(host, port))
    return sock


def close(sock: zmq.Socket) -> None:
    """Close a client socket and its monitor (again: nothing)."""
    if sock.closed:
        return
    monitor = sock.get_monitor_socket()
    sock.disable_monitor()
    monitor.close(linger=0)
    sock.close(linger=0)


def lost(sock: zmq.Socket) -> bool:
    """Whether the connection dropped since the last look (reading the monitor's events,
    without waiting)."""
    monitor = sock.get_monitor_socket()
    while monitor.poll(0):
        if recv_monitor_message(monitor)["event"] == zmq.EVENT_DISCONNECTED:
            return True
    return False


def await_connected(sock: zmq.Socket, label: str) -> None:
    """Wait until the connection's handshake is done (a DEALER has no first message to wait
    for, and would otherwise queue requests for nobody, forever)."""
    monitor = sock.get_monitor_socket()
    deadline = time.monotonic() + READY_TIMEOUT_MS / 1000
    while monitor.poll(max(0, int((deadline - time.monotonic()) * 1000))):
        if recv_monitor_message(monitor)["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            return
    close(sock)
    raise DriverError(f"{label}: no connection within {READY_TIMEOUT_MS // 1000} s (is a "
                      "sixnines zmq broker listening there?)")


def await_first(sock: zmq.Socket, what: str, label: str) -> bytes:
    """The first message on `sock` (proof that the subscription got through)."""
    if not sock.poll(READY_TIMEOUT_MS):
        close(sock)
        raise DriverError(f"{label}: no {what} within {READY_TIMEOUT_MS // 1000} s (is a "
                          "sixnines zmq broker listening there?)")
    return sock.recv()


def await_subscription(sock: zmq.Socket, topic: bytes, label: str) -> None:
    """Wait until a subscription that `topic`'s messages match reaches this publisher's
    XPUB (until then ZeroMQ drops what it sends); other lanes' subscriptions pass by."""
    deadline = time.monotonic() + READY_TIMEOUT_MS / 1000
    while sock.poll(max(0, int((deadline - time.monotonic()) * 1000))):
        if subscribes_to(sock.recv(), topic):
            return
    close(sock)
    raise DriverError(f"{label}: no subscription from the broker within "
                      f"{READY_TIMEOUT_MS // 1000} s (is a sixnines zmq broker listening "
                      "there?)")


def bind_broker(context: zmq.Context, host: str, port: int):
    """Bind XSUB/XPUB/ROUTER on three consecutive ports (a free trio when port is 0).

    The broker's own high-water marks are unlimited: it must never be where messages drop.
    """
    for _ in range(BIND_ATTEMPTS):
        sockets = [context.socket(kind) for kind in (zmq.XSUB, zmq.XPUB, zmq.ROUTER)]
        for sock in sockets:
            sock.setsockopt(zmq.SNDHWM, 0)
            sock.setsockopt(zmq.RCVHWM, 0)
            sock.setsockopt(zmq.LINGER, 0)
        frontend, backend, echo = sockets
        backend.setsockopt(zmq.XPUB_WELCOME_MSG, WELCOME)
        try:
            if port:
                base = port
                frontend.bind(endpoint(host, base))
            else:
                base = frontend.bind_to_random_port(endpoint(host), 20000, 60000)
            backend.bind(endpoint(host, base + 1))
            echo.bind(endpoint(host, base + 2))
        except zmq.ZMQError:
            for sock in sockets:
                sock.close()
            if port:
                raise
            continue
        return frontend, backend, echo, base
    raise OSError(f"no three consecutive free ports on {host}")
