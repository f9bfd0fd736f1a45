"""sixnines: open-loop load generation for messaging systems, with latency measured from
the intended send time and reported as the whole distribution (docs/design.md).

Everything sixnines installs lives under this one name. The repository keeps its layout
— `orchestrator/`, `agents/`, `drivers/`, `spark_jobs/` and `formats/` (the ground floor
every part shares) — and pyproject.toml maps each folder into this namespace.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sixnines")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
