"""Every module's tests are found by its name (docs/design.md, "Tests"): a file
`test_<module>*.py` anywhere under tests/, its folder's name first where the module's name
alone is shared or says little (`test_capacity_verdict.py`, `test_reports_cpu.py`), or,
for a folder whose modules make one thing, `test_<folder>*.py`. Modules without a file of
their own are listed below with where they are tested and why, so the list only shrinks.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("agents", "drivers", "formats", "orchestrator", "spark_jobs", "testing", "sixnines")
#: Folders whose modules make one thing, tested as one: a driver (its wire, connection,
#: options and driver, through its wire tests, its real server and the conformance suite),
#: the scenario file a user writes (parsed whole), the report page.
UNITS = ("drivers/kafka", "drivers/nats", "drivers/rabbitmq", "drivers/redis", "drivers/tcp",
         "drivers/zmq", "orchestrator/scenario", "orchestrator/reports")
#: Modules without a test file of their own: where they are tested, and why there.
ELSEWHERE = {
    "agents/__main__.py": "an entry point (`python -m sixnines.agents`): every run starts it",
    "sixnines/__main__.py": "an entry point (`python -m sixnines`): tests/test_cli.py",
    "testing/__main__.py": "an entry point: tests/conformance/test_third_party.py runs it",
    "orchestrator/run/run_faults.py": "a run's faults, only inside a run: "
                                      "tests/faults/test_faults_on_purpose.py, "
                                      "tests/integration/test_link_faults.py",
    "agents/roles.py": "the roles' loops, only in a running agent: tests/test_streams.py",
    "agents/recording.py": "the recorder beside the loops: tests/test_streams.py, "
                           "tests/test_disk.py, tests/faults/test_dead_agents.py",
    "agents/chunk_writer.py": "the recorder's writer process: tests/test_streams.py, "
                              "tests/faults/test_full_disk_run.py",
    "agents/artifacts.py": "an agent's files at its end: tests/faults/test_full_disk_run.py, "
                           "tests/faults/test_corrupt_artifacts.py",
    "agents/monitor.py": "the broker's CPU monitor: tests/integration/test_cpu_run.py, "
                         "tests/integration/test_controller_death.py",
    "agents/facts.py": "a host's facts and clock domain: "
                       "tests/integration/test_clocks_across_hosts.py",
    "formats/document.py": "the result files' base model: tests/test_manifest.py, "
                           "tests/test_summary.py",
    "formats/errors.py": "the errors' base class: tests/faults/ (one line, no traceback)",
    "formats/pruned.py": "a pruned run's mark, written and read by `prune`, `report` and "
                         "the integrity checks: tests/faults/test_prune.py",
    "formats/records.py": "the record files' columns: tests/test_delivery.py, "
                          "tests/test_streams.py",
    "formats/vocabulary.py": "names shared by every layer: tests/test_streams.py, "
                             "tests/test_series.py",
    "orchestrator/launchers/bundle.py": "tests/integration/test_containers.py, "
                                        "tests/test_dependencies.py",
    "orchestrator/launchers/handoff.py": "tests/faults/test_security.py",
    "orchestrator/launchers/held_faults.py": "the controller's end of a fault held on a "
                                             "host, only inside a run: "
                                             "tests/integration/test_link_faults.py, "
                                             "tests/faults/test_data_disks.py",
    "orchestrator/launchers/local.py": "every run on this machine: tests/integration/",
    "orchestrator/launchers/ssh.py": "tests/integration/test_multihost.py",
    "orchestrator/launchers/ssh_guard.py": "tests/integration/test_controller_death.py",
    "orchestrator/plan/preflight.py": "tests/faults/test_environment.py",
    "orchestrator/results/recovery.py": "a dead controller's runs, left only by a "
                                        "controller killed mid-run: "
                                        "tests/faults/test_interrupts.py (`report`), "
                                        "tests/integration/test_controller_death.py "
                                        "(`collect`), "
                                        "tests/faults/test_untrusted_results.py "
                                        "(done.json files edited)",
    "orchestrator/results/summaries.py": "summaries read back as untrusted input, through "
                                         "`compare` and `runs`: "
                                         "tests/faults/test_compare_input.py, "
                                         "tests/faults/test_compare_fuzz.py",
    "orchestrator/run/brokers.py": "brokers started for a run: tests/test_recipes.py "
                                   "(throwaway recipes), tests/integration/support.py's "
                                   "recipe_server for the real systems' tests",
    "orchestrator/run/broker_nodes.py": "a started broker's nodes, through start_recipe: "
                                        "tests/test_recipes.py (a throwaway cluster), "
                                        "tests/faults/test_cluster_nodes.py (NATS)",
    "orchestrator/run/fleet.py": "the hosts of a run and their launchers: "
                                 "tests/integration/test_multihost.py, "
                                 "tests/integration/test_containers.py",
    "orchestrator/run/runner.py": "one run's lifecycle, composing the rest of run/: every "
                                  "run, tests/integration/test_end_to_end.py, tests/faults/",
    "spark_jobs/analyze.py": "Spark's session, scheduler and command line, which need a "
                             "JVM: tests/integration/test_spark_*.py, "
                             "tests/test_analysis_without_spark.py",
    "spark_jobs/run_report.py": "a run's files checked and its report written, from real "
                                "runs: tests/integration/test_spark_analysis.py, "
                                "tests/integration/test_sidecar.py, "
                                "tests/faults/test_corrupt_artifacts.py",
    "spark_jobs/series_pass.py": "the per-agent half of spark_jobs.series, tested with the "
                                 "definitions it computes: tests/test_series.py, "
                                 "tests/test_follow.py",
    "testing/brokers.py": "tests/conformance/test_drivers.py",
    "testing/conformance.py": "the conformance suite itself: tests/conformance/",
    "testing/plugin.py": "tests/conformance/test_third_party.py",
    "testing/suite.py": "tests/conformance/test_third_party.py",
}


def modules() -> list[str]:
    """Every module of the package, as a path from the repository's root."""
    found = []
    for part in PARTS:
        for folder, _, files in os.walk(ROOT / part):
            found += [str((Path(folder) / name).relative_to(ROOT)) for name in files
                      if name.endswith(".py") and name != "__init__.py"]
    return sorted(found)


def named_tests() -> set[str]:
    """What follows `test_` in the name of every test file."""
    return {path.stem.removeprefix("test_") for path in (ROOT / "tests").rglob("test_*.py")}


def named_after(module: str, names: set[str]) -> bool:
    path = Path(module)
    folder = str(path.parent)
    stems = [path.stem, f"{path.parent.name}_{path.stem}"]
    if folder in UNITS:
        stems.append(path.parent.name)
    return any(name == stem or name.startswith(f"{stem}_") for name in names for stem in stems)


def unnamed() -> list[str]:
    names = named_tests()
    return [module for module in modules() if not named_after(module, names)]


def test_every_module_has_a_test_file_named_after_it_or_says_where_it_is_tested():
    missing = [module for module in unnamed() if module not in ELSEWHERE]
    assert missing == [], "no tests/…/test_<module>*.py for:\n" + "\n".join(missing)


def test_the_list_of_modules_tested_elsewhere_only_shrinks():
    """A module that gained a test file of its own, or is gone, leaves the list."""
    stale = sorted(set(ELSEWHERE) - set(unnamed()))
    assert stale == [], f"remove from ELSEWHERE: {stale}"
