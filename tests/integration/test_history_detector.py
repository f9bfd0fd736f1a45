"""The detector's own process (orchestrator/results/history/detector.py): it answers as
the detector does in this process, batch after batch, and ends when its pipe closes."""

from __future__ import annotations

import numpy as np
import pytest

from sixnines.orchestrator.results.changes import Night, find_changes
from sixnines.orchestrator.results.history.detector import DetectorProcess

pytestmark = pytest.mark.integration


def series(seed: int, step: float) -> list[Night]:
    """30 nights of 5 % noise, `step` times higher from night 20 on."""
    values = 1000 * np.exp(np.random.default_rng(seed).normal(0, 0.05, 30))
    values[20:] *= step
    return [Night(f"night-{i:02d}", float(v), float(v) * 0.97, float(v) * 1.03)
            for i, v in enumerate(values)]


def test_the_process_answers_as_the_detector_does_and_ends_with_its_pipe():
    jobs = [(series(seed, step), worse) for seed, step in enumerate((1.0, 1.3, 0.7))
            for worse in (True, False)]
    detector = DetectorProcess()
    try:
        assert detector.find(jobs) == [find_changes(*job) for job in jobs]
        assert detector.find(jobs[:1]) == [find_changes(*jobs[0])]  # the next batch
        assert detector.find([]) == []
        assert any(found for found in detector.find(jobs))
    finally:
        detector.close()
    assert not detector._process.is_alive() and detector._process.exitcode == 0
