"""`python -m sixnines`: the command line (sixnines.orchestrator.cli)."""

import sys

from sixnines.orchestrator.cli import main

sys.exit(main())
