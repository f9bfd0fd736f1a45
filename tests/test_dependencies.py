"""Every third-party package a module imports is declared where that module needs it.

pyproject.toml's `dependencies` are what every host installs; each extra adds what one part
needs (a system's client, Spark for the analysis, the remote launchers). A module may import
the core and the extras named for it in EXTRAS_OF below, lazy imports inside functions
included; an import guarded by `except ImportError` is optional and needs no declaration.
An agent host for Redis installs `sixnines[redis]` and nothing else, and an import declared
nowhere (or only in another part's extra) breaks a host that followed docs/running.md,
"Installing by hand".
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from functools import cache
from importlib.metadata import packages_distributions

from tests.test_layers import ROOT, imports, modules

#: Module prefix -> the extras that module may rely on (the longest matching prefix wins).
EXTRAS_OF = {
    "sixnines.drivers.zmq": {"zmq"},
    "sixnines.drivers.redis": {"redis"},
    "sixnines.drivers.nats": {"nats"},
    "sixnines.drivers.rabbitmq": {"rabbitmq"},
    "sixnines.drivers.kafka": {"kafka"},
    "sixnines.spark_jobs.analyze": {"analysis"},  # Spark: the rest of the analysis is core
    "sixnines.orchestrator.results.changes": {"changes"},
    "sixnines.orchestrator.launchers.bundle": {"remote"},
    "sixnines.orchestrator.launchers.ssh": {"remote"},
    "sixnines.orchestrator.launchers.ssh_guard": {"remote"},
    "sixnines.orchestrator.launchers.container": {"remote"},
    "sixnines.orchestrator.plan.hosts_check": {"remote"},  # checks SSH hosts, as ssh does
    "sixnines.testing": {"testing"},
}


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement ("PyYAML>=6" -> "pyyaml")."""
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


@cache
def declared() -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """(the core distributions, each extra's distributions with sixnines[...] expanded)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]

    def expand(extra: str) -> frozenset[str]:
        found: set[str] = set()
        for requirement in extras[extra]:
            own = re.fullmatch(r"sixnines\[([\w,]+)\]", requirement)
            if own:
                for inner in own.group(1).split(","):
                    found |= expand(inner)
            else:
                found.add(_name(requirement))
        return frozenset(found)

    core = frozenset(_name(r) for r in project["dependencies"])
    return core, {extra: expand(extra) for extra in extras}


def extras_of(module: str) -> set[str]:
    matches = [prefix for prefix in EXTRAS_OF
               if module == prefix or module.startswith(prefix + ".")]
    return EXTRAS_OF[max(matches, key=len)] if matches else set()


def optional(path) -> set[str]:
    """Modules imported inside `try: ... except ImportError` (or ModuleNotFoundError): the
    module works without them (a version recorded when the package is there)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Try) and any(
                isinstance(handler.type, ast.Name)
                and handler.type.id in ("ImportError", "ModuleNotFoundError")
                for handler in node.handlers):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, ast.Import):
                        found |= {alias.name for alias in sub.names}
                    elif isinstance(sub, ast.ImportFrom) and sub.level == 0 and sub.module:
                        found.add(sub.module)
    return found


def third_party(module: str, imported: set[str]) -> set[str]:
    """The distributions behind the modules `imported` that are neither the standard
    library nor sixnines."""
    providers = packages_distributions()
    found = set()
    for name in imported:
        top = name.split(".")[0]
        if top in sys.stdlib_module_names or top in ("sixnines", "__future__"):
            continue
        assert top in providers, f"{module} imports {top}, which no installed package provides"
        found |= {_name(dist) for dist in providers[top]}
    return found


def test_every_import_is_declared_for_the_module_that_makes_it():
    core, extras = declared()
    undeclared = []
    for module, path in sorted(modules().items()):
        allowed = set(core).union(*(extras[extra] for extra in extras_of(module)))
        needed = imports(path, module) - optional(path)
        for dist in sorted(third_party(module, needed) - allowed):
            homes = sorted(extra for extra, dists in extras.items() if dist in dists)
            undeclared.append(f"{module} imports {dist}: declared in "
                              f"{homes or 'nothing'}, not in core or {sorted(extras_of(module))}")
    assert not undeclared, "\n".join(undeclared)


def test_each_shipped_driver_has_the_extra_of_its_name():
    """drivers/registry.py tells a user `pip install 'sixnines[<driver>]'` on a missing
    client: that extra must exist for every shipped driver with a client."""
    _, extras = declared()
    for prefix, needs in EXTRAS_OF.items():
        if prefix.startswith("sixnines.drivers."):
            (extra,) = needs
            assert extra == prefix.rsplit(".", 1)[1] and extras[extra], prefix


def test_a_missing_client_names_the_extra_to_install(tmp_path):
    """A real `sixnines validate` in a Python where the redis client cannot be imported."""
    scenario = tmp_path / "redis.yaml"
    scenario.write_text("name: r\nsystems:\n  - {name: r, driver: redis, broker: builtin}\n"
                        "workload: {message_size: 64, rate: 100, duration: 1s}\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['redis'] = None\n"
         "from sixnines.orchestrator.cli import main; sys.exit(main())",
         "validate", str(scenario)],
        capture_output=True, text=True, timeout=60, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "pip install 'sixnines[redis]'" in output and "Traceback" not in output, output
    assert output.startswith(f"{scenario}:3: systems[0].driver: driver 'redis' needs the Python "
                             "package 'redis'"), output
