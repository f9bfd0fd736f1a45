"""The package's shape: one import name, and imports that read as layers.

- Everything installed is importable under `sixnines.` only (the wheel's top level), and
  the files the report pages inline (styles, scripts, vendored libraries) are in the wheel.
- Layers, bottom up: `formats` (the ground floor every part shares) < `drivers` < `agents`,
  `spark_jobs` and `testing` (the driver conformance suite) < `orchestrator`; a module
  imports its own part and those below, never one above (docs/design.md, "Layers").
- Inside `orchestrator`, rooms by what they do, bottom up: `terminal` (printing text from
  files) < `scenario` (the file a user writes) < `launchers` (running a process here or
  there) < `capacity` (the search's steps and verdicts) < `plan` (what a run needs and
  where its loops go) < `run` (one run, start to finish) < `results` (what runs left:
  analysis, summaries, compare, collect) < `reports` (the page) < `controller` (a whole
  scenario) < `cli`; a module imports its own room and those below.
- No import cycle between modules, lazy imports inside functions included.
- The type checker reads the package as the wheel lays it out (.ci/sixnines).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from sixnines.orchestrator.launchers.bundle import clean_source

ROOT = Path(__file__).resolve().parents[1]
PARTS = {"formats": 0, "drivers": 1, "agents": 2, "spark_jobs": 2, "testing": 2,
         "orchestrator": 3, "sixnines": 4}
FOLDERS = {part: ROOT / part for part in PARTS}
ROOMS = {room: rank for rank, room in enumerate((
    "terminal", "scenario", "launchers", "capacity", "plan", "run", "results", "reports",
    "controller", "cli"))}


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module in the package."""
    found = {}
    for part, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            relative = path.relative_to(folder).with_suffix("")
            names = [n for n in relative.parts if n != "__init__"]
            found[".".join(["sixnines", *([part] if part != "sixnines" else []), *names])] = path
    return found


def imports(path: Path, module: str) -> set[str]:
    """Every module `path` imports (anywhere in it), as dotted names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def part_of(module: str) -> str:
    """The part a module belongs to; the package root itself (`sixnines`, its version)
    imports nothing of sixnines, so every part may read it."""
    if module == "sixnines":
        return "formats"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in PARTS else "sixnines"


def internal_graph() -> dict[str, set[str]]:
    known = modules()
    return {module: {name for name in imports(path, module) if name in known and
                     name != module}
            for module, path in known.items()}


def test_nothing_is_imported_by_its_folder_name():
    """`import orchestrator` only works in a checkout (and would load a second copy)."""
    wrong = {f"{module}: {name}" for module, path in modules().items()
             for name in imports(path, module) if name.split(".")[0] in PARTS
             and name.split(".")[0] != "sixnines"}
    assert not wrong, sorted(wrong)


def test_no_import_runs_up_the_layers():
    upward = sorted(f"{module} -> {name}" for module, names in internal_graph().items()
                    for name in names if PARTS[part_of(name)] > PARTS[part_of(module)])
    assert not upward, upward


def room_of(module: str) -> str | None:
    """The room of an orchestrator module (its folder, or its own name at the top), None
    outside the orchestrator."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["sixnines", "orchestrator"] and len(parts) > 2 else None


def test_every_room_of_the_controller_is_ranked():
    rooms = {room_of(module) for module in modules()} - {None}
    assert rooms == set(ROOMS), "rank each room of orchestrator/ in ROOMS"


def test_no_import_runs_up_the_rooms_of_the_controller():
    upward = sorted(f"{module} -> {name}" for module, names in internal_graph().items()
                    if room_of(module) is not None for name in names
                    if room_of(name) is not None and ROOMS[room_of(name)] > ROOMS[room_of(module)])
    assert not upward, upward


def test_no_two_modules_need_each_other():
    graph = internal_graph()
    # a package's __init__ importing its own modules is how packages work, not a cycle
    edges = {module: {n for n in names if not module.startswith(n + ".")}
             for module, names in graph.items()}
    cycles = []
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for name in sorted(edges[module]):
            if state.get(name) == 1:
                cycles.append(" -> ".join([*path[path.index(name):], name]))
            elif name not in state:
                visit(name, [*path, name])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert not cycles, cycles


@pytest.mark.integration
def test_the_wheel_installs_one_top_level_package(tmp_path):
    source = clean_source(tmp_path / "source")  # as the agent bundle builds it
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                            "--wheel-dir", str(tmp_path), str(source)], capture_output=True,
                           text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("sixnines-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top == {"sixnines"}
    source = {module.replace(".", "/") for module in modules()}
    packaged = {name.removesuffix(".py").removesuffix("/__init__") for name in names
                if name.endswith(".py")}
    assert source == packaged  # every module of every folder, and no other
    reports = FOLDERS["orchestrator"] / "reports"
    pages_inline = {f"sixnines/orchestrator/{path.relative_to(reports.parent)}"
                    for path in reports.rglob("*") if path.is_file()
                    and path.suffix in (".js", ".css", "") and "__pycache__" not in path.parts}
    assert pages_inline - set(names) == set()  # styles, scripts, vendored uPlot and licence


def test_the_type_checker_reads_the_package_as_installed():
    """mypy cannot follow the editable install's import hook: it reads `sixnines` through
    .ci/sixnines (pyproject.toml's [tool.mypy]), which must link every folder
    pyproject.toml maps into the package, and the package's own files, and nothing else."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapped = config["tool"]["setuptools"]["package-dir"]
    linked = ROOT / ".ci" / "sixnines"
    wanted = {name.removeprefix("sixnines."): ROOT / folder for name, folder in mapped.items()
              if name != "sixnines"}
    wanted |= {path.name: path for path in (ROOT / mapped["sixnines"]).glob("*.py")}
    assert {path.name for path in linked.iterdir()} == set(wanted)
    for name, target in wanted.items():
        assert (linked / name).is_symlink() and (linked / name).resolve() == target.resolve()
