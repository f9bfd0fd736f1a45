"""The analysis on a real standalone Spark cluster (master and worker started here, on
loopback, from pyspark's own launcher) gives exactly the embedded analysis's figures."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import suppress
from pathlib import Path

import pyspark
import pytest

from sixnines.spark_jobs.analyze import analyze_run
from tests.integration.support import execute, free_port, points

pytestmark = pytest.mark.integration

SPARK_HOME = Path(pyspark.__file__).parent
DEPLOY = "org.apache.spark.deploy"
SUBMIT_ARGS = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")  # pyspark's default


def jvm_options() -> str:
    """The test session's JVM flags (tests/conftest.py) for the cluster's own JVMs too."""
    return os.environ.get("SPARK_SUBMIT_OPTS", "")


def start(args: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_DAEMON_JAVA_OPTS": jvm_options()}
    with open(log, "wb") as out:
        # pip installs spark-class without its executable bit: run it through bash
        return subprocess.Popen(["bash", str(SPARK_HOME / "bin" / "spark-class"), *args], env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def master_state(ui_port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as answer:
        return json.load(answer)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(master URL, master UI port) of a one-worker standalone cluster."""
    logs = tmp_path_factory.mktemp("spark-cluster")
    port, ui, worker_ui = free_port(), free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    processes = [start([f"{DEPLOY}.master.Master", "--host", "127.0.0.1", "--port", str(port),
                        "--webui-port", str(ui)], logs / "master.log")]
    try:
        processes.append(start([f"{DEPLOY}.worker.Worker", url, "--host", "127.0.0.1",
                                "--cores", "2", "--memory", "1g", "--webui-port",
                                str(worker_ui)], logs / "worker.log"))
        deadline = time.monotonic() + 90
        while True:
            with suppress(OSError, ValueError):
                if master_state(ui)["aliveworkers"] >= 1:
                    break
            assert time.monotonic() < deadline, (logs / "master.log").read_text()[-2000:]
            time.sleep(0.5)
        yield url, ui
    finally:
        for process in processes:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)


def test_the_cluster_analysis_equals_the_embedded_one(cluster, spark, tmp_path):
    url, ui = cluster
    point = points("""
name: cluster
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 2000, duration: 1s, warmup: 200ms, producers: 2,
           consumers: 2}
""")[0]
    run_dir = tmp_path / "run"
    assert execute(point, run_dir)["status"] == "ok"
    embedded = analyze_run(spark, run_dir)

    # the executor the worker starts takes the session's JVM flags as a cluster's
    # spark-defaults would give them, and runs the passes in a Python with sixnines
    # (docs/running.md, "The analysis: embedded or on a Spark cluster")
    executor = f"--conf {shlex.quote('spark.executor.extraJavaOptions=' + jvm_options())}"
    done = subprocess.run([sys.executable, "-m", "sixnines", "report", str(run_dir),
                           "--spark-master", url], capture_output=True, text=True,
                          timeout=300, check=False,
                          env={**os.environ, "PYSPARK_SUBMIT_ARGS": f"{executor} {SUBMIT_ARGS}",
                               "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr
    on_cluster = json.loads((run_dir / "report" / "summary.json").read_text())
    assert on_cluster == embedded
    assert on_cluster["received"] == 2 * on_cluster["sent"] > 0
    # the work ran on the cluster: the master saw the application and gave it an executor
    apps = master_state(ui)["completedapps"] + master_state(ui)["activeapps"]
    assert any(app["name"] == "sixnines" for app in apps)
