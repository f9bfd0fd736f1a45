"""The analysis sidecar with a real `sixnines run` (orchestrator.run.sidecar,
spark_jobs.sidecar): by default it analyses the run once it ended, live it folds the
agents' chunks as they close; either way the report it writes is byte for byte the whole
analysis' of the same files, and a chunk changed after it read it makes the run corrupt,
never analysed as good."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sixnines.formats.chunks import read_index
from tests.faults.processes import Sixnines

pytestmark = pytest.mark.integration

#: Chunks of at most 4096 records: at 5,000 msg/s each agent closes one about a second.
STREAMING = {"SIXNINES_CHUNK_ROWS": "4096"}
REPORT_FILES = ("summary.json", "series.json", "latency.hgrm", "service_time.hgrm",
                "send_lag.hgrm", "histograms.json")
#: A sitecustomize that keeps pyspark (and py4j, its bridge to the JVM) out of a Python:
#: `import pyspark` raises ImportError, as on a host without the `analysis` extra.
NO_PYSPARK = 'import sys\nsys.modules["pyspark"] = sys.modules["py4j"] = None\n'


def scenario(tmp_path: Path, duration: str = "6s") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: followed
        systems: [{{name: tcp, driver: tcp, broker: builtin}}]
        workload: {{message_size: 64, rate: 5000, duration: {duration}, warmup: 1s,
                    drain: 2s, consumers: 2}}
        output: out
        """))
    return path


def run_dir_of(tmp_path: Path) -> Path:
    return next((tmp_path / "out").glob("followed/*/01-tcp"))


@pytest.mark.parametrize("mode", ["end", "live"])
def test_the_sidecar_reports_as_the_whole_analysis(mode, tmp_path):
    env = {**STREAMING, **({"SIXNINES_FOLLOW": mode} if mode == "live" else {})}
    controller = Sixnines("run", str(scenario(tmp_path)), cwd=tmp_path, env=env)
    code, _, err = controller.finish(timeout_s=600)
    assert code == 0, err
    assert "1 run(s) analysed by their sidecar" in err and "with Spark" not in err
    run_dir = run_dir_of(tmp_path)
    log = (run_dir / "sidecar.log").read_text()
    folds = log.split("finished in")[0].count("folded")
    if mode == "live":
        assert folds >= 3, log  # while the run went, not all at its end
    else:
        assert folds == 1, log  # nothing beside the agents' loops: all at the end

    whole = tmp_path / "whole"
    shutil.copytree(run_dir, whole)
    report = Sixnines("report", str(whole), cwd=tmp_path)
    code, _, err = report.finish(timeout_s=600)
    assert code == 0, err
    for name in REPORT_FILES:
        assert (run_dir / "report" / name).read_bytes() == \
            (whole / "report" / name).read_bytes(), name
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["delivered"] == 2 * summary["sent"] > 0


def test_a_chunk_changed_after_the_sidecar_read_it_makes_the_run_corrupt(tmp_path):
    controller = Sixnines("run", str(scenario(tmp_path, duration="8s")), cwd=tmp_path,
                          env={**STREAMING, "SIXNINES_FOLLOW": "live"})
    deadline = time.monotonic() + 120
    folds_before = None  # the sidecar's folds when the consumer's first chunk was listed

    def folds() -> int:
        log = run_dir_of(tmp_path) / "sidecar.log"
        return log.read_text().count("folded") if log.exists() else 0

    while True:  # the second fold begun after it was listed has read it
        folders = list((tmp_path / "out").glob("followed/*/01-tcp/agents/consumer-0"))
        if folds_before is None and folders and read_index(folders[0]):
            folds_before = folds()
        if folds_before is not None and folds() >= folds_before + 2:
            break
        assert time.monotonic() < deadline and controller.process.poll() is None, \
            controller.stderr
        time.sleep(0.1)
    chunk = folders[0] / read_index(folders[0])[0]["file"]
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))
    code, _, err = controller.finish(timeout_s=600)
    assert code == 1, err
    run_dir = run_dir_of(tmp_path)
    assert "analysed by their sidecar" not in err
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["status"] == "corrupt"
    assert any(chunk.name in problem for problem in summary["problems"])
    assert "not followed" in (run_dir / "sidecar.log").read_text()


def test_a_run_is_analysed_by_its_sidecar_where_pyspark_cannot_be_imported(tmp_path):
    """Controller, agents and sidecar in Pythons where `import pyspark` fails: the run is
    recorded and analysed all the same (only spark_jobs.analyze needs Spark)."""
    site = tmp_path / "no-pyspark"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_PYSPARK)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, (str(site),
                                                       os.environ.get("PYTHONPATH"))))}
    kept_out = subprocess.run([sys.executable, "-c", "import pyspark"], capture_output=True,
                              text=True, env={**os.environ, **env}, timeout=60)
    assert kept_out.returncode == 1 and "pyspark" in kept_out.stderr  # in every child too
    controller = Sixnines("run", str(scenario(tmp_path, duration="3s")), cwd=tmp_path, env=env)
    code, _, err = controller.finish(timeout_s=600)
    assert code == 0, err
    assert "1 run(s) analysed by their sidecar" in err and "with Spark" not in err
    summary = json.loads((run_dir_of(tmp_path) / "report" / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["delivered"] == 2 * summary["sent"] > 0
