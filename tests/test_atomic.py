"""formats.atomic: whole files or none, and failures that name their file."""

from __future__ import annotations

import errno

import pytest

from sixnines.formats.atomic import TEMP_SUFFIX, WriteFailure, atomic_path, write_atomically


def test_a_file_is_replaced_whole(tmp_path):
    target = tmp_path / "summary.json"
    target.write_text("old")
    write_atomically(target, "new")
    assert target.read_text() == "new"
    assert list(tmp_path.iterdir()) == [target]


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "messages.parquet"
    target.write_text("old")
    with pytest.raises(ValueError), atomic_path(target) as temp:
        temp.write_text("half")
        raise ValueError("writer failed")
    assert target.read_text() == "old"
    assert not (tmp_path / f"messages.parquet{TEMP_SUFFIX}").exists()


def test_an_os_error_names_the_file(tmp_path):
    target = tmp_path / "report.hgrm"
    with pytest.raises(WriteFailure) as caught, atomic_path(target) as temp:
        temp.write_text("x")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert str(caught.value).startswith(f"cannot write {target}: No space left on device (")
    assert " free on /" in str(caught.value)
    assert caught.value.errno == errno.ENOSPC
    assert not target.exists() and list(tmp_path.iterdir()) == []
