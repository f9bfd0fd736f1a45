"""The files of a run's agents, brought to the controller once they have stopped: fetched
from each agent's host, checked against the checksums the agent announced, and the remote
copy removed only once all of it is here.

An agent whose `done` never arrived (it finished after we stopped listening) is taken from
the done.json it kept beside its files; one that died has its directory fetched all the
same, for the chunks it closed, which their index vouches for (docs/design.md, "When an
agent dies").
"""

from __future__ import annotations

import logging

from sixnines.formats import protocol as p
from sixnines.formats.chunks import kept_chunks
from sixnines.formats.done import kept_done
from sixnines.formats.integrity import sha256_of
from sixnines.formats.layout import DONE_FILE
from sixnines.formats.manifest import Artifact
from sixnines.orchestrator.run.agents import Agents
from sixnines.orchestrator.run.channel import AgentHandle
from sixnines.orchestrator.run.manifest import verified_artifacts

logger = logging.getLogger(__name__)


def collect(agents: Agents) -> None:
    """Every agent's files here and verified, as far as they can be (module docstring);
    what fails is a problem of the run (a note, for the monitor)."""
    for agent in agents.all():
        remote = agent.remote
        if agent.done is None and not remote:
            _done_from_disk(agents, agent)
        fetched = remote and agent.ready is not None and _fetch(agents, agent)  # it ran
        if agent.done is not None:
            agent.artifacts = _verified(agents, agent, agent.done)
        if fetched and _all_here(agent):
            agent.launcher.run(["rm", "-rf", agent.remote_dir], timeout_s=60)
            agent.collected = True


def _all_here(agent: AgentHandle) -> bool:
    """Whether the controller's copy of an agent's files is whole: every file it
    announced verified, or, for one that died, every chunk its index lists matching."""
    if agent.done is not None:
        return all(a.verified for a in agent.artifacts.values())
    return all(path.is_file() and sha256_of(path) == line["sha256"]
               for path, line in kept_chunks(agent.out_dir).listed)


def _fetch(agents: Agents, agent: AgentHandle) -> bool:
    """Copy the agent's directory from its host; False, with a problem line, when that
    failed (a host gone)."""
    try:
        agent.process.fetch(agent.remote_dir, agent.out_dir)
    except Exception as exc:
        agents.problems_of(agent).append(
            f"{agent.plan.agent_id}: could not fetch its files from host "
            f"{agent.plan.host}: {exc}")
        return False
    return True


def _done_from_disk(agents: Agents, agent: AgentHandle) -> None:
    done = kept_done(agents.run_dir, agent.plan.agent_id)
    if done is not None and done.agent_id == agent.plan.agent_id:
        logger.info("%s: %s's results taken from its %s", agents.run_id,
                    agent.plan.agent_id, DONE_FILE)
        agent.done, agent.failure = done, None
        agent.sent, agent.received = done.sent, done.received
        agents.view.agent_state(agent.plan.agent_id, done.status)


def _verified(agents: Agents, agent: AgentHandle, done: p.Done) -> dict[str, Artifact]:
    """Artifacts as announced (in `done`), each checked against the file on disk."""
    files, problems = verified_artifacts(agents.run_dir, agent.plan.agent_id, done.artifacts)
    agents.problems_of(agent).extend(problems)
    return files
