"""Per-message cost of each driver's wire codec on the receive side, without a socket.

Commands and frames are encoded once per run (the `Framing` prefix a sender reuses), so
the per-message codec cost is the parse of what arrives: RESP XREAD replies
(drivers/redis/wire.py), NATS MSG lines on the fast path and the general one
(drivers/nats/wire.py), AMQP 0-9-1 deliveries (drivers/rabbitmq/wire.py). Each parses a
buffer of back-to-back messages into an output buffer, as a receiver does after a read;
the figure is ns per message, best of `--repeat` (buffers are filled once, before).

    .venv/bin/python benchmarks/bench_codecs.py [--messages 2000] [--size 64] [--smoke]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import common

from sixnines.drivers.nats.wire import Parser
from sixnines.drivers.rabbitmq.wire import BODY_FRAME, END, FRAME, METHOD_FRAME, Reader, frame
from sixnines.drivers.redis.wire import StreamReplies, bulk


def redis_xread(n: int, size: int) -> Callable[[], int]:
    entries = b"".join(b"*2\r\n" + bulk(b"%d-0" % i) + b"*2\r\n" + bulk(b"m") + bulk(
        bytes(size)) for i in range(n))
    reply = b"*1\r\n*2\r\n" + bulk(b"s") + b"*%d\r\n" % n + entries
    out = memoryview(bytearray(n * size))
    parser = StreamReplies([b"s"], size, n, 128, "bench", [b"0-0"], False)
    parser.room()[: len(reply)] = reply

    def run() -> int:
        parser.pos, parser.end, parser.left = 0, len(reply), 0
        return parser.parse(out, size)

    return run


def nats_msgs(n: int, size: int, fast: bool) -> Callable[[], int]:
    wire = (b"MSG bench 1 %d\r\n" % size + bytes(size) + b"\r\n") * n
    out = memoryview(bytearray(n * size))
    parser = Parser(size, "bench", wire)
    parser.data_sid = b"1"
    if fast:
        parser.fast = b"MSG bench 1 %d\r\n" % size

    def run() -> int:
        parser.start, parser.end = 0, len(wire)
        return parser.parse(out, size, n)

    return run


def amqp_deliveries(n: int, size: int) -> Callable[[], int]:
    method = b"\x00\x3c\x00\x3c\x04ctag" + bytes(8) + b"\x00\x00\x01q"
    header = b"\x00\x3c\x00\x00" + size.to_bytes(8, "big") + b"\x00\x00"
    one = (frame(METHOD_FRAME, 1, method) + frame(2, 1, header)
           + FRAME.pack(BODY_FRAME, 1, size) + bytes(size) + END)
    wire = one * n
    out = memoryview(bytearray(n * size))
    reader = Reader(1, "bench", len(wire), wire)

    def run() -> int:
        reader.pos, reader.have = 0, len(wire)
        count = at = 0
        while (body := reader.next_delivery()) is not None:
            out[at : at + size] = body
            at += size
            count += 1
        return count

    return run


def best_ns_per_message(run: Callable[[], int], n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter_ns()
        got = run()
        elapsed = time.perf_counter_ns() - began
        assert got == n, f"parsed {got} of {n}"
        best = min(best, elapsed / n)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=20)
    args = common.arguments(parser, smoke={"messages": 200, "repeat": 2})
    n, size = args.messages, args.size
    cases = {
        "redis XREAD reply": redis_xread(n, size),
        "nats MSG (fast path)": nats_msgs(n, size, fast=True),
        "nats MSG (general)": nats_msgs(n, size, fast=False),
        "amqp deliveries": amqp_deliveries(n, size),
    }
    print(f"{n} messages of {size} bytes, best of {args.repeat}")
    for name, run in cases.items():
        print(f"{name:24} {best_ns_per_message(run, n, args.repeat):8.0f} ns/msg")


if __name__ == "__main__":
    main()
