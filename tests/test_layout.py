"""Every name a results directory uses is spelled once, in formats/layout.py: no other
module of the package, and no benchmark, writes one as a literal (docs/design.md,
"Files"). Docstrings and comments may name files as prose; code goes through the names."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from sixnines.formats import layout
from tests.test_layers import FOLDERS, ROOT

#: Where code reads and writes results: every part of the package but formats, and the
#: benchmarks, which read the results of the runs they make.
SOURCES = [folder for part, folder in FOLDERS.items() if part != "formats"] + \
    [ROOT / "benchmarks"]
FOLDER_NAMES = {layout.REPORT_DIR, layout.AGENTS_DIR, layout.BROKER_DIR}
FILE_NAMES = {value for name, value in vars(layout).items()
              if name.isupper() and isinstance(value, str) and value not in FOLDER_NAMES
              and "*" not in value and not value.startswith(".")}
#: A file name in a string: a word with a dot inside (`summary.json`, `latency.hlog`).
WORD = re.compile(r"[\w-]+(?:\.\w+)+")
#: A folder in a path written as one string (`report/summary.json`, `{key}/agents/{id}`).
FOLDER_IN_PATH = re.compile(rf"(?:^|/)({'|'.join(FOLDER_NAMES)})(?:/|$)")
#: Calls whose string arguments are path parts.
PATH_CALLS = {"Path", "PurePath", "PurePosixPath", "joinpath", "file_under", "glob", "rglob",
              "ignore_patterns"}


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the strings that stand alone as statements: docstrings, of modules,
    classes, functions and fields."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def path_parts(tree: ast.AST) -> set[int]:
    """The ids of the string constants used as a path's part: an operand of `/`, or an
    argument of a call that makes or walks a path."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found |= {id(side) for side in (node.left, node.right)}
        elif isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else \
                getattr(node.func, "id", None)
            if called in PATH_CALLS:
                found |= {id(arg) for arg in node.args}
    return found


def spelled_names(path: Path) -> Iterator[tuple[int, str]]:
    """(line, name) of each result file or folder name `path` spells as a literal."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped, parts = docstrings(tree), path_parts(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) \
                or id(node) in skipped:
            continue
        text = node.value
        for word in WORD.findall(text):
            if word in FILE_NAMES or word.endswith(layout.HGRM_SUFFIX):
                yield node.lineno, word
        if text.startswith(layout.HGRM_SUFFIX):  # the end of f"{metric}.hgrm"
            yield node.lineno, text
        for match in FOLDER_IN_PATH.finditer(text):
            if "/" in text or id(node) in parts:
                yield node.lineno, match.group(1)


def test_no_module_spells_a_result_file_s_name():
    spelled = [f"{path.relative_to(ROOT)}:{line}: {name!r} (use formats.layout)"
               for folder in SOURCES for path in sorted(folder.rglob("*.py"))
               for line, name in spelled_names(path)]
    assert not spelled, "\n".join(spelled)


def test_the_check_finds_what_it_is_for(tmp_path):
    """Each way a name used to be spelled is found (a check that finds nothing proves
    nothing)."""
    source = tmp_path / "spelling.py"
    source.write_text('"""Reads summary.json (prose: allowed)."""\n'
                      'a = run / "report" / "series.json"\n'
                      'b = f"{key}/agents/{agent}"\n'
                      'c = f"{metric}.hgrm"\n'
                      'd = Path("broker")\n'
                      'e = "the subcommand report"\n', encoding="utf-8")
    assert sorted(spelled_names(source)) == [
        (2, "report"), (2, "series.json"), (3, "agents"), (4, ".hgrm"), (5, "broker")]
