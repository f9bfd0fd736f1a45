"""What each system ran with, for a reader who was not there: the broker (recipe, version,
note), the driver and its options, the durability asked for and read back, the machines
(CPU model and count, kernel, memory), where the processes ran and the CPU placement, and
sixnines' version. All of it is in the runs' manifests; the console (`sixnines run`,
`sixnines report`) and the HTML report show it from here, so both say the same.

Secrets are never among it: a manifest records where a password comes from (the
`password_env` variable's name, the `password_file` path), never the password, and a
broker's per-run credential only as "per-run" (orchestrator.run.brokers); the broker's
command and environment are not shown at all. Every text comes from files someone else
may have written: printers escape it (orchestrator.terminal, html.escape).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sixnines.formats.layout import MANIFEST_FILE
from sixnines.formats.manifest import Manifest
from sixnines.formats.run_files import RefusedPath, file_under
from sixnines.formats.summary import RunSummary
from sixnines.formats.wording import size_text, value_text
from sixnines.orchestrator.results.store import manifest_or_problem
from sixnines.orchestrator.scenario.hosts import LOCAL

#: The facts in the order shown, each a label and what it is made from.
BROKER, DRIVER, DURABILITY, MACHINES, PLACEMENT, CPU_PLACEMENT, SIXNINES = (
    "broker", "driver", "durability", "machines", "placement", "CPU placement", "sixnines")
LABELS = (BROKER, DRIVER, DURABILITY, MACHINES, PLACEMENT, CPU_PLACEMENT, SIXNINES)
UNKNOWN = "?"


@dataclass
class SystemSetup:
    """One system's facts: label → text, in LABELS order; a fact its runs disagree on
    names each run ("01-…: a; 02-…: b")."""

    system: str
    facts: dict[str, str] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)  # runs whose manifest could not be read


def broker_text(manifest: Manifest) -> str:
    """`rabbitmq 3.10.8 (recipe) on local`, `nats 2.15.1 (recipe, 3 nodes) on local`,
    `builtin on local`, `external at HOST:PORT`."""
    broker = manifest.broker
    if broker.kind == "external":
        return f"external at {broker.address or UNKNOWN} (not started by sixnines)"
    nodes = f", {len(broker.nodes)} nodes" if broker.nodes else ""
    what = (f"{broker.recipe or UNKNOWN} {_first_line(broker.version) or 'version unknown'} "
            f"(recipe{nodes})" if broker.kind == "recipe"
            else f"builtin (sixnines' own, for {manifest.driver or UNKNOWN})")
    where = f" on {broker.host}" if broker.host else ""
    note = f"; note: {broker.note}" if broker.note else ""
    return f"{what}{where}{note}"


def _first_line(text: str | None) -> str:
    return (text or "").strip().split("\n", 1)[0]


def driver_text(manifest: Manifest) -> str:
    """`rabbitmq: confirms false, prefetch 1000, …`: every option as the run had it
    (defaults included, as the manifest records them)."""
    options = ", ".join(f"{name} {value_text(name, value)}"
                        for name, value in manifest.driver_options.items())
    return f"{manifest.driver or UNKNOWN}: {options or 'no options'}"


def durability_text(manifest: Manifest) -> str:
    """`acks=all, rf=1, min.isr=1 (asked acks all, …; broker min.insync.replicas 1, …)`:
    the label, then every setting asked for and read back, or the note."""
    durability = manifest.durability
    if durability is None:
        return "not recorded (a run recorded before sixnines recorded it)"

    def settings(values: dict) -> str:
        return ", ".join(f"{name} {value_text(name, value)}" for name, value in values.items())

    said = [f"asked {settings(durability.asked)}" if durability.asked else "",
            f"broker {settings(durability.actual)}" if durability.actual else "",
            durability.note or ""]
    details = "; ".join(part for part in said if part)
    return f"{durability.label} ({details})" if details else durability.label


def _machine(facts: dict[str, Any]) -> str:
    """`AMD EPYC, 2 CPUs, kernel 6.1.0, 23.5 GB`; what a manifest lacks is left out."""
    parts = [str(facts["cpu_model"]) if facts.get("cpu_model") else "",
             f"{facts['cpu_count']} CPUs" if isinstance(facts.get("cpu_count"), int) else "",
             f"kernel {facts['kernel']}" if facts.get("kernel") else "",
             size_text(facts["memory_bytes"])
             if isinstance(facts.get("memory_bytes"), int) else ""]
    return ", ".join(part for part in parts if part) or "no facts recorded"


def machines_text(manifest: Manifest) -> str:
    """Each host the run used, by its placement name: the controller's, the agents' and
    the broker monitor's (on the broker's host)."""
    hosts: dict[str, dict[str, Any]] = {}
    controller = manifest.controller.get("host")
    if isinstance(controller, dict):
        hosts[LOCAL] = controller
    entries = [*manifest.agents, *([manifest.monitor] if manifest.monitor else [])]
    for agent in entries:
        if agent.host and agent.host_facts and agent.host not in hosts:
            hosts[agent.host] = agent.host_facts
    return "; ".join(f"{host}: {_machine(facts)}" for host, facts in hosts.items()) or \
        "no facts recorded"


def placement_text(manifest: Manifest) -> str:
    """Which processes ran where: `broker on local; local: consumer-0, producer-0`."""
    by_host: dict[str, list[str]] = defaultdict(list)
    for agent in manifest.agents:
        by_host[agent.host or UNKNOWN].append(str(agent.id))
    broker = f"broker on {manifest.broker.host}" if manifest.broker.host else ""
    agents = [f"{host}: {', '.join(ids)}" for host, ids in by_host.items()]
    return "; ".join(filter(None, [broker, *agents])) or "not recorded"


def cpu_placement_text(manifest: Manifest) -> str:
    return "; ".join(manifest.cpu_placement) or "none (no busy loop, or none asked for)"


def sixnines_text(manifest: Manifest) -> str:
    host = manifest.controller.get("host")
    python = host.get("python") if isinstance(host, dict) else None
    return (manifest.sixnines.version or "version unknown") + \
        (f" (Python {python})" if python else "")


FACTS = {BROKER: broker_text, DRIVER: driver_text, DURABILITY: durability_text,
         MACHINES: machines_text, PLACEMENT: placement_text,
         CPU_PLACEMENT: cpu_placement_text, SIXNINES: sixnines_text}


def run_manifest(results_dir: Path, run_id: str | None) -> Manifest | None:
    """A run's manifest by the run id a summary names (a plain name inside the results
    directory, formats.run_files); None when it cannot be read."""
    try:
        path = file_under(results_dir, run_id or "", MANIFEST_FILE)
    except RefusedPath:
        return None
    return manifest_or_problem(path.parent)[0]


def system_setups(results_dir: Path, summaries: Sequence[RunSummary]) -> list[SystemSetup]:
    """Each system's setup, in the order the systems first ran, from its runs'
    manifests (`results_dir`/<run id>/manifest.json)."""
    runs: dict[str, list[tuple[str, Manifest | None]]] = defaultdict(list)
    for summary in summaries:
        run_id = str(summary.run_id)
        runs[str(summary.system or UNKNOWN)].append(
            (run_id, run_manifest(results_dir, summary.run_id)))
    return [_setup(system, members) for system, members in runs.items()]


def _setup(system: str, members: list[tuple[str, Manifest | None]]) -> SystemSetup:
    setup = SystemSetup(system, unread=[run for run, manifest in members if manifest is None])
    read = [(run, manifest) for run, manifest in members if manifest is not None]
    for label in LABELS if read else ():
        said = [(run, FACTS[label](manifest)) for run, manifest in read]
        texts = list(dict.fromkeys(text for _, text in said))
        setup.facts[label] = texts[0] if len(texts) == 1 else \
            "; ".join(f"{run}: {text}" for run, text in said)
    return setup
