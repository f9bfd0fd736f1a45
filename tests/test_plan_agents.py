"""Planning one run's agents (orchestrator/plan/agents.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sixnines.agents.schedule import NS, message_count
from sixnines.orchestrator.plan.agents import AgentPlan, plan_agents
from sixnines.orchestrator.scenario.model import WorkloadPoint


def workload(**fields) -> WorkloadPoint:
    base = dict(message_size=64, rate=1000.0, duration_ns=2 * NS, warmup_ns=NS // 2)
    base.update(fields)
    return WorkloadPoint(**base)


def by_role(plans: list[AgentPlan], role: str) -> list[AgentPlan]:
    return [plan for plan in plans if plan.role == role]


def test_one_way_lists_consumers_first():
    plans = plan_agents(workload(producers=3, consumers=2))
    roles = [plan.role for plan in plans]
    assert roles == ["consumer", "consumer", "producer", "producer", "producer"]
    assert [plan.agent_id for plan in plans] == [
        "consumer-0", "consumer-1", "producer-0", "producer-1", "producer-2",
    ]
    assert len({plan.agent_id for plan in plans}) == len(plans)


def test_one_way_splits_the_rate_evenly_and_interleaves_phases():
    rate = 1200.0
    plans = by_role(plan_agents(workload(rate=rate, producers=4, consumers=1)), "producer")
    assert [plan.rate for plan in plans] == pytest.approx([rate / 4] * 4)
    assert sum(plan.rate for plan in plans) == pytest.approx(rate)
    # producer k starts k / rate into the schedule: together they make one even grid
    assert [plan.phase_ns for plan in plans] == [int(k * NS / rate) for k in range(4)]
    assert all(plan.phase_ns < NS / (rate / 4) for plan in plans)


def test_consumers_send_nothing():
    for plan in by_role(plan_agents(workload(producers=2, consumers=3)), "consumer"):
        assert plan.rate == 0.0
        assert plan.sends == 0
        assert plan.phase_ns == 0
        assert not plan.sends_messages


@pytest.mark.parametrize("connections", [1, 2, 5])
def test_first_ids_are_distinct_per_connection(connections):
    plans = plan_agents(workload(producers=3, consumers=2, connections=connections))
    for role in ("producer", "consumer"):
        ids = [
            plan.first_id + c for plan in by_role(plans, role) for c in range(connections)
        ]
        assert len(ids) == len(set(ids))
        assert sorted(ids) == list(range(len(ids)))


@pytest.mark.parametrize(
    ("producers", "consumers", "connections"), [(1, 1, 1), (3, 2, 2), (2, 1, 4), (1, 3, 3)]
)
def test_one_way_counts_follow_message_count(producers, consumers, connections):
    w = workload(rate=1000.0, producers=producers, consumers=consumers, connections=connections)
    plans = plan_agents(w)
    span = w.warmup_ns + w.duration_ns
    per_connection = message_count(w.rate / producers / connections, span)
    senders = by_role(plans, "producer")
    assert len(senders) == producers
    for plan in senders:
        assert plan.sends == per_connection * connections
        assert plan.expected == 0
        assert plan.sends_messages
    total = sum(plan.sends for plan in senders)
    consumer_plans = by_role(plans, "consumer")
    assert len(consumer_plans) == consumers
    for plan in consumer_plans:
        # consumers fan out, connections divide: each consumer gets every message once
        assert plan.expected == total


def test_round_trip_plans_requesters_only():
    w = workload(mode="round-trip", rate=900.0, producers=3, consumers=2, connections=2)
    plans = plan_agents(w)
    assert [plan.role for plan in plans] == ["requester"] * 3
    assert [plan.agent_id for plan in plans] == ["requester-0", "requester-1", "requester-2"]
    span = w.warmup_ns + w.duration_ns
    for k, plan in enumerate(plans):
        assert plan.rate == pytest.approx(300.0)
        assert plan.phase_ns == int(k * NS / 900.0)
        assert plan.first_id == k * 2
        assert plan.sends == message_count(300.0 / 2, span) * 2
        assert plan.expected == plan.sends  # every request comes back
        assert plan.sends_messages


def test_any_object_with_the_workload_attributes_can_be_planned():
    w = SimpleNamespace(mode="one-way", rate=10.0, producers=1, consumers=1, connections=1,
                        warmup_ns=0, duration_ns=NS)
    consumer, producer = plan_agents(w)
    assert (consumer.role, producer.role) == ("consumer", "producer")
    assert producer.sends == 10
    assert consumer.expected == 10


def test_tiny_rates_still_send_one_message_per_connection():
    w = SimpleNamespace(mode="one-way", rate=0.5, producers=2, consumers=1, connections=3,
                        warmup_ns=0, duration_ns=NS)
    plans = plan_agents(w)
    for plan in by_role(plans, "producer"):
        assert plan.sends == 3
    assert by_role(plans, "consumer")[0].expected == 2 * 3


def test_rate_max_shares_the_message_count_out_exactly():
    w = WorkloadPoint(message_size=64, rate="max", messages=10_001, producers=3, consumers=2,
                      connections=2)
    plans = plan_agents(w)
    producers, consumers = by_role(plans, "producer"), by_role(plans, "consumer")
    assert [plan.sends for plan in producers] == [3334, 3334, 3333]
    assert {plan.rate for plan in producers} == {0.0}
    # every consumer receives every message once, whatever its connections
    assert {plan.expected for plan in consumers} == {10_001}
