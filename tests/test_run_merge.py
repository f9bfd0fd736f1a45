"""What the per-run merge (spark_jobs.run_merge) reads of a manifest before any task: the
clock of every agent and producer id, the run's sole clock domain, and producer ids
claimed twice."""

from __future__ import annotations

import pytest

from sixnines.formats.manifest import Manifest
from sixnines.spark_jobs import agent_rows, run_merge
from tests.analysis_rows import run_in


def test_run_clocks_from_manifest(tmp_path):
    clock = {"domain": "h1", "offset_ns": 7, "uncertainty_ns": 3}
    agents = [
        {"id": "c", "role": "consumer", "first_id": 0, "clock": clock},
        {"id": "m", "role": "monitor", "clock": {"domain": "broker"}},  # no messages
        {"id": "p0", "role": "producer", "first_id": 0, "clock": clock},
        {"id": "p1", "role": "producer", "first_id": 2},  # older entry: no domain
        {"id": "p2", "role": "producer", "clock": {"domain": None}},  # no first_id, no domain
        # the domain's offset came from another agent's estimate: its bound applies
        {"id": "r", "role": "requester", "first_id": 4,
         "clock": {**clock, "domain_uncertainty_ns": 2}},
    ]
    manifest = {"workload": {"connections": 2}, "cross_host_latency": True}
    assert run_merge.producer_clocks(Manifest.model_validate({"agents": agents, **manifest})) == {
        0: ("h1", 7, 3), 1: ("h1", 7, 3), 2: ("", None, None), 3: ("", None, None),
        4: ("h1", 7, 2), 5: ("h1", 7, 2)}
    # one row for each agent recording messages (the monitor records none)
    rows = [("c", "consumer", 0, 0, 0, 1, 2, 0, False)] + [
        (agent_id, role, 0, 0, 0, 1, None, None, False)
        for agent_id, role in (("p0", "producer"), ("p1", "producer"), ("p2", "producer"),
                               ("r", "requester"))]
    run = run_in(tmp_path, rows, agents=agents, **manifest)
    assert run_merge.sole_domain(run.manifest) is None
    found = run_merge.agent_files([run])
    assert [(a.run.run_index, a.agent_index, *a.clock) for a in found] == [
        (0, 0, "h1", 7, 3), (0, 2, "h1", 7, 3), (0, 3, "", None, None), (0, 4, "", None, None),
        (0, 5, "h1", 7, 2)]
    assert found[0].run.cross_host and found[0].run.sole_domain is None
    older = run_in(tmp_path, [row for row in rows if row[0] in ("p1", "p2")], agents=agents[3:5])
    assert run_merge.sole_domain(older.manifest) == agent_rows.DEFAULT_DOMAIN
    both = run_merge.agent_files([run, older])
    assert [a.run.cross_host for a in both] == [True] * 5 + [False] * 2
    assert [(a.run.run_index, a.agent_index, *a.clock) for a in both[-2:]] == [
        (1, 0, "", None, None), (1, 1, "", None, None)]
    assert both[-1].run.sole_domain == agent_rows.DEFAULT_DOMAIN


def test_overlapping_producer_ids_are_refused():
    agents = [{"id": "p0", "role": "producer", "first_id": 0},
              {"id": "p1", "role": "requester", "first_id": 1}]
    with pytest.raises(ValueError, match="producer id 1 claimed by agents p0 and p1"):
        run_merge.producer_clocks(
            Manifest.model_validate({"agents": agents, "workload": {"connections": 2}}))
