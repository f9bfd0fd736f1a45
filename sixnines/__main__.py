"""`python -m sixnines`: the command line (sixnines.orchestrator.cli)."""

from sixnines.orchestrator.cli import entry

entry()
