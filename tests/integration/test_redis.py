"""The redis driver against real redis-servers started from deploy/recipes/redis.yaml (and,
for authentication, one started here with --requirepass): what is Redis's own (foreign
messages, error replies, stream groups and trimming, logins), and runs end to end through
the Spark analysis. What every driver must do is the conformance suite's
(tests/conformance), for pub/sub and both ways of reading streams."""

from __future__ import annotations

import shutil
import time
import uuid
from functools import partial

import pytest
import redis

from sixnines.drivers.base import DriverError, Lane
from sixnines.drivers.redis import RedisDriver, RedisOptions
from sixnines.formats.layout import BROKER_LOG
from sixnines.orchestrator.scenario.model import ScenarioError
from tests.integration.support import (
    SIZE,
    assert_each_lane_gets_its_own,
    assert_every_message_accounted,
    assert_partial_with_loss_counted,
    assert_unreachable_run_fails,
    collect,
    execute,
    external,
    frames_of,
    parse_options,
    payloads,
    points,
    recipe_server,
    redis_with_password,
    run_with_broker_killed,
)
from tests.integration.support import closing as closing_fixture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(240),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed"),
]

closing = closing_fixture  # the shared fixture, under its name here

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with recipe_server("redis", tmp_path_factory.mktemp("redis")) as broker:
        yield broker


def test_the_broker_s_own_words_go_to_its_log_not_to_memory(tmp_path):
    """Redis logs on its stdout: a recipe's broker output is kept in broker.log (why a
    broker failed is in its own words there), and none of it piles up in the controller."""
    with recipe_server("redis", tmp_path) as broker:
        deadline = time.monotonic() + 10
        while "Ready to accept connections" not in (tmp_path / BROKER_LOG).read_text():
            assert time.monotonic() < deadline, (tmp_path / BROKER_LOG).read_text()
            time.sleep(0.05)
        assert broker.process.lines.qsize() == 0


def fresh_channel() -> str:
    """A channel (stream key) of its own per test: tests share one server."""
    return f"t-{uuid.uuid4().hex[:10]}"


# --- driver level -----------------------------------------------------------------------


def test_a_message_of_another_size_is_an_error_not_garbage(server, closing):
    driver = RedisDriver(server.address, RedisOptions(channel=fresh_channel()))
    receiver = driver.receiver(SIZE, 0)
    closing(receiver)
    client = redis.Redis.from_url(f"redis://{server.address}")
    client.publish(driver.options.channel, b"x" * (SIZE + 3))
    client.close()
    stride = driver.receive_framing(SIZE).stride(SIZE)
    with pytest.raises(DriverError, match="unexpected data"):
        for _ in range(50):
            receiver.receive(memoryview(bytearray(4 * stride)), stride, 100)


def test_an_error_reply_becomes_a_driver_error(server):
    """XADD to a key holding a string: the server answers WRONGTYPE to every command."""
    key = fresh_channel()
    client = redis.Redis.from_url(f"redis://{server.address}")
    client.set(key, "not a stream")
    client.close()
    driver = RedisDriver(server.address, RedisOptions(mode="streams", channel=key))
    sender = driver.sender(SIZE, 1)
    buf, _ = frames_of(driver, 1, 100)
    with pytest.raises(DriverError, match="WRONGTYPE") as error:
        sender.send(memoryview(buf), 100)
        time.sleep(0.2)
        sender.send(memoryview(buf), 100)
        sender.close()
    assert server.address in str(error.value)
    with pytest.raises(DriverError, match="WRONGTYPE"):
        driver.receiver(SIZE, 0)


def test_stream_readers_leave_no_groups_or_reply_streams_behind(server):
    driver = RedisDriver(server.address, RedisOptions(mode="streams", group=True,
                                                      channel=fresh_channel()))
    receiver = driver.receiver(SIZE, 0)
    sender, replies = driver.requester(SIZE, 5)
    client = redis.Redis.from_url(f"redis://{server.address}")
    try:
        assert len(client.xinfo_groups(driver.options.channel)) == 1
        for thing in (receiver, sender, replies):
            thing.close()
        assert client.xinfo_groups(driver.options.channel) == []
        assert not client.exists(f"{driver.options.channel}.reply.5")
    finally:
        client.close()


def test_streams_are_trimmed_to_about_stream_maxlen(server, closing):
    driver = RedisDriver(server.address, RedisOptions(mode="streams", stream_maxlen=500,
                                                      channel=fresh_channel()))
    sender = driver.sender(SIZE, 1)
    buf, _ = frames_of(driver, 1, 5000)
    sender.send(memoryview(buf), 5000)
    sender.close()
    client = redis.Redis.from_url(f"redis://{server.address}")
    try:
        assert 500 <= client.xlen(driver.options.channel) < 5000
    finally:
        client.close()


def test_lanes_write_a_stream_key_each_sharing_stream_maxlen(server, closing):
    """Connection 1 of 2, given its lane's framing, XADDs to `<channel>.1` only, trimmed to
    its half of stream_maxlen."""
    driver = RedisDriver(server.address, RedisOptions(mode="streams", stream_maxlen=1000,
                                                      channel=fresh_channel()))
    sender = driver.sender(SIZE, 1, Lane(1, 2))
    buf, _ = frames_of(driver, 1, 5000, lane=Lane(1, 2))
    messages = payloads(driver, buf, lane=Lane(1, 2))
    sender.send(memoryview(buf), 5000)
    sender.close()
    channel = driver.options.channel
    client = redis.Redis.from_url(f"redis://{server.address}")
    try:
        assert 500 <= client.xlen(f"{channel}.1") < 1000
        last = client.xrevrange(f"{channel}.1", count=1)[0][1]
        assert last == {b"m": messages[-1]}
        assert not client.exists(channel) and not client.exists(f"{channel}.0")
    finally:
        client.close()


@pytest.mark.parametrize("mode", ["pubsub", "streams"])
def test_each_lane_receives_what_its_senders_send(server, closing, mode):
    """Senders on lanes 0 and 1 of 2 send their lane's framing as it is; the receiver of
    each lane gets exactly that lane's messages, through the one receive framing."""
    driver = RedisDriver(server.address, RedisOptions(mode=mode, channel=fresh_channel()))
    assert_each_lane_gets_its_own(driver, closing,
                                  lambda receiver, count: collect(driver, receiver, count))


# --- errors -----------------------------------------------------------------------------


def test_authentication(tmp_path, monkeypatch, closing):
    secret = "s3cret-" + uuid.uuid4().hex
    with redis_with_password(tmp_path, secret) as address:
        # a wrong password: the conformance suite (tests/conformance)
        with pytest.raises(DriverError, match="authentication failed"):
            RedisDriver(address, RedisOptions()).sender(SIZE, 0)  # no password at all
        with pytest.raises(DriverError, match="password_env NOT_SET_ANYWHERE"):
            RedisDriver(address, RedisOptions(password_env="NOT_SET_ANYWHERE")).sender(SIZE, 0)

        monkeypatch.setenv("SIXNINES_TEST_REDIS_PASSWORD", secret)
        good = RedisDriver(address, RedisOptions(password_env="SIXNINES_TEST_REDIS_PASSWORD"))
        (tmp_path / "password").write_text(secret + "\n")
        by_file = RedisDriver(address, RedisOptions(password_file=str(tmp_path / "password"),
                                                    username="default"))
        receiver = good.receiver(SIZE, 0)
        sender = by_file.sender(SIZE, 1)
        closing(receiver)
        closing(sender)
        buf, _ = frames_of(good, 1, 10)
        sender.send(memoryview(buf), 10)
        assert collect(good, receiver, 10) == payloads(good, buf)


# --- end to end -------------------------------------------------------------------------

RATE, DURATION_S, PRODUCERS, CONSUMERS = 1000, 1, 2, 2


def scenario(address: str, mode: str) -> str:
    """The three ways to read, one system each; pub/sub's server is started by the run from
    the recipe, the streams systems use the test's server."""
    brokers = {"pubsub": "{recipe: redis}", "streams": external(address),
               "group": external(address)}
    options = {"pubsub": "", "streams": ", mode: streams", "group": ", mode: streams, group: true"}
    systems = ", ".join(
        f"{{name: {name}, driver: redis, broker: {brokers[name]}, "
        f"options: {{channel: {fresh_channel()}{options[name]}}}}}" for name in brokers)
    return f"""
name: redis-e2e
systems: [{systems}]
workload:
  mode: {mode}
  message_size: 100
  rate: {RATE}
  duration: {DURATION_S}s
  warmup: 200ms
  drain: 3s
  producers: {PRODUCERS}
  consumers: {CONSUMERS}
"""


@pytest.mark.parametrize("mode", ["one-way", "round-trip"])
def test_runs_account_for_every_message(server, tmp_path, spark, mode):
    runs = points(scenario(server.address, mode))
    if mode == "round-trip":  # a group reads replies as XREAD does: the driver tests cover it
        runs = [point for point in runs if point.system.name != "group"]
    for point in runs:
        sent = RATE * DURATION_S
        received = sent * CONSUMERS if mode == "one-way" else sent
        run_dir = tmp_path / point.run_id
        assert_every_message_accounted(spark, execute(point, run_dir), run_dir, sent, received,
                                       point.run_id)


def test_an_unreachable_server_fails_the_run_naming_it(tmp_path):
    assert_unreachable_run_fails("redis", tmp_path)


def test_a_server_dying_mid_run_leaves_partial_data_with_the_loss_counted(tmp_path, spark):
    manifest, address = run_with_broker_killed(
        "redis", "redis", tmp_path,
        "{message_size: 64, rate: 1000, duration: 3s, warmup: 0s, drain: 1s}")
    assert_partial_with_loss_counted(spark, manifest, tmp_path / "run", f"redis at {address}",
                                     sent_below=3000)


# --- options ----------------------------------------------------------------------------

parse = partial(parse_options, "redis")


@pytest.mark.parametrize(("options", "message"), [
    ("{group: true}", "only apply to mode streams"),
    ("{stream_maxlen: 10}", "only apply to mode streams"),
    ("{mode: queue}", "pubsub"),
    ("{password_env: A, password_file: /b}", "not both"),
    ("{mode: streams, stream_maxlen: 0}", "stream_maxlen: must be at least 1"),
])
def test_inconsistent_options_are_refused(options, message):
    with pytest.raises(ScenarioError, match=message):
        parse(options)


def test_streams_options_are_accepted():
    parse("{mode: streams, group: true, stream_maxlen: 1000, channel: s, db: 2}")


def test_workload_problems_refuse_messages_redis_cannot_hold():
    with pytest.raises(ScenarioError, match="largest string"):
        parse("{}", "message_size: 600MiB")
