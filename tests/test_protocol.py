"""The controller <-> agent control channel (formats/protocol.py)."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import threading
import time

import pytest

from sixnines.formats import protocol
from sixnines.formats.protocol import (
    MESSAGE_TYPES,
    PROTOCOL_VERSION,
    Beat,
    Channel,
    Done,
    Failed,
    Finish,
    Follow,
    Message,
    Ping,
    Pong,
    Prepare,
    Progress,
    ProtocolError,
    Ready,
    Start,
    Stop,
    decode,
    encode,
)

PREPARE = Prepare(
    protocol=PROTOCOL_VERSION, run_id="r-1", agent_id="producer-0", role="producer",
    driver="tcp", address="127.0.0.1:5555", driver_options={"nodelay": True},
    message_size=64, rate=1234.5, schedule="poisson", duration_ns=10**10, warmup_ns=10**9,
    connections=2, first_id=4, phase_ns=810, receive="busy-poll", drain_ns=5 * 10**9,
    seed=42, expected=0, out_dir="/tmp/run/agents/producer-0",
)

SAMPLES: list[Message] = [
    PREPARE,
    Ready(protocol=PROTOCOL_VERSION, agent_id="a", pid=1234,
          host={"name": "h", "cpus": 2, "nested": {"x": [1, 2]}}, versions={"numpy": "2"}),
    Ping(t_ns=123),
    Pong(t_ns=123, agent_ns=-456),
    Start(at_ns=2**62),
    Follow(target_pid=4242),
    Finish(expected=99),
    Stop(reason="user: ctrl-c \u2014 \u00e9\n"),
    Progress(agent_id="consumer-1", sent=0, received=17),
    Done(agent_id="a", status="ok", sent=10, received=10, t0_ns=5,
         artifacts={"messages.parquet": {"sha256": "ab" * 32, "bytes": 100}}),
    Done(agent_id="a", status="partial", sent=10, received=9, t0_ns=5, artifacts={},
         problems=["lost 1"], extra={"overflow": 0}),
    Failed(agent_id="b", error="DriverError: tcp relay at x: cannot connect"),
    Beat(),
]


def test_samples_cover_every_message_type():
    assert {type(m).TYPE for m in SAMPLES} == set(MESSAGE_TYPES)
    assert len(MESSAGE_TYPES) == 12


@pytest.mark.parametrize("message", SAMPLES, ids=lambda m: type(m).__name__)
def test_every_message_round_trips(message):
    line = encode(message)
    assert "\n" not in line
    data = json.loads(line)
    assert data["type"] == type(message).TYPE
    back = decode(line)
    assert type(back) is type(message)
    assert back == message


def test_done_defaults_survive_the_round_trip():
    done = Done(agent_id="a", status="ok", sent=1, received=1, t0_ns=0, artifacts={})
    back = decode(encode(done))
    assert back.problems == []
    assert back.extra == {}


def test_decode_accepts_surrounding_whitespace():
    assert decode("  " + encode(Ping(t_ns=5)) + "\n") == Ping(t_ns=5)


def test_unknown_type_is_a_protocol_error():
    with pytest.raises(ProtocolError, match="bad control message"):
        decode('{"type": "launch", "t_ns": 1}')


def test_missing_type_is_a_protocol_error():
    with pytest.raises(ProtocolError):
        decode('{"t_ns": 1}')


def test_missing_field_is_a_protocol_error():
    with pytest.raises(ProtocolError):
        decode('{"type": "pong", "t_ns": 1}')
    data = json.loads(encode(PREPARE))
    del data["seed"]
    with pytest.raises(ProtocolError):
        decode(json.dumps(data))


def test_unknown_field_is_a_protocol_error():
    with pytest.raises(ProtocolError):
        decode('{"type": "ping", "t_ns": 1, "extra": 2}')


@pytest.mark.parametrize("line", ["", "not json", "[1, 2]", "42", "null", '"ping"', "{"])
def test_malformed_lines_are_protocol_errors(line):
    with pytest.raises(ProtocolError):
        decode(line)


def test_messages_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Ping(t_ns=1).t_ns = 2  # type: ignore[misc]


def test_channel_pairs_sends_and_receives():
    wire = io.StringIO()
    sender = Channel(io.StringIO(), wire)
    for message in SAMPLES:
        sender.send(message)
    lines = wire.getvalue().splitlines()
    assert len(lines) == len(SAMPLES)
    receiver = Channel(io.StringIO(wire.getvalue()), io.StringIO())
    said = [message for message in SAMPLES if not isinstance(message, Beat)]
    assert [receiver.receive() for _ in said] == said  # beats are the channel's own
    assert receiver.receive() is None
    assert receiver.receive() is None  # stays at end of stream


def test_channel_skips_blank_lines():
    text = "\n  \n" + encode(Ping(t_ns=1)) + "\n\n\t\n" + encode(Start(at_ns=2)) + "\n\n"
    channel = Channel(io.StringIO(text), io.StringIO())
    assert channel.receive() == Ping(t_ns=1)
    assert channel.receive() == Start(at_ns=2)
    assert channel.receive() is None


def test_channel_at_immediate_end_of_stream():
    assert Channel(io.StringIO(""), io.StringIO()).receive() is None


def test_channel_reports_a_bad_line():
    channel = Channel(io.StringIO("garbage\n" + encode(Ping(t_ns=1)) + "\n"), io.StringIO())
    with pytest.raises(ProtocolError):
        channel.receive()
    assert channel.receive() == Ping(t_ns=1)


class SlowWriter(io.StringIO):
    """A stream that writes each line in pieces, so interleaved writers would show."""

    def write(self, text: str) -> int:
        middle = len(text) // 2
        super().write(text[:middle])
        time.sleep(0)  # let other threads run between the halves
        return middle + super().write(text[middle:])


def test_channel_send_is_thread_safe():
    wire = SlowWriter()
    channel = Channel(io.StringIO(), wire)
    threads_n, per_thread = 8, 200
    start = threading.Barrier(threads_n)

    def worker(t: int) -> None:
        start.wait()
        for i in range(per_thread):
            channel.send(Progress(agent_id=f"agent-{t}-" + "x" * 50, sent=i, received=t))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = wire.getvalue().splitlines()
    assert len(lines) == threads_n * per_thread
    seen: dict[int, list[int]] = {t: [] for t in range(threads_n)}
    for line in lines:
        message = decode(line)  # every line intact
        assert isinstance(message, Progress)
        seen[message.received].append(message.sent)
    for t in range(threads_n):
        assert seen[t] == list(range(per_thread))  # each thread's lines in its order


def test_silence_after_a_beat_ends_the_input(monkeypatch):
    """A controller that froze or lost its network closes nothing: once it sent a beat,
    SILENCE_S without a line is the end of input, and stays so."""
    monkeypatch.setattr(protocol, "SILENCE_S", 0.2)
    read, write = os.pipe()
    with os.fdopen(read) as incoming, os.fdopen(write, "w") as outgoing:
        channel = Channel(incoming, io.StringIO())
        outgoing.write(encode(Beat()) + "\n" + encode(Ping(t_ns=1)) + "\n")
        outgoing.flush()
        assert channel.receive() == Ping(t_ns=1)
        began = time.monotonic()
        assert channel.receive() is None
        assert 0.2 <= time.monotonic() - began < 2
        outgoing.write(encode(Ping(t_ns=2)) + "\n")
        outgoing.flush()
        assert channel.receive() is None


def test_without_beats_silence_is_only_waiting(monkeypatch):
    monkeypatch.setattr(protocol, "SILENCE_S", 0.1)
    read, write = os.pipe()
    with os.fdopen(read) as incoming, os.fdopen(write, "w") as outgoing:
        channel = Channel(incoming, io.StringIO())
        received = []
        reader = threading.Thread(target=lambda: received.append(channel.receive()))
        reader.start()
        time.sleep(0.5)
        assert received == []
        outgoing.write(encode(Ping(t_ns=3)) + "\n")
        outgoing.flush()
        reader.join(5)
        assert received == [Ping(t_ns=3)]
