"""Spark only schedules the analysis' tasks: pyspark is imported by spark_jobs.analyze alone
(the session, the Spark scheduler, the command line), and the sidecar analyses a run in a
process where `import pyspark` fails, as on a host without the `analysis` extra."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from sixnines.agents.artifacts import described
from sixnines.formats.chunks import CHUNK_INDEX
from tests.analysis_rows import write_run
from tests.test_layers import ROOT, imports, modules

SPARK_MODULE = "sixnines.spark_jobs.analyze"

T0 = 10_000_000
MESSAGES, PERIOD_NS, LATENCY_NS = 300, 1_000, 2_500
WORKLOAD = {"warmup_ns": 4_000, "duration_ns": MESSAGES * PERIOD_NS, "drain_ns": 50_000,
            "rate": MESSAGES / (MESSAGES * PERIOD_NS / 1e9), "connections": 1}
AGENTS = [{"id": "c", "role": "consumer", "status": "ok", "t0_ns": T0},
          {"id": "p", "role": "producer", "status": "ok", "t0_ns": T0, "first_id": 1}]

#: In the child: `import pyspark` (and py4j, its bridge to the JVM) raises ImportError;
#: every module of spark_jobs but the Spark one imports, and the sidecar analyses the run.
SCRIPT = textwrap.dedent("""
    import importlib, json, sys
    sys.modules["pyspark"] = sys.modules["py4j"] = None

    try:
        importlib.import_module(sys.argv[2])
    except ImportError:
        pass
    else:
        sys.exit(f"{sys.argv[2]} imported: pyspark was not kept out")
    for name in json.loads(sys.argv[3]):
        importlib.import_module(name)
    from sixnines.spark_jobs.sidecar import Sidecar

    print(json.dumps(Sidecar(sys.argv[1]).finish()))
""")


def _pyspark_importers() -> set[str]:
    return {module for module, path in modules().items()
            if any(name.split(".")[0] == "pyspark" for name in imports(path, module))}


def test_pyspark_is_imported_by_the_spark_module_alone():
    assert _pyspark_importers() == {SPARK_MODULE}


def test_no_module_of_the_package_imports_the_spark_module():
    """It is a process of its own (`python -m sixnines.spark_jobs.analyze`), started by the
    controller: importing it anywhere would make that module need pyspark."""
    assert sorted(module for module, path in modules().items()
                  if SPARK_MODULE in imports(path, module)) == []


def _followable_run(run_dir: Path) -> Path:
    """A run of one producer and one consumer as the sidecar finds it at the run's end: each
    agent's chunks listed in its index and, with their checksums, in the manifest."""
    rows = []
    for seq in range(MESSAGES):
        intended = T0 + PERIOD_NS * seq
        warm = intended < T0 + WORKLOAD["warmup_ns"]
        rows.append(("p", "producer", 1, seq, intended, intended + 7, None, None, warm))
        rows.append(("c", "consumer", 1, seq, intended, intended + 7,
                     intended + LATENCY_NS, seq, warm))
    run = write_run(run_dir, rows, agents=AGENTS, chunk_rows=100, workload=WORKLOAD)
    agents = []
    for entry in AGENTS:
        _, paths = run.messages[entry["id"]]
        folder = paths[0].parent
        files = described(folder, tuple(path.name for path in paths))
        (folder / CHUNK_INDEX).write_text("".join(
            json.dumps({"file": name, "rows": 100, **checksums}) + "\n"
            for name, checksums in files.items()))
        agents.append({**entry, "artifacts": {name: {**checksums, "verified": True}
                                              for name, checksums in files.items()}})
    (run_dir / "manifest.json").write_text(json.dumps({
        "run_id": run_dir.name, "system": "synthetic", "params": {}, "status": "ok",
        "problems": [], "started_at_ns": T0, "workload": WORKLOAD, "agents": agents}))
    return run_dir


def test_the_sidecar_analyses_a_run_where_pyspark_cannot_be_imported(tmp_path):
    run_dir = _followable_run(tmp_path / "run")
    plain = sorted(module for module in modules()
                   if module.startswith("sixnines.spark_jobs.") and module != SPARK_MODULE)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(run_dir), SPARK_MODULE,
         json.dumps([*plain, "sixnines.orchestrator.run.sidecar"])],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result == {"run_dir": str(run_dir),
                      "summary": str(run_dir / "report" / "summary.json"),
                      "status": "ok"}, done.stderr
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    measured = MESSAGES - 4  # the first four are the warm-up
    assert (summary["sent"], summary["delivered"], summary["lost"]) == (measured, measured, 0)
    assert summary["latency_us"]["max"] == LATENCY_NS / 1000
