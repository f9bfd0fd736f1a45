import sys

from sixnines.agents.main import main

sys.exit(main())
