"""How long a run waits for its agents to be ready (orchestrator.run.agents): more for
agents of more connections, whose clients take longer to start (the Kafka sweep of
connections [1, 25] took ~150 s to be ready on this machine's two cores)."""

from sixnines.orchestrator.run.agents import READY_BASE_S, ready_timeout_s


def test_agents_of_more_connections_may_take_longer_to_be_ready():
    assert ready_timeout_s(1) > READY_BASE_S
    assert ready_timeout_s(25) >= 150 + 30  # the measured ~150 s, with room
    assert ready_timeout_s(1000) > ready_timeout_s(25)
