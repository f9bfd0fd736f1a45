"""Every top-level class of the package has a name of its own, so a name read in a
traceback, a type error or a grep leads to one definition.

Where two parts have a thing of one kind, the lower layer's keeps the plain name
(`formats.manifest.Workload`, the record) and the other says what it is
(`orchestrator.scenario.workload.WorkloadPoint`, the point a run executes). The same holds
for implementations of one contract: each driver's parts carry the driver's name
(`NatsLink`, `RabbitmqLink`; kafka's `ConfluentBackend`, `PythonBackend`).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("formats", "drivers", "agents", "spark_jobs", "orchestrator", "testing", "sixnines")


def top_level_classes() -> dict[str, list[str]]:
    """Class name -> the modules (paths from the repository's root) defining it."""
    found: dict[str, list[str]] = defaultdict(list)
    for part in PARTS:
        for path in sorted((ROOT / part).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    found[node.name].append(str(path.relative_to(ROOT)))
    return found


def test_no_class_name_is_defined_twice():
    twice = {name: paths for name, paths in top_level_classes().items() if len(paths) > 1}
    assert not twice, "top-level classes defined in more than one module (rename one to say " \
        "what it is): " + "; ".join(f"{name} in {', '.join(paths)}"
                                    for name, paths in sorted(twice.items()))


def test_the_check_sees_every_part():
    """A class the check would miss is no check: it reads each part's classes."""
    found = top_level_classes()
    assert found["Manifest"] == ["formats/manifest.py"]
    assert found["WorkloadPoint"] == ["orchestrator/scenario/workload.py"]
    assert found["WorkloadShape"] == ["drivers/base.py"]
    assert found["AgentRole"] == ["agents/roles.py"]
