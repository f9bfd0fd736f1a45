"""YAML loading that remembers the line of every mapping key and list item.

Validation reports problems by path (`workload.message_size[1]`); a user fixes them faster
with a line number. PyYAML's composed nodes carry marks, so we build the plain Python data
from the node tree ourselves and keep `path -> line` on the side. Duplicate keys, which
PyYAML silently resolves to the last value, are recorded so the caller can reject them.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import yaml

#: A location in the data: mapping keys and list indexes from the root, e.g.
#: ("workload", "message_size", 1).
YamlPath = tuple[Any, ...]

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlSyntaxError(Exception):
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
class Document:
    """Plain data (dicts, lists, scalars) plus where each piece came from."""

    data: Any = None
    lines: dict[YamlPath, int] = field(default_factory=dict)
    duplicates: list[Duplicate] = field(default_factory=list)

    def line_of(self, path: YamlPath) -> int | None:
        """Line of `path`, or of its nearest ancestor present in the file."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None


def parse(text: str) -> Document:
    """Parse one YAML document with the safe loader, keeping 1-based lines."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        doc = Document()
        if node is not None:
            doc.lines[()] = node.start_mark.line + 1
            doc.data = _build(loader, node, (), doc, set())
        return doc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = ": ".join(part for part in (exc.context, exc.problem) if part) or str(exc)
        raise YamlSyntaxError(message, mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(str(exc), None) from None
    finally:
        loader.dispose()


def _fail(message: str, node: yaml.Node) -> yaml.MarkedYAMLError:
    return yaml.constructor.ConstructorError(None, None, message, node.start_mark)


def _build(
    loader: yaml.SafeLoader, node: yaml.Node, path: YamlPath, doc: Document, active: set[int]
) -> Any:
    if id(node) in active:
        raise _fail("recursive alias: a scenario cannot contain itself", node)
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_object(node, deep=True)
    active = active | {id(node)}
    if isinstance(node, yaml.SequenceNode):
        if node.tag != "tag:yaml.org,2002:seq":
            raise _fail(f"unsupported tag {node.tag!r}", node)
        items = []
        for index, item in enumerate(node.value):
            doc.lines[(*path, index)] = item.start_mark.line + 1
            items.append(_build(loader, item, (*path, index), doc, active))
        return items
    if isinstance(node, yaml.MappingNode):
        if node.tag != "tag:yaml.org,2002:map":
            raise _fail(f"unsupported tag {node.tag!r}", node)
        own = {id(key) for key, _ in node.value if key.tag != _MERGE_TAG}
        loader.flatten_mapping(node)  # "<<" merge keys: merged pairs first, own keys override
        mapping: dict[Any, Any] = {}
        own_lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                raise _fail("a mapping key must be a plain value", key_node)
            line = key_node.start_mark.line + 1
            if id(key_node) in own:
                if key in own_lines:
                    doc.duplicates.append(Duplicate((*path, key), line, own_lines[key]))
                own_lines[key] = line
            doc.lines[(*path, key)] = line
            mapping[key] = _build(loader, value_node, (*path, key), doc, active)
        return mapping
    raise _fail(f"unsupported YAML node {type(node).__name__}", node)
