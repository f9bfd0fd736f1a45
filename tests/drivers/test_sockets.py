"""drivers/sockets.py over real sockets: reads never block, on plain and TLS sockets alike.

The TLS peer is an in-memory TLS server (ssl.MemoryBIO) on the far end of a socketpair, so
the test decides which bytes of a TLS record reach the socket: a read must return nothing,
not block, while a record is incomplete. The certificate is made for the test."""

from __future__ import annotations

import socket
import ssl
import threading
import time

import pytest

from sixnines.drivers.base import DriverError
from sixnines.drivers.sockets import FrameStream, SocketIO
from tests.drivers.certs import self_signed


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[str, str]:
    return self_signed(tmp_path_factory.mktemp("tls"), "localhost", "DNS:localhost")


class TlsPeer:
    """The server end: TLS in memory, its records written to the raw socket by the test."""

    def __init__(self, raw: socket.socket, cert: str, key: str) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.raw = raw
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_side=True)

    def handshake(self) -> None:
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.raw.sendall(self.outgoing.read())
                self.incoming.write(self.raw.recv(65536))
        self.raw.sendall(self.outgoing.read())  # the last flight (and session tickets)

    def record(self, data: bytes) -> bytes:
        """`data` as TLS records, not yet sent."""
        self.tls.write(data)
        return self.outgoing.read()

    def take(self, count: int, timeout_s: float = 10) -> bytes:
        """`count` bytes the client wrote, decrypted."""
        got = bytearray()
        deadline = time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            try:
                got += self.tls.read(1 << 16)
            except ssl.SSLWantReadError:
                self.incoming.write(self.raw.recv(1 << 16))
        return bytes(got)


@pytest.fixture
def tls_pair(certificate):
    cert, key = certificate
    near, far = socket.socketpair()
    peer = TlsPeer(far, cert, key)
    server = threading.Thread(target=peer.handshake)
    server.start()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cert)
    client = context.wrap_socket(near, server_hostname="localhost")
    server.join(10)
    yield SocketIO(client, "nats at test"), peer
    client.close()
    far.close()


def read_all(io: SocketIO, count: int, timeout_s: float = 10) -> bytes:
    got = bytearray()
    view = memoryview(bytearray(count))
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        if io.readable(100):
            n = io.read(view)
            got += view[:n]
    return bytes(got)


def test_a_tls_read_of_half_a_record_returns_nothing_at_once(tls_pair):
    io, peer = tls_pair
    record = peer.record(b"x" * 1000)
    peer.raw.sendall(record[:20])
    view = memoryview(bytearray(4096))
    assert io.readable(1000)  # the kernel has bytes: a poller wakes
    began = time.monotonic()
    for _ in range(3):
        assert io.read(view) == 0  # ... but no whole record: nothing, and no waiting
    assert time.monotonic() - began < 0.5
    peer.raw.sendall(record[20:])
    assert read_all(io, 1000) == b"x" * 1000


def test_decrypted_bytes_the_kernel_no_longer_shows_count_as_readable(tls_pair):
    io, peer = tls_pair
    peer.raw.sendall(peer.record(b"y" * 3000))
    small = memoryview(bytearray(100))
    while not io.read(small):  # session tickets may come first
        assert io.readable(1000)
    assert io.sock.pending()  # the rest of the record sits decrypted in the TLS layer
    began = time.monotonic()
    assert io.readable(5000)
    assert time.monotonic() - began < 0.5
    assert read_all(io, 2900) == b"y" * 2900


def test_a_tls_write_finishes_when_the_peer_reads_slowly(tls_pair):
    io, peer = tls_pair
    data = bytes(range(256)) * 8192  # 2 MiB: far beyond the socket buffers
    writer = threading.Thread(target=io.write, args=(data,))
    writer.start()
    assert peer.take(len(data)) == data
    writer.join(10)
    assert not writer.is_alive()


def test_a_plain_read_never_blocks_and_a_close_is_worded():
    near, far = socket.socketpair()
    io = SocketIO(near, "tcp relay at test", "connection closed by the relay")
    view = memoryview(bytearray(64))
    assert io.read(view) == 0
    assert not io.readable(10)
    far.sendall(b"abc")
    assert io.readable(1000) and io.read(view) == 3
    far.close()
    with pytest.raises(DriverError, match="tcp relay at test: connection closed by the relay"):
        io.read(view)
    io.close()


def test_frames_are_whole_and_a_partial_one_is_kept_for_the_next_call():
    near, far = socket.socketpair()
    stream = FrameStream(near, "test", "closed", b"", 4, "not a frame")
    out = memoryview(bytearray(40))
    far.sendall(b"aaaabbbbcc")
    assert stream.frames(out, 1000) == 2
    assert bytes(out[:8]) == b"aaaabbbb"
    far.sendall(b"ccdddd")
    assert stream.frames(out, 1000) == 2
    assert bytes(out[:8]) == b"ccccdddd"
    near.close()
    far.close()


def test_streams_sharing_one_buffer_keep_their_partial_frames_apart():
    """An agent's connections share its inbox: a partial frame must not wait in it."""
    pairs = [socket.socketpair() for _ in range(2)]
    streams = [FrameStream(near, "test", "closed", b"", 4, "not a frame") for near, _ in pairs]
    out = memoryview(bytearray(8))
    pairs[0][1].sendall(b"aaaaa")
    pairs[1][1].sendall(b"bbbbbb")
    assert streams[0].frames(out, 1000) == 1 and bytes(out[:4]) == b"aaaa"
    assert streams[1].frames(out, 1000) == 1 and bytes(out[:4]) == b"bbbb"
    pairs[0][1].sendall(b"aaa")
    pairs[1][1].sendall(b"bb")
    assert streams[0].frames(out, 1000) == 1 and bytes(out[:4]) == b"aaaa"
    assert streams[1].frames(out, 1000) == 1 and bytes(out[:4]) == b"bbbb"
    for near, far in pairs:
        near.close()
        far.close()


def frame(length: int, fill: bytes) -> bytes:
    return length.to_bytes(2, "little") + fill * length


@pytest.mark.parametrize("pieces", [
    # in the middle of a batch, the stream back in step after it
    [frame(4, b"a") * 2 + frame(6, b"y") + frame(2, b"z") + frame(4, b"b") * 2],
    [frame(4, b"a") * 3, frame(2, b"z")],  # alone, shorter: nothing will complete it
    [frame(4, b"a"), frame(6, b"z")[:3]],  # its length word, before the rest
])
def test_a_frame_with_another_head_is_refused_when_it_arrives(pieces):
    near, far = socket.socketpair()
    stream = FrameStream(near, "tcp relay at test", "closed", b"\x04\x00", 6,
                         "a message of another size")
    out = memoryview(bytearray(60))
    with pytest.raises(DriverError, match="tcp relay at test: a message of another size"):
        for piece in pieces:
            far.sendall(piece)
            stream.frames(out, 1000)
    near.close()
    far.close()
