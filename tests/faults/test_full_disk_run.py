"""A disk that fills during a run, with a real tmpfs: the console names the file and the
filesystem, what fits is kept, nothing is left running, no half file is left anywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sixnines.formats.chunks import message_files
from tests.faults.disks import leave_free, small_disk
from tests.faults.processes import Sixnines, still_alive_after
from tests.faults.test_interrupts import manifest_of, started

pytestmark = pytest.mark.integration

NO_SPACE = "No space left on device"


def start_run(tmp_path: Path, disk: Path) -> tuple[Sixnines, Path]:
    """A 4 s run at 25k msg/s (~100k messages a side) writing its results on `disk`."""
    (tmp_path / "s.yaml").write_text("""
name: faults
systems: [{name: sut, driver: tcp}]
workload: {message_size: 64, rate: 25k, duration: 4s, warmup: 0s, drain: 2s}
""")
    controller = Sixnines("run", "s.yaml", "--output", str(disk / "out"), "--no-analysis",
                          cwd=tmp_path)
    return controller, started(disk, controller)


def half_files(disk: Path) -> list[Path]:
    return [path for path in disk.rglob("*") if path.name.endswith((".partial", ".tmp"))]


def test_an_agent_that_cannot_write_its_messages_keeps_its_histogram_and_says_where(
        tmp_path):
    """Room for the small files (interval logs, done.json, the manifest) but not for the
    per-message chunks: each agent keeps the chunks it wrote before, leaves a reserve for
    its account of the run, and the console names the first chunk it could not write."""
    with small_disk(tmp_path / "disk") as disk:
        controller, run_dir = start_run(tmp_path, disk)
        tree = controller.snapshot()
        leave_free(disk, 160 * 1024)
        code, _, err = controller.finish()
        assert still_alive_after(tree, 2) == {}
        assert code == 1, err
        assert "Traceback" not in err
        assert re.search(rf"{run_dir}/agents/consumer-0/messages-\d{{6}}\.parquet: {NO_SPACE} "
                         rf"\([\d.,]+ [KMG]?B free on {disk}\) \([\d,]+ records lost\)", err), err
        manifest = manifest_of(run_dir)
        assert manifest["status"] == "partial"
        consumer = next(e for e in manifest["agents"] if e["role"] == "consumer")
        assert consumer["received"] > 50_000  # counted, though its rows could not be kept
        kept = message_files(run_dir / "agents" / "consumer-0")
        assert sum(pq.read_metadata(path).num_rows for path in kept) < consumer["received"]
        assert all(consumer["artifacts"][path.name]["verified"] for path in kept)
        assert consumer["artifacts"]["latency.hlog"]["verified"]
        assert half_files(disk) == []


def test_a_manifest_that_cannot_be_written_still_stops_everything(tmp_path):
    """A disk full to the last byte when the run ends: no result can be written, the
    message says which and where, the broker and agents are stopped all the same, and the
    manifest written at the start is still whole."""
    with small_disk(tmp_path / "disk") as disk:
        controller, run_dir = start_run(tmp_path, disk)
        tree = controller.snapshot()
        before = manifest_of(run_dir)
        leave_free(disk, 0)
        code, _, err = controller.finish()
        assert still_alive_after(tree, 2) == {}
        assert code == 1, err
        assert "Traceback" not in err
        assert f"cannot write {run_dir}/manifest.json: {NO_SPACE}" in err
        assert "every process was stopped" in err
        assert json.loads((run_dir / "manifest.json").read_text())["run_id"] == \
            before["run_id"]
        assert half_files(disk) == []
