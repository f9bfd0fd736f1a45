"""Edited, truncated and bit-flipped files given to `sixnines report`.

Each damaged file is named in one line with what is wrong; its run is `corrupt`, with no
figure; the command exits 1 without a traceback; the other runs of the directory still get
their reports; and `corrupt` reaches summary.csv, the HTML report, `sixnines runs` and
`sixnines compare`. A file with no checksum to check against (an older manifest) is still
named when it cannot be read, and an edit that reads fine is caught by the hlog check.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tests.faults.support import (
    copy_run,
    edit_manifest,
    failed_cleanly,
    line_with,
    record,
    sixnines,
)

pytestmark = pytest.mark.integration

MESSAGES = "agents/consumer-0/messages-000001.parquet"  # the consumer's first chunk
HLOG = "agents/consumer-0/latency.hlog"
CHANGED = "changed since the run"  # the end of every checksum and size finding
SHIFT_NS = 5_000_000


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    return record(tmp_path_factory.mktemp("recorded") / "01-tcp")


# --- damage, as an editor, a bad disk or a cut-short copy leaves it ------------------------


def shift_receive_times(path: Path) -> None:
    """Every receive time 5 ms later, in a valid parquet file: an edit no reader notices."""
    table = pq.read_table(path)
    shifted = pc.add(table["recv_ns"], SHIFT_NS)
    table = table.set_column(table.schema.get_field_index("recv_ns"), "recv_ns", shifted)
    pq.write_table(table, path, compression="zstd")


def cut_short(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size * 2 // 3])


def flip_bit(path: Path, offset: int, mask: int = 0x10) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= mask
    path.write_bytes(bytes(data))


def flip_middle(path: Path) -> None:
    flip_bit(path, path.stat().st_size // 2)


def flip_parquet_footer(path: Path) -> None:
    """The last byte of the closing PAR1 magic: a reader finds no parquet footer."""
    flip_bit(path, path.stat().st_size - 1)


def _payload_letter(path: Path) -> int:
    """Offset of a letter in the middle of the last interval's compressed histogram:
    zlib's checksum covers it, so a change there is always found."""
    data = path.read_bytes()
    line = data.rindex(b"\nTag=") + 1
    payload = line
    for _ in range(4):  # Tag=…,start,length,max,PAYLOAD
        payload = data.index(b",", payload) + 1
    offset = (payload + data.index(b"\n", payload)) // 2
    while not chr(data[offset]).isalpha():
        offset += 1
    return offset


def flip_hlog_payload(path: Path) -> None:
    flip_bit(path, _payload_letter(path), 0x20)  # another letter: still base64


def cut_hlog_mid_line(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: _payload_letter(path)])


def without_checksums(run_dir: Path) -> None:
    """As a manifest written before checksums were recorded (or by a controller that died
    before collecting): no `artifacts` anywhere."""
    def drop(manifest: dict) -> None:
        for entry in [*manifest["agents"], manifest.get("monitor") or {}]:
            entry.pop("artifacts", None)
    edit_manifest(run_dir, drop)


def recorded_unverified(run_dir: Path) -> None:
    """The controller found the consumer's file not matching its checksum on collection."""
    def unverify(manifest: dict) -> None:
        consumer = next(a for a in manifest["agents"] if a["id"] == "consumer-0")
        consumer["artifacts"][Path(MESSAGES).name]["verified"] = False
    edit_manifest(run_dir, unverify)


def garble_manifest(run_dir: Path) -> None:
    path = run_dir / "manifest.json"
    path.write_text(path.read_text()[:1000])


def flip_manifest(run_dir: Path) -> None:
    flip_bit(run_dir / "manifest.json", 0, 0x01)  # "{" → "z"


def refused(run_dir: Path) -> dict:
    """The run's own summary: corrupt, no figure, no other report file."""
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["status"] == "corrupt"
    assert not {"latency_us", "sent", "lost", "hlog_agrees"} & set(summary)
    assert sorted(p.name for p in (run_dir / "report").iterdir()) == ["summary.json"]
    return summary


# --- one run directory, one damaged file: no Spark needed to refuse it ---------------------

Damage = tuple[str, Callable[[Path], None], str]
WITH_CHECKSUM: dict[str, Damage] = {
    "receive times shifted 5 ms": (MESSAGES, shift_receive_times, CHANGED),
    "parquet cut short": (MESSAGES, cut_short, CHANGED),
    "parquet bit flipped": (MESSAGES, flip_middle, CHANGED),
    "hlog cut short": (HLOG, cut_short, CHANGED),
    "hlog bit flipped": (HLOG, flip_middle, CHANGED),
}
WITHOUT_CHECKSUM: dict[str, Damage] = {
    "parquet cut short": (MESSAGES, cut_short, "unreadable parquet"),
    "parquet footer bit flipped": (MESSAGES, flip_parquet_footer, "unreadable parquet"),
    "hlog payload bit flipped": (HLOG, flip_hlog_payload, "damaged interval"),
    "hlog cut mid-line": (HLOG, cut_hlog_mid_line, "damaged interval"),
}


@pytest.mark.parametrize("case", WITH_CHECKSUM)
def test_a_file_failing_its_checksum_is_named_and_not_analysed(recorded, tmp_path, case):
    relative, damage, finding = WITH_CHECKSUM[case]
    run_dir = copy_run(recorded, tmp_path / "01-tcp")
    damage(run_dir / relative)
    err = failed_cleanly(sixnines("report", run_dir))
    line_with(err, str(run_dir / relative), finding)
    assert any(relative in problem for problem in refused(run_dir)["problems"])


@pytest.mark.parametrize("case", WITHOUT_CHECKSUM)
def test_a_damaged_file_without_a_checksum_is_named_when_read(recorded, tmp_path, case):
    relative, damage, finding = WITHOUT_CHECKSUM[case]
    run_dir = copy_run(recorded, tmp_path / "01-tcp")
    without_checksums(run_dir)
    damage(run_dir / relative)
    err = failed_cleanly(sixnines("report", run_dir))
    line_with(err, str(run_dir / relative), finding)
    refused(run_dir)


def test_a_file_the_controller_found_unverified_is_not_trusted(recorded, tmp_path):
    run_dir = copy_run(recorded, tmp_path / "01-tcp")
    recorded_unverified(run_dir)
    err = failed_cleanly(sixnines("report", run_dir))
    line_with(err, str(run_dir / MESSAGES), "verified: false")
    refused(run_dir)


@pytest.mark.parametrize("garble", [garble_manifest, flip_manifest])
def test_an_unreadable_manifest_is_named_everywhere_it_is_read(recorded, tmp_path, garble):
    """`sixnines runs` lists the never-analysed run as corrupt; `report` names the file."""
    run_dir = copy_run(recorded, tmp_path / "root" / "results" / "01-tcp")
    garble(run_dir)
    listed = sixnines("runs", tmp_path / "root", "--json")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    (entry,) = json.loads(listed.stdout)
    assert entry["status"] == {"corrupt": 1} and not entry["analysed"]
    err = failed_cleanly(sixnines("report", run_dir))
    line_with(err, str(run_dir / "manifest.json"), "not valid JSON")
    assert refused(run_dir)["run_id"] == "01-tcp"


# --- a results directory: the damaged runs are refused, the others analysed ---------------


@pytest.fixture(scope="module")
def results(recorded, tmp_path_factory) -> tuple[Path, str]:
    """Four copies of the run, reported together: intact; receive times shifted (fails its
    checksum); manifest cut short; shifted with no checksum recorded (only the hlog check
    can tell). Returns the results directory and `report`'s stderr."""
    results = tmp_path_factory.mktemp("root") / "results"
    copy_run(recorded, results / "01-intact")
    shift_receive_times(copy_run(recorded, results / "02-shifted") / MESSAGES)
    garble_manifest(copy_run(recorded, results / "03-manifest"))
    unchecked = copy_run(recorded, results / "04-unchecked")
    without_checksums(unchecked)
    shift_receive_times(unchecked / MESSAGES)
    return results, failed_cleanly(sixnines("report", results))


def test_the_other_runs_are_analysed(results):
    results_dir, err = results
    runs = {run["run_id"]: run for run in
            json.loads((results_dir / "summary.json").read_text())["runs"]}
    assert {run_id: run["status"] for run_id, run in runs.items()} == {
        "01-intact": "ok", "02-shifted": "corrupt", "03-manifest": "corrupt",
        "04-unchecked": "partial"}
    intact = runs["01-intact"]
    assert (intact["sent"], intact["received"], intact["lost"]) == (1000, 1000, 0)
    assert intact["latency_us"]["p50"] < SHIFT_NS / 1000
    assert (results_dir / "01-intact" / "report" / "latency.hgrm").is_file()
    line_with(err, str(results_dir / "02-shifted" / MESSAGES), CHANGED)
    line_with(err, str(results_dir / "03-manifest" / "manifest.json"), "not valid JSON")
    for run_id in ("02-shifted", "03-manifest"):
        refused(results_dir / run_id)


def test_an_edit_without_a_checksum_is_caught_by_the_hlog_check(results):
    """The figures are what the edited file says, and the run says they are in doubt."""
    results_dir, err = results
    summary = json.loads((results_dir / "04-unchecked" / "report" / "summary.json").read_text())
    assert summary["status"] == "partial" and summary["hlog_agrees"] is False
    assert summary["latency_us"]["p50"] > SHIFT_NS / 1000
    line_with(err, "agent consumer-0: hlog latency holds 1000 values")
    line_with(err, "hlogs disagree with their raw records")


def test_corrupt_reaches_the_csv_and_the_html_report(results):
    results_dir, _ = results
    with open(results_dir / "summary.csv", newline="") as table:
        rows = {row["run_id"]: row for row in csv.DictReader(table)}
    assert rows["02-shifted"]["status"] == "corrupt"
    assert rows["02-shifted"]["latency_p50_us"] == rows["02-shifted"]["sent"] == ""
    assert rows["01-intact"]["unknown"] == "0"
    page = (results_dir / "report" / "index.html").read_text()
    assert page.count('class="status-corrupt"') == 2
    assert "Not analysed: files of this run fail their checks" in page


def test_corrupt_reaches_the_catalog_and_compare(results):
    results_dir, _ = results
    listed = sixnines("runs", results_dir.parent, "--json")
    assert listed.returncode == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)
    assert entry["status"] == {"ok": 1, "partial": 1, "corrupt": 2}
    compared = sixnines("compare", results_dir / "01-intact", results_dir / "02-shifted")
    # B's run failed its checks: a broken night (exit 3), not a slower one (1)
    assert compared.returncode == 3 and "Traceback" not in compared.stderr, compared.stderr
    line_with(compared.stderr, "status ok → corrupt")
    back = sixnines("compare", results_dir / "02-shifted", results_dir / "01-intact", "--json")
    assert back.returncode == 0, back.stderr  # a better status is a note, not a regression
    assert json.loads(back.stdout)["pairs"][0]["notes"][0] == "status corrupt → ok"
