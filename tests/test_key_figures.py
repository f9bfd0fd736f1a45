"""The summary's keys record from a manifest alone (spark_jobs.key_figures): the hottest
key and its share are those of the keys every sending connection drew."""

from __future__ import annotations

import numpy as np

from sixnines.formats.keys import KeySpace, keys_of
from sixnines.formats.manifest import Manifest
from sixnines.spark_jobs.key_figures import hottest_key, keys_summary, producer_ids

SPACE, SEED, PERIOD = KeySpace(50, 1.3), 4, 256


def manifest(key_draws: dict | None) -> Manifest:
    agents = [{"id": "producer-0", "role": "producer", "first_id": 0, "connections": 2},
              {"id": "producer-1", "role": "producer", "first_id": 2},
              {"id": "consumer-0", "role": "consumer"}]
    return Manifest(run_id="01", agents=agents,
                    workload={"connections": 2, "key_draws": key_draws})


def test_the_hottest_key_and_its_share_are_the_draws_of_every_connection():
    keyed = manifest({"space": SPACE.text(), "seed": SEED, "period": PERIOD})
    assert producer_ids(keyed) == [0, 1, 2, 3]
    drawn = np.concatenate([keys_of(SPACE, SEED, producer, PERIOD) for producer in range(4)])
    counts = np.bincount(drawn, minlength=SPACE.count)
    assert hottest_key(keyed) == int(counts.argmax()) == 0  # Zipf: the first key
    summary = keys_summary(keyed, key_reordered=3)
    assert summary is not None
    assert (summary.count, summary.distribution, summary.reordered) == (50, "zipf(1.3)", 3)
    assert summary.hottest_share == counts.max() / len(drawn)
    assert summary.line().startswith("keys 50 zipf(1.3): hottest ")


def test_a_run_without_keys_has_no_record():
    plain = manifest(None)
    assert hottest_key(plain) is None and keys_summary(plain, 0) is None
