"""How the analysis sizes its input, which picks its JVM and whether it caches."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sixnines.formats.manifest import Manifest
from sixnines.formats.records import MESSAGES
from sixnines.formats.vocabulary import Role
from sixnines.spark_jobs import session
from sixnines.spark_jobs.analyze import Checked, _input_rows


def _records(path, n: int) -> None:
    columns = {field.name: np.zeros(n, dtype=field.type.to_pandas_dtype()) for field in MESSAGES}
    pq.write_table(pa.table(columns, schema=MESSAGES), path)


def test_the_input_is_sized_by_its_files_not_by_what_agents_reported(tmp_path):
    """A manifest without the agents' counts (another tool's, an agent that died) must
    not make a large input look empty: it would get the lean JVM and a cache it cannot
    fit. A file whose footer cannot be read counts nothing (Spark says why)."""
    for name, n in (("a", 3), ("b", 5), ("c", 7)):
        _records(tmp_path / f"{name}.parquet", n)
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    manifest = Manifest.model_validate({"agents": [
        {"id": "p", "role": "producer"}, {"id": "c", "role": "consumer"}]})
    assert [agent.sent + agent.received for agent in manifest.agents] == [0, 0]
    checked = Checked(tmp_path, manifest, messages={
        "p": (Role.PRODUCER, [tmp_path / "a.parquet", tmp_path / "b.parquet"]),
        "c": (Role.CONSUMER, [tmp_path / "c.parquet", tmp_path / "bad.parquet"])})
    assert _input_rows([checked, checked]) == 2 * (3 + 5 + 7)


def test_only_a_small_input_gets_the_lean_jvm(monkeypatch):
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    assert session.quick_start(session.QUICK_START_MAX_ROWS - 1)
    assert not session.quick_start(session.QUICK_START_MAX_ROWS)
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS",
                       "--conf spark.driver.extraJavaOptions=-Xss4m pyspark-shell")
    assert not session.quick_start(10)
