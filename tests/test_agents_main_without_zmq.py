"""The agent core needs no pyzmq: a tcp one-way run (two receiver connections, so the
driver's Waiter is what blocks) goes through in a process where `import zmq` fails."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import json, subprocess, sys, threading
    sys.modules["zmq"] = None  # `import zmq` raises ImportError from here on

    import sixnines.agents.main  # the agent's entry point imports without zmq
    from sixnines.agents.roles import Consumer, Control, Producer
    from sixnines.agents.streams import clock
    from sixnines.drivers import registry
    from sixnines.formats.protocol import PROTOCOL_VERSION, Prepare

    relay = subprocess.Popen([sys.executable, "-m", "sixnines", "broker", "tcp", "--bind",
                              "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    try:
        address = json.loads(relay.stdout.readline())["listening"]
        driver = registry.load("tcp")(address, registry.load("tcp").Options())

        def prepare(role, **fields):
            return Prepare(protocol=PROTOCOL_VERSION, run_id="r", agent_id=role, role=role,
                           driver="tcp", address=address, driver_options={},
                           message_size=64, rate=20000.0, schedule="fixed",
                           duration_ns=50_000_000, warmup_ns=0, connections=fields.pop(
                               "connections", 1), first_id=0, phase_ns=0,
                           receive="blocking", drain_ns=2_000_000_000, seed=1,
                           expected=fields.pop("expected", 0), out_dir=sys.argv[1])

        consumer = Consumer(prepare("consumer", connections=2, expected=1000), driver)
        producer = Producer(prepare("producer", connections=2), driver)
        control = Control()
        receiving = threading.Thread(target=consumer.run, args=(control,))
        receiving.start()
        t0 = clock() + 10_000_000
        producer.arm(t0)
        consumer.arm(t0)
        producer.run(Control())
        control.finish(producer.sent, 2_000_000_000)
        receiving.join(10)
        producer.close()
        consumer.close()
        print(json.dumps({"sent": producer.sent, "received": consumer.received,
                          "zmq": "zmq" in sys.modules and sys.modules["zmq"] is not None}))
    finally:
        relay.terminate()
        relay.wait(10)
""")


def test_a_tcp_one_way_run_needs_no_pyzmq(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    result = done.stdout.strip().splitlines()[-1]
    assert result == '{"sent": 1000, "received": 1000, "zmq": false}', done.stdout
