"""The bundle that travels to agent hosts: this checkout's own wheel plus a wheel for every
dependency, so a benchmark host without internet access can install sixnines offline.

A bundle is identified by its build id (the version and a hash of the sources), so a host
that already has that build installed reuses it, and any change to the code gives a new
one. Bundles are built once per build id and cached on the controller.
"""

from __future__ import annotations

import email.parser
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

from sixnines.formats.errors import SixninesError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
#: The folders the wheel is built from (pyproject.toml maps each into `sixnines`).
PACKAGES = ("sixnines", "formats", "agents", "drivers", "orchestrator", "spark_jobs", "testing")
CACHE_VARIABLE = "SIXNINES_CACHE"
#: What an agent host gets: every system's client, so one bundle serves any scenario.
EXTRAS = "systems"


class BundleError(SixninesError):
    pass


@dataclass(frozen=True)
class Bundle:
    directory: Path  # the wheels: sixnines and every dependency
    build_id: str  # version + source hash: equal ids install the same code
    requirement: str  # what to install from `directory`
    python: str  # "3.11": the interpreter the binary wheels are built for
    machine: str  # "x86_64"

    def wheels(self) -> list[Path]:
        return sorted(self.directory.glob("*.whl"))


def cache_root() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sixnines"
    return Path(os.environ.get(CACHE_VARIABLE, default))


def build_id() -> str:
    """The version plus a hash of every source file and the project metadata: the wheel's
    own bytes are not reproducible (zip timestamps), the sources are."""
    digest = hashlib.sha256((PROJECT_ROOT / "pyproject.toml").read_bytes())
    for package in PACKAGES:
        for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
            digest.update(str(path.relative_to(PROJECT_ROOT)).encode())
            digest.update(path.read_bytes())
    return f"{version('sixnines')}-{digest.hexdigest()[:12]}"


def controller_target() -> tuple[str, str]:
    """(python "X.Y", machine) of this interpreter: what the bundle's wheels are for."""
    return f"{sys.version_info.major}.{sys.version_info.minor}", platform.machine()


def build_bundle() -> Bundle:
    """The bundle of this checkout, from the cache or built now (`pip wheel`, which takes
    dependencies from pip's cache or the package index the controller can reach)."""
    python, machine = controller_target()
    ident = build_id()
    directory = cache_root() / "bundles" / f"{ident}-py{python}-{machine}"
    bundle = Bundle(directory, ident, f"sixnines[{EXTRAS}]=={version('sixnines')}", python,
                    machine)
    if (directory / "COMPLETE").is_file():
        return bundle
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{ident}-", dir=directory.parent))
    try:
        _pip_wheel(staging, f"{clean_source(staging / 'source')}[{EXTRAS}]")
        shutil.rmtree(staging / "source")
        older = _older_patch_requirements(staging, python)
        if older:
            _pip_wheel(staging, *older)
        (staging / "COMPLETE").write_text(ident + "\n", encoding="utf-8")
        shutil.rmtree(directory, ignore_errors=True)
        os.replace(staging, directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return bundle


def clean_source(target: Path) -> Path:
    """A copy of just what the wheel is built from: building in the checkout would leave
    build/ and egg-info behind, and setuptools' build/ keeps modules deleted since."""
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PROJECT_ROOT / name, target / name)
    for package in PACKAGES:
        shutil.copytree(PROJECT_ROOT / package, target / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def _pip_wheel(directory: Path, *requirements: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(directory),
         *requirements],
        capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise BundleError(f"building the agent bundle failed (pip wheel, exit "
                          f"{done.returncode}): {done.stderr.strip()[-800:]}")


def _older_patch_requirements(directory: Path, python: str) -> list[str]:
    """Requirements of the bundled wheels that apply only to earlier patch releases of
    this Python (redis needs async-timeout below 3.11.3; Debian 12 ships 3.11.2): `pip
    wheel` resolves for the controller's exact interpreter, a host's may be older."""
    # every marker variable is a str; packaging types its environment's values as objects
    ours = {name: str(value) for name, value in default_environment().items()}
    oldest = {**ours, "python_full_version": f"{python}.0"}
    found = set()
    for wheel in directory.glob("*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            metadata = email.parser.BytesParser().parsebytes(archive.read(name))
        for line in metadata.get_all("Requires-Dist") or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker and marker.evaluate(oldest) and not marker.evaluate(ours):
                requirement.marker = None
                found.add(str(requirement))
    return sorted(found)
