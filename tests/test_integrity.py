"""formats.integrity: which files of a run may be read, in plain
Python on small files (the real runs are in tests/faults/test_corrupt_artifacts.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sixnines.agents.artifacts import described
from sixnines.formats import integrity
from sixnines.formats.manifest import Manifest


def _run(tmp_path: Path, **record) -> tuple[Path, Manifest]:
    """A run dir with one consumer's messages.parquet, listed as its agent announced it."""
    folder = tmp_path / "agents" / "c"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"seq": list(range(1000))}), folder / "messages.parquet")
    artifacts = {name: {**entry, "verified": True, **record}
                 for name, entry in described(folder, ("messages.parquet",)).items()}
    return tmp_path, Manifest.model_validate(
        {"agents": [{"id": "c", "role": "consumer", "artifacts": artifacts}]})


def test_an_untouched_run_passes(tmp_path):
    assert integrity.problems(*_run(tmp_path)) == []


def test_a_changed_file_is_named_by_what_differs(tmp_path):
    run_dir, manifest = _run(tmp_path)
    path = run_dir / "agents" / "c" / "messages.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    (problem,) = integrity.problems(run_dir, manifest)
    assert problem.startswith(f"{path}: content does not match its sha256 in the manifest")
    path.write_bytes(bytes(data[:100]))
    (problem,) = integrity.problems(run_dir, manifest)
    assert problem.startswith(f"{path}: 100 bytes where the manifest records ")


def test_the_controller_s_verdict_stands_and_a_missing_file_is_not_damage(tmp_path):
    run_dir, manifest = _run(tmp_path, verified=False)
    path = run_dir / "agents" / "c" / "messages.parquet"
    (problem,) = integrity.problems(run_dir, manifest)
    assert problem == (f"{path}: did not match its checksum when the controller collected "
                       "it (verified: false in the manifest)")
    path.unlink()  # never fetched: missing data, which the analysis counts as such
    assert integrity.problems(run_dir, manifest) == []


def test_a_listed_file_deleted_since_the_run_is_damage(tmp_path):
    run_dir, manifest = _run(tmp_path)
    (run_dir / "agents" / "c" / "messages.parquet").unlink()
    (problem,) = integrity.problems(run_dir, manifest)
    assert problem.endswith("messages.parquet: missing, though the manifest lists it: "
                            "deleted since the run")


def test_without_a_checksum_a_parquet_file_must_decode(tmp_path):
    run_dir, manifest = _run(tmp_path)
    manifest.agents[0].artifacts = {}
    assert integrity.problems(run_dir, manifest) == []
    path = run_dir / "agents" / "c" / "messages.parquet"
    path.write_bytes(path.read_bytes()[:-10])
    (problem,) = integrity.problems(run_dir, manifest)
    assert problem.startswith(f"{path}: unreadable parquet (")
    assert problem.endswith("no checksum recorded") and "\n" not in problem


RUN = '"run_id": "x", "status": "ok"'


@pytest.mark.parametrize(("text", "finding"), [
    ('{"run_id": "x", "agents": [', "not valid JSON (Expecting value: line 1 column 28"),
    ("[1, 2]", "not a sixnines manifest (not a JSON object)"),
    (f'{{{RUN}, "agents": [{{"role": "consumer"}}]}}', "not a sixnines manifest "
     "(`agents[0].id`: Field required)"),
    (f'{{{RUN}, "agents": [{{"id": "c", "artifacts": []}}]}}', "(`agents[0].artifacts`: Input "
     "should be a valid dictionary)"),
    (f'{{{RUN}, "agents": [], "throughput_window": "many"}}', "(`throughput_window`: Input "
     "should be a valid integer"),
    ("{}", "not a sixnines manifest (no run_id, status, agents)"),
])
def test_an_unusable_manifest_is_named(tmp_path, text, finding):
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(integrity.Damaged) as caught:
        integrity.read_manifest(tmp_path)
    (problem,) = caught.value.problems
    assert problem.startswith(f"{tmp_path / 'manifest.json'}: ") and finding in problem


def test_a_manifest_that_is_not_text_is_named(tmp_path):
    (tmp_path / "manifest.json").write_bytes(b'{"run_id": "\xff"}')
    with pytest.raises(integrity.Damaged, match=r"manifest\.json: not valid JSON"):
        integrity.read_manifest(tmp_path)
