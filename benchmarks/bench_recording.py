"""Per-message cost of sixnines' hot path, without the network.

Sender side: `OutStream.pump` stamping headers and recording sent times, into a sender that
discards the bytes. Receiver side: `Inbox.take` parsing headers of a batch already in the
buffer. Both at several batch sizes (a sender behind schedule coalesces; a receiver gets
whatever arrived together). The baseline, measured in the same run, is one
`time.perf_counter_ns()` call: the irreducible cost of a timestamp.

    .venv/bin/python benchmarks/bench_recording.py [--messages 2000000] [--size 64] [--smoke]
"""

from __future__ import annotations

import argparse
import time

import common
import numpy as np

from sixnines.agents.recording import PiecePool
from sixnines.agents.schedule import Pieces
from sixnines.agents.streams import Inbox, OutStream, SizedOutStream
from sixnines.drivers.base import Framing, Sender
from sixnines.formats.payload import build_frames, frame_dtype
from sixnines.formats.sizes import CHOICES, DrawnSizes, Sizes

TCP_FRAMING = Framing(prefix=b"\0" * 4)  # the lengths of a tcp frame


class DiscardingSender(Sender):
    def send(self, frames: memoryview, count: int) -> None:
        pass

    def close(self) -> None:
        pass


class ReadyBatch:
    """A receiver whose buffer already holds `count` frames (written once up front)."""

    def __init__(self, frames: np.ndarray, count: int) -> None:
        self.frames, self.count, self.pollable = frames, count, None

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        return self.count

    def close(self) -> None:
        pass


def clock_cost(n: int = 1_000_000) -> float:
    clock = time.perf_counter_ns
    started = clock()
    for _ in range(n):
        clock()
    return (clock() - started) / n


def send_cost(batch: int, messages: int, size: int, varying: bool = False) -> float:
    """ns per message for pump() when `batch` messages are due at each call: a fixed
    schedule of `batch` messages a nanosecond, pumped once a nanosecond of its clock, held
    whole in one piece (nothing records it). `varying`: sizes drawn half `size` / 2, half
    `size` × 1.5 (the same mean), through a `SizedOutStream`."""
    count = messages // batch * batch
    schedule = Pieces("fixed", batch * 1e9, count)
    pool = PiecePool(schedule, count, 1, None)
    stream: OutStream
    if varying:
        mix = Sizes(CHOICES, values=(size // 2, size * 3 // 2), weights=(1.0, 1.0))
        stream = SizedOutStream(DiscardingSender(), lambda _: TCP_FRAMING,
                                DrawnSizes(mix, 0).ring(1), pool, 1, seed=1)
    else:
        stream = OutStream(DiscardingSender(), TCP_FRAMING, size, pool, 1, seed=1)
    stream.arm(0)
    pump = stream.pump
    started = time.perf_counter_ns()
    for now in range(messages // batch):
        pump(now)
    return (time.perf_counter_ns() - started) / stream.next


def receive_cost(batch: int, messages: int, size: int) -> float:
    inbox = Inbox(messages, TCP_FRAMING, size)
    frames = build_frames(b"\0\0\0\0", size, batch, seed=2)
    frames.view(frame_dtype(4, size))["seq"] = np.arange(batch)
    inbox.out[: len(frames)] = frames.tobytes()
    receiver = ReadyBatch(frames, batch)
    take = inbox.take
    started = time.perf_counter_ns()
    for _ in range(messages // batch):
        take(receiver, 0, 0)
    return (time.perf_counter_ns() - started) / inbox.count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument("--size", type=int, default=64)
    args = common.arguments(parser, smoke={"messages": 20_000})
    baseline = min(clock_cost() for _ in range(3))
    print(f"baseline: perf_counter_ns() call = {baseline:.0f} ns")
    print(f"{'batch':>6} {'send ns/msg':>12} {'x clock':>8} {'receive ns/msg':>15} {'x clock':>8}"
          f" {'varying sizes send ns/msg':>26}")
    for batch in (1, 4, 16, 64, 256, 1024):
        n = min(args.messages, batch * 200_000)
        send = min(send_cost(batch, n, args.size) for _ in range(3))
        receive = min(receive_cost(batch, n, args.size) for _ in range(3))
        varying = min(send_cost(batch, n, args.size, varying=True) for _ in range(3))
        print(f"{batch:>6} {send:>12.0f} {send / baseline:>8.1f} {receive:>15.0f} "
              f"{receive / baseline:>8.1f} {varying:>26.0f}")


if __name__ == "__main__":
    main()
