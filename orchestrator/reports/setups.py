"""The report's "Setup" section: what each system ran with (orchestrator.results.setup),
one column per system, so a reader who was not there can trust the figures without
asking: broker, driver options, machines, placement, CPU placement, sixnines' version."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from sixnines.formats.layout import MANIFEST_FILE
from sixnines.orchestrator.results.setup import LABELS, SystemSetup

SETUP_ID = "setup"


def section(setups: Sequence[SystemSetup]) -> str:
    """The section; a system whose runs left no readable manifest says so in its column."""
    if not setups:
        return ""
    head = "".join(f'<th class="text">{escape(setup.system)}</th>' for setup in setups)
    rows = "".join(
        f'<tr data-fact="{escape(label)}"><th class="text">{escape(label)}</th>'
        + "".join(f'<td class="text">{escape(setup.facts.get(label, "not recorded"))}</td>'
                  for setup in setups) + "</tr>"
        for label in LABELS)
    unread = "".join(f'<p class="warn">{escape(setup.system)}: no readable manifest for '
                     f'{escape(", ".join(setup.unread))}</p>' for setup in setups if setup.unread)
    return (f'<section id="{SETUP_ID}"><h2>Setup</h2><div class="scroll"><table class="setup">'
            f'<thead><tr><th class="text"></th>{head}</tr></thead><tbody>{rows}</tbody>'
            f'</table></div>{unread}<p class="caption">From each run\'s {MANIFEST_FILE}; '
            "where a system's runs differ, each run is named. Driver options as the run had them, "
            "defaults included; passwords are never recorded (only where they come from).</p>"
            "</section>")
