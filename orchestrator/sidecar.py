"""A run's analysis sidecar (spark_jobs.sidecar) from the controller's side: started with
the run when the analysis is on and every agent writes its files on this machine, told to
finish once the run's manifest is final. It gives the run's summary.json, or nothing: the
run is then analysed whole with the others, as without it.

On by default; `SIXNINES_FOLLOW=0` turns it off (docs/performance.md has its A/B against
the agents' send and receive loops). It is one of the controller's process groups: the
guard stops it if the controller dies (launchers.guard), and it also ends at the end of
its input.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from sixnines.orchestrator.launchers.base import EOF_LINE
from sixnines.orchestrator.launchers.local import LocalProcess

logger = logging.getLogger(__name__)

SWITCH = "SIXNINES_FOLLOW"
LOG_FILE = "sidecar.log"
FINISH = "finish"  # spark_jobs.sidecar.FINISH (not imported: the analysis needs pyspark)


def wanted() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


class AnalysisSidecar:
    """One run's sidecar process."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.process = LocalProcess(
            [sys.executable, "-m", "sixnines.spark_jobs.sidecar", str(run_dir)],
            f"sidecar-{run_dir.name}", run_dir / LOG_FILE, None, None)

    def finish(self) -> Path | None:
        """The run's summary.json as the sidecar wrote it, or None (it could not follow the
        run to its end, or died: its log says why)."""
        summary = None
        try:
            if self.process.write_line(FINISH):
                while (line := self.process.lines.get()[1]) != EOF_LINE:
                    summary = _summary(line) or summary
        finally:
            self.stop()
        if summary is None:
            logger.info("%s: its sidecar did not analyse it (see %s)", self.run_dir,
                        self.run_dir / LOG_FILE)
        return summary

    def stop(self) -> None:
        self.process.shutdown(grace_s=2.0)


def _summary(line: str) -> Path | None:
    try:
        result = json.loads(line)
    except ValueError:
        return None
    found = result.get("summary") if isinstance(result, dict) else None
    return Path(found) if isinstance(found, str) else None
