"""The live view's disk outlook (orchestrator.run.progress); what agents report for it is
tests/test_disk.py's."""

from __future__ import annotations

import io
import time
from types import SimpleNamespace

from sixnines.orchestrator.plan.agents import AgentPlan
from sixnines.orchestrator.run.progress import ProgressView, seconds_until_full

MB = 1_000_000


def test_a_host_is_expected_full_only_before_the_run_ends():
    assert seconds_until_full(10 * MB, 20 * MB, 10.0, 60.0) == 20.0  # 1 MB/s, 50 s to go
    assert seconds_until_full(10 * MB, 60 * MB, 10.0, 60.0) is None  # fills after the end
    assert seconds_until_full(10 * MB, -1, 10.0, 60.0) is None  # free space unknown
    assert seconds_until_full(10 * MB, 1, 0.5, 60.0) is None  # no rate before a second


def test_the_view_warns_once_per_host_that_will_fill_up():
    out = io.StringIO()
    view = ProgressView(1, out)
    plans = [AgentPlan("producer-0", "producer", 1000, 0, 0, 1000, 0, host="small"),
             AgentPlan("consumer-0", "consumer", 0, 0, 0, 0, 1000, host="small"),
             AgentPlan("consumer-1", "consumer", 0, 0, 1, 0, 1000, host="big")]
    view.begin_run(SimpleNamespace(index=1, run_id="r"), plans)
    view.started(0, 60 * 10**9)
    view.started_mono = time.monotonic() - 10  # ten seconds into a minute-long run
    view.progress("producer-0", 0, 0, 4 * MB, 25 * MB)
    view.progress("consumer-0", 0, 0, 6 * MB, 20 * MB)  # together 1 MB/s, 20 MB left
    view.progress("consumer-1", 0, 0, 6 * MB, 900 * MB)
    view.progress("consumer-0", 0, 0, 6 * MB, 20 * MB)
    assert view.disks() == {"small": (10 * MB, 20 * MB), "big": (6 * MB, 900 * MB)}
    warnings = [line for line in out.getvalue().splitlines() if "warning" in line]
    assert len(warnings) == 1 and "small will run out of disk in about 20 s" in warnings[0]
