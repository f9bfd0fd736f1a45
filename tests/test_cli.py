"""The command line: where the analysis runs (command line over environment over scenario
over default), and the arguments of `compare` and `runs`."""

from __future__ import annotations

import logging
from importlib.metadata import version
from pathlib import Path

import pytest

from sixnines.orchestrator.cli import (
    EXIT_BAD_INPUT,
    SPARK_MASTER_VARIABLE,
    main,
    parser,
    spark_master,
)


def test_the_command_line_wins(monkeypatch):
    monkeypatch.setenv(SPARK_MASTER_VARIABLE, "spark://env:7077")
    assert spark_master("spark://cli:7077", "spark://file:7077") == "spark://cli:7077"


def test_the_environment_beats_the_scenario(monkeypatch):
    monkeypatch.setenv(SPARK_MASTER_VARIABLE, "spark://env:7077")
    assert spark_master(None, "spark://file:7077") == "spark://env:7077"


def test_the_scenario_beats_the_default(monkeypatch):
    monkeypatch.delenv(SPARK_MASTER_VARIABLE, raising=False)
    assert spark_master(None, "spark://file:7077") == "spark://file:7077"
    assert spark_master(None, None) == "local[*]"


def test_compare_and_runs_defaults():
    args = parser().parse_args(["compare", "runs/a/1", "runs/a/2"])
    assert (args.runs, args.threshold, args.json, args.baseline, args.last, args.junit) == (
        [Path("runs/a/1"), Path("runs/a/2")], 10.0, False, None, None, None)
    assert parser().parse_args(["compare", "a", "b", "--threshold", "25"]).threshold == 25.0
    assert parser().parse_args(["runs"]).dir == Path("runs")


@pytest.mark.parametrize("threshold", ["0", "-5", "ten"])
def test_a_threshold_must_be_a_positive_percentage(threshold, capsys):
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["compare", "a", "b", "--threshold", threshold])
    assert exit_.value.code == EXIT_BAD_INPUT
    assert "--threshold" in capsys.readouterr().err


def test_report_window_defaults_to_each_runs_own():
    assert parser().parse_args(["report", "runs/a"]).window is None
    assert parser().parse_args(["report", "runs/a", "--window", "500"]).window == 500


@pytest.mark.parametrize("window", ["0", "-5", "1.5", "ten"])
def test_a_report_window_is_a_whole_number_of_messages(window, capsys):
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["report", "runs/a", "--window", window])
    assert exit_.value.code == EXIT_BAD_INPUT
    assert "--window" in capsys.readouterr().err


def test_version_names_the_installed_distribution(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"sixnines {version('sixnines')}"


@pytest.mark.parametrize(("argv", "level"), [
    (["validate", "{f}"], logging.WARNING), (["-v", "validate", "{f}"], logging.INFO),
    (["-vv", "validate", "{f}"], logging.DEBUG), (["validate", "-v", "{f}"], logging.INFO)])
def test_verbose_sets_how_much_sixnines_logs(tmp_path, argv, level):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\nsystems: [{name: tcp, driver: tcp}]\n"
                        "workload: {message_size: 64, rate: 100, duration: 1s}\n")
    assert main([word.format(f=scenario) for word in argv]) == 0
    assert logging.getLogger("sixnines").level == level


def test_an_anticipated_error_is_one_line_and_its_exit_code(tmp_path, capsys):
    """Every SixninesError reaches the user as its message (here: a directory without
    results, bad input), never as a traceback."""
    assert main(["report", str(tmp_path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "no run directory" in err and "Traceback" not in err
