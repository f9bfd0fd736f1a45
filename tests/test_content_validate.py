"""`content:` as `sixnines validate` reads it, through the real CLI: every form it takes,
and one FILE:LINE line for each malformed one (exit 2, never a traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sixnines.formats.fill import MAX_SAMPLE_BYTES
from sixnines.orchestrator.scenario.content import parse_content
from tests.faults.support import sixnines

SCENARIO = """\
name: fills
systems: [{{name: tcp, driver: tcp}}]
workload:
  message_size: 1KB
  rate: 100
  duration: 1s
  content: {content}
"""
CONTENT_LINE = 7


def validate(folder: Path, content: str):
    (folder / "s.yaml").write_text(SCENARIO.format(content=content))
    return sixnines("validate", "s.yaml", cwd=folder)


@pytest.mark.parametrize(("written", "canonical"), [
    ("random", "random"), (" Text ", "text"), ("zeros", "zeros"),
    ({"compressibility": 0.6}, "compressibility=0.6"), ("compressibility=.25",
                                                         "compressibility=0.25"),
    ({"compressibility": 1}, "compressibility=1"), ({"file": "a/b.json"}, "file=a/b.json"),
])
def test_every_form_reads_as_one_canonical_text(written, canonical):
    assert parse_content(written) == canonical


def test_a_sweep_of_contents_names_each_run_by_it(tmp_path):
    (tmp_path / "sample.bin").write_bytes(b"orders\n" * 10)
    done = validate(tmp_path, "[random, text, {compressibility: 0.6}, {file: sample.bin}]")
    assert done.returncode == 0, done.stderr
    assert "01-tcp-content=random" in done.stderr
    assert "03-tcp-content=compressibility=0.6" in done.stderr
    assert "04-tcp-content=file=sample.bin" in done.stderr


@pytest.mark.parametrize(("content", "says"), [
    ("lorem", "must be random, zeros, text, {file: PATH} or {compressibility: RATIO} "
              "(got 'lorem')"),
    ("{gzip: 0.5}", "unknown content 'gzip'"),
    ("{compressibility: 0}", "compressibility: must be a ratio compressed/original in "
                             "(0, 1], e.g. 0.6 (got 0)"),
    ("{compressibility: 1.5}", "(got 1.5)"),
    ("{compressibility: lots}", "(got 'lots')"),
    ("{file: missing.json}", "file: cannot read"),
    ("{file: empty.json}", "is empty"),
    ("{file: large.bin}", f"is larger than {MAX_SAMPLE_BYTES >> 20} MiB"),
])
def test_a_malformed_content_is_one_line_at_its_place(tmp_path, content, says):
    (tmp_path / "empty.json").write_bytes(b"")
    with (tmp_path / "large.bin").open("wb") as large:
        large.truncate(MAX_SAMPLE_BYTES + 1)
    done = validate(tmp_path, content)
    assert done.returncode == 2, done.stdout
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"s.yaml:{CONTENT_LINE}: workload.content: "), line
    assert says in line
