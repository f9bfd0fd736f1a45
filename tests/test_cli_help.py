"""Help that helps: `sixnines COMMAND --help` has a description and an example for every
command, internal commands stay out of the top-level list, and the shell completion
script completes what the parser takes."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from sixnines.orchestrator.cli import parser

INTERNAL = {("agent",)}


def _commands(command: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every (sub)command's words, depth first."""
    for action in command._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name)
                yield from _commands(sub, (*path, name))


def _subcommand(words: tuple[str, ...]) -> argparse.ArgumentParser:
    command = parser()
    for word in words:
        command = next(a for a in command._actions
                       if isinstance(a, argparse._SubParsersAction)).choices[word]
    return command


def _help(words: tuple[str, ...]) -> str:
    """`sixnines WORDS --help` as argparse prints it (in this process: the conftest counts
    `sixnines agent` and `broker` among the servers a test must not start)."""
    return _subcommand(words).format_help()


def _sixnines(*argv: str) -> str:
    done = subprocess.run([sys.executable, "-m", "sixnines", *argv], capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout


COMMANDS = list(_commands(parser()))


def test_the_commands_are_found():
    assert {("run",), ("validate",), ("hosts", "check"), ("schema",), ("completion",),
            ("agent",)} <= set(COMMANDS)


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_command_has_a_description_and_an_example(words):
    text = _help(words)
    usage, _, rest = text.partition("\n\n")
    description = rest.split("\n\n", 1)[0]
    assert usage.startswith(f"usage: sixnines {' '.join(words)}")
    assert not description.startswith(("positional arguments:", "options:")), \
        f"sixnines {' '.join(words)} --help has no description"
    assert "\nexample" in text and f"\n  sixnines {' '.join(words)}" in text, \
        f"sixnines {' '.join(words)} --help has no example"


def test_internal_commands_are_left_out_of_the_list_but_still_run():
    text = _sixnines("--help")
    listed = {line.split()[0] for line in text.splitlines() if line.startswith("    ")}
    assert {words[0] for words in COMMANDS if len(words) == 1} - listed == \
        {words[0] for words in INTERNAL}
    assert "agent" not in text
    assert parser().parse_args(["agent"]).command == "agent"


def test_arguments_use_the_metavars_of_the_vocabulary():
    """Paths are FILE, DIR or ROOT; counts N; percentages PCT: never argparse's dest names."""
    odd = []
    for words in COMMANDS:
        for action in _subcommand(words)._actions:
            takes_value = action.nargs != 0 and not isinstance(
                action, argparse._SubParsersAction | argparse._HelpAction)
            if takes_value and (action.metavar is None and action.choices is None):
                odd.append(f"sixnines {' '.join(words)} {action.option_strings or action.dest}")
    assert odd == []


def _complete(script: str, *words: str) -> list[str]:
    """What bash offers for the last of `words`, from the script's own function."""
    line = " ".join(words)
    program = (f'{script}\nCOMP_WORDS=({" ".join(map(repr, words))}); '
               f'COMP_CWORD={len(words) - 1}; COMP_LINE={line!r}; COMP_POINT={len(line)}; '
               '_shtab_sixnines; printf "%s\\n" "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stdout.split()


def test_bash_completes_commands_options_choices_and_paths(tmp_path, monkeypatch):
    script = _sixnines("completion", "bash")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nightly.yaml").write_text("")
    (tmp_path / "runs").mkdir()
    listed = set(_complete(script, "sixnines", ""))
    assert {"run", "validate", "report", "schema", "completion", "broker"} <= listed
    assert "agent" not in listed
    assert _complete(script, "sixnines", "compare", "--th") == ["--threshold"]
    assert _complete(script, "sixnines", "schema", "") == ["scenario", "summary", "manifest"]
    assert _complete(script, "sixnines", "run", "ni") == ["nightly.yaml"]
    assert _complete(script, "sixnines", "report", "") == ["runs"]


def test_zsh_gets_a_completion_function():
    script = _sixnines("completion", "zsh")
    assert script.startswith("#compdef sixnines") and "validate" in script
