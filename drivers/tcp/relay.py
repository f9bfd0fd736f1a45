"""The sixnines TCP relay: a minimal fan-out broker and echo peer.

Publishers' frames go to every subscriber on the publisher's lane (the one its hello
named), cut at frame boundaries (at a fixed stride, or by each frame's length word when
the hello says frames vary) so that frames of several publishers never interleave
mid-frame; one epoll thread serves them. Each lane is a `Route`, found once at the hello,
so forwarding never looks a lane up. The relay buffers per subscriber and stops reading a
lane's publishers while any of that lane's subscribers is more than HIGH_WATER bytes
behind, so a slow consumer shows up as send lag, not as lost messages (only the
publishers feeding it wait: other lanes' data never reaches it). With one lane, that is
every publisher, as before lanes.

Echo connections (round trip) each get a thread of their own: the shortest path from
receive to send is what sets the round-trip floor, and a generic event loop adds ~5-10 µs.
"""

from __future__ import annotations

import contextlib
import errno
import resource
import select
import selectors
import socket
import threading

from sixnines.drivers.base import Announce, Lane
from sixnines.drivers.tcp.wire import (
    ACK,
    ECHO,
    HELLO,
    PUBLISH,
    SUBSCRIBE,
    VARIABLE,
    parse_hello,
    whole_frames,
    whole_varying_frames,
)

RECV_BYTES = 1 << 18
HIGH_WATER = 64 << 20
LOW_WATER = 8 << 20


class Route:
    """One lane's connections: its publishers' frames go to its subscribers, and a
    subscriber far behind pauses its publishers (`paused`)."""

    def __init__(self, lane: Lane) -> None:
        self.lane = lane
        self.publishers: list[Peer] = []
        self.subscribers: list[Peer] = []
        self.paused = False


class Peer:
    """One accepted connection: its role, the frame length it declared, its lane's route
    (publishers and subscribers), and what is still to be written to it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.role = b""
        self.stride = 0
        self.route: Route | None = None  # set by the hello (never for echo connections)
        self.inbox = bytearray()  # bytes read but not yet forwarded (hello, partial frame)
        self.outbox = bytearray()  # bytes to write when the socket becomes writable
        self.events = 0  # what the selector watches for this peer (0: not registered)


class Relay:
    def __init__(self, host: str, port: int) -> None:
        self._listener = socket.create_server((host, port), backlog=128, reuse_port=False)
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._routes: dict[Lane, Route] = {}

    @property
    def address(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"{host}:{port}"

    def serve(self, announce: Announce) -> None:
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
        try:
            sock, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return  # gone before it was taken
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE):  # the relay cannot serve them all
                self._close_all()  # stops here, and leaves files to say why
                limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
                raise OSError(exc.errno, f"{exc.strerror}: a connection takes a file and the "
                              f"open-file limit (ulimit -n) is {limit}") from None
            raise
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
        role, peer.stride, lane = hello
        peer.role = role
        if role == ECHO:
            self._selector.unregister(peer.sock)
            peer.events = 0
            threading.Thread(target=echo, args=(peer.sock, ACK + rest), daemon=True).start()
            return
        route = self._routes.get(lane)
        if route is None:
            route = self._routes[lane] = Route(lane)
        peer.route = route
        (route.publishers if role == PUBLISH else route.subscribers).append(peer)
        self._write(peer, ACK)
        if peer.route is None:  # dropped: the acknowledgement could not be written
            return
        self._update(peer)
        if rest and role == PUBLISH:
            self._publish(peer, rest)

    def _publish(self, peer: Peer, data: bytes) -> None:
        """Forward the whole frames received so far to every subscriber of its lane."""
        if peer.inbox:
            peer.inbox += data
            data = bytes(peer.inbox)
            peer.inbox.clear()
        if peer.stride & VARIABLE:
            whole = whole_varying_frames(data)
        else:
            whole = whole_frames(len(data), peer.stride)
        if whole < len(data):
            peer.inbox += data[whole:]
            data = data[:whole]
        if data:
            route = peer.route
            assert route is not None  # a publisher's, set by its hello
            for subscriber in tuple(route.subscribers):  # a failed write drops one
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
        if peer.role == SUBSCRIBE and len(peer.outbox) > HIGH_WATER:
            route = peer.route
            assert route is not None  # a subscriber's, set by its hello
            if not route.paused:
                self._pause(route, True)

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
        route = peer.route
        assert route is not None  # only publishers and subscribers have anything to flush
        if route.paused:
            self._resume_if_caught_up(route)

    def _update(self, peer: Peer) -> None:
        """Register a peer for exactly the events its state needs: write while it has an
        outbox, read unless it is a publisher held back by a slow subscriber."""
        events = selectors.EVENT_WRITE if peer.outbox else 0
        if not (peer.role == PUBLISH and peer.route is not None and peer.route.paused):
            events |= selectors.EVENT_READ
        if events and peer.events:
            self._selector.modify(peer.sock, events, peer)
        elif events:
            self._selector.register(peer.sock, events, peer)
        elif peer.events:
            self._selector.unregister(peer.sock)
        peer.events = events

    def _pause(self, route: Route, paused: bool) -> None:
        """Stop (or resume) reading the publishers of one lane."""
        route.paused = paused
        for publisher in route.publishers:
            self._update(publisher)

    def _resume_if_caught_up(self, route: Route) -> None:
        if route.paused and all(len(s.outbox) < LOW_WATER for s in route.subscribers):
            self._pause(route, False)

    def _close_all(self) -> None:
        for key in list(self._selector.get_map().values()):
            if isinstance(key.fileobj, socket.socket):  # all are: the listener and peers
                key.fileobj.close()
        self._selector.close()

    def _drop(self, peer: Peer) -> None:
        route, peer.route = peer.route, None
        if peer.events:
            self._selector.unregister(peer.sock)
            peer.events = 0
        peer.sock.close()
        if route is None:
            return
        for group in (route.publishers, route.subscribers):
            if peer in group:
                group.remove(peer)
        if not route.publishers and not route.subscribers:
            del self._routes[route.lane]  # a later run's lanes start afresh
        else:
            self._resume_if_caught_up(route)


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
