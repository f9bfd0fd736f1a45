"""`sixnines run` of the builtin tcp relay with each `content`, as a user runs it: every
message arrives, and each manifest records what the messages carried and the ratio its
sender measured on its ring (formats.fill), a compressible fill's within its tolerance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sixnines.formats.fill import RATIO_TOLERANCE
from sixnines.formats.layout import MANIFEST_FILE
from sixnines.orchestrator.results.store import find_run_dirs
from tests.faults.support import sixnines

pytestmark = pytest.mark.integration

TARGET = 0.4
# 1 KB at 200 msg/s for 1.2 s: a ring of ~240 messages, more fill than the tolerance's floor
SCENARIO = f"""\
name: contents
systems: [{{name: tcp, driver: tcp, broker: builtin}}]
workload:
  message_size: 1KB
  rate: 200
  duration: 1s
  warmup: 200ms
  drain: 2s
  content: [random, zeros, text, {{file: sample.txt}}, {{compressibility: {TARGET}}}]
"""
SAMPLE = b"sixnines sample line: every message carries a cut of this file\n" * 20


def test_each_content_is_carried_and_its_ratio_recorded(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    (tmp_path / "sample.txt").write_bytes(SAMPLE)
    done = sixnines("run", "s.yaml", "--output", "runs", "--no-analysis", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    results = tmp_path / done.stdout.strip().splitlines()[-1]
    fills = {}
    for run_dir in find_run_dirs(results):
        manifest = json.loads((run_dir / MANIFEST_FILE).read_text())
        assert manifest["status"] == "ok", manifest["problems"]
        (sender,) = [a for a in manifest["agents"] if a["role"] == "producer"]
        (receiver,) = [a for a in manifest["agents"] if a["role"] == "consumer"]
        assert receiver["received"] == sender["sent"] > 0
        fill = manifest["fill"]
        assert fill["measured_by"] == sender["id"]
        assert fill["ratios"] == sender["fill_ratios"]
        assert set(fill["ratios"]) == {"gzip", "zstd", "lz4"}
        fills[fill["content"]] = fill
    assert set(fills) == {"random", "zeros", "text", "file=sample.txt",
                          f"compressibility={TARGET:g}"}
    assert min(fills["random"]["ratios"].values()) > 0.99
    assert max(fills["zeros"]["ratios"].values()) < 0.01
    assert 0.2 < fills["text"]["ratios"]["gzip"] < 0.5
    assert max(fills["file=sample.txt"]["ratios"].values()) < 0.1  # the sample repeats
    compressible = fills[f"compressibility={TARGET:g}"]
    assert compressible["target"] == TARGET and compressible["tolerance"] == RATIO_TOLERANCE
    for codec, ratio in compressible["ratios"].items():
        assert abs(ratio - TARGET) <= RATIO_TOLERANCE, codec
