"""The keys record of a run's summary: the key space, the hottest key's share of the keys
the senders drew, the deliveries out of order within their key, and the headline latency
of the hottest key's messages beside the others'."""

from __future__ import annotations

from sixnines.formats.keys import KeySpace, drawn_counts
from sixnines.formats.manifest import Manifest
from sixnines.formats.summary import Figures, KeysSummary
from sixnines.formats.vocabulary import SENDERS


def producer_ids(manifest: Manifest) -> list[int]:
    """Every sending connection's producer id."""
    return [producer for agent in manifest.agents
            if agent.role in SENDERS and agent.first_id is not None
            for producer in range(agent.first_id, agent.first_id
                                  + (agent.connections or manifest.workload.connections))]


def hottest_key(manifest: Manifest) -> int | None:
    """The key the senders drew most (None: the run's messages carried no key)."""
    draws = manifest.workload.key_draws
    if draws is None:
        return None
    space = KeySpace.of(draws.space)
    return int(drawn_counts(space, draws.seed, draws.period, producer_ids(manifest)).argmax())


def keys_summary(manifest: Manifest, key_reordered: int,
                 hot: Figures | None = None, rest: Figures | None = None) -> KeysSummary | None:
    """None when the run's messages carried no key."""
    draws = manifest.workload.key_draws
    if draws is None:
        return None
    space = KeySpace.of(draws.space)
    counts = drawn_counts(space, draws.seed, draws.period, producer_ids(manifest))
    total = int(counts.sum())
    return KeysSummary(count=space.count, distribution=space.distribution,
                       hottest_share=counts.max() / total if total else 0.0,
                       reordered=key_reordered, hottest_us=hot, others_us=rest)
