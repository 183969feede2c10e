"""Plan files read as a hostile input: bounded in size, depth, alias expansion; strict in keys.

PyYAML's `safe_load` shares an anchored node among its aliases, so a 1 KB "billion laughs"
document loads in microseconds, then explodes wherever it is walked or printed (an error message
that quotes it). The loader here counts every node an alias would expand to while composing,
and refuses the document before anything walks it. It also refuses what `safe_load` silently
accepts: a mapping key written twice (the last would win), and nesting deep enough to exhaust
Python's recursion.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

# A plan is a few KB; a megabyte is a generated or wrong file.
MAX_BYTES = 1_000_000
# A plan nests 5 levels (recovery.quotas...); 32 leaves room and stays far from recursion limits.
MAX_DEPTH = 32
# Nodes after expanding every alias: the largest example plan has a few hundred.
MAX_NODES = 20_000


class YamlRefused(ValueError):
    """A document refused before it is used; `line` is 1-based, 0 when not known."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


def _line(node: Node | None) -> int:
    return node.start_mark.line + 1 if node is not None and node.start_mark else 0


class _Loader(yaml.SafeLoader):
    """SafeLoader with a depth bound, an expanded-node budget and duplicate keys refused."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        # Checked before descending: PyYAML's composer recurses once per level.
        self._depth += 1
        # Counted as written too, so a megabyte of `[1,1,...]` stops early, not after composing.
        self._nodes += 1
        try:
            if self._nodes > MAX_NODES:
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise YamlRefused(_too_many(), event.start_mark.line + 1)
            if self._depth > MAX_DEPTH:
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise YamlRefused(
                    f"nests deeper than {MAX_DEPTH} levels", event.start_mark.line + 1
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base` then a key overriding base is what merging is for
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # unhashable: SafeLoader refuses it with its own message
                break
            if first is not None:
                raise YamlRefused(
                    f"duplicate key {_short(key)} (first at line {first}); write each key once",
                    _line(key_node),
                )
            seen[key] = _line(key_node)
        return super().construct_mapping(node, deep=deep)


def _too_many() -> str:
    return (
        f"holds more than {MAX_NODES:,} values, counting each alias (*) as the values it "
        "repeats; a plan has a few hundred"
    )


def _short(value: object) -> str:
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 40 else text[:37] + "..."


def _expanded_size(root: Node) -> int:
    """Nodes in `root` with every alias expanded, stopping at MAX_NODES (or on a cycle)."""
    # Document order composes an anchor before its aliases, so the walk meets each anchored node
    # first where it is written: the recursion stays within MAX_DEPTH.
    sizes: dict[int, tuple[int, int]] = {}
    open_: set[int] = set()

    def size(node: Node) -> tuple[int, int]:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_:
            raise YamlRefused("refers to itself through an anchor (&) and alias (*)", _line(node))
        open_.add(key)
        total, height = 1, 1
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        for child in children:
            child_size, child_height = size(child)
            total += child_size
            height = max(height, child_height + 1)
            if height > MAX_DEPTH:
                raise YamlRefused(
                    f"nests deeper than {MAX_DEPTH} levels once aliases (*) are expanded",
                    _line(child),
                )
            if total > MAX_NODES:
                raise YamlRefused(_too_many(), _line(child))
        open_.discard(key)
        sizes[key] = (total, height)
        return sizes[key]

    return size(root)[0]


def decode(data: bytes) -> str:
    """The text of a plan file: at most MAX_BYTES of UTF-8, else YamlRefused with the line."""
    if len(data) > MAX_BYTES:
        raise YamlRefused(f"is larger than {MAX_BYTES:,} bytes, the most a plan may be")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise YamlRefused(
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x}); save the plan as UTF-8", line
        ) from None


def load(text: str) -> Any:
    """One YAML document, checked as the module docstring says; yaml.YAMLError if invalid."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()
