"""Faults as a hostile or unlucky user causes them, with real processes: one module per
category, each test one case.

- test_scenario_input.py    malformed, hostile and impossible scenarios (validate, run)
- test_scenario_fuzz.py     hundreds of mangled example scenarios through validate, capped
- test_plan_fit.py          plans bigger than the machine; the estimate against real agents
- test_security.py          recipes from elsewhere, shell injection, unauthenticated brokers
- test_interrupts.py        Ctrl-C (once, three times), SIGTERM (builtin relay, RabbitMQ),
                            SIGKILL of the controller (alone, or with its agents), during a
                            run and during the analysis; nothing sent counted lost; `report`
                            and `collect` refusing a run still going
- test_dead_agents.py       a producer, consumer, monitor or requester SIGKILLed mid-run, a
                            consumer's writer process killed: its closed chunks analysed,
                            unknown fate apart from loss
- test_stalls.py            the broker frozen past the drain: what it held is unknown
- test_full_disk_run.py     ENOSPC in an agent's files and in the manifest; the chunks kept
                            analysed when no done.json could be written
- test_full_disk_report.py  ENOSPC while writing the report
- test_corrupt_artifacts.py edited, truncated and bit-flipped files given to `report`
- test_compare_input.py     impossible figures, nesting and escape sequences in summaries,
                            given to `compare` and `runs`
- test_compare_fuzz.py      a real pair of summaries mangled at random, through `compare`
- test_environment.py       what the machine lacks or breaks: output directory, open-file
                            limit, recipe programs and variables, `broker --bind`, servers
                            that never answer or answer garbage, a dead analysis

Helpers: processes.py (real `sixnines` processes and their trees), disks.py (tmpfs that
fill up), validate_worker.py (many scenarios through validate in one capped process).
"""
