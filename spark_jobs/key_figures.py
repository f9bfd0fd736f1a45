"""The keys record of a run's summary: the key space, the hottest key's share of the keys
the senders drew, and the deliveries out of order within their key."""

from __future__ import annotations

import numpy as np

from sixnines.formats.keys import KeySpace, keys_of
from sixnines.formats.manifest import Manifest
from sixnines.formats.summary import KeysSummary
from sixnines.formats.vocabulary import SENDERS


def keys_summary(manifest: Manifest, key_reordered: int) -> KeysSummary | None:
    """None when the run's messages carried no key."""
    draws = manifest.workload.key_draws
    if draws is None:
        return None
    space = KeySpace.parse(draws.space)
    assert space is not None  # key_draws is recorded only for a key space
    counts = np.zeros(space.count, dtype=np.int64)
    for agent in manifest.agents:
        if agent.role in SENDERS and agent.first_id is not None:
            for producer in range(agent.first_id,
                                  agent.first_id + (agent.connections
                                                    or manifest.workload.connections)):
                counts += np.bincount(keys_of(space, draws.seed, producer, draws.period),
                                      minlength=space.count)
    total = int(counts.sum())
    return KeysSummary(count=space.count, distribution=space.distribution,
                       hottest_share=counts.max() / total if total else 0.0,
                       reordered=key_reordered)
