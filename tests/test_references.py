"""What the docs and the code's comments cite exists, so a reader who follows a reference
finds it: every `docs/design.md, "Section"` (any of the repository's .md files, README
included) names a heading of that file, every `docs/design.md rule N` one of its rules,
every dotted `sixnines.part.module` (or `part.module.name`) a module of the package and a
name defined there, and every path to a file of the repository (`formats/atomic.py`,
`launchers/guard.py` inside its part, `docs/drivers.md`) a file that is there.

Read: the Markdown and JSON files (the published schemas), and the docstrings and comments
of every Python file; not the code itself, whose imports Python checks.
"""

from __future__ import annotations

import ast
import os
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("formats", "drivers", "agents", "spark_jobs", "orchestrator", "testing")
#: Folders whose files the docs cite by path besides the package's (a run directory's own
#: paths, `report/summary.json`, are no files of the repository and are not checked).
CITED_FOLDERS = ("docs", "deploy", "examples", "benchmarks", "tests", ".ci", "sixnines",
                 *PARTS)
SKIPPED = {".git", ".venv", "__pycache__", ".ruff_cache", "node_modules", "out",
           "sixnines.egg-info", "build", "dist"}
#: Files the docs name as examples of what a user writes, not files of this repository.
NOT_OURS = {"my_driver.py", "my_plugin.py", "setup.py", "conftest.py"}

SECTION = re.compile(r'((?:[\w.-]+/)*[\w-]+\.md|README)[,:]?\s+\\?"([^"\\]{1,80})\\?"')
RULE = re.compile(r"design\.md,? rules? (\d+)")
DOTTED = re.compile(rf"(?<![\w./-])(?:sixnines\.)?({'|'.join(PARTS)})((?:\.\w+)+)")
PATH = re.compile(r"(?<![\w/.~:$-])((?:[\w.-]+/)*[\w-]+\.(?:py|md|yaml|yml|sh|json|toml))"
                  r"(?![\w/])")
#: A comment: from a `#` at the start of a line or after a space (one inside a string is
#: read too, harmlessly: it is text), without the `#` and the spaces after it.
COMMENT = re.compile(r"(?:^|\s)#+\s*(.*)$")
EXTENSIONS = {"py", "md", "yaml", "yml", "sh", "json", "toml", "txt", "log", "parquet",
              "hlog", "hgrm", "csv", "html", "lock", "jsonl", "gp", "svg"}


@cache
def repository_files() -> tuple[str, ...]:
    """Every file of the checkout, relative to its root (tools' folders left out)."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if name not in SKIPPED]
        found += [str((Path(folder) / name).relative_to(ROOT)) for name in files]
    return tuple(sorted(found))


def sources() -> list[Path]:
    """What is read: Markdown, JSON and Python files, but this one (its examples)."""
    return [ROOT / name for name in repository_files()
            if name.endswith((".py", ".md", ".json")) and ROOT / name != Path(__file__)]


@cache
def prose(path: Path) -> str:
    """What a reader of `path` reads as text: a Python file's docstrings and comments."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return text
    parts = [found[1] for line in text.splitlines() if (found := COMMENT.search(line))]
    holders = [ast.parse(text)]  # the module, its classes and functions, at any depth
    while holders:
        holder = holders.pop()
        for node in holder.body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                holders.append(node)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and \
                    isinstance(node.value.value, str):  # docstrings, attributes' included
                parts.append(node.value.value)
    return "\n".join(parts)


@cache
def headings(doc: Path) -> tuple[str, ...]:
    return tuple(line.lstrip("#").strip() for line in doc.read_text(encoding="utf-8")
                 .splitlines() if line.startswith("#"))


@cache
def rules(doc: Path) -> int:
    return len(re.findall(r"^\d+\. \*\*", doc.read_text(encoding="utf-8"), re.MULTILINE))


def document(name: str, citing: Path) -> Path | None:
    """The .md file a citation names: README, a path from the root, or a doc in docs/."""
    if name == "README":
        return ROOT / "README.md"
    for candidate in (ROOT / name, ROOT / "docs" / name, citing.parent / name):
        if candidate.is_file():
            return candidate
    return None


def section_problems(text: str, citing: Path) -> list[str]:
    found = []
    for match in SECTION.finditer(text):
        name, section = match[1], " ".join(match[2].split())  # wrapped over lines
        doc = document(name, citing)
        if doc is None:
            found.append(f"{name}: no such document")
        elif not any(heading == section or heading.startswith((f"{section} (", f"{section}:"))
                     for heading in headings(doc)):
            found.append(f'{name}, "{section}": no such heading')
    for match in RULE.finditer(text):
        if not 1 <= int(match[1]) <= rules(ROOT / "docs" / "design.md"):
            found.append(f"docs/design.md rule {match[1]}: no such rule")
    return found


@cache
def defines(module: Path, name: str) -> bool:
    """Whether `module` (a file) defines or imports `name` at any level."""
    text = module.read_text(encoding="utf-8")
    return re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b|^\s*{name}\s*(?::[^=\n]*)?="
                     rf"|^\s*(?:from\s+\S+\s+)?import\s+.*\b{name}\b", text, re.MULTILINE) \
        is not None


def dotted_problem(part: str, rest: str) -> str | None:
    names = rest.strip(".").split(".")
    if names[-1] in EXTENSIONS:  # a file name (`drivers.md`), not a module
        return None
    here = ROOT / part
    for index, name in enumerate(names):
        if (here / name).is_dir():
            here = here / name
        elif (here / f"{name}.py").is_file():
            here = here / f"{name}.py"
            names = names[index + 1:]
            break
        else:
            names = names[index:]
            break
    else:
        return None
    if not names:
        return None
    module = here if here.suffix == ".py" else here / "__init__.py"
    if module.is_file() and defines(module, names[0]):
        return None
    return f"{part}{rest}: no module or name {names[0]!r} in {module.relative_to(ROOT)}"


def path_problem(cited: str, citing: Path) -> str | None:
    name = cited.rsplit("/", 1)[-1]
    if name in NOT_OURS or any(part.isupper() for part in re.split(r"[/.]", cited)):
        return None  # an example, or a placeholder: deploy/recipes/NAME.yaml
    if "/" not in cited:
        if not cited.endswith(".py"):
            return None
        return None if any(f.rsplit("/", 1)[-1] == cited for f in repository_files()) else \
            f"{cited}: no such file in the repository"
    if not cited.endswith(".py") and cited.split("/", 1)[0] not in CITED_FOLDERS:
        return None
    if (citing.parent / cited).is_file() or any(
            f == cited or f.endswith(f"/{cited}") for f in repository_files()):
        return None
    return f"{cited}: no such file in the repository"


def problems_in(path: Path) -> list[str]:
    text = prose(path)
    found = section_problems(text, path)
    found += [p for match in DOTTED.finditer(text) if (p := dotted_problem(*match.groups()))]
    found += [p for match in PATH.finditer(text) if (p := path_problem(match[1], path))]
    return [f"{path.relative_to(ROOT)}: {problem}" for problem in dict.fromkeys(found)]


def test_every_reference_in_docs_and_comments_exists():
    problems = [problem for path in sources() for problem in problems_in(path)]
    assert problems == [], "\n".join(problems)


#: How the project's history would be spoken of: a reader of the repository never saw it.
HISTORY = re.compile(r"\b(?:issue|stop) \d+\b|\bthe brief\b", re.IGNORECASE)


def test_docs_and_comments_speak_of_the_product_not_its_history():
    """Figures carry dates, not the work item or step they were measured in."""
    found = [f"{path.relative_to(ROOT)}: {match[0]!r}" for path in sources()
             for match in HISTORY.finditer(prose(path))]
    assert found == [], "\n".join(found)


def test_the_checker_finds_what_is_not_there(tmp_path):
    """A reference to a section, module, name or file that is not there is named; one to
    what is there is not."""
    citing = tmp_path / "cites.md"
    citing.write_text('docs/design.md, "Layers"; docs/design.md, "No such part"; '
                      "docs/design.md rule 3, docs/design.md rule 99; "
                      "sixnines.formats.atomic, formats.atomic.atomic_path, "
                      "spark_jobs.integrity, formats.atomic.no_such_name; "
                      "formats/atomic.py, launchers/guard.py, agents/hdr.py, "
                      "docs/drivers.md, docs/nothing.md, report/summary.json\n")
    assert problems_in_text(citing) == [
        'docs/design.md, "No such part": no such heading',
        "docs/design.md rule 99: no such rule",
        "spark_jobs.integrity: no module or name 'integrity' in spark_jobs/__init__.py",
        "formats.atomic.no_such_name: no module or name 'no_such_name' in formats/atomic.py",
        "agents/hdr.py: no such file in the repository",
        "docs/nothing.md: no such file in the repository"]


def problems_in_text(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    found = section_problems(text, path)
    found += [p for match in DOTTED.finditer(text) if (p := dotted_problem(*match.groups()))]
    found += [p for match in PATH.finditer(text) if (p := path_problem(match[1], path))]
    return list(dict.fromkeys(found))
