"""formats.run_files: names from a results directory are plain names, and the paths they
make stay inside the run and are what they should be (real files, links and FIFOs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sixnines.formats.run_files import (
    BASE_BYTES,
    BYTES_PER_FILE,
    BYTES_PER_FOLDER,
    MAX_NAME,
    RefusedPath,
    agent_file,
    agent_folder,
    json_bound,
    name_problem,
    open_regular,
)


@pytest.mark.parametrize(("name", "problem"), [
    ("producer-0", None), ("messages-000001.parquet", None), ("ünïcode", None),
    ("", "not a name"), (".", "not a name"), ("..", "not a name"),
    ("../x", "holds a path separator"), ("/etc/hostname", "holds a path separator"),
    ("a\\b", "holds a path separator"), ("x" * (MAX_NAME + 1), "longer than 255 characters"),
    ("ok\x00", "holds a control character"), ("\x1b]0;t\x07", "holds a control character"),
    ("ok\x85", "holds a control character"), (7, "not text"), (None, "not text"),
])
def test_a_plain_name_has_no_way_out_and_nothing_a_terminal_obeys(name, problem):
    assert name_problem(name) == problem


@pytest.fixture
def run_dir(tmp_path) -> Path:
    folder = tmp_path / "run" / "agents" / "consumer-0"
    folder.mkdir(parents=True)
    (folder / "latency.hlog").write_text("log\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("not the run's\n")
    return tmp_path / "run"


def test_files_inside_the_run_are_reached_and_absent_ones_are_the_caller_s(run_dir):
    assert agent_file(run_dir, "consumer-0", "latency.hlog").read_text() == "log\n"
    assert not agent_file(run_dir, "consumer-0", "cpu.parquet").exists()
    assert not agent_folder(run_dir, "producer-0").exists()
    os.symlink("latency.hlog", run_dir / "agents" / "consumer-0" / "copy.hlog")
    assert agent_file(run_dir, "consumer-0", "copy.hlog").read_text() == "log\n"


@pytest.mark.parametrize(("make", "said"), [
    (lambda run, path: os.symlink(run.parent / "outside" / "secret.txt", path),
     "a symbolic link to '{outside}/secret.txt' (a regular file), outside the run directory"),
    (lambda run, path: os.symlink("/dev/zero", path),
     "a symbolic link to '/dev/zero' (a character device), outside the run directory"),
    (lambda run, path: os.mkfifo(path), "a FIFO (named pipe), not a regular file"),
    (lambda run, path: path.mkdir(), "a directory, not a regular file"),
    (lambda run, path: os.symlink(path.name, path), "its symbolic links cannot be followed"),
])
def test_a_file_that_leads_out_or_is_none_is_refused_saying_what_it_is(run_dir, make, said):
    path = run_dir / "agents" / "consumer-0" / "messages-000001.parquet"
    make(run_dir, path)
    with pytest.raises(RefusedPath) as refused:
        agent_file(run_dir, "consumer-0", path.name)
    expected = said.format(outside=run_dir.parent / "outside")
    assert str(refused.value).startswith(f"{path}: ") and expected in str(refused.value)


def test_a_folder_leading_out_refuses_every_file_in_it(run_dir):
    os.symlink(run_dir.parent / "outside", run_dir / "agents" / "producer-0")
    with pytest.raises(RefusedPath, match="outside the run directory"):
        agent_folder(run_dir, "producer-0")
    with pytest.raises(RefusedPath, match="outside the run directory"):
        agent_file(run_dir, "producer-0", "secret.txt")


@pytest.mark.parametrize("name", ["../outside", "/tmp", "a/b", ".."])
def test_an_id_or_name_that_is_no_plain_name_is_refused(run_dir, name):
    with pytest.raises(RefusedPath, match="not a plain name"):
        agent_folder(run_dir, name)
    with pytest.raises(RefusedPath, match="not a plain name"):
        agent_file(run_dir, "consumer-0", name)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(RefusedPath, match="a FIFO"):
        open_regular(tmp_path / "fifo")


def test_the_bound_of_a_json_file_grows_with_the_files_it_describes(run_dir):
    folder = run_dir / "agents" / "consumer-0"
    one = BASE_BYTES + BYTES_PER_FOLDER + BYTES_PER_FILE
    assert json_bound([folder]) == one
    assert json_bound([folder, run_dir / "agents" / "absent"]) == one
    (folder / "cpu.parquet").write_bytes(b"")
    assert json_bound([folder]) == one + BYTES_PER_FILE
