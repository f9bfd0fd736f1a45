"""The sixnines TCP relay: a minimal fan-out broker and echo peer.

Publishers' frames go to every subscriber, cut at frame boundaries so that frames of
several publishers never interleave mid-frame; one epoll thread serves them. It buffers
per subscriber and stops reading publishers while any subscriber is more than HIGH_WATER
bytes behind, so a slow consumer shows up as send lag, not as lost messages.

Echo connections (round trip) each get a thread of their own: the shortest path from
receive to send is what sets the round-trip floor, and a generic event loop adds ~5-10 µs.
"""

from __future__ import annotations

import contextlib
import select
import selectors
import socket
import threading

from sixnines.drivers.tcp.wire import (
    ACK,
    ECHO,
    HELLO,
    PUBLISH,
    SUBSCRIBE,
    parse_hello,
    whole_frames,
)

RECV_BYTES = 1 << 18
HIGH_WATER = 64 << 20
LOW_WATER = 8 << 20


class Peer:
    """One accepted connection: its role, the frame length it declared, and what is still
    to be written to it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.role = b""
        self.stride = 0
        self.inbox = bytearray()  # bytes read but not yet forwarded (hello, partial frame)
        self.outbox = bytearray()  # bytes to write when the socket becomes writable
        self.events = 0  # what the selector watches for this peer (0: not registered)


class Relay:
    def __init__(self, host: str, port: int) -> None:
        self._listener = socket.create_server((host, port), backlog=128, reuse_port=False)
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._subscribers: list[Peer] = []
        self._publishers: list[Peer] = []
        self._paused = False

    @property
    def address(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"{host}:{port}"

    def serve(self, announce) -> None:
        announce(self.address)
        while True:
            for key, events in self._selector.select():
                if key.fileobj is self._listener:
                    self._accept()
                    continue
                peer: Peer = key.data
                if events & selectors.EVENT_WRITE:
                    self._flush(peer)
                if events & selectors.EVENT_READ:
                    self._read(peer)

    def _accept(self) -> None:
        sock, _ = self._listener.accept()
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._update(Peer(sock))

    def _read(self, peer: Peer) -> None:
        try:
            data = peer.sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(peer)
            return
        if peer.role == PUBLISH:
            self._publish(peer, data)
        elif peer.role == b"":
            self._hello(peer, data)
        # subscribers send nothing after their hello; anything else is ignored

    def _hello(self, peer: Peer, data: bytes) -> None:
        peer.inbox += data
        if len(peer.inbox) < HELLO.size:
            return
        hello = parse_hello(peer.inbox)
        rest = bytes(peer.inbox[HELLO.size :])
        peer.inbox.clear()
        if hello is None:
            self._drop(peer)
            return
        role, peer.stride = hello
        peer.role = role
        if role == ECHO:
            self._selector.unregister(peer.sock)
            peer.events = 0
            threading.Thread(target=echo, args=(peer.sock, ACK + rest), daemon=True).start()
            return
        {PUBLISH: self._publishers, SUBSCRIBE: self._subscribers}[role].append(peer)
        self._write(peer, ACK)
        self._update(peer)
        if rest and role == PUBLISH:
            self._publish(peer, rest)

    def _publish(self, peer: Peer, data: bytes) -> None:
        """Forward the whole frames received so far to every subscriber."""
        if peer.inbox:
            peer.inbox += data
            data = bytes(peer.inbox)
            peer.inbox.clear()
        whole = whole_frames(len(data), peer.stride)
        if whole < len(data):
            peer.inbox += data[whole:]
            data = data[:whole]
        if data:
            for subscriber in tuple(self._subscribers):  # a failed write drops one mid-loop
                self._write(subscriber, data)

    def _write(self, peer: Peer, data: bytes) -> None:
        if peer.outbox:
            peer.outbox += data
        else:
            try:
                sent = peer.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._drop(peer)
                return
            if sent == len(data):
                return
            peer.outbox += memoryview(data)[sent:]
            self._update(peer)
        if peer.role == SUBSCRIBE and len(peer.outbox) > HIGH_WATER and not self._paused:
            self._pause_publishers(True)

    def _flush(self, peer: Peer) -> None:
        try:
            sent = peer.sock.send(peer.outbox)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(peer)
            return
        del peer.outbox[:sent]
        if not peer.outbox:
            self._update(peer)
        if self._paused and all(len(s.outbox) < LOW_WATER for s in self._subscribers):
            self._pause_publishers(False)

    def _update(self, peer: Peer) -> None:
        """Register a peer for exactly the events its state needs: write while it has an
        outbox, read unless it is a publisher held back by a slow subscriber."""
        events = selectors.EVENT_WRITE if peer.outbox else 0
        if not (peer.role == PUBLISH and self._paused):
            events |= selectors.EVENT_READ
        if events and peer.events:
            self._selector.modify(peer.sock, events, peer)
        elif events:
            self._selector.register(peer.sock, events, peer)
        elif peer.events:
            self._selector.unregister(peer.sock)
        peer.events = events

    def _pause_publishers(self, paused: bool) -> None:
        self._paused = paused
        for publisher in self._publishers:
            self._update(publisher)

    def _drop(self, peer: Peer) -> None:
        for group in (self._publishers, self._subscribers):
            if peer in group:
                group.remove(peer)
        if peer.events:
            self._selector.unregister(peer.sock)
            peer.events = 0
        peer.sock.close()
        if self._paused and all(len(s.outbox) < LOW_WATER for s in self._subscribers):
            self._pause_publishers(False)


def echo(sock: socket.socket, first: bytes) -> None:
    """Send back everything received, as fast as Python allows. Never stops reading, even
    when the peer is slow to read its echoes (buffering instead): a requester blocked in a
    large send must not wait on us while we wait on it."""
    sock.setblocking(False)
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    inbox = bytearray(RECV_BYTES)
    view = memoryview(inbox)
    backlog = bytearray(first)
    try:
        while True:
            if backlog:
                with contextlib.suppress(BlockingIOError):
                    del backlog[: sock.send(backlog)]
                poller.modify(sock, select.POLLIN | (select.POLLOUT if backlog else 0))
            poller.poll()
            try:
                got = sock.recv_into(inbox)
            except BlockingIOError:
                continue
            if not got:
                return
            if backlog:
                backlog += view[:got]
                continue
            try:
                sent = sock.send(view[:got])
            except BlockingIOError:
                sent = 0
            if sent < got:
                backlog += view[sent:got]
    except OSError:
        return
    finally:
        sock.close()
