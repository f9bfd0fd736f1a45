"""formats.json_input: JSON from a results directory is bounded before it is parsed."""

from __future__ import annotations

import pytest

from sixnines.formats.json_input import MAX_DEPTH, RefusedJson, read_json

#: the files here are named as results files and are not results on purpose
pytestmark = pytest.mark.unchecked_results


@pytest.mark.parametrize(("text", "why"), [
    ("[" * 100_000 + "]" * 100_000, "nested more than"),  # past the parser's recursion
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested more than"),
    ('{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1), "nested more than"),
    ("nope", "not valid JSON"),
    ('{"a": 1', "not valid JSON"),
])
def test_a_file_sixnines_did_not_write_is_refused_with_the_reason(tmp_path, text, why):
    path = tmp_path / "summary.json"
    path.write_text(text)
    with pytest.raises(RefusedJson, match=why):
        read_json(path, 10_000_000)


def test_a_file_past_the_size_bound_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text('{"run_id": "' + "x" * 5000 + '"}')
    with pytest.raises(RefusedJson, match="larger than 4,096 bytes"):
        read_json(path, 4096)


def test_undecodable_bytes_are_refused(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(RefusedJson, match="not valid JSON"):
        read_json(path, 4096)


def test_a_document_as_deep_as_the_bound_is_read(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    value = read_json(path, 4096)
    for _ in range(MAX_DEPTH - 1):
        value = value[0]
    assert value == []
