"""orchestrator.terminal: text from files cannot act on the terminal it is printed on."""

from __future__ import annotations

from sixnines.orchestrator.terminal import markup, printable, printable_lines


def test_what_a_terminal_would_act_on_is_printed_as_its_escape():
    assert printable("01-tcp") == "01-tcp"
    assert printable("\x1b]0;owned\x07run") == "\\x1b]0;owned\\x07run"
    assert printable("a\nforged line") == "a\\nforged line"
    assert printable("\u202eevil") == "\\u202eevil"


def test_lines_sixnines_wrote_stay_lines():
    assert printable_lines("one\ntwo\x1b[2J") == "one\ntwo\\x1b[2J"


def test_markup_prints_brackets_as_written():
    assert markup("[bold]run\x1b") == "\\[bold]run\\x1b"
