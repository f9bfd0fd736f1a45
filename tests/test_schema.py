"""The shipped JSON Schemas (docs/*.schema.json, formats.schema): the files are what the
models generate, a changed shape changes schema_version, and the check after each test
names a result file that breaks its schema."""

from __future__ import annotations

import json

import pytest

from sixnines.formats import manifest, schema, summary
from sixnines.formats.summary import ResultsSummary
from tests.result_schemas import DOCS, MANIFEST, SUMMARY, unchecked_problems
from tests.test_summary import analysed

#: The fingerprint of each schema version's shape (formats.schema.fingerprint): a
#: version, once released, keeps its shape.
SHAPES = {
    SUMMARY: {1: "87d47d8c6e5f5765", 2: "64fdf974a8fc97d5", 3: "64fdf974a8fc97d5",
              4: "fe5e4adce5b81996", 5: "e17d1e64662aa302",
              6: "7637f1fb865ff15a", 7: "bb87a3f19885cff0"},
    MANIFEST: {1: "63fd376dff80d39a", 2: "6a1c32a770d4c7f4", 3: "d94aee0e3204e6c7",
               4: "830b66f822739f8b", 5: "9ecebca4e558eeaf", 6: "164eb10a76095fd0",
               7: "efea11bc7ba4b9cb", 8: "aeea73a69855ffbc", 9: "822fb2def9abb257"},
}
MODULES = {SUMMARY: summary, MANIFEST: manifest}

@pytest.mark.parametrize("name", list(schema.SCHEMAS))
def test_the_shipped_schema_is_what_the_model_generates(name):
    shipped = (DOCS / name).read_text(encoding="utf-8")
    assert shipped == schema.text(name), (
        f"docs/{name} is stale: the model changed and the shipped schema did not. "
        f"Regenerate it with `{schema.COMMAND}` (and see the next test on schema_version)")


@pytest.mark.parametrize("name", list(schema.SCHEMAS))
def test_a_changed_shape_has_a_new_schema_version(name):
    module = MODULES[name]
    version, found = module.SCHEMA_VERSION, schema.fingerprint(schema.schema(name))
    assert SHAPES[name].get(version) == found, (
        f"{name}: the shape (fields, types, required keys) is not the one schema_version "
        f"{version} was released with. If the change is meant, bump SCHEMA_VERSION in "
        f"{module.__name__} (its docstring says when), record {found!r} for the new version "
        f"in SHAPES here and regenerate the schemas with `{schema.COMMAND}`")


def test_the_check_command_names_a_stale_schema(tmp_path, capsys):
    assert schema.main(["--check", str(DOCS)]) == 0
    assert schema.main([str(tmp_path)]) == 0
    (tmp_path / SUMMARY).write_text("{}\n")
    assert schema.main(["--check", str(tmp_path)]) == 1
    assert f"{tmp_path / SUMMARY}: stale; regenerate with" in capsys.readouterr().err


def test_the_check_after_each_test_names_a_file_that_breaks_its_schema(tmp_path):
    results = tmp_path / "results"
    (results / "01" / "report").mkdir(parents=True)
    good = ResultsSummary(scenario="s", runs=[analysed()])
    (results / "summary.json").write_text(good.text())
    (results / "01" / "report" / "summary.json").write_text(analysed().text())
    (results / "01" / "manifest.json").write_text("{not json")  # damaged on purpose
    assert unchecked_problems(results) == []
    broken = good.as_json()
    broken["runs"][0]["sent"] = "many"
    (results / "summary.json").write_text(json.dumps(broken))
    (problem,) = unchecked_problems(results)
    assert problem.startswith(f"{results / 'summary.json'}: runs/0/sent: 'many' is not ")
    (results / "summary.json").write_text(good.text())  # this test's teardown checks too
