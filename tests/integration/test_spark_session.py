"""The local Spark JVM gets a heap sized to the machine, not Spark's 1 GB default (which
cannot sort one 100M-message stream for the window pass)."""

from __future__ import annotations

import pytest

from sixnines.spark_jobs.session import heap_given, local_heap


def test_local_jvm_heap_is_sized_to_the_machine(spark):
    if heap_given():
        pytest.skip("a heap is set in the environment, which wins over the default")
    wanted = int(local_heap().removesuffix("m")) * 2**20
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    assert 0.85 * wanted <= heap <= 1.05 * wanted  # the JVM reports about -Xmx, not exactly
