"""The analysis of one run beside the controller: `python -m sixnines.spark_jobs.sidecar
RUN_DIR [--live]`, started by the controller with the run (orchestrator.run.sidecar) when
every agent writes its files on this machine.

With `--live`, every POLL_S it reads the run's manifest and each agent's chunk index,
checks each newly closed chunk against its index line (size and sha256: a chunk that
fails is never read) and folds it into the run's passes (spark_jobs.follow); without, it
waits for the run's end and folds everything then (nothing runs beside the agents'
loops). It runs at the lowest CPU priority there is (SCHED_IDLE).

Its input is the controller's: the line `finish` once the run's manifest is final. It then
checks the run's files as the whole analysis does (spark_jobs.run_report.check_run),
folds the chunks left, writes the run's report files as `sixnines report` would (no
Spark: nothing it imports needs pyspark), prints one JSON line as spark_jobs.analyze does
({"run_dir", "summary", "status"}) and exits 0. A run it could not follow to its end
(module spark_jobs.follow; a file failing its check; a chunk it read that is not the one
the manifest vouches for) gets the line {"run_dir", "not_followed": why} and exit status
3: the controller analyses it whole with the others.
End of input without `finish` (the controller died) ends it, writing nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import queue
import sys
import threading
import time
from pathlib import Path

from sixnines.formats import integrity
from sixnines.formats.chunks import index_of
from sixnines.formats.layout import REPORT_DIR, SUMMARY_FILE
from sixnines.formats.load import load_of
from sixnines.formats.manifest import Artifact, Manifest
from sixnines.formats.run_files import agent_file, agent_folder
from sixnines.formats.vocabulary import RECORDING
from sixnines.spark_jobs import delivery, run_merge, run_report
from sixnines.spark_jobs.follow import RunFollower

log = logging.getLogger("sixnines.sidecar")

POLL_S = 1.0
FINISH = "finish"
NOT_FOLLOWED = 3


def with_start_instants(manifest: Manifest) -> Manifest:
    """The manifest with each agent's t0 as it will report it: the start instant the
    controller sent it, on its clock (Manifest.t0_of), known once the agents are started."""
    return manifest.model_copy(update={"agents": [
        agent.model_copy(update={"t0_ns": manifest.t0_of(agent)})
        for agent in manifest.agents]})


class Sidecar:
    """One run's chunks followed as they close (see the module doc)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.follower: RunFollower | None = None
        self.read: dict[str, dict[str, str]] = {}  # agent_id → chunk name → its sha256 read
        self.broken: str | None = None  # why it stopped following

    def poll(self) -> None:
        """Folds the chunks closed since the last poll."""
        if self.broken is not None:
            return
        try:
            self._poll()
        except Exception as error:  # whatever it is, the whole analysis will meet it too
            log.exception("%s: not followed any more", self.run_dir)
            self.broken = f"{type(error).__name__}: {integrity.first_line(str(error))}"

    def _poll(self) -> None:
        manifest = integrity.read_manifest(self.run_dir)
        if manifest.started_at_ns is None:
            return  # the agents are not started yet
        if self.follower is None:
            run = run_merge.AnalysedRun(with_start_instants(manifest), {},
                                        manifest.throughput_window, load_of(manifest.params),
                                        delivery.Expected())
            self.follower = RunFollower(run)
            if not self.follower.followable:
                self.broken = "the run has no planned schedule (rate max, or no duration)"
                return
        began = time.monotonic()
        folded = self.follower.feed({agent.id: self._closed(agent.id)
                                     for agent in manifest.agents if agent.role in RECORDING})
        if folded:
            log.info("folded %d closed chunk(s) in %.2f s", folded, time.monotonic() - began)

    def _closed(self, agent_id: str) -> list[Path]:
        """The agent's chunks its index lists, each new one checked against its line."""
        folder = agent_folder(self.run_dir, agent_id)
        read = self.read.setdefault(agent_id, {})
        for entry in index_of(self.run_dir, agent_id):
            name = entry["file"]
            if name not in read:
                line = Artifact(sha256=entry["sha256"], bytes=entry["bytes"])
                problem = integrity.against_record(agent_file(self.run_dir, agent_id, name),
                                                   line, integrity.INDEX)
                if problem:
                    raise ValueError(problem)
                read[name] = entry["sha256"]
        return [folder / name for name in read]

    def finish(self) -> dict[str, str]:
        """The run's result line, its report written (see the module doc)."""
        self.poll()
        if self.broken is not None or self.follower is None:
            return self._not_followed(self.broken or "the run never started")
        checked = run_report.check_run(self.run_dir)
        if checked.damaged:
            return self._not_followed("its files fail their checks")
        if changed := self._not_vouched(checked.passed):
            return self._not_followed(f"{changed}: not the chunk its manifest vouches for")
        began = time.monotonic()
        try:
            figured = self.follower.finish(run_report.run_of(checked, None))
            log.info("finished in %.2f s", time.monotonic() - began)
            if not isinstance(figured, run_merge.RunFigures):
                return self._not_followed("its analysis context changed by its end, or an "
                                          "hlog is damaged")
            run_report.clear_report(self.run_dir)
            summary = run_report.report(checked, figured)
        except Exception as error:  # a full disk, say: the whole analysis says it in its line
            log.exception("%s: not analysed here", self.run_dir)
            return self._not_followed(f"{type(error).__name__}: "
                                      f"{integrity.first_line(str(error))}")
        return {"run_dir": str(self.run_dir),
                "summary": str(self.run_dir / REPORT_DIR / SUMMARY_FILE),
                "status": summary.status or ""}

    def _not_vouched(self, manifest: Manifest) -> str | None:
        """A chunk read while the run went whose sha256 is not the one the final manifest
        records (the whole analysis checks the files as they are now)."""
        for agent in manifest.agents:
            for name, sha256 in self.read.get(agent.id, {}).items():
                recorded = agent.artifacts.get(name)
                if recorded is None or recorded.sha256 != sha256:
                    return str(agent_file(self.run_dir, agent.id, name))
        return None

    def _not_followed(self, why: str) -> dict[str, str]:
        log.info("%s: not followed to its end: %s", self.run_dir, why)
        return {"run_dir": str(self.run_dir), "not_followed": why}


def _commands() -> queue.Queue:
    """The controller's lines on stdin; None at its end."""
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in sys.stdin:
            lines.put(line.strip())
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _idle() -> None:
    """The lowest CPU priority: only time no one else wants (nice 19 where SCHED_IDLE is
    not to be had)."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        with contextlib.suppress(OSError):
            os.nice(19)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sixnines.spark_jobs.sidecar",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    parser.add_argument("--live", action="store_true",
                        help="fold closed chunks while the run goes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(message)s")
    _idle()
    sidecar, commands = Sidecar(args.run_dir), _commands()
    while True:
        try:
            line = commands.get(timeout=POLL_S if args.live else None)
        except queue.Empty:
            sidecar.poll()
            continue
        if line is None:
            return 0
        if line == FINISH:
            result = sidecar.finish()
            print(json.dumps(result), flush=True)
            return NOT_FOLLOWED if "not_followed" in result else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
