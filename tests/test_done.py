"""formats.done: an agent's done.json read back as the agent wrote it (agents.artifacts),
and refused — by the strict reader with a reason, by the controller's as none — when it is
not one."""

from __future__ import annotations

import os

import pytest

from sixnines.agents.artifacts import keep_done
from sixnines.formats import protocol as p
from sixnines.formats.done import done_file, kept_done, read_done
from sixnines.formats.layout import AGENTS_DIR, DONE_FILE, HLOG_FILE
from sixnines.formats.run_files import RefusedPath

AGENT = "consumer-0"
DONE = p.Done(agent_id=AGENT, status="ok", sent=0, received=20_000, t0_ns=123,
              artifacts={HLOG_FILE: {"sha256": "0" * 64, "bytes": 10}},
              extra={"cut_short": False})


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / AGENTS_DIR / AGENT
    folder.mkdir(parents=True)
    return folder


def test_what_the_agent_kept_is_read_back_whole(tmp_path, folder):
    assert keep_done(folder, DONE) == DONE
    assert read_done(done_file(tmp_path, AGENT)) == DONE
    assert kept_done(tmp_path, AGENT) == DONE


def test_an_agent_that_kept_none_has_none(tmp_path, folder):
    assert read_done(done_file(tmp_path, AGENT)) is None
    assert kept_done(tmp_path, AGENT) is None


@pytest.mark.parametrize(("content", "why"), [
    ("{not json", "not valid JSON"),
    ('{"type": "ready", "agent_id": "consumer-0"}', "not an agent's `done`"),
    ('{"type": "done", "agent_id": "consumer-0", "status": "ok", "sent": "many", '
     '"received": 0, "t0_ns": 0, "artifacts": {}}', "sent"),
])
def test_a_file_that_is_no_done_is_refused_with_its_reason(tmp_path, folder, content, why):
    (folder / DONE_FILE).write_text(content)
    with pytest.raises(ValueError, match=why):
        read_done(done_file(tmp_path, AGENT))
    assert kept_done(tmp_path, AGENT) is None  # the controller goes by the agent's message


def test_a_fifo_in_its_place_is_refused_without_waiting(tmp_path, folder):
    os.mkfifo(folder / DONE_FILE)
    with pytest.raises(RefusedPath, match="FIFO"):
        done_file(tmp_path, AGENT)
    assert kept_done(tmp_path, AGENT) is None


def test_a_link_leading_out_of_the_run_is_not_followed(tmp_path, folder):
    outside = tmp_path.parent / f"{tmp_path.name}-elsewhere.json"
    outside.write_text(p.encode(DONE))
    (folder / DONE_FILE).symlink_to(outside)
    with pytest.raises(RefusedPath, match="outside the run directory"):
        done_file(tmp_path, AGENT)
    assert kept_done(tmp_path, AGENT) is None
