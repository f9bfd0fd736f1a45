"""The scenario reference and schema (docs/scenario.md, docs/scenario.schema.json) are what
the models generate, and cover every field, driver option and shipped recipe."""

from __future__ import annotations

import json

import pytest

from sixnines.orchestrator.scenario import reference
from sixnines.orchestrator.scenario.hosts import ContainerHost, LinkShaping, Placement, SshHost
from sixnines.orchestrator.scenario.json_schema import builtin_recipes, own_driver_options
from sixnines.orchestrator.scenario.model import CaseScenario
from sixnines.orchestrator.scenario.search_spec import RateSearch
from sixnines.orchestrator.scenario.systems import BrokerSpec, System
from sixnines.orchestrator.scenario.workload import WorkloadSpec
from tests.result_schemas import DOCS

MODELS = (CaseScenario, WorkloadSpec, RateSearch, System, BrokerSpec, SshHost, ContainerHost,
          LinkShaping, Placement)


@pytest.mark.parametrize("name", list(reference.FILES))
def test_the_shipped_file_is_what_the_models_generate(name):
    shipped = (DOCS / name).read_text(encoding="utf-8")
    assert shipped == reference.FILES[name](), (
        f"docs/{name} is stale: a scenario model, a driver's options or a recipe changed. "
        f"Regenerate it with `{reference.COMMAND}`")


def test_the_reference_names_every_field_option_and_recipe():
    page = (DOCS / reference.REFERENCE_FILE).read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip() for line in page.splitlines() if line.startswith("| `")}
    fields = {f"`{field.alias or name}`" for model in MODELS
              for name, field in model.model_fields.items()}
    options = {f"`{name}`" for model in own_driver_options().values()
               for name in model.model_fields}
    recipes = {f"`{name}`" for name in builtin_recipes()}
    assert fields | options | recipes <= rows
    assert set(own_driver_options()) == {"tcp", "zmq", "redis", "nats", "rabbitmq", "kafka"}
    assert {f"### `{driver}`" for driver in own_driver_options()} <= set(page.splitlines())


def test_every_field_of_the_schema_is_described():
    schema = json.loads((DOCS / "scenario.schema.json").read_text(encoding="utf-8"))
    bodies = [schema, *schema["$defs"].values()]
    undescribed = [f"{body.get('title')}.{name}" for body in bodies
                   for name, field in body.get("properties", {}).items()
                   if not field.get("description")]
    assert undescribed == [], "give these fields a docstring (it is their description)"


def test_the_check_command_names_a_stale_file(tmp_path, capsys):
    assert reference.main(["--check", str(DOCS)]) == 0
    assert reference.main([str(tmp_path)]) == 0
    (tmp_path / reference.REFERENCE_FILE).write_text("# Scenario reference\n")
    assert reference.main(["--check", str(tmp_path)]) == 1
    assert f"{tmp_path / reference.REFERENCE_FILE}: stale; regenerate with" in \
        capsys.readouterr().err
