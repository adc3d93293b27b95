"""YAML read as someone else wrote it: every mapping and sequence item remembers its line (so a bad
record is named by line), and what no gold set needs is refused with its place (alias bombs, nesting
past MAX_DEPTH, a key repeated in one mapping)."""

from __future__ import annotations

from typing import Any

import yaml

#: the key under which a mapping keeps the line it starts on
LINE = "__line__"
#: bounds for a gold file someone else wrote: anchors a real gold set needs, nesting far past its shape
MAX_ALIASES = 100
#: ... and the values all aliases together may stand for (a bomb nests few aliases many levels deep)
MAX_EXPANDED = 100_000
MAX_DEPTH = 50


class Hostile(yaml.YAMLError):
    """A structure no gold set needs (alias bomb, deep nesting, a repeated key), with its place."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.problem_mark = yaml.Mark("", 0, line - 1, 0, "", 0)
        self.message = message

    def __str__(self) -> str:
        return self.message


class LineLoader(yaml.SafeLoader):
    """SafeLoader that remembers the line each mapping and sequence item starts on, and refuses
    alias bombs, nesting deeper than MAX_DEPTH and keys repeated in one mapping."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0
        self._expanded = 0  # nodes the aliases stand for: what constructing the document will build
        self._sizes: dict[int, int] = {}

    def _size(self, node: Any) -> int:
        """Nodes in ``node``'s subtree, aliases counted at their full size (memoised: an alias of an
        alias of ... is sized once per anchor)."""
        known = self._sizes.get(id(node))
        if known is not None:
            return known
        size = 1
        if isinstance(node, yaml.MappingNode):
            size += sum(self._size(k) + self._size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            size += sum(self._size(v) for v in node.value)
        self._sizes[id(node)] = size
        return size

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        if isinstance(event, yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise Hostile(
                    line,
                    f"more than {MAX_ALIASES} aliases (*name): refused, a gold set needs none (alias bomb?)",
                )
            anchor = self.anchors.get(event.anchor)
            if anchor is not None:
                self._expanded += self._size(anchor)
                if self._expanded > MAX_EXPANDED:
                    raise Hostile(
                        line,
                        f"aliases (*name) that expand to more than {MAX_EXPANDED:,} values: refused (alias bomb?)",
                    )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise Hostile(line, f"nested deeper than {MAX_DEPTH} levels: refused")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _mapping(loader: LineLoader, node: yaml.MappingNode) -> dict[str, Any]:
    first_line: dict[str, int] = {}
    for key_node, _value in node.value:
        key = str(loader.construct_object(key_node, deep=True))
        line = key_node.start_mark.line + 1
        if key in first_line:
            raise Hostile(line, f"key {key!r} appears twice in one mapping (lines {first_line[key]} and {line})")
        first_line[key] = line
    mapping: dict[str, Any] = {str(k): v for k, v in loader.construct_mapping(node, deep=True).items()}
    mapping[LINE] = node.start_mark.line + 1
    return mapping


class Items(list[Any]):
    """A YAML sequence that knows the line of each item (to name a bad entry by line)."""

    lines: list[int]


def _sequence(loader: LineLoader, node: yaml.SequenceNode) -> list[Any]:
    items = Items(loader.construct_sequence(node, deep=True))
    items.lines = [child.start_mark.line + 1 for child in node.value]
    return items


def _timestamp(loader: LineLoader, node: yaml.ScalarNode) -> str:
    # dates stay text here and are parsed per field, so a bad one is reported, not fatal
    return str(loader.construct_scalar(node))


LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)
LineLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)
