"""Faults as a hostile or unlucky user causes them, with real processes: one module per
category, each test one case.

- test_scenario_input.py   malformed, hostile and impossible scenarios (validate, run)
- test_security.py         recipes from elsewhere, shell injection, unauthenticated brokers
- test_interrupts.py       Ctrl-C (once, three times), SIGTERM, SIGKILL of the controller,
                           interrupts during the analysis, dead receivers
- test_full_disk.py        ENOSPC in an agent, in the manifest, in the report
- test_corrupt_artifacts.py edited, truncated and bit-flipped files given to `report`
"""
