"""formats.controller_lock on real files: a held run names its controller, a lock left by
nobody (or not a plain file) holds nothing."""

from __future__ import annotations

import os

from sixnines.formats.controller_lock import LOCK_FILE, holder, holding


def test_a_run_is_held_while_its_controller_holds_it_and_free_after(tmp_path):
    assert holder(tmp_path) is None
    with holding(tmp_path):
        assert holder(tmp_path) == os.getpid()
    assert holder(tmp_path) is None and not (tmp_path / LOCK_FILE).exists()


def test_a_lock_file_nobody_holds_binds_nobody(tmp_path):
    (tmp_path / LOCK_FILE).write_text("12345\n")  # left by a controller that was killed
    assert holder(tmp_path) is None


def test_a_lock_file_that_is_no_plain_file_is_held_by_nobody(tmp_path):
    os.mkfifo(tmp_path / LOCK_FILE)
    assert holder(tmp_path) is None
