"""YAML loading that remembers the line of every mapping key and list item.

Validation reports problems by path (`workload.message_size[1]`); a user fixes them faster
with a line number. PyYAML's composed nodes carry marks, so we build the plain Python data
from the node tree ourselves and keep `path -> line` on the side. Duplicate keys, which
PyYAML silently resolves to the last value, are recorded so the caller can reject them.

The input may be hostile (a file from elsewhere, a fuzzer): reading, parsing and building
are each bounded, so a bad file ends in `SourceError` or `YamlSyntaxError` with its line,
never in a traceback, a hang or all of the machine's memory. The bounds are named below.
A file that does not parse may be anything (a scenario naming /etc/shadow as its
inventory): its errors name the line, never quote what is written there.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, Event, ScalarEvent

from sixnines.formats.errors import BadInput

#: A location in the data: mapping keys and list indexes from the root, e.g.
#: ("workload", "message_size", 1).
YamlPath = tuple[Any, ...]

_MERGE_TAG = "tag:yaml.org,2002:merge"

#: Largest scenario or inventory file read. The examples are 1-3 KB and an inventory of a
#: thousand hosts is ~150 KB; pure-Python YAML parses about 0.3 MB/s on a busy machine.
MAX_FILE_BYTES = 1024 * 1024
#: Most values (scalars, lists, mappings and keys) a file may hold, each use of an alias
#: counted as a copy: a scenario has a few hundred. Bounds memory against alias bombs
#: ("billion laughs") and parse time against huge lists.
MAX_VALUES = 50_000
#: Deepest nesting of lists and mappings (a scenario needs 5 levels). PyYAML composes
#: recursively, so deeper input would end in RecursionError.
MAX_DEPTH = 32

_TOO_LARGE = f"larger than the limit of {MAX_FILE_BYTES // 1024**2} MiB"


class SourceError(BadInput):
    """A file that cannot be read as scenario text. `line` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class YamlSyntaxError(BadInput):
    """The text is not (single-document, safe) YAML. `line` is 1-based when known."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True)
class Duplicate:
    """A key given twice in one mapping; the later value wins, as in PyYAML."""

    path: YamlPath
    line: int
    first_line: int


@dataclass
class YamlDocument:
    """Plain data (dicts, lists, scalars) plus where each piece came from: its line, or for
    a piece set from elsewhere (a command-line override) how it was given."""

    data: Any = None
    lines: dict[YamlPath, int] = field(default_factory=dict)
    duplicates: list[Duplicate] = field(default_factory=list)
    given: dict[YamlPath, str] = field(default_factory=dict)

    def given_at(self, path: YamlPath) -> str | None:
        """How `path`, or the nearest ancestor set from elsewhere, was given (None: from
        the file)."""
        for end in range(len(path), -1, -1):
            given = self.given.get(tuple(path[:end]))
            if given is not None:
                return given
        return None

    def line_of(self, path: YamlPath) -> int | None:
        """Line of `path`, or of its nearest ancestor present in the file."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None


def read_source(path: Path) -> str:
    """The text of `path`, which must be a regular UTF-8 file of at most `MAX_FILE_BYTES`.

    Opened without blocking and checked before reading, so that a FIFO, /dev/zero or a huge
    file is refused instead of waiting for a writer or filling memory."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise SourceError("no such file") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise SourceError(getattr(exc, "strerror", None) or str(exc)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise SourceError("is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise SourceError("not a regular file (a device, FIFO or socket)")
        if info.st_size > MAX_FILE_BYTES:
            raise SourceError(f"{_TOO_LARGE} ({info.st_size:,} bytes)")
        with open(fd, "rb", closefd=False) as file:
            data = file.read(MAX_FILE_BYTES + 1)  # st_size may be 0 (/proc) or grow
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise SourceError(_TOO_LARGE)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SourceError(f"not UTF-8 text (bad byte at offset {exc.start})", line) from None


def parse(text: str) -> YamlDocument:
    """Parse one YAML document with the safe loader, keeping 1-based lines."""
    loader = _loader(text)
    try:
        node = loader.get_single_node()
        doc = YamlDocument()
        if node is not None:
            doc.lines[()] = node.start_mark.line + 1
            doc.data = _Builder(loader, doc).build(node, (), frozenset())
        return doc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = ": ".join(part for part in (exc.context, exc.problem) if part) or \
            type(exc).__name__
        raise YamlSyntaxError(without_content(message), mark.line + 1 if mark else None
                              ) from None
    except yaml.YAMLError as exc:  # unmarked: its text may quote the file
        raise YamlSyntaxError(f"not YAML ({type(exc).__name__})", None) from None
    finally:
        loader.dispose()


#: What PyYAML quotes that is not the file's own text: one character, its escape, or the
#: name of a token ('<stream end>').
_QUOTED = re.compile(r"'([^']*)'")
_NOT_CONTENT = re.compile(r".?|\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|.)|<[a-z ]+>")


def without_content(message: str) -> str:
    """A YAML error message with what it quotes from the file (an alias, a tag, a
    handle: possibly someone's password hash) left out."""
    return _QUOTED.sub(lambda quoted: quoted.group(0) if _NOT_CONTENT.fullmatch(
        quoted.group(1)) else "(not shown)", message)


def _loader(text: str) -> _Loader:
    """A loader for `text`; characters YAML refuses (NUL, most control characters) are
    found here, before any parsing."""
    try:
        return _Loader(text)
    except yaml.reader.ReaderError as exc:
        line_start = text.rfind("\n", 0, exc.position) + 1
        message = (f"unacceptable character #x{exc.character:04x} at column "
                   f"{exc.position - line_start + 1}: {exc.reason}")
        raise YamlSyntaxError(message, text.count("\n", 0, exc.position) + 1) from None


def _fail(message: str, mark: yaml.Mark) -> yaml.MarkedYAMLError:
    return yaml.MarkedYAMLError(None, None, message, mark)


def _start(event: Event) -> yaml.Mark:
    """Where an event begins: the pure-Python parser this loader runs marks every event
    it makes (an event without a mark is one built to be emitted)."""
    mark = event.start_mark
    assert isinstance(mark, yaml.Mark), "a parsed event carries its start mark"
    return mark


_TOO_MANY = (f"more than {MAX_VALUES:,} values (keys, list items and every use of an alias "
             "counted): a scenario holds a few hundred")
_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep: a scenario needs a few"


class _Budget:
    """Counts values against `MAX_VALUES`."""

    def __init__(self) -> None:
        self.spent = 0

    def spend(self, mark: yaml.Mark) -> None:
        self.spent += 1
        if self.spent > MAX_VALUES:
            raise _fail(_TOO_MANY, mark)


class _Loader(yaml.SafeLoader):
    """The safe loader, refusing too many or too deeply nested values as the events stream
    in (the parser is iterative): PyYAML's composer recurses once per level and holds every
    node, so it must never see such input."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.depth = 0
        self.values = _Budget()

    def get_event(self) -> Event:
        event = super().get_event()
        if isinstance(event, ScalarEvent | AliasEvent | CollectionStartEvent):
            self.values.spend(_start(event))
        if isinstance(event, CollectionStartEvent):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise _fail(_TOO_DEEP, _start(event))
        elif isinstance(event, CollectionEndEvent):
            self.depth -= 1
        return event


class _Builder:
    """Plain data from a node tree, recording lines and duplicates in `doc`. Aliases are
    copied where used (so `MAX_VALUES` and `MAX_DEPTH` apply again, to the result), and
    `<<` merges are done here rather than by PyYAML, whose in-place merging multiplies
    nodes before anything could count them."""

    def __init__(self, loader: _Loader, doc: YamlDocument) -> None:
        self.loader = loader
        self.doc = doc
        self.values = _Budget()

    def build(self, node: yaml.Node, path: YamlPath, active: frozenset[int]) -> Any:
        """The value of `node` at `path`; `active` holds the collections being built
        around it, to refuse an alias to one of them."""
        self.values.spend(node.start_mark)
        if id(node) in active:
            raise _fail("recursive alias: a scenario cannot contain itself", node.start_mark)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if len(path) >= MAX_DEPTH:
            raise _fail(_TOO_DEEP, node.start_mark)
        active = active | {id(node)}
        if isinstance(node, yaml.SequenceNode) and node.tag == "tag:yaml.org,2002:seq":
            return self._sequence(node, path, active)
        if isinstance(node, yaml.MappingNode) and node.tag == "tag:yaml.org,2002:map":
            return self._mapping(node, path, active)
        raise _fail(f"unsupported tag {node.tag!r}", node.start_mark)

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError:
            raise
        except Exception:  # PyYAML's constructors raise ValueError, KeyError, ... on input
            # their resolver let through (`!!timestamp x`, an int of 5,000 digits)
            kind = node.tag.rsplit(":", 1)[-1]
            raise _fail(f"cannot be read as {kind}", node.start_mark) from None

    def _sequence(self, node: yaml.SequenceNode, path: YamlPath, active: frozenset[int]
                  ) -> list[Any]:
        items = []
        for index, item in enumerate(node.value):
            self.doc.lines[(*path, index)] = item.start_mark.line + 1
            items.append(self.build(item, (*path, index), active))
        return items

    def _mapping(self, node: yaml.MappingNode, path: YamlPath, active: frozenset[int]
                 ) -> dict[Any, Any]:
        """Merged (`<<`) pairs first, the mapping's own keys over them, as in PyYAML."""
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                for source in reversed(_merge_sources(value_node)):  # the first one wins
                    mapping.update(self.build(source, path, active))
        own_lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            self.values.spend(key_node.start_mark)
            if not isinstance(key_node, yaml.ScalarNode):
                raise _fail("a mapping key must be a plain value", key_node.start_mark)
            key = self._scalar(key_node)
            line = key_node.start_mark.line + 1
            if key in own_lines:
                self.doc.duplicates.append(Duplicate((*path, key), line, own_lines[key]))
            own_lines[key] = line
            self.doc.lines[(*path, key)] = line
            mapping[key] = self.build(value_node, (*path, key), active)
        return mapping


def _merge_sources(node: yaml.Node) -> list[yaml.MappingNode]:
    """The mappings a `<<` key merges: one mapping, or a list of them."""
    sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
    mappings = [source for source in sources if isinstance(source, yaml.MappingNode)]
    if len(mappings) < len(sources):
        raise _fail("<< merges a mapping or a list of mappings", node.start_mark)
    return mappings
