"""Hundreds of mangled copies of the example scenarios through `sixnines validate`: each must
come out "ok" (exit 0) or as `FILE:LINE: ...` / `FILE: ...` lines with exit 2, never a
traceback, another exit code, a hang or runaway memory.

The mutations are seeded: mutation `i` uses `Random(f"{SEED}-{i}")` alone, so a failure
reproduces by its number, and its message shows the steps and the file. All files go through
one worker process under `prlimit --as` with an alarm per file (see validate_worker).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

from tests.faults.validate_worker import ROOT, judge, validate_all

SEED = 999_999
COUNT = 300
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

#: Values put in place of a scalar: numbers past every bound, odd strings, tags, aliases,
#: collections where a scalar belongs.
EXTREMES = [
    "1e30", "1.0e+30", "1e999", "1e-999", "-1", "0", "-0.0", ".nan", ".inf", "-.inf",
    "1.0e+300", "9" * 30, "9" * 5000, "0x" + "f" * 40, "4294967296", "1_000_000_000_000",
    "''", "'" + "x" * 300 + "'", "x" * 100_000, '"\\0"', '"\\t\\n"', "~", "true", "'💥'",
    "'../../../etc/passwd'", "'%s%n{0}'", "max", "' 64 '", "1 parsec", "2GB", "1000000h",
    "!!python/object/apply:os.system [ls]", "!!binary aGk=", "!!timestamp x", "!!set {a}",
    "!shell x", "!!int x", "!!float 1e400", "*undefined", "&a x", "&a [*a]",
    "[]", "{}", "[1, 2, 3]", "{a: 1}", "[[[[1]]]]", "{a: {b: {c: d}}}", "2001-12-14",
]
#: Plain scalars after `key: `, `- `, `[` or `, ` (enough to find values to replace).
_SCALAR = re.compile(r"(?:(?<=: )|(?<=- )|(?<=\[)|(?<=, ))[^\s,\[\]{}#&*!|>'\"][^,\[\]{}#\n]*")

Mutation = Callable[[str, random.Random], tuple[str, str]]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) or [""]


def delete_line(text: str, rng: random.Random) -> tuple[str, str]:
    lines = _lines(text)
    index = rng.randrange(len(lines))
    return "".join(lines[:index] + lines[index + 1:]), f"delete line {index + 1}"


def duplicate_line(text: str, rng: random.Random) -> tuple[str, str]:
    lines = _lines(text)
    index = rng.randrange(len(lines))
    return "".join(lines[:index + 1] + lines[index:]), f"duplicate line {index + 1}"


def swap_lines(text: str, rng: random.Random) -> tuple[str, str]:
    lines = _lines(text)
    a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[a], lines[b] = lines[b], lines[a]
    return "".join(lines), f"swap lines {a + 1} and {b + 1}"


def shift_indent(text: str, rng: random.Random) -> tuple[str, str]:
    lines = _lines(text)
    index, by = rng.randrange(len(lines)), rng.choice([-2, -1, 1, 2, 7])
    line = lines[index]
    lines[index] = " " * by + line if by > 0 else line[min(-by, len(line) - len(
        line.lstrip(" "))):]
    return "".join(lines), f"indent line {index + 1} by {by}"


def truncate(text: str, rng: random.Random) -> tuple[str, str]:
    at = rng.randrange(len(text) + 1)
    return text[:at], f"truncate at {at}"


def replace_scalar(text: str, rng: random.Random) -> tuple[str, str]:
    spans = list(_SCALAR.finditer(text))
    if not spans:
        return text, "no scalar to replace"
    span = rng.choice(spans)
    value = rng.choice([*EXTREMES, deep(rng), huge_list(rng)])
    return (text[:span.start()] + value + text[span.end():],
            f"replace {span.group()!r} at {span.start()} with {value[:40]!r}")


def deep(rng: random.Random) -> str:
    depth = rng.choice([10, 31, 32, 33, 100, 3000])
    return "[" * depth + "]" * depth


def huge_list(rng: random.Random) -> str:
    return "[" + ", ".join(["64"] * rng.choice([100, 1000, 20_000])) + "]"


def replace_key(text: str, rng: random.Random) -> tuple[str, str]:
    keys = list(re.finditer(r"^\s*([A-Za-z_]+):", text, re.MULTILINE))
    if not keys:
        return text, "no key to replace"
    key = rng.choice(keys)
    new = rng.choice(["1", "~", "true", ".nan", "'" + "k" * 1000 + "'", '"a\\nb"', "<<",
                      "? [a]\n", "name", "workload"])
    return (text[:key.start(1)] + new + text[key.end(1):],
            f"replace key {key.group(1)!r} with {new[:40]!r}")


def insert_line(text: str, rng: random.Random) -> tuple[str, str]:
    donor = _lines(rng.choice(EXAMPLES).read_text(encoding="utf-8"))
    lines, line = _lines(text), rng.choice(donor)
    index = rng.randrange(len(lines) + 1)
    return "".join([*lines[:index], line, *lines[index:]]), f"insert {line!r} at {index + 1}"


def insert_characters(text: str, rng: random.Random) -> tuple[str, str]:
    at = rng.randrange(len(text) + 1)
    chars = rng.choice(["\x00", "\t", "\x1b[31m", "\ufeff", "\u2028", "\r", "µ", "\x85",
                        "\ufffe", "\x7f" * 3, "%", "---\n", "...\n", "{", "]"])
    return text[:at] + chars + text[at:], f"insert {chars!r} at {at}"


def append_block(text: str, rng: random.Random) -> tuple[str, str]:
    blocks = {
        "alias bomb": "b0: &b0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 9)}]\n" for i in range(1, 9)),
        "merge bomb": "m0: &m0 {a: 1, b: 2, c: 3}\n" + "".join(
            f"m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * 9)}], k{i}: 1}}\n"
            for i in range(1, 9)),
        "anchor chain": "c0: &c0 [1]\n" + "".join(f"c{i}: &c{i} [*c{i - 1}]\n"
                                                  for i in range(1, 60)),
        "second document": "---\n" + text,
        "deep block": "deep:\n" + "".join(" " * d + f"k{d}:\n" for d in range(1, 60)),
    }
    name = rng.choice(sorted(blocks))
    return text + ("" if text.endswith("\n") else "\n") + blocks[name], f"append {name}"


def whole_file(text: str, rng: random.Random) -> tuple[str, str]:
    how = rng.choice(["bom", "crlf", "cr", "tabs", "empty", "only comments"])
    changed = {"bom": "\ufeff" + text, "crlf": text.replace("\n", "\r\n"),
               "cr": text.replace("\n", "\r"), "tabs": text.replace("  ", "\t"), "empty": "",
               "only comments": re.sub(r"^", "# ", text, flags=re.MULTILINE)}[how]
    return changed, f"whole file: {how}"


MUTATIONS: list[Mutation] = [
    delete_line, duplicate_line, swap_lines, shift_indent, truncate, replace_scalar,
    replace_scalar, replace_scalar, replace_key, insert_line, insert_characters,
    append_block, whole_file,
]


def corrupt_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Bytes no text mutation makes: invalid UTF-8, a UTF-16 mark, a cut multibyte char."""
    at = rng.randrange(len(data) + 1)
    how = rng.choice(["random", "utf-16 mark", "cut"])
    if how == "random":
        noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        return data[:at] + noise + data[at:], f"insert bytes {noise!r} at {at}"
    if how == "utf-16 mark":
        return b"\xff\xfe" + data, "prefix a UTF-16 byte order mark"
    return data[:at] + "µ".encode()[:1], f"cut at {at} inside a multibyte character"


def mutant(index: int) -> tuple[bytes, list[str]]:
    """Mutation `index`: an example with one to three mutations, sometimes bytes too."""
    rng = random.Random(f"{SEED}-{index}")
    example = rng.choice(EXAMPLES)
    text, steps = example.read_text(encoding="utf-8"), [f"from {example.name}"]
    for _ in range(rng.randint(1, 3)):
        text, step = rng.choice(MUTATIONS)(text, rng)
        steps.append(step)
    data = text.encode("utf-8")
    if rng.random() < 0.1:
        data, step = corrupt_bytes(data, rng)
        steps.append(step)
    return data, steps


def test_mangled_examples_are_ok_or_refused_cleanly(tmp_path: Path) -> None:
    files = {}
    for index in range(COUNT):
        data, steps = mutant(index)
        path = tmp_path / f"{index:03d}.yaml"
        path.write_bytes(data)
        files[str(path)] = (index, steps)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    outcomes = validate_all([Path(p) for p in files], cwd, per_file_s=10, total_s=150)

    failures = [(files[path], judge(outcome), path) for path, outcome in outcomes.items()
                if judge(outcome) is not None]
    report = "\n\n".join(
        f"mutation {index} (SEED {SEED}): {'; '.join(steps)}\n{why}\n--- the file:\n"
        f"{Path(path).read_bytes()[:3000].decode('utf-8', 'replace')}"
        for (index, steps), why, path in failures[:3])
    assert not failures, f"{len(failures)} of {COUNT} mutations badly handled:\n\n{report}"
    codes = [outcome["code"] for outcome in outcomes.values()]
    assert codes.count(0) > 10 and codes.count(2) > COUNT / 2, "the mutations lost their bite"
    assert not (cwd / "runs").exists()
