import sys

from agents.main import main

sys.exit(main())
