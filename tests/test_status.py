"""formats.status: the order of a run's statuses, best to worst."""

from __future__ import annotations

from sixnines.formats.status import rank, worst


def test_statuses_best_to_worst():
    assert [rank(s) for s in ("ok", "partial", "failed", "corrupt")] == [0, 1, 2, 3]
    assert rank("running") == rank(None) == rank("failed")
    assert worst("ok", "partial") == "partial"
    assert worst("corrupt", "failed") == "corrupt"
    assert worst("running", "partial") == "running"  # the analysis never renames a status
