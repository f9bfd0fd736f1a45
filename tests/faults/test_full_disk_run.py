"""A disk that fills during a run, with a real tmpfs: the console names the file and the
filesystem, what fits is kept, nothing is left running, no half file is left anywhere."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sixnines.formats.chunks import message_files, read_index
from tests.faults.disks import FILLER, leave_free, small_disk
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


def closed(run_dir: Path, chunks: int, controller: Sixnines) -> dict[str, Path]:
    """The folders of the run's producer and consumer, once each has closed `chunks`."""
    folders = {name: run_dir / "agents" / name for name in ("producer-0", "consumer-0")}
    deadline = time.monotonic() + 60
    while min(len(read_index(folder)) for folder in folders.values()) < chunks:
        assert time.monotonic() < deadline, controller.stderr
        time.sleep(0.05)
    return folders


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
        closed(run_dir, 1, controller)
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
        # what the consumer received but could not keep is not the system's loss
        assert consumer["cut_short"].startswith("its records are not all on disk (")
        (disk / FILLER).unlink()
        report = Sixnines("report", str(run_dir.parent), cwd=tmp_path)
        code, _, err = report.finish(timeout_s=300)
        assert code == 1 and "Traceback" not in err, err  # partial
        summary = json.loads((run_dir / "report" / "summary.json").read_text())
        print(f"disk full for chunks: {summary['sent']:,} sent, {summary['received']:,} "
              f"kept received, {summary['unknown']:,} unknown")
        assert (summary["lost"], summary["status"]) == (0, "partial")
        assert summary["delivered"] + summary["unknown"] == summary["sent"]
        assert summary["received"] > 0


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


def test_chunks_closed_before_the_disk_filled_are_analysed_without_any_done_json(tmp_path):
    """The disk fills to the last byte once the agents have closed a few chunks: no agent
    can write its done.json, nor the controller the run's end. Once there is room again,
    `sixnines report` analyses every chunk the agents' indexes list (the run partial)
    rather than calling the run failed."""
    with small_disk(tmp_path / "disk") as disk:
        controller, run_dir = start_run(tmp_path, disk)
        folders = closed(run_dir, 2, controller)
        leave_free(disk, 0)
        code, _, err = controller.finish()
        assert code == 1 and "Traceback" not in err, err
        assert not any((folder / "done.json").exists() for folder in folders.values())
        assert manifest_of(run_dir)["status"] == "running"  # its end could not be written
        (disk / FILLER).unlink()
        sent, received = (sum(entry["rows"] for entry in read_index(folder))
                          for folder in folders.values())
        report = Sixnines("report", str(run_dir.parent), cwd=tmp_path)
        code, _, err = report.finish(timeout_s=300)
        assert code == 1 and "Traceback" not in err, err  # partial
        summary = json.loads((run_dir / "report" / "summary.json").read_text())
        print(f"disk full: {sent:,} sent and {received:,} received in the chunks kept, "
              f"{summary['unknown']:,} unknown")
        assert summary["status"] == "partial"
        assert summary["received"] == received > 10_000
        assert summary["sent"] >= sent > 10_000  # and what the consumer kept after
        assert summary["lost"] == 0

