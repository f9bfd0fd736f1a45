"""summary.csv beside summary.json (orchestrator/results/store.py): one row per run."""

from __future__ import annotations

import csv
import json

from sixnines.formats.hdr import PERCENTILE_KEYS
from sixnines.formats.layout import CSV_FILE, SUMMARY_FILE
from sixnines.formats.summary import SCHEMA_VERSION, Figures, RunSummary
from sixnines.orchestrator.results.store import write_results_summary

FIGURES = Figures.model_validate(
    {"p50": 70.0, "p90": 80.0, "p99": 150.0, "p99.9": 1400.0, "p99.99": 3000.0,
     "p99.999": 3500.0, "p99.9999": 3500.0, "max": 3500.0, "mean": 75.5, "lower_median": 70.0,
     "robust_deviation": 4.0, "count": 20_000}).model_dump(mode="json")
OK = {"run_id": "01-tcp-message_size=64", "system": "tcp", "status": "ok", "problems": [],
      "params": {"mode": "one-way", "message_size": 64, "rate": 2000.0, "seed": None},
      "sent": 20_000, "received": 20_000, "lost": 0, "duplicated": 0, "reordered": 3,
      "send_rate": 2000.0, "receive_rate": 1999.5, "latency_us": FIGURES,
      "broker": {"kind": "recipe", "recipe": "rabbitmq", "version": "3.10.8"},
      "warnings": ["machine busy: send lag p99 is 3,391 µs (over 1,000 µs)"],
      "service_time_us": {**FIGURES, "p50": 69.0}, "send_lag_us": {**FIGURES, "p50": 1.1}}
#: An analysed run holds every field (the shipped schema requires them): the rest at defaults.
OK = RunSummary.model_validate(OK).model_dump(mode="json")
FAILED = {"run_id": "02-zmq-message_size=64", "system": "zmq", "status": "failed",
          "problems": ["broker did not start"],
          "params": {"mode": "one-way", "message_size": 64, "rate": 2000.0, "seed": None,
                     "connections": 2}}


def summaries(*runs: dict) -> list[RunSummary]:
    return [RunSummary.model_validate(run) for run in runs]


def written(tmp_path) -> list[dict]:
    write_results_summary(tmp_path, "quickstart", summaries(OK, FAILED))
    document = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["runs"][0] == {"schema_version": SCHEMA_VERSION, **OK}  # as given
    with open(tmp_path / CSV_FILE, newline="", encoding="utf-8") as rows:
        return list(csv.DictReader(rows))


def test_one_row_per_run_with_every_param_count_rate_and_figure(tmp_path):
    ok, _ = written(tmp_path)
    assert list(ok)[:12] == ["run_id", "system", "status", "load", "broker_kind",
                             "broker_recipe", "broker_version", "mode", "message_size",
                             "rate", "seed", "connections"]  # params in order of appearance
    assert (ok["broker_kind"], ok["broker_recipe"], ok["broker_version"]) == (
        "recipe", "rabbitmq", "3.10.8")
    assert ok["load"] == "open-loop"
    assert (ok["run_id"], ok["system"], ok["status"]) == ("01-tcp-message_size=64", "tcp", "ok")
    assert (ok["message_size"], ok["rate"], ok["seed"], ok["connections"]) == (
        "64", "2000.0", "", "")
    assert (ok["sent"], ok["received"], ok["lost"], ok["duplicated"], ok["reordered"]) == (
        "20000", "20000", "0", "0", "3")
    assert (ok["send_rate"], ok["receive_rate"]) == ("2000.0", "1999.5")
    # msg/s times the 64-byte messages
    assert (ok["send_bytes_per_s"], ok["receive_bytes_per_s"]) == ("128000.0", "127968.0")
    assert list(ok)[-2:] == ["problems", "warnings"]
    assert json.loads(ok["warnings"]) == OK["warnings"] and json.loads(ok["problems"]) == []
    for metric in ("latency", "service_time", "send_lag"):
        for key in (*PERCENTILE_KEYS, "max", "mean"):
            assert f"{metric}_{key}_us" in ok
        assert ok[f"{metric}_count"] == "20000"
    assert ok["latency_p99.9_us"] == "1400.0" and ok["latency_mean_us"] == "75.5"
    assert (ok["service_time_p50_us"], ok["send_lag_p50_us"]) == ("69.0", "1.1")


def test_a_failed_run_has_empty_figures(tmp_path):
    _, failed = written(tmp_path)
    assert (failed["status"], failed["connections"]) == ("failed", "2")
    assert failed["latency_p50_us"] == failed["sent"] == failed["latency_count"] == ""
    assert failed["receive_bytes_per_s"] == failed["broker_version"] == ""
    assert json.loads(failed["problems"]) == ["broker did not start"]


def test_a_saturation_run_has_its_load_and_saturation_columns(tmp_path):
    empty = Figures().model_dump(mode="json")
    flooded = {**OK, "run_id": "03-tcp", "load": "saturation",
               "params": {**OK["params"], "rate": "max", "messages": 20_000},
               "latency_us": empty, "service_time_us": empty, "send_lag_us": empty,
               "saturation_latency_us": FIGURES}
    write_results_summary(tmp_path, "max", summaries(OK, flooded))
    with open(tmp_path / CSV_FILE, newline="", encoding="utf-8") as rows:
        ok, row = list(csv.DictReader(rows))
    assert (row["load"], row["rate"], row["messages"]) == ("saturation", "max", "20000")
    assert (row["saturation_latency_p99.9_us"], row["saturation_latency_count"]) == (
        "1400.0", "20000")
    assert (row["latency_p50_us"], row["latency_count"]) == ("", "0")
    assert (ok["saturation_latency_p50_us"], ok["messages"]) == ("", "")
