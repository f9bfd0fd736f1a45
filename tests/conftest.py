"""Shared fixtures: one Spark session for the whole test run (JVM start-up costs ~10 s),
and, after every test, the summaries and manifests it left checked against the shipped JSON
Schemas (tests/result_schemas.py).

The fast tier (`pytest -m "not integration"`) holds no JVM, no server and no process beyond
`sixnines validate`: everything under tests/integration/ and every test using the `spark`
fixture is marked `integration` here, whatever its file says, and a test without the mark
that starts a JVM (directly or through a child: its JAVA_HOME points at a `java` that
refuses) or a server fails, naming the mark it lacks. The JVMs of the test run start with
C1-only JIT and the serial collector (SPARK_SUBMIT_OPTS, test session only): the tests' jobs
are small, and on a 2-core machine that saves seconds per JVM."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import sys
import tempfile
from itertools import pairwise
from pathlib import Path

import pytest

from tests.result_schemas import unchecked_problems


def _start_children_as_from_a_terminal() -> None:
    """The processes the tests start get the default SIGHUP and SIGINT, as from a
    terminal, even when the suite runs under `nohup` or in the background: those ignore
    the signals, the ignoring is inherited across exec, and the tests that hang up on or
    Ctrl-C a controller would then test nothing. A Python-level handler is reset at exec:
    the suite keeps surviving a hangup, and Ctrl-C interrupts it as usual."""
    signal.signal(signal.SIGHUP, lambda signum, frame: None)
    signal.signal(signal.SIGINT, signal.default_int_handler)


_start_children_as_from_a_terminal()

INTEGRATION_DIRS = ("integration",)  # tests/<dir>/: real processes, servers and Spark
#: executables of servers and JVMs a test without the `integration` mark must not start
SERVERS = {"java", "spark-submit", "spark-class", "redis-server", "nats-server",
           "rabbitmq-server", "podman", "sshd", "tansu", "noida-db"}
SIXNINES_SERVERS = {"broker", "agent"}  # `python -m sixnines broker|agent`
REFUSE_JVM = """#!/bin/sh
echo "a test not marked integration started a JVM: mark it (tests/conftest.py)" >&2
exit 3
"""
#: C1 only (the suite's JVMs start and compile faster) leaves the code cache at its 48 MB
#: non-tiered default, which the session's one JVM filled a third of the way through the
#: suite ("Out of space in CodeCache", then every Spark test failed): 256 MB, as tiered.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=256m"

os.environ.setdefault("SPARK_SUBMIT_OPTS", JVM_OPTIONS)


def pytest_collection_modifyitems(config, items):
    root = Path(__file__).parent
    for item in items:
        where = Path(str(item.path)).relative_to(root).parts
        if where[0] in INTEGRATION_DIRS or "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


_unmarked_test: list[str] = []  # the node id of the running test when it lacks the mark


def _starts_a_server(argv) -> bool:
    argv = [argv] if isinstance(argv, str | bytes | os.PathLike) else list(argv or ())
    if not argv:
        return False
    words = [os.path.basename(str(arg)) for arg in argv]
    if words[0] in SERVERS:
        return True
    return any(a == "sixnines" and b in SIXNINES_SERVERS for a, b in pairwise(words))


def _audit(event: str, args) -> None:
    if event == "subprocess.Popen" and _unmarked_test and _starts_a_server(args[1]):
        command = " ".join(map(str, [args[1]] if isinstance(args[1], str) else args[1]))
        raise RuntimeError(f"{_unmarked_test[0]} starts a server or JVM ({command[:200]}): "
                           "mark it integration (tests/conftest.py)")


sys.addaudithook(_audit)


def _refusing_java_home(config) -> str:
    """A JAVA_HOME whose bin/java refuses to start, made once per test session."""
    if not hasattr(config, "_refusing_java_home"):
        home = Path(tempfile.mkdtemp(prefix="sixnines-no-jvm-"))
        java = home / "bin" / "java"
        java.parent.mkdir()
        java.write_text(REFUSE_JVM)
        java.chmod(java.stat().st_mode | stat.S_IXUSR)
        config._refusing_java_home = home
        config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))
    return str(config._refusing_java_home)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test without the `integration` mark starts no JVM and no server (see above), nor
    do the fixtures set up or torn down with it (module- and session-scoped ones too)."""
    if item.get_closest_marker("integration") is not None:
        yield
        return
    before = os.environ.get("JAVA_HOME")
    os.environ["JAVA_HOME"] = _refusing_java_home(item.config)
    _unmarked_test[:] = [item.nodeid]
    try:
        yield
    finally:
        _unmarked_test.clear()
        if before is None:
            os.environ.pop("JAVA_HOME", None)
        else:
            os.environ["JAVA_HOME"] = before


@pytest.fixture(scope="session")
def spark():
    """A local Spark session shared by every Spark test, stopped at the end."""
    pytest.importorskip("pyspark")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from sixnines.spark_jobs.analyze import spark_session

    session = spark_session("local[2]", app_name="sixnines-tests")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _results_follow_their_schemas(request, tmp_path_factory):
    """Every summary.json and manifest.json a test leaves under the temporary directories
    validates against docs/summary.schema.json and docs/manifest.schema.json (an error at
    the test's teardown names the file and what breaks the schema)."""
    yield
    if request.node.get_closest_marker("unchecked_results") is None:
        problems = unchecked_problems(tmp_path_factory.getbasetemp())
        if problems:
            pytest.fail("results that break their shipped JSON Schema:\n"
                        + "\n".join(problems), pytrace=False)


@pytest.fixture
def streaming(monkeypatch):
    """Records streamed in chunks while the run goes (the default), whatever
    SIXNINES_CHUNK_ROWS says in this environment."""
    from sixnines.agents import recording

    monkeypatch.setattr(recording, "CHUNK_ROWS", 1 << 19)
