"""A run's analysis sidecar (spark_jobs.sidecar) from the controller's side: started with
the run when the analysis is on and every agent writes its files on this machine, told to
finish once the run's manifest is final. It gives the run's summary.json, or nothing: the
run is then analysed whole with the others, as without it.

`SIXNINES_FOLLOW` picks how (docs/performance.md has the A/B against the agents' loops):
- unset (or 1): `end`, the default. The sidecar waits for the run's end and analyses it
  then, in its own process without Spark, for runs of at most END_RECORDS planned
  records (larger ones go to Spark, faster there). Nothing runs beside the agents' loops.
- `live`: it folds closed chunks while the run goes, so a long run's report is there
  moments after it ends. That work beside the loops took the p99 of a 40k msg/s tcp run to
  2.2× (docs/performance.md, "The sidecar against measured latency"): opt in on machines
  with cores to spare.
- `0`: no sidecar; every run goes to Spark.
It is one of the controller's process groups: the guard stops it if the controller dies
(launchers.guard), and it also ends at the end of its input.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from sixnines.formats.layout import SIDECAR_LOG
from sixnines.orchestrator.launchers.base import EOF_LINE
from sixnines.orchestrator.launchers.local import LocalProcess
from sixnines.spark_jobs.sidecar import FINISH

logger = logging.getLogger(__name__)

SWITCH = "SIXNINES_FOLLOW"


LIVE, END = "live", "end"
#: The most records (sends and receipts planned) a run analysed by the sidecar at its end
#: may have: past it, Spark's parallel passes beat one process folding them all.
END_RECORDS = 10_000_000


def mode() -> str | None:
    """How runs are followed (see the module doc): LIVE, END, or None (no sidecar)."""
    switch = os.environ.get(SWITCH, "1").strip().lower()
    return None if switch == "0" else LIVE if switch == LIVE else END


class AnalysisSidecar:
    """One run's sidecar process; `live`: folding closed chunks while the run goes."""

    def __init__(self, run_dir: Path, live: bool) -> None:
        self.run_dir = run_dir
        self.process = LocalProcess(
            [sys.executable, "-m", "sixnines.spark_jobs.sidecar", str(run_dir),
             *(["--live"] if live else [])],
            f"sidecar-{run_dir.name}", run_dir / SIDECAR_LOG, None, None)

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
                        self.run_dir / SIDECAR_LOG)
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
