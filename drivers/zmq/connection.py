"""ZeroMQ sockets: a client socket connected to one of the broker's ports, and the
broker's own sockets bound on three consecutive ports."""

from __future__ import annotations

import zmq

from sixnines.drivers.base import DriverError
from sixnines.drivers.zmq.wire import WELCOME, endpoint

READY_TIMEOUT_MS = 10_000
BIND_ATTEMPTS = 20


def client_socket(context: zmq.Context, kind: int, host: str, port: int,
                  hwm: int) -> zmq.Socket:
    sock = context.socket(kind)
    sock.setsockopt(zmq.SNDHWM, hwm)
    sock.setsockopt(zmq.RCVHWM, hwm)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint(host, port))
    return sock


def await_first(sock: zmq.Socket, what: str, label: str) -> bytes:
    """The first message on `sock` (proof that the subscription got through)."""
    if not sock.poll(READY_TIMEOUT_MS):
        sock.close(linger=0)
        raise DriverError(f"{label}: no {what} within {READY_TIMEOUT_MS // 1000} s (is a "
                          "sixnines zmq broker listening there?)")
    return sock.recv()


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
