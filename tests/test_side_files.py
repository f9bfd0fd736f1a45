"""Files a scenario names beside itself, as a hostile or unlucky scenario names them
(orchestrator.scenario.side_files): a device that never ends, a FIFO nobody writes, a
directory — each is one FILE:LINE problem from `validate`, at once, never a hang."""

from __future__ import annotations

import os

import pytest

from tests.faults.support import sixnines

SCENARIO = """\
name: side-files
systems: [{{name: tcp, driver: tcp}}]
workload:
  message_size: {size}
  rate: {rate}
  duration: 2s
  content: {content}
"""


@pytest.mark.parametrize(("field", "says"), [
    ("rate", "workload.rate.trace: cannot read trace '/dev/zero': not a regular file"),
    ("message_size", "workload.message_size: file: cannot read"),
    ("content", "workload.content: file: cannot read"),
])
@pytest.mark.timeout(60)
def test_a_file_that_is_no_file_is_one_problem_not_a_hang(tmp_path, field, says):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    values = {"size": 64, "rate": 100, "content": "random"}
    values[{"rate": "rate", "message_size": "size", "content": "content"}[field]] = {
        "rate": "{trace: /dev/zero}", "message_size": "{file: fifo}",
        "content": "{file: folder}"}[field]
    (tmp_path / "s.yaml").write_text(SCENARIO.format(**values))
    done = sixnines("validate", "s.yaml", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert says in done.stderr and "not a regular file" in done.stderr, done.stderr
