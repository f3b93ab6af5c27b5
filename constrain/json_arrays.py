"""JSON arrays: merging array keywords and building their languages.

Every schema of an ``allOf`` keeps its own split between positional schemas
(``prefixItems``, or array-form ``items`` before 2020-12) and the schema for the remaining
positions (``items``, or ``additionalItems``), so merged position ``i`` must satisfy, for
each schema, its positional schema there or else its remaining-items schema.

``contains`` (with ``minContains``/``maxContains``) is a second language intersected with
the positional one: it classifies each element as matching the ``contains`` schema or not
and counts the matches. ``uniqueItems`` is exact when every element comes from a small
finite set of values (enums, booleans, null): one "at most once" language per value;
elsewhere it cannot be expressed by a regular language and the compiler refuses it.

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar, literal
>>> from constrain.json_syntax import JsonSyntax, whitespace_gap
>>> syn = JsonSyntax(whitespace_gap(0))
>>> e = array_language(syn, [literal("0")], literal("1"), 2, 3)
>>> a = Automaton(Grammar.single(e))
>>> [a.matches(s) for s in (b"[0,1]", b"[0,1,1]", b"[0]", b"[1,1]", b"[0,1,1,1]")]
[True, True, False, False, False]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .grammar import EMPTY, NOTHING, Expr, optional, repeat, seq
from .json_nodes import Node
from .json_syntax import JsonSyntax

__all__ = ["ArraySpec", "Contains", "array_language", "counted_array"]


@dataclass
class Contains:
    """One ``contains`` with its bounds (``high=None``: unbounded)."""

    node: Node
    low: int
    high: int | None


@dataclass
class ArraySpec:
    """The array keywords of several schemas, merged (see the module docstring)."""

    splits: list[tuple[list[Node], Node | None]] = field(default_factory=list)
    contains: list[Contains] = field(default_factory=list)
    min_items: int = 0
    max_items: int | None = None
    unique: Node | None = None

    @classmethod
    def merge(cls, nodes: Sequence[Node]) -> ArraySpec:
        spec = cls()
        for node in nodes:
            prefix: list[Node] = []
            rest: Node | None = None
            if node.has("prefixItems"):
                prefix = [node.child(s, "prefixItems", i)
                          for i, s in enumerate(node.get("prefixItems"))]
            items = node.get("items")
            if isinstance(items, list):
                prefix = [node.child(s, "items", i) for i, s in enumerate(items)]
                if node.has("additionalItems"):
                    rest = node.child(node.get("additionalItems"), "additionalItems")
            elif items is not None:
                rest = node.child(items, "items")
            if prefix or rest is not None:
                spec.splits.append((prefix, rest))
            if node.has("contains"):
                low = node.get("minContains", 1)
                high = node.get("maxContains")
                spec.contains.append(Contains(node.child(node.get("contains"), "contains"),
                                              low, high))
            spec.min_items = max(spec.min_items, node.get("minItems", 0))
            if node.has("maxItems"):
                high_items = node.get("maxItems")
                spec.max_items = high_items if spec.max_items is None else min(
                    spec.max_items, high_items)
            if node.get("uniqueItems") is True and spec.unique is None:
                spec.unique = node
        return spec

    @property
    def prefix_length(self) -> int:
        return max((len(p) for p, _ in self.splits), default=0)

    def position_nodes(self, i: int) -> list[Node]:
        """What element ``i`` must satisfy (for ``i >= prefix_length``: every later one)."""
        out = []
        for prefix, rest in self.splits:
            if i < len(prefix):
                out.append(prefix[i])
            elif rest is not None:
                out.append(rest)
        return out


def array_language(syn: JsonSyntax, positions: Sequence[Expr], rest: Expr, low: int,
                   high: int | None) -> Expr:
    """Arrays whose element ``i`` is in ``positions[i]`` (later ones in ``rest``), with
    ``low..high`` elements."""
    if high is not None and high < low:
        return NOTHING
    if high == 0:
        return syn.array(NOTHING, True)
    n = len(positions)
    k = max(n, 1)
    # tail: the elements after the first, each preceded by a comma.
    tail: Expr = EMPTY
    if high is None or high > k:
        tail = repeat(seq(syn.comma, rest), max(low - k, 0), None if high is None else high - k)
    for i in reversed(range(1, n)):
        if high is not None and i >= high:
            continue
        step = seq(syn.comma, positions[i], tail)
        tail = step if i < low else optional(step)
    first = positions[0] if n else rest
    return syn.array(seq(first, tail), low == 0)


def counted_array(syn: JsonSyntax, other: Expr, mine: Expr, low: int, high: int | None) -> Expr:
    """Arrays with ``low..high`` elements in ``mine`` and any number in ``other``."""
    return syn.array(syn.counted(other, mine, low, high), low == 0)

