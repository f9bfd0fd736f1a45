"""Where the analysis runs: command line over environment over scenario over default."""

from __future__ import annotations

from orchestrator.cli import SPARK_MASTER_VARIABLE, spark_master


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
