"""The hub: publishers' frames go to every subscriber on their lane, an echo connection's
frames back to it. One thread per connection; a password, when set, is checked in the
hello."""

from __future__ import annotations

import hmac
import os
import signal
import socket
import threading

from sixnines.drivers.base import Lane

from sixnines_hub.wire import ECHO, HELLO, LENGTH, MAGIC, PUBLISH, REFUSED, SUBSCRIBE, WELCOME


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


class Hub:
    def __init__(self, host: str = "127.0.0.1", port: int = 0,
                 password: str | None = None) -> None:
        self._listener = socket.create_server((host, port))
        self.address = "{}:{}".format(*self._listener.getsockname()[:2])
        self._password = password
        self._subscribers: dict[Lane, list[socket.socket]] = {}
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False

    def start(self) -> Hub:
        threading.Thread(target=self.serve, daemon=True).start()
        return self

    def serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._connections.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def close(self) -> None:
        """Stop at once, dropping every connection (as a killed broker would)."""
        self._closed = True
        self._listener.close()
        with self._lock:
            for conn in self._connections:
                conn.close()

    def _serve(self, conn: socket.socket) -> None:
        try:
            magic, role, size, index, count, length = HELLO.unpack(
                _read_exactly(conn, HELLO.size))
            password = _read_exactly(conn, length).decode()
            if magic != MAGIC or (self._password is not None
                                  and not hmac.compare_digest(password, self._password)):
                conn.sendall(REFUSED)
                return
            conn.sendall(WELCOME)
            lane = Lane(index, count)
            if role == SUBSCRIBE:
                with self._lock:
                    self._subscribers.setdefault(lane, []).append(conn)
                conn.recv(1)  # until it goes
            elif role in (PUBLISH, ECHO):
                self._relay(conn, LENGTH.size + size, lane, echo=role == ECHO)
        except OSError:
            pass
        finally:
            with self._lock:
                self._connections.discard(conn)
                for subscribers in self._subscribers.values():
                    if conn in subscribers:
                        subscribers.remove(conn)
            conn.close()

    def _relay(self, conn: socket.socket, stride: int, lane: Lane, echo: bool) -> None:
        pending = b""
        while chunk := conn.recv(1 << 16):
            pending += chunk
            whole = len(pending) - len(pending) % stride
            frames, pending = pending[:whole], pending[whole:]
            if not frames:
                continue
            if echo:
                conn.sendall(frames)
                continue
            with self._lock:
                subscribers = self._subscribers.get(lane, [])
                for subscriber in list(subscribers):
                    try:
                        subscriber.sendall(frames)
                    except OSError:
                        subscribers.remove(subscriber)


def serve(host: str, port: int, announce) -> None:
    """`sixnines broker hub`: a hub until SIGTERM (password: $SIXNINES_HUB_PASSWORD)."""
    hub = Hub(host, port, os.environ.get("SIXNINES_HUB_PASSWORD")).start()
    announce(hub.address)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    hub.close()
