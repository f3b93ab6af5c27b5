"""``uniqueItems`` over arrays of strings, numbers, objects and arrays (with booleans and
null), enforced while decoding.

No grammar holds "the elements differ" once elements have infinitely many values: the
language is not context-free. The JSON Schema compiler enforces ``uniqueItems`` exactly in
its grammar where elements come from a few listed values (see
:mod:`constrain.json_arrays`); this module covers arrays of *strings*, *numbers*,
*objects* and *arrays* beyond that. Values are equal as ``jsonschema`` judges them:
``"é"`` and ``"\\u00e9"``, ``3`` and ``3.0`` (an integral float is an integer since draft
6), ``0`` and ``-0`` are one value each; ``true`` is not ``1``; objects with their members
in any order. The
grammar keeps such an array without the keyword, and the compiler records a **guard**: the
array's element languages. While decoding, :class:`UniqueItemsMatcher` follows the
document's structure byte by byte, and inside a guarded array it removes from each mask
the tokens after which the element being read can only end as a value already used: the
language it must stay in is ``E ∖ spellings(used)``. Only a text that may still spell a
used value needs a look (otherwise every ending is new); there liveness is a count of the
endings ``E`` has left, or else a step of the automaton of ``E ∖ spellings(used)``. An
object or array element's language may be recursive, which no automaton intersects:
there liveness is a search of ``E``'s automaton beside those of the used values'
spellings (see :meth:`UniqueGuards._fresh_after`). The tokens a mask may have to lose
are few and found in the vocabulary's token trie or in the masks of those spellings (see
:meth:`UniqueGuards.mask`). Guarded arrays inside a guarded array's elements are
followed too, one region each.

That is exact, not only sound, under three conditions the compiler checks
(:meth:`PathTrace.guardable` and :func:`has_enough_values`):

- **The element language is the automaton's own.** The array sits where the text tells
  its place: reached from the root through listed keys, unlisted keys (each region of
  ``patternProperties`` told by the compiler's key literals), array positions, and
  ``anyOf``/``oneOf`` branches where one branch takes arrays (and keys where every
  branch taking objects gives them the same schemas); no ``contains``, ``enum``,
  ``const`` or ``propertyNames`` at it or above it, no ``not``, ``if``/``then``/``else``
  or dependent schema above it that says anything of a key on its path (one that only
  requires keys or constrains other keys' values leaves its value any JSON value there),
  and its sub-schema reached nowhere else. Then the base automaton, inside element ``i``, continues with exactly the
  completions of ``E_i`` followed by what follows any element ``i``; a completion the
  guard keeps is one the base keeps.
- **Fresh values never run out.** The language of every later element holds as many
  values as the array may hold (``maxItems``), or at least 2**24 (counted on spellings
  without a backslash, which spell distinct values, and on numbers' spellings that read
  apart, :data:`COUNTED_NUMBERS`, with one to spare for ``-0``; objects and arrays must
  hold infinitely many, see :func:`has_unbounded_values`), more than any decoding run has
  tokens; that of element ``i`` of a tuple (``prefixItems``) at least ``i + 1``, more
  than the elements before it can use up. So the array can always take a new element
  where its schema allows one. (An enum of ``N`` values holds ``N``: the compiler bounds
  such an array's grammar at ``N`` elements, as many as can be distinct.)
- **Tokens that cross into the next element are simulated.** A token such as ``", "x``
  or ``, null`` ends an element, passes the comma and starts the next, whose prefix must
  be live for the *new* set of used values. Only tokens with a comma followed by more
  than whitespace and an opening quote can do that (inside a string, only those with a
  quote before the comma: a few dozen in a 151k vocabulary); each one the masks allow is
  run through the tracker. A number's end is not in its text: where the array holds
  numbers, every token the base allows that goes on with a number's bytes is run through
  it too, and where the number read equals a used value, every token that ends it is cut.

Arrays the conditions do not cover stay refused (``lenient`` drops the keyword), as before.

>>> from constrain import Vocabulary, compile_json_schema
>>> vocab = Vocabulary.from_token_bytes([bytes([b]) for b in range(128)] + [None],
...                                     eos_token_ids=[128])
>>> c = compile_json_schema({"type": "array", "items": {"type": "string"},
...                          "uniqueItems": True}, vocab)
>>> m = c.matcher()
>>> all(m.advance(b) for b in b'["ab", "a'), m.is_allowed(ord('"'))
(True, True)
>>> m.advance(ord('b')), m.is_allowed(ord('"'))
(True, False)
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
import weakref
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .automaton import Automaton, AutomatonOptions
from .cache import token_trie
from .errors import ResourceLimitError, SchemaError, UnsupportedSchemaError
from .grammar import Expr, Grammar, alt, complement, intersect
from .json_arrays import ArraySpec
from .json_literals import canonical
from .json_literals import literal as literal_expr
from .json_numbers import number_expr
from .json_objects import ObjectSpec
from .masks import TokenMasks, mask_words, set_bits
from .matcher import TERMINATED, Matcher, write_row, write_tensor_row
from .regex import parse_regex

if TYPE_CHECKING:
    from .compiler import CompiledConstraint
    from .json_compiler import Compiler
    from .json_nodes import Node
    from .json_syntax import JsonSyntax
    from .vocab import Vocabulary

__all__ = [
    "COUNTED_NUMBERS",
    "MIN_VALUES",
    "PathNode",
    "PathTrace",
    "UniqueGuard",
    "UniqueGuards",
    "UniqueItemsMatcher",
    "UniqueItemsPlan",
    "has_enough_values",
    "has_unbounded_values",
]

MIN_VALUES = 2**24
"""Values an element language must hold (or be infinite) for its guard to be exact: each
element takes at least one token, and no decoding run reaches 16M tokens, so an array never
uses them all up."""

_CONDITIONAL = frozenset({
    "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies",
    "dependentRequired", "contains", "propertyNames", "enum", "const", "unevaluatedItems",
    "unevaluatedProperties", "$dynamicRef", "$recursiveRef",
})
"""Keywords under which the compiler may lower a place's sub-schemas merged with others, or
not at all. Of them ``anyOf``/``oneOf`` are followed (:meth:`PathTrace._alternatives`),
and the conditions below are looked through; nothing at or below a place with another is
guarded."""

_CONDITIONS = frozenset({"not", "if", "then", "else", "dependentSchemas", "dependencies",
                         "dependentRequired"})
"""Conditions on a place that leave the value of a key they say nothing of any JSON value
(see :meth:`PathTrace._said_of`): the compiler intersects the object's language with
theirs, and inside such a key's value their part of the automaton's state reads any
value, so the element languages of an array there are still the automaton's own."""

_SAY_NOTHING_OF_VALUES = frozenset({
    "type", "required", "minProperties", "maxProperties", "dependentRequired",
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "$id", "id", "$schema", "$anchor", "$comment",
    "$defs", "definitions", "$vocabulary",
})
"""Keywords of a condition that say nothing of any object member's value (of the object:
which keys it has and how many; of strings and numbers: nothing of objects)."""

_FOLLOWED = frozenset({"anyOf", "oneOf"}) | _CONDITIONS

_ONE_SUB = ("additionalProperties", "additionalItems", "items", "contains", "propertyNames",
            "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties")
_LIST_SUBS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAP_SUBS = ("properties", "patternProperties", "dependentSchemas", "dependencies")
"""Where a tainted schema's sub-schemas are (definitions are reached through ``$ref``)."""

_TRACE_BUDGET = 20_000
"""Locations a trace visits before giving up (no guard then: the keyword stays refused)."""

UNLISTED = object()
"""What :meth:`PathNode.member` finds for a key the schema does not list, where unlisted
keys fall into regions."""


@dataclass(eq=False)
class UniqueGuard:
    """The element languages of one guarded array, by position (the last for every later
    element), whole and without their objects and arrays."""

    positions: tuple[Expr, ...]
    rest: Expr
    pointer: str
    # The values each element language holds, where they are listed (an enum): by
    # position, the last for every later element, ``None`` where not listed.
    values: tuple[tuple[object, ...] | None, ...] = ()
    # The strings, numbers, booleans and null of each (regular: no rule references).
    scalars: tuple[Expr, ...] = ()

    def element(self, index: int) -> Expr:
        return self.positions[index] if index < len(self.positions) else self.rest

    def scalar_element(self, index: int) -> Expr:
        """Element ``index``'s language less its objects and arrays."""
        return self.scalars[min(index, len(self.scalars) - 1)]

    def listed(self, index: int) -> tuple[object, ...] | None:
        """The values element ``index`` may take, where its language lists them."""
        if not self.values:
            return None
        return self.values[min(index, len(self.values) - 1)]


@dataclass(eq=False)
class PathNode:
    """The places a value can be in the document, as far as guards care: the value of a
    listed key or of any other key, the element at a position, the guard of an array
    here."""

    keys: dict[str, PathNode | None] = field(default_factory=dict)
    other: PathNode | None = None
    regions: list[tuple[Expr, PathNode | None]] = field(default_factory=list)
    """Where unlisted keys split by patterns: each region's key literals (disjoint) and
    place; ``other`` is then unused."""
    array: PathNode | None = None
    """Where arrays here are another place's (an ``anyOf``/``oneOf`` branch's)."""
    positions: list[PathNode] = field(default_factory=list)
    rest: PathNode | None = None
    guard: UniqueGuard | None = None

    def member(self, key: str) -> PathNode | None | object:
        """The place of ``key``'s value (``None``: nothing guarded there), or
        :data:`UNLISTED` for an unlisted key whose region its text tells (see
        :meth:`UniqueGuards.region_of`)."""
        found = self.keys.get(key, UNLISTED)
        if found is UNLISTED and not self.regions:
            return self.other
        return found

    def element(self, index: int) -> PathNode | None:
        """The place of element ``index`` (``None``: nothing guarded there)."""
        return self.positions[index] if index < len(self.positions) else self.rest


@dataclass(eq=False)
class UniqueItemsPlan:
    """What a grammar's matchers need to enforce its guards (in ``Grammar.metadata``)."""

    root: PathNode
    syntax: JsonSyntax


class PathTrace:
    """Where each sub-schema of a document applies, as the compiler lowers it: the places
    the matcher can tell from the text (*followed*: see :meth:`_place`), each a
    :class:`PathNode` keyed by the schemas the compiler lowers it from, and every schema
    reached anywhere else (*tainted*: under ``not``, ``if``, a dependency, ``contains``,
    keys split by patterns, overlapping branches...)."""

    def __init__(self, compiler: Compiler) -> None:
        self._compiler = compiler
        self.nodes: dict[tuple[Any, ...], PathNode] = {}
        self.tainted: set[int] = set()
        self.complete = True
        self._visits = 0
        self._tainted_nodes: set[Any] = set()
        root = compiler._flatten([compiler.root])
        self.root = self._trace(root) if root is not None else PathNode()

    def guardable(self, flat: list[Node], unique: Node) -> PathNode | None:
        """The path node of the clean location ``flat`` whose ``uniqueItems`` (on
        ``unique``) may be guarded, or ``None``."""
        if not self.complete or id(unique.schema) in self.tainted:
            return None
        return self.nodes.get(_key(flat))

    def plan(self, syntax: JsonSyntax) -> UniqueItemsPlan | None:
        """The guards registered, with the path nodes leading to none of them pruned;
        ``None`` where there is none."""
        live = {id(n) for n in self.nodes.values() if n.guard is not None}
        if not live:
            return None
        changed = True
        while changed:  # a fixpoint: recursive schemas make the path graph cyclic
            changed = False
            for n in self.nodes.values():
                if id(n) not in live and any(id(c) in live for c in _children(n)):
                    live.add(id(n))
                    changed = True
        for n in self.nodes.values():
            # A listed key stays (as None) so that it is never read as an unlisted one.
            n.keys = {k: c if c is not None and id(c) in live else None
                      for k, c in n.keys.items()}
            n.positions = [c if id(c) in live else _DEAD_END for c in n.positions]
            if n.rest is not None and id(n.rest) not in live:
                n.rest = None
            if n.other is not None and id(n.other) not in live:
                n.other = None
            n.regions = [(k, c if c is not None and id(c) in live else None)
                         for k, c in n.regions]
            if n.array is not None and id(n.array) not in live:
                n.array = None
        return UniqueItemsPlan(self.root, syntax)

    def release(self, kept: UniqueItemsPlan | None = None) -> None:
        """Unlink every path node but those ``kept`` reaches: the nodes of a recursive
        schema refer to each other, a cycle that would otherwise be left to the garbage
        collector when a compile is refused or keeps no guard (``kept``'s own are unlinked
        when its grammar goes: see :func:`unlink_when_gone`)."""
        live = set() if kept is None else {id(n) for n in _reachable(kept.root)}
        for node in self.nodes.values():
            if id(node) not in live:
                _unlink(node)
        self.nodes = {}

    # -- the walk ----------------------------------------------------------------------

    def _spend(self) -> bool:
        self._visits += 1
        if self._visits > _TRACE_BUDGET:
            self.complete = False
        return self.complete

    def _trace(self, root: list[Node]) -> PathNode:
        first = self.nodes[_key(root)] = PathNode()
        self._todo: list[tuple[list[Node], PathNode]] = [(root, first)]
        while self._todo and self._spend():
            flat, node = self._todo.pop()
            self._place(flat, node)
        return first

    def _place(self, flat: list[Node], node: PathNode) -> None:
        """Fill ``node``, the place of the values satisfying ``flat``, with its children."""
        compiler = self._compiler
        flats = self._alternatives(flat)
        said: set[str] = set()
        for alternative in flats or ():
            found = self._said_of(alternative)
            if found is None:
                flats = None
                break
            said |= found
        if flats is None:
            for n in flat:
                self._taint(n)
            return
        objects = [a for a in flats if "object" in compiler._possible_types(a)]
        arrays = [a for a in flats if "array" in compiler._possible_types(a)]
        members = self._members(objects, said) if len(arrays) <= 1 else None
        if members is None:
            for n in flat:
                self._taint(n)
            return
        listed, unlisted, regions = members
        node.keys.update((k, None if nodes is None else self._clean(nodes))
                         for k, nodes in listed.items())
        node.other = self._clean(unlisted) if unlisted is not None else None
        node.regions = [(key, self._clean(nodes)) for key, nodes in regions]
        if arrays and arrays[0] is not flat:
            # Arrays here are the branch's: the place the compiler lowers them as (and
            # registers a guard on).
            node.array = self._clean(arrays[0])
        elif arrays:
            spec = ArraySpec.merge(flat)
            for i in range(spec.prefix_length):
                node.positions.append(self._clean(spec.position_nodes(i)) or _DEAD_END)
            node.rest = self._clean(spec.position_nodes(spec.prefix_length))

    def _clean(self, nodes: list[Node]) -> PathNode | None:
        """The path node of the place whose values satisfy ``nodes`` (``None``: none can)."""
        child = self._compiler._flatten(nodes)
        if child is None:
            return None
        key = _key(child)
        found = self.nodes.get(key)
        if found is None:
            found = self.nodes[key] = PathNode()
            self._todo.append((child, found))
        return found

    def _members(self, objects: list[list[Node]], said: set[str]
                 ) -> tuple[dict[str, list[Node] | None], list[Node] | None,
                            list[tuple[Expr, list[Node]]]] | None:
        """The schemas of each listed key's value, and of any unlisted key's value, as
        far as ``objects`` (the alternatives of one place) let the text tell them; ``None``
        where keys are constrained as a set (``propertyNames``).

        A key is followed only where every alternative that allows it gives its value the
        same schemas, whether the alternative lists the key or takes it as an unlisted
        one; then a value that must hold in one holds in all of them, whichever branch the
        document is valid in (a ``oneOf`` too). Elsewhere the key (or every unlisted key,
        where the alternatives disagree) is not followed, and what its value's schemas
        reach is tainted: nothing there is guarded. Unlisted keys that one alternative
        splits by patterns are followed into their regions, told apart by the compiler's
        own key literals (third item). Keys in ``said``, which a condition on the place
        says something of, are not followed either.
        """
        compiler = self._compiler
        specs = [ObjectSpec.merge(flat, compiler.options.strict_additional_properties)
                 for flat in objects]
        if any(spec.names for spec in specs):
            return None
        matches = compiler._key_matcher(False)
        keys = dict.fromkeys(k for spec in specs for k in spec.listed_keys())
        # A key listed somewhere but not followed maps to None: never read as unlisted.
        listed: dict[str, list[Node] | None] = dict.fromkeys(said)
        for key in keys:
            values = [spec.value_nodes(key, matches) for spec in specs]
            if key in said:
                for nodes in values:
                    for n in nodes:
                        self._taint(n)
                continue
            allowed = [nodes for nodes in values if compiler._flatten(nodes) is not None]
            listed[key] = allowed[0] if allowed and self._agree(values) else None
        unlisted: list[list[Node]] = []
        for spec in specs:
            regions = (spec.regions(compiler._patterns_overlap)
                       if spec.patterns or spec.additional else [])
            if regions is None:
                for nodes in spec.patterns.values():
                    for n in nodes:
                        self._taint(n)
                for extra in spec.additional:
                    self._taint(extra.node)
                return listed, None, []
            if len(specs) == 1 and len(regions) > 1:
                split = self._regions(spec, regions, list(keys))
                if split is not None:
                    return listed, None, split
            unlisted.extend(spec.region_nodes(r) for r in regions)
            if not regions:
                unlisted.append([])  # no pattern, no additionalProperties: anything
        if not self._agree(unlisted):
            return listed, None, []
        live = [nodes for nodes in unlisted if compiler._flatten(nodes)]  # [] holds nothing
        return listed, live[0] if live else None, []

    def _regions(self, spec: ObjectSpec, regions: list[frozenset[str]], listed: list[str]
                 ) -> list[tuple[Expr, list[Node]]] | None:
        """Each region of unlisted keys with its key literals, as the compiler lowers the
        object (see :meth:`Compiler.region_key`); ``None`` where a pattern is refused."""
        compiler = self._compiler
        out: list[tuple[Expr, list[Node]]] = []
        for region in regions:
            nodes = spec.region_nodes(region)
            if compiler._flatten(nodes) is None:
                continue  # no key of it is allowed
            try:
                key = compiler.region_key(spec, region, listed, False)
            except UnsupportedSchemaError:
                key = None
            if key is None:
                return None
            out.append((key, nodes))
        return out

    def _agree(self, values: list[list[Node]]) -> bool:
        """Whether the schemas of one value in each alternative are one place wherever
        they allow a value at all; if not, what they reach is tainted."""
        compiler = self._compiler
        flats = [compiler._flatten(nodes) for nodes in values]
        if len({_key(f) for f in flats if f is not None}) <= 1:
            return True
        for nodes in values:
            for n in nodes:
                self._taint(n)
        return False

    def _alternatives(self, flat: list[Node]) -> list[list[Node]] | None:
        """The flats the compiler lowers this place as: ``flat`` itself, or where it has
        ``anyOf``/``oneOf`` (and no other condition), each branch merged with the rest, as
        :mod:`constrain.json_combinators` merges them. ``None`` where the place is
        conditional otherwise."""
        compiler = self._compiler
        found = {k for n in flat if isinstance(n.schema, dict) for k in _CONDITIONAL
                 if k in n.schema and k not in n.skip and k in n.dialect.keywords}
        if not found:
            return [flat]
        if not found <= _FOLLOWED:
            return None
        combinators = compiler.combinators
        if combinators._product(flat) > compiler.options.max_branch_product:
            return None
        for keyword in ("anyOf", "oneOf"):  # the compiler's order (GROUP_KEYWORDS)
            for node in flat:
                if not node.has(keyword):
                    continue
                rest = combinators._rest(flat, node, keyword)
                branches = ((combinators._first_present(rest, node) if keyword == "anyOf"
                             else None) or combinators._branches(node, keyword))
                out: list[list[Node]] = []
                for branch in branches:
                    merged = compiler._flatten([*rest, branch])
                    if merged is None:
                        continue
                    deeper = self._alternatives(merged)
                    if deeper is None:
                        return None
                    out.extend(deeper)
                return out
        return [flat]

    def _said_of(self, flat: list[Node]) -> set[str] | None:
        """The keys whose values the conditions on ``flat`` (see :data:`_CONDITIONS`) say
        something of; ``None`` where they may say something of any key's value (or of the
        place as a whole). What the conditions reach is tainted: the compiler lowers it
        merged with the place, where no guard follows it."""
        said: set[str] = set()
        for n in flat:
            if not isinstance(n.schema, dict):
                continue
            for keyword in _CONDITIONS:
                value = n.get(keyword)
                if value is None:
                    continue
                if keyword in ("not", "if", "then", "else"):
                    conditions = [n.child(value, keyword)]
                elif keyword == "dependentRequired":
                    continue  # which keys are present
                elif isinstance(value, dict):  # dependentSchemas, or dependencies
                    conditions = [n.child(sub, keyword, name) for name, sub in value.items()
                                  if isinstance(sub, (dict, bool))]
                else:
                    return None
                for condition in conditions:
                    found = self._keys_asserted(condition)
                    if found is None:
                        return None
                    said |= found
                    self._taint(condition)
        return said

    def _keys_asserted(self, node: Node) -> set[str] | None:
        """The keys ``node`` (a condition) says something of the values of, through its
        ``properties`` and those of its sub-schemas; ``None`` where it may say something
        of others (``additionalProperties``, ``enum``, ``items``, ...)."""
        from .json_nodes import REFERENCES

        keys: set[str] = set()
        todo = [node]
        seen: set[Any] = set()
        while todo:
            if not self._spend():
                return None
            n = todo.pop()
            if n.key in seen or not isinstance(n.schema, dict):
                continue
            seen.add(n.key)
            for keyword, value in n.schema.items():
                if not n.has(keyword) or keyword in _SAY_NOTHING_OF_VALUES:
                    continue
                if keyword == "properties" and isinstance(value, dict):
                    keys.update(value)
                elif keyword in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
                    todo.extend(n.child(sub, keyword, i) for i, sub in enumerate(value))
                elif keyword in ("not", "if", "then", "else"):
                    todo.append(n.child(value, keyword))
                elif keyword in ("dependentSchemas", "dependencies") and isinstance(value, dict):
                    todo.extend(n.child(sub, keyword, name) for name, sub in value.items()
                                if isinstance(sub, (dict, bool)))
                elif keyword in REFERENCES and isinstance(value, str):
                    try:
                        todo.append(n.resolve(value, keyword))
                    except SchemaError:
                        return None
                else:
                    return None
        return keys

    def _taint(self, node: Node) -> None:
        todo = [node]
        while todo and self._spend():
            n = todo.pop()
            if n.key in self._tainted_nodes:
                continue
            self._tainted_nodes.add(n.key)
            schema = n.schema
            if not isinstance(schema, dict):
                continue
            self.tainted.add(id(schema))
            todo.extend(_sub_nodes(n))


def _key(flat: list[Node]) -> tuple[Any, ...]:
    return tuple(n.key for n in flat)


def unlink_when_gone(owner: object, plan: UniqueItemsPlan) -> None:
    """Unlink ``plan``'s path nodes (see :meth:`PathTrace.release`) when ``owner`` (the
    grammar holding the plan) is freed."""
    weakref.finalize(owner, _unlink_all, list(_reachable(plan.root)))


def _unlink_all(nodes: list[PathNode]) -> None:
    for node in nodes:
        _unlink(node)


def _unlink(node: PathNode) -> None:
    if node is _DEAD_END:
        return
    node.keys, node.other, node.regions, node.array = {}, None, [], None
    node.positions, node.rest, node.guard = [], None, None


def _reachable(root: PathNode) -> Iterator[PathNode]:
    seen = {id(root)}
    todo = [root]
    while todo:
        node = todo.pop()
        yield node
        for child in _children(node):
            if id(child) not in seen:
                seen.add(id(child))
                todo.append(child)


def _children(node: PathNode) -> Iterator[PathNode]:
    yield from (c for c in node.keys.values() if c is not None)
    yield from (c for _, c in node.regions if c is not None)
    yield from node.positions
    for c in (node.rest, node.other, node.array):
        if c is not None:
            yield c


_DEAD_END = PathNode()
"""The path node of a position holding nothing guarded (shared; never given a guard)."""


def _sub_nodes(n: Node) -> Iterator[Node]:
    """Every sub-schema of ``n`` a compiler could lower, and what its references name."""
    from .json_nodes import REFERENCES  # with the nodes: jsonschema is loaded by now

    schema = n.schema
    for keyword in REFERENCES:
        if keyword in schema and isinstance(schema[keyword], str):
            with contextlib.suppress(Exception):  # the compiler reports bad references
                yield n.resolve(schema[keyword], keyword)
    for k in _ONE_SUB:
        sub = schema.get(k)
        if isinstance(sub, (dict, bool)):
            yield n.child(sub, k)
    for k in _LIST_SUBS:
        subs = schema.get(k)
        if isinstance(subs, list):
            for i, sub in enumerate(subs):
                if isinstance(sub, (dict, bool)):
                    yield n.child(sub, k, i)
    for k in _MAP_SUBS:
        subs = schema.get(k)
        if isinstance(subs, dict):
            for name, sub in subs.items():
                if isinstance(sub, (dict, bool)):
                    yield n.child(sub, k, name)


# -- element languages ------------------------------------------------------------------


def _element_grammar(expr: Expr, library: Any,
                     rules: Mapping[str, Expr] | None = None) -> Grammar:
    """A grammar of ``expr`` alone, with the rules of the schema's ``library`` (or
    ``rules``, a whole grammar's, where it may refer to them)."""
    rules = dict(rules if rules is not None else library.rules if library is not None else {})
    rules["element"] = expr
    return Grammar(rules, "element", library=library)


def has_enough_values(expr: Expr, library: Any, needed: int = MIN_VALUES,
                      options: AutomatonOptions | None = None, max_states: int = 4096) -> bool:
    """Whether the language ``expr`` (of JSON values) holds at least ``needed`` values. First counted on spellings of printable ASCII without a backslash, length by
    length (each spells a value of its own, and a few lengths settle most languages); else
    on the whole automaton: a cycle among its live states (infinitely many spellings, so
    values), or that many accepted spellings without a backslash. ``False`` where it has
    more than ``max_states`` states: unknown, so not guarded."""
    automaton = Automaton(_element_grammar(expr, library), options)
    start = automaton.start
    if start == Automaton.DEAD:
        return False
    if _plain_spellings(automaton, needed) >= needed:
        return True
    rows: dict[int, np.ndarray] = {}
    todo = [start]
    while todo:
        s = todo.pop()
        if s in rows:
            continue
        if len(rows) >= max_states:
            return False
        rows[s] = row = automaton.row(s)
        todo.extend(int(t) for t in np.unique(row) if t != Automaton.DEAD and t not in rows)
    live = {s for s in rows if automaton.is_accepting(s)}
    changed = True
    while changed:
        changed = False
        for s, row in rows.items():
            if s not in live and any(int(t) in live for t in np.unique(row)):
                live.add(s)
                changed = True
    succ = {s: [int(t) for t in np.unique(rows[s]) if int(t) in live] for s in live}
    order = _topological(live, succ)
    if order is None:
        return True  # a cycle among live states
    count: dict[int, int] = {}
    for s in reversed(order):
        total = 1 if automaton.is_accepting(s) else 0
        for t, n in zip(*np.unique(np.delete(rows[s], 0x5C), return_counts=True)):
            if int(t) in live:
                total += int(n) * count[int(t)]
        count[s] = min(total, needed)
    return count.get(start, 0) >= needed


def has_unbounded_values(expr: Expr, library: Any, options: AutomatonOptions | None = None,
                         max_states: int = 4096,
                         rules: Mapping[str, Expr] | None = None) -> bool:
    """Whether the language ``expr`` (of JSON values, objects and arrays among them) holds
    infinitely many values. Its texts are not its values (members in any order, whitespace,
    ``1.0`` and ``1.00``), so they are not counted; instead, following only spellings
    without whitespace between tokens, backslashes, fractions or exponents (a value has
    finitely many), it looks for a state that loops on a letter or a digit inside a
    string, or on a digit inside an integer: the texts through that loop spell ever
    different strings or integers at one place of the value. Or for a cycle through a
    comma between an array's elements that comes back to that array's depth: the texts
    through it spell ever longer arrays at one place. (A cycle through an object's comma
    may only repeat a key, which spells no new value.) ``False`` where neither is found
    within ``max_states`` states (not known, so not guarded). ``rules``: the whole
    grammar's, where ``expr`` refers to them.

    >>> from constrain.regex import parse_regex
    >>> has_unbounded_values(parse_regex(r'\\{"a":(true|false|1\\.0*)\\}'), None)
    False
    >>> has_unbounded_values(parse_regex(r'\\{"a":"[a-z]*"\\}'), None)
    True
    >>> has_unbounded_values(parse_regex(r'\\[(1|2)(,(1|2))*\\]'), None)
    True
    >>> has_unbounded_values(parse_regex(r'\\{"a":1(,"a":1)*\\}'), None)
    False
    """
    automaton = Automaton(_element_grammar(expr, library, rules), options)
    start: _Node = (automaton.start, _BETWEEN, b"")
    successors: dict[_Node, list[_Node]] = {}
    commas: list[tuple[_Node, _Node]] = []  # between an array's elements
    todo = deque([start] if automaton.start != Automaton.DEAD else [])
    seen = set(todo)
    while todo:  # breadth first: a recursive language's depth never ends
        node = todo.popleft()
        state, lexeme, brackets = node
        row = automaton.row(state)
        loops = _LOOPING.get(lexeme)
        if loops is not None and (row[loops] == state).any():
            return True
        found = successors[node] = []
        bytes_, lexemes = _CANONICAL_NEXT[lexeme]
        for byte, successor, after in zip(bytes_.tolist(), row[bytes_].tolist(), lexemes):
            if successor == Automaton.DEAD:
                continue
            inside = brackets
            if lexeme == _BETWEEN and byte in _OPENING:
                inside = brackets + bytes([byte])
                if len(inside) > _MAX_DEPTH:
                    continue
            elif byte in _CLOSING_BYTES:
                inside = brackets[:-1]
            nxt = (successor, after, inside)
            found.append(nxt)
            if byte == 0x2C and lexeme != _IN_STRING and brackets[-1:] == b"[":
                commas.append((node, nxt))
            if nxt not in seen and len(seen) < max_states:
                seen.add(nxt)
                todo.append(nxt)
    # A cycle found among the states followed is one, however many were left out.
    return any(_returns(successors, after, before) for before, after in commas[:_MAX_COMMAS])


def _returns(successors: Mapping[_Node, list[_Node]], start: _Node, goal: _Node) -> bool:
    """Whether ``goal`` is reached from ``start`` without closing a bracket open at it."""
    depth = goal[2]
    seen = {start}
    todo = [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        for nxt in successors.get(node, ()):
            if nxt not in seen and nxt[2].startswith(depth):
                seen.add(nxt)
                todo.append(nxt)
    return False


_Node = tuple[int, int, bytes]
"""A node of :func:`has_unbounded_values`: a state, where its spelling is (between
tokens, in a string...), and the brackets open around it."""
_OPENING = frozenset(b"{[")
_CLOSING_BYTES = frozenset(b"}]")
_MAX_DEPTH = 8  # brackets open in the nodes followed
_MAX_COMMAS = 64  # array commas whose cycles are looked for


# Where a canonical spelling is (see has_unbounded_values): between tokens, inside a string,
# an integer or a literal; the bytes each may read next, and where each leads.
_BETWEEN, _IN_STRING, _IN_INTEGER, _IN_LITERAL = range(4)


def _canonical_next() -> dict[int, tuple[np.ndarray, list[int]]]:
    between = {**{b: _BETWEEN for b in b"{}[]:,"}, 0x22: _IN_STRING,
               **{b: _IN_INTEGER for b in b"-0123456789"}, **{b: _IN_LITERAL for b in b"tfn"}}
    ending = {b: _BETWEEN for b in b"}],"}
    table = {
        _BETWEEN: between,
        _IN_STRING: {**{b: _IN_STRING for b in range(0x20, 0x100) if b not in b'"\\'},
                     0x22: _BETWEEN},
        _IN_INTEGER: {**{b: _IN_INTEGER for b in b"0123456789"}, **ending},
        _IN_LITERAL: {**{b: _IN_LITERAL for b in b"aelrstu"}, **ending},
    }
    return {k: (np.array(sorted(v), dtype=np.int64), [v[b] for b in sorted(v)])
            for k, v in table.items()}


_CANONICAL_NEXT = _canonical_next()

COUNTED_NUMBERS = parse_regex(r"-?(0|[1-9][0-9]*)|-?(0|[1-9][0-9]{0,6})\.[0-9]{0,6}[1-9]")
"""Number spellings that read as distinct values (but ``0`` and ``-0``), for counting a
number language's values by its spellings: integers without a fraction or an exponent
(``json.loads`` reads them exactly), and fractions of at most 14 digits without trailing
zeros (distinct decimals of at most 15 significant digits are distinct floats)."""
_LOOPING = {
    _IN_STRING: np.array(sorted(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")),
    _IN_INTEGER: np.array(sorted(b"0123456789")),
}

_PLAIN_BYTES = np.array([b for b in range(0x20, 0x7F) if b != 0x5C])


def _plain_spellings(automaton: Automaton, cap: int, start: int | None = None,
                     max_length: int = 48, max_states: int = 256) -> int:
    """How many texts of printable ASCII without a backslash, of at most ``max_length``
    bytes, ``automaton`` accepts after ``start``'s text (by default none), counted length
    by length up to ``cap``: a lower bound where the count stops early (more than
    ``max_states`` states at one length), exact below ``cap`` otherwise."""
    start = automaton.start if start is None else start
    level = {start: 1}
    total = 1 if automaton.is_accepting(start) else 0
    for _ in range(max_length):
        if total >= cap or not level or len(level) > max_states:
            break
        nxt: dict[int, int] = {}
        for s, n in level.items():
            targets, counts = np.unique(automaton.row(s)[_PLAIN_BYTES], return_counts=True)
            for t, k in zip(targets.tolist(), counts.tolist()):
                if t != Automaton.DEAD:
                    nxt[t] = min(nxt.get(t, 0) + n * k, cap)
        level = nxt
        total += sum(n for s, n in level.items() if automaton.is_accepting(s))
    return min(total, cap)


def _topological(nodes: set[int], succ: dict[int, list[int]]) -> list[int] | None:
    """``nodes`` in topological order, or ``None`` where ``succ`` has a cycle among them."""
    state: dict[int, int] = {}  # 1: on the path, 2: done
    out: list[int] = []
    for s0 in nodes:
        if s0 in state:
            continue
        state[s0] = 1
        stack = [(s0, iter(succ[s0]))]
        while stack:
            s, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[s] = 2
                out.append(s)
                stack.pop()
            elif state.get(nxt) == 1:
                return None
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(succ[nxt])))
    out.reverse()
    return out


# -- the tracker ------------------------------------------------------------------------

_NO_VALUE = object()
"""The last element's value before it is read (``None`` is JSON's null)."""

# Lexical modes of the tracker (the base automaton checks the JSON; this only follows it).
_VALUE, _STRING, _KEY, _SCALAR, _AFTER, _KEY_NEXT, _COLON, _END = range(8)
_WS = frozenset(b" \t\n\r")
_SCALAR_BYTES = frozenset(b"0123456789+-.eEtruefalsn")

# A tracker state: (mode, escaped, text, pending, stack, regions), immutable so that it is
# a memo key and a rollback point. ``text``: the key or element being read (an element's
# from its first byte, a key's from after its quote; None where not needed); ``pending``:
# the path node of the next value; ``stack``: (is_array, path node, index) per open
# container; ``regions``: per guarded array open, innermost last (one inside another's
# object or array element), (guard, index, used values, the last element's value once
# read, the stack's depth inside the array, the text of the object or array element being
# read from its opening bracket or None, for each used object or array that text may
# still spell the automaton of its spellings and its state after the text, and where
# there is one, the state of the element's own automaton after the text).
_Used = tuple[bool, object]
"""A used value: (whether it is a boolean, the value json.loads reads)."""
_Spelt = tuple[tuple[Automaton, int], ...]
_Region = tuple[UniqueGuard, int, frozenset[_Used], object, int, "bytes | None", _Spelt,
                int]
_Track = tuple[int, bool, "bytes | None", "PathNode | None", tuple[Any, ...],
               tuple[_Region, ...]]

_WILD = ""
"""The bucket of tokens whose first character is not known alone (a partial escape or
UTF-8 sequence)."""

_SHORT_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r",
                  "\t": "t"}


@lru_cache(maxsize=4096)
def _spelled(value: object) -> bytes:
    """The canonical text of an element value (no escape but the ones JSON requires)."""
    return json.dumps(value, ensure_ascii=False).encode()


@dataclass(frozen=True)
class _Container:
    """An object or array element as a used value: equal to another by :func:`canonical`
    (members in any order, ``1 == 1.0``, ``true != 1``), as ``jsonschema`` judges."""

    key: Any
    value: Any = field(compare=False, repr=False)


def _used(value: object) -> _Used:
    """A value as a member of a set of used ones, equal as ``jsonschema`` judges values
    ``json.loads`` reads (``3 == 3.0``), but booleans tagged apart from the integers
    Python counts equal to them (``1 == True``)."""
    if isinstance(value, (dict, list)):
        return (False, _Container(canonical(value), value))
    return (isinstance(value, bool), value)


def _spellings_of(syntax: JsonSyntax, used: _Used) -> Expr:
    """Every text that reads as a value equal to ``used``, and around numbers that
    ``json.loads`` rounds some more (see :func:`_number_spellings`; more is the safe side:
    a completion is judged fresh only outside them)."""
    value = used[1]
    if isinstance(value, _Container):
        value = value.value
    elif _is_number(used):
        return _number_spellings(value)
    return literal_expr(syntax, value, all_spellings=True, number=_number_spellings)


def _number_spellings(value: Any) -> Expr:
    """The spellings of a number ``json.loads`` reads as equal to ``value``, and around a
    float that is not an integer or past 2**53 some more: those within its spacing,
    where texts round to it; past the largest float, every number as large (they read as
    infinity)."""
    if isinstance(value, float) and math.isinf(value):
        edge = Fraction(sys.float_info.max)
        return number_expr(edge, None) if value > 0 else number_expr(None, -edge)
    if (_FLOATS_ROUND <= abs(value) < _LARGEST_FLOAT
            or isinstance(value, float) and not value.is_integer()):
        exact = Fraction(value)
        spacing = Fraction(math.ulp(float(exact)))
        return number_expr(exact - spacing, exact + spacing)
    return number_expr(value, value)


_LARGEST_FLOAT = 2**1024  # past it no float is equal: json.loads reads inf
_MAX_PAIRS = 200_000
"""States of an element and of the used values' spellings searched together at most (see
:meth:`UniqueGuards._fresh_after`): the used values are few, so a search is most often
a few states long."""


def _is_number(used: _Used) -> bool:
    return not used[0] and isinstance(used[1], (int, float))


def _may_spell_number(text: bytes, used: _Used) -> bool:
    """Whether a number being read as ``text`` may still end equal to the used value: for
    an integer or an integral float, a prefix of one of its integer spellings, or one of
    them then ``.0...``. Past 2**53 floats round (``9007199254740993.0`` reads as
    ``...992``), and a fraction has spellings without end (``1.5``, ``15e-1``,
    ``0.15E1``): not judged (the caller steps the automaton that knows)."""
    value = used[1]
    if not _is_number(used):
        return False
    assert isinstance(value, (int, float))
    if abs(value) >= _FLOATS_ROUND or not float(value).is_integer():
        return True
    for digits in (b"0", b"-0") if value == 0 else (str(int(value)).encode(),):
        if digits.startswith(text):
            return True
        if text.startswith(digits) and _POINT_ZEROS.fullmatch(text, len(digits)):
            return True
    return False


_FLOATS_ROUND = 2**53
_POINT_ZEROS = re.compile(rb"\.0*")


def _first_unit(data: bytes) -> str:
    """The first character ``data`` spells at the start of a value or inside a string (an
    escape read as its character), or :data:`_WILD`."""
    if data[:1] == b"\\":
        if data[1:2] == b"u" and len(data) >= 6:
            try:
                code = int(data[2:6], 16)
            except ValueError:
                return _WILD
            return chr(code) if not 0xD800 <= code < 0xE000 else _WILD
        found = next((c for c, e in _SHORT_ESCAPES.items() if data[1:2] == e.encode()), None)
        return found if found is not None else _WILD
    for n in (1, 2, 3, 4):
        try:
            return data[:n].decode()
        except UnicodeDecodeError:
            continue
    return _WILD


class _TokenIndex:
    """A vocabulary's tokens by their bytes, for the candidates of one step: tokens equal
    to a text's prefixes, tokens starting with a text, tokens holding a backslash by
    their first character; each with or without leading whitespace. Built from the
    vocabulary's token trie, reading only the few tokens each part needs."""

    def __init__(self, vocab: Vocabulary) -> None:
        trie = self._trie = token_trie(vocab)
        # A comma, then more of the next element than its opening quote: an element that
        # is only begun is always live (its language has values to spare).
        crossing = re.compile(rb',[ \t\n\r]*(?:"[\s\S]|[^ \t\n\r"])')
        in_string = re.compile(rb'"[ \t\n\r]*,[ \t\n\r]*(?:"[\s\S]|[^ \t\n\r"])')
        with_comma = [(s, trie.string_bytes(s)) for s in self._strings_with(0x2C)]
        found = [(s, data) for s, data in with_comma if crossing.search(data)]
        self.crossing = self._ids([s for s, _ in found])
        self.crossing_in_string = self._ids([s for s, d in found if in_string.search(d)])
        self.crossing_opening = self._ids([s for s, d in found if b"[" in d])
        # Inside an object or array element, only a closing bracket leaves it.
        self.crossing_closing = self._ids([s for s, d in found
                                           if _CLOSING.search(d, 0, d.rindex(b","))])
        escapes: dict[tuple[bool, str], list[int]] = {}
        for s in self._strings_with(0x5C):
            data = trie.string_bytes(s)
            stripped = data.lstrip(b" \t\n\r")
            if stripped:
                escapes.setdefault((len(stripped) < len(data), _first_unit(stripped)),
                                   []).append(s)
        self._escapes = {k: self._ids(v) for k, v in escapes.items()}
        # Tokens of whitespace and then a value's first byte (a quote, a literal's letter,
        # a number's sign or digit), by what follows the whitespace: read only at an
        # element's start.
        led: list[tuple[bytes, int]] = []
        # Tokens that open an object or an array, after whitespace or not: at an element's
        # start where objects or arrays are used, each is run through the tracker.
        opening = [np.arange(int(trie.start[node]), int(trie.end[node]))
                   for node in (self._child(None, b) for b in b"{[") if node is not None]
        for first in b" \t\n\r":
            node = self._child(None, first)
            if node is None:
                continue
            for s in range(int(trie.start[node]), int(trie.end[node])):
                stripped = trie.string_bytes(s).lstrip(b" \t\n\r")
                if stripped[:1] in _LED_STARTS:
                    led.append((stripped, s))
                elif stripped[:1] in (b"{", b"["):
                    opening.append(np.array([s]))
        self.container_led = self._ids(np.concatenate([_NO_IDS, *opening]))
        led.sort()
        self._led_keys = [k for k, _ in led]
        self._led_strings = np.array([s for _, s in led], dtype=np.int64)
        # Tokens that go on with a number's bytes, and (at an element's start) those of
        # whitespace and then a number.
        self.number_led = self._ids(np.concatenate([_NO_IDS, *(
            np.arange(int(trie.start[node]), int(trie.end[node]))
            for node in (self._child(None, b) for b in b"0123456789-+.eE")
            if node is not None)]))
        self.number_led_start = np.concatenate([self.number_led, self._ids(
            [s for k, s in led if k[:1] in _NUMBER_STARTS])])
        # Tokens that end a number in an array: whitespace, a comma or a bracket first.
        ending = [np.arange(int(trie.start[node]), int(trie.end[node]))
                  for node in (self._child(None, b) for b in b" \t\n\r,]") if node is not None]
        self.ending_words = np.zeros(mask_words(vocab.size), dtype=np.int32)
        if ending:
            set_bits(self.ending_words, self._ids(np.concatenate(ending)))

    def _strings_with(self, byte: int) -> np.ndarray:
        trie = self._trie
        at = np.flatnonzero(trie.string_data == byte)
        return np.unique(np.searchsorted(trie.string_offsets, at, side="right") - 1)

    def _ids(self, strings: list[int] | np.ndarray) -> np.ndarray:
        if not len(strings):
            return _NO_IDS
        return self._trie.token_ids_of(np.asarray(strings, dtype=np.int64)).astype(np.int64)

    def _child(self, node: int | None, byte: int) -> int | None:
        """The trie node after ``byte`` from ``node`` (``None``: the root)."""
        trie = self._trie
        if node is None:
            lo, hi = int(trie.level_offsets[0]), int(trie.level_offsets[1])
        else:
            lo, hi = int(trie.child_lo[node]), int(trie.child_hi[node])
        i = lo + int(np.searchsorted(trie.byte[lo:hi], byte))
        return i if i < hi and int(trie.byte[i]) == byte else None

    def starting_with(self, prefix: bytes, led: bool) -> np.ndarray:
        """Tokens whose bytes (after the leading whitespace, for ``led``) start with ``prefix``."""
        if led:
            keys = self._led_keys
            lo = hi = bisect_left(keys, prefix)
            while hi < len(keys) and keys[hi].startswith(prefix):
                hi += 1
            return self._ids(self._led_strings[lo:hi])
        node = None
        for byte in prefix:
            node = self._child(node, byte)
            if node is None:
                return _NO_IDS
        trie = self._trie
        return self._ids(np.arange(int(trie.start[node]), int(trie.end[node])))

    def prefixes_of(self, text: bytes, led: bool) -> np.ndarray:
        """Tokens whose bytes (after the leading whitespace, for ``led``) are a non-empty
        prefix of ``text``."""
        found: list[int] = []
        if led:
            keys = self._led_keys
            for n in range(1, len(text) + 1):
                i = bisect_left(keys, text[:n])
                while i < len(keys) and keys[i] == text[:n]:
                    found.append(int(self._led_strings[i]))
                    i += 1
            return self._ids(found)
        node = None
        for byte in text:
            node = self._child(node, byte)
            if node is None:
                break
            terminal = int(self._trie.terminal[node])
            if terminal >= 0:
                found.append(terminal)
        return self._ids(found)

    def escaping(self, first: str, led: bool) -> np.ndarray:
        """Tokens with a backslash whose first character is ``first`` or unknown."""
        parts = [self._escapes.get((led, first)), self._escapes.get((led, _WILD))]
        return np.concatenate([p for p in parts if p is not None] or [_NO_IDS])


_NO_IDS = np.zeros(0, dtype=np.int64)
_CLOSING = re.compile(rb"[}\]]")
_LED_STARTS = frozenset(bytes([b]) for b in b'"ntf-0123456789')
_NUMBER_STARTS = frozenset(bytes([b]) for b in b"-0123456789")


@lru_cache(maxsize=8)
def _token_index(vocab: Vocabulary) -> _TokenIndex:
    return _TokenIndex(vocab)


def _split_escape(text: bytes) -> tuple[bytes, bytes]:
    """``text`` (a string element's start) as its part up to an unfinished escape, and
    that escape (empty where none; a high surrogate waits for its pair)."""
    i, n = 1, len(text)
    while i < n:
        if text[i] != 0x5C:
            i += 1
            continue
        size = 6 if text[i + 1:i + 2] == b"u" else 2
        if size == 6 and text[i + 2:i + 4].lower() in (b"d8", b"d9", b"da", b"db"):
            size = 12
        if i + size > n:
            return text[:i], text[i:]
        i += size
    return text, b""


def _canonical_prefix(text: bytes) -> bytes:
    """``text`` (the start of an element, with no unfinished escape) with its escapes
    spelt canonically, so it is a prefix of a value's canonical text exactly when it may
    spell that value's start (a partial UTF-8 character at the end stays as bytes)."""
    if b"\\" not in text:
        return text
    cut = len(text)
    j = cut
    while j > 1 and text[j - 1] & 0xC0 == 0x80:
        j -= 1
    if j > 1 and text[j - 1] >= 0xC0:
        lead = text[j - 1]
        if len(text) - (j - 1) < (2 if lead < 0xE0 else 3 if lead < 0xF0 else 4):
            cut = j - 1
    return _spelled(json.loads(text[:cut] + b'"'))[:-1] + text[cut:]


def _escape_may_spell(text: bytes, partial: bytes) -> bool:
    """Whether the unfinished escape ``partial`` may spell the first character of the
    canonical ``text`` (a string's characters; none when empty)."""
    char = _first_unit(text)
    return char != _WILD and any(e.startswith(partial) for e in _escapes_of(char))


def _escapes_of(char: str) -> list[bytes]:
    """Every escape that spells ``char`` (hex digits in either case)."""
    out = []
    if char in _SHORT_ESCAPES:
        out.append(b"\\" + _SHORT_ESCAPES[char].encode())
    code = ord(char)
    units = [code] if code < 0x10000 else [0xD800 + ((code - 0x10000) >> 10),
                                            0xDC00 + ((code - 0x10000) & 0x3FF)]
    spelt = [""]
    for unit in units:
        spelt = [s + "\\u" for s in spelt]
        for digit in f"{unit:04x}":
            cases = {digit, digit.upper()}
            spelt = [s + c for s in spelt for c in cases]
    out.extend(s.encode() for s in spelt)
    return out


class UniqueGuards:
    """The guards of one compiled constraint: the tracker that follows a document, the
    element languages, and the masks they make from the base's."""

    _KEPT = 4096
    # Masks are a vocabulary row each (19 KB for 151k tokens) and guard automata hold rows
    # of their own: fewer of them; a step's memo key holds its whole text, so they rarely
    # repeat anyway.
    _KEPT_BIG = 64

    def __init__(self, plan: UniqueItemsPlan, compiled: CompiledConstraint) -> None:
        self.plan = plan
        # Not the constraint itself, which holds these guards: a cycle, left to the
        # collector at every compile of a schema with a guard.
        self._token_bytes = compiled.vocab.token_bytes
        self.start: _Track = (_VALUE, False, None, plan.root, (), ())
        self._index = _token_index(compiled.vocab)
        self._options = compiled.automaton.options
        self._elements: dict[tuple[int, int, bool], Automaton] = {}
        self._rules = compiled.grammar.rules
        self._region_keys: dict[int, Automaton] = {}
        self._guards: dict[tuple[int, int, frozenset[object]], Automaton] = {}
        # Of the objects and arrays used: the automaton of each one's spellings; the masks
        # of those and of element languages; whether a completion is fresh (_fresh_after).
        self._spellings: dict[_Used, Automaton] = {}
        self._token_masks: dict[Automaton, TokenMasks] = {}
        self._fresh: dict[tuple[Automaton, int, _Spelt], bool] = {}
        self._vocab = compiled.vocab
        self._endings: dict[tuple[int, int], int] = {}  # see live
        self._listings: dict[tuple[int, int], tuple[list[bytes], list[_Used]] | None] = {}
        self._candidates: dict[tuple[bytes, int, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._masks: dict[tuple[int, _Track], np.ndarray] = {}

    def held(self) -> tuple[int, int]:
        """What the guards hold now: bytes of masks and candidate lists, and automaton
        states (for :meth:`CompiledConstraint.memory_estimate
        <constrain.compiler.CompiledConstraint.memory_estimate>`)."""
        rows = sum(m.nbytes for m in self._masks.values())
        rows += sum(d.nbytes + c.nbytes for d, c in self._candidates.values())
        rows += sum(m.memory_estimate() for m in self._token_masks.values())
        states = sum(a.num_states for a in (*self._elements.values(), *self._guards.values(),
                                            *self._region_keys.values(),
                                            *self._spellings.values()))
        return rows, states

    # -- languages -----------------------------------------------------------------------

    def _automaton(self, expr: Expr) -> Automaton:
        return Automaton(_element_grammar(expr, self.plan.syntax.library), self._options)

    def region_of(self, node: PathNode, key: bytes) -> PathNode | None:
        """The place of the value of an unlisted key of ``node`` spelt ``key`` (between its
        quotes, escapes as written): that of the region whose key literals hold it."""
        literal = b'"' + key + b'"'
        for expr, place in node.regions:
            automaton = self._region_keys.get(id(expr))
            if automaton is None:
                automaton = self._region_keys[id(expr)] = self._automaton(expr)
            state = automaton.step_bytes(automaton.start, literal)
            if state != Automaton.DEAD and automaton.is_accepting(state):
                return place
        return None

    def _element(self, guard: UniqueGuard, index: int, whole: bool = False) -> Automaton:
        """Element ``index``'s language, ``whole`` or less its objects and arrays (whose
        languages may refer to the schema's rules)."""
        key = (id(guard), min(index, len(guard.positions)), whole)
        found = self._elements.get(key)
        if found is None:
            found = self._elements[key] = (
                Automaton(_element_grammar(guard.element(index), self.plan.syntax.library,
                                           self._rules), self._options)
                if whole else self._automaton(guard.scalar_element(index)))
        return found

    def _listed(self, guard: UniqueGuard, index: int
                ) -> tuple[list[bytes], list[_Used]] | None:
        """Element ``index``'s listed values (see :meth:`UniqueGuard.listed`) by their
        canonical texts, sorted: the values a text may still spell are a run of them."""
        key = (id(guard), min(index, len(guard.positions)))
        if key not in self._listings:
            values = guard.listed(index)
            found = None
            if values is not None and not any(isinstance(v, (dict, list)) for v in values):
                pairs = sorted((_spelled(v), _used(v)) for v in values)
                found = ([text for text, _ in pairs], [used for _, used in pairs])
            self._listings[key] = found
        return self._listings[key]

    def _guard(self, guard: UniqueGuard, index: int, used: frozenset[_Used]) -> Automaton:
        """Element ``index``'s language less the spellings of ``used``."""
        key = (id(guard), min(index, len(guard.positions)), used)
        found = self._guards.get(key)
        if found is None:
            syntax = self.plan.syntax
            spelled = alt(*(_spellings_of(syntax, u) for u in sorted(used, key=repr)))
            found = self._automaton(intersect(guard.scalar_element(index),
                                              complement(spelled)))
            if len(self._guards) >= self._KEPT_BIG:
                self._guards.clear()
            self._guards[key] = found
        return found

    # -- objects and arrays ---------------------------------------------------------------
    # Their languages may be recursive (any JSON value inside), which no automaton
    # intersects; but the used ones are a few values whose spellings form a small regular
    # language S, so whether an element begun so may still end anew is a search of the
    # element's automaton E beside S's: for a byte E reads and S cannot, or an end of E
    # that is not one of S.

    def _spelt(self, used: frozenset[_Used], text: bytes) -> _Spelt:
        """The objects and arrays among ``used`` that ``text`` may still spell: the
        automaton of each one's spellings, and its state after ``text``."""
        out = []
        for u in used:
            if isinstance(u[1], _Container):
                automaton = self._spellings.get(u)
                if automaton is None:
                    if len(self._spellings) >= self._KEPT:
                        self._spellings.clear()
                    automaton = self._spellings[u] = self._automaton(
                        _spellings_of(self.plan.syntax, u))
                state = automaton.step_bytes(automaton.start, text)
                if state != Automaton.DEAD:
                    out.append((automaton, state))
        return tuple(out)

    def _tokens_of(self, automaton: Automaton, state: int) -> np.ndarray:
        """The tokens after which ``automaton`` is live from ``state`` (a packed mask)."""
        masks = self._token_masks.get(automaton)
        if masks is None:
            if len(self._token_masks) >= self._KEPT_BIG:
                self._token_masks.clear()
            masks = self._token_masks[automaton] = TokenMasks(automaton, self._vocab)
        return masks.mask(state)

    def _fresh_after(self, element: Automaton, e: int, spelt: _Spelt) -> bool:
        """Whether some completion of the element from ``e`` is none of the used values'
        spellings ``spelt`` (a search of the states all of them may reach together)."""
        key = (element, e, spelt)
        found = self._fresh.get(key)
        if found is not None:
            return found
        found = False
        automata = [a for a, _ in spelt]
        first = (e, tuple(s for _, s in spelt))
        seen = {first}
        todo = [first]
        while todo:
            e, states = todo.pop()
            alive = [(a, s) for a, s in zip(automata, states) if s != Automaton.DEAD]
            if not alive or element.is_accepting(e) and not any(
                    a.is_accepting(s) for a, s in alive):
                found = True
                break
            if len(seen) > _MAX_PAIRS:
                raise ResourceLimitError(
                    "unique_items_search", _MAX_PAIRS,
                    "states of an element searched beside its used values' spellings for "
                    "a new value")
            rows = [a.row(s).tolist() if s != Automaton.DEAD else None
                    for a, s in zip(automata, states)]
            for byte, successor in enumerate(element.row(e).tolist()):
                if successor == Automaton.DEAD:
                    continue
                node = (successor, tuple(Automaton.DEAD if row is None else row[byte]
                                         for row in rows))
                if node not in seen:
                    seen.add(node)
                    todo.append(node)
        if len(self._fresh) >= self._KEPT:
            self._fresh.clear()
        self._fresh[key] = found
        return found

    def _container_live(self, region: _Region) -> bool:
        """:meth:`live` inside an object or array element."""
        guard, index, _, _, _, _, spelt, e = region
        if not spelt:
            return True  # no used value starts so: every ending is new
        element = self._element(guard, index, whole=True)
        return e != Automaton.DEAD and self._fresh_after(element, e, spelt)

    def live(self, track: _Track) -> bool:
        """Whether the elements being read (if any) can still end as new values."""
        mode, _, text, _, _, regions = track
        if not regions:
            return True
        # Guarded arrays inside another's element: that element can end anew, the
        # innermost one's too.
        if not all(self._container_live(r) for r in regions if r[5] is not None):
            return False
        region = regions[-1]
        if region[5] is not None or text is None or mode not in (_STRING, _SCALAR) or not region[2]:
            return True
        used = region[2]
        guard, index = region[0], region[1]
        if mode == _SCALAR and text[:1] in _NUMBER_STARTS:
            # Spellings of a number are many (3, 3.0, 3.00): not counted, looked up.
            if not any(_may_spell_number(text, u) for u in used):
                return True
            exact = self._guard(guard, index, used)
            return exact.step_bytes(exact.start, text) != Automaton.DEAD
        head, partial = _split_escape(text) if mode == _STRING else (text, b"")
        listed = self._listed(guard, index)
        if listed is not None:  # an enum: is a value that starts so left?
            spellings, values = listed
            prefix = _canonical_prefix(head)
            i = bisect_left(spellings, prefix)
            while i < len(spellings) and spellings[i].startswith(prefix):
                # The rest of the value's text, its closing quote left out: no escape
                # spells that.
                if values[i] not in used and (not partial or _escape_may_spell(
                        spellings[i][len(prefix):-1], partial)):
                    return True
                i += 1
            return False
        if partial:  # in the middle of an escape: any used value may be the one spelt
            sharing = len(used)
        else:
            prefix = _canonical_prefix(head)
            sharing = sum(_spelled(u[1]).startswith(prefix) for u in used
                          if not isinstance(u[1], _Container))
            if not sharing:
                return True  # no used value starts so: every ending is new
        element = self._element(guard, index)
        state = element.step_bytes(element.start, text)
        if state == Automaton.DEAD:
            return False
        # Each plain spelling is a value of its own, and one that starts so: more of them
        # than used values starting so leave a new one. Counted once per state, not per
        # number of values used (an enum of 257 names counted its endings again at
        # every element).
        key = (id(element), state)
        endings = self._endings.get(key)
        if endings is None:
            if len(self._endings) >= self._KEPT:
                self._endings.clear()
            endings = self._endings[key] = _plain_spellings(element, MIN_VALUES, state)
        if endings > sharing:
            return True
        exact = self._guard(guard, index, used)
        return exact.step_bytes(exact.start, text) != Automaton.DEAD

    # -- masks ---------------------------------------------------------------------------

    def mask(self, base: np.ndarray, base_state: int, track: _Track) -> np.ndarray:
        """The base mask ``base`` less what the guards refuse at ``track``."""
        key = (base_state, track)
        found = self._masks.get(key)
        if found is not None:
            return found
        doomed, checked = self._step_candidates(track)
        for region in track[5]:
            if region[5] is not None:
                checked = np.union1d(checked, self._doubtful(base, region))
        out = base
        numbers = self._number_candidates(track)
        if self._ends_used(track):
            # A number equal to a used value as it stands: whatever ends it (whitespace,
            # a comma, a bracket) repeats it; tokens that go on with digits may not.
            out = base & ~self._index.ending_words
        if len(doomed) or len(checked) or len(numbers):
            doomed = doomed[_bits(base, doomed)]
            checked = checked[_bits(base, checked)]
            if len(numbers):
                # Every token the base allows that goes on with a number's bytes (a few
                # dozen where digits are tokens of their own).
                checked = np.union1d(checked, numbers[_bits(base, numbers)])
            if len(doomed) or len(checked):
                out = out.copy() if out is base else out
                words = out.view(np.uint32)
                table = self._token_bytes
                failed = [t for t in checked.tolist()
                          if not self._keeps(self.feed(track, table[t]))]
                for token in (*doomed.tolist(), *failed):
                    words[token >> 5] &= np.uint32(~(1 << (token & 31)) & 0xFFFFFFFF)
        if len(self._masks) >= self._KEPT_BIG:
            self._masks.clear()
        self._masks[key] = out
        return out

    def _keeps(self, track: _Track | None) -> bool:
        return track is not None and self.live(track)

    def _doubtful(self, base: np.ndarray, region: _Region) -> np.ndarray:
        """Inside ``region``'s object or array element, where it may still end as a used
        value: the tokens of ``base`` that may go on spelling one (the used values'
        spellings take them) and those that leave the element (its own language does not
        take them: ``}]``, ``}, {"``), to be run through the tracker."""
        guard, index, _, _, _, _, spelt, e = region
        if not spelt:
            return _NO_IDS
        inside = self._tokens_of(self._element(guard, index, whole=True), e)
        spelling = self._tokens_of(*spelt[0])
        for pair in spelt[1:]:
            spelling = spelling | self._tokens_of(*pair)
        doubtful = base & ~inside | base & inside & spelling
        return np.flatnonzero(np.unpackbits(doubtful.view(np.uint8), bitorder="little"))

    def _number_candidates(self, track: _Track) -> np.ndarray:
        """Tokens that may read a number from ``track`` where the array holds numbers."""
        mode, region = track[0], _innermost(track)
        if (region is None or mode not in (_VALUE, _SCALAR)
                or not any(_is_number(u) for u in region[2])):
            return _NO_IDS
        index = self._index
        return index.number_led_start if mode == _VALUE else index.number_led

    @staticmethod
    def _ends_used(track: _Track) -> bool:
        """Whether the element being read is a number equal to a used value as it stands."""
        mode, text, region = track[0], track[2], _innermost(track)
        if mode != _SCALAR or region is None or not text or text[:1] not in _NUMBER_STARTS:
            return False
        try:
            value = json.loads(text)
        except ValueError:  # "-", "3.", "3e": not a number yet
            return False
        return _used(value) in region[2]

    def _step_candidates(self, track: _Track) -> tuple[np.ndarray, np.ndarray]:
        """Tokens that surely repeat a value (doomed) and tokens that may (checked) at
        ``track``, before the base mask is applied (numbers aside: see :meth:`mask`)."""
        mode, text, region = track[0], track[2], _innermost(track)
        index = self._index
        if region is None:
            return _NO_IDS, index.crossing_opening
        if region[5] is not None:  # inside an object or array element: see _doubtful
            return _NO_IDS, index.crossing_closing
        crossing = index.crossing_in_string if mode == _STRING else index.crossing
        used = region[2]
        if not used or mode == _AFTER:
            return _NO_IDS, crossing
        partial = b""
        if mode == _VALUE:
            start, led_too = b"", True
        else:
            assert text is not None
            head, partial = _split_escape(text) if mode == _STRING else (text, b"")
            start, led_too = _canonical_prefix(head), False
            read = json.loads(head + b'"') if partial else ""
        doomed, checked = [_NO_IDS], [crossing]
        if mode == _VALUE and any(isinstance(u[1], _Container) for u in used):
            checked.append(index.container_led)
        for u in used:
            if _is_number(u) or isinstance(u[1], _Container):
                continue
            spelled = _spelled(u[1])
            if not spelled.startswith(start):
                continue
            if not partial:
                d, c = self._value_candidates(spelled, len(start), led_too)
                doomed.append(d)
                checked.append(c)
                continue
            # Inside an escape: each way it may end as the value's next character.
            value = u[1]
            assert isinstance(value, str)
            rest = value[len(read):]
            if rest:
                after = _spelled(rest[1:])[1:]
                for escape in _escapes_of(rest[0]):
                    if escape.startswith(partial) and len(escape) > len(partial):
                        d, c = self._value_candidates(escape[len(partial):] + after, 0,
                                                      False)
                        doomed.append(d)
                        checked.append(c)
        return np.unique(np.concatenate(doomed)), np.unique(np.concatenate(checked))

    def _value_candidates(self, spelled: bytes, offset: int,
                          led_too: bool) -> tuple[np.ndarray, np.ndarray]:
        """For a used value spelt ``spelled`` whose first ``offset`` bytes are read: the
        tokens that spell the rest of it (doomed) and those that may spell a part of it."""
        key = (spelled, offset, led_too)
        found = self._candidates.get(key)
        if found is None:
            index = self._index
            rest = spelled[offset:]
            doomed, checked = [], []
            for led in (False, True) if led_too else (False,):
                doomed.append(index.starting_with(rest, led))
                checked.append(index.prefixes_of(rest, led))
                checked.append(index.escaping(_first_unit(rest), led))
            found = (np.concatenate(doomed), np.concatenate(checked))
            if len(self._candidates) >= self._KEPT:
                self._candidates.clear()
            self._candidates[key] = found
        return found

    # -- the tracker ---------------------------------------------------------------------

    def feed(self, track: _Track, data: bytes) -> _Track | None:
        """The tracker after ``data`` (bytes the base automaton accepts), or ``None`` where
        they complete an element equal to an earlier one."""
        mode, escaped, text, pending, stack, held = track
        # The guarded arrays open, innermost last. An object or array element's text is
        # its region's before this call, then data[begun[k]:] for region k: compared with
        # the used values where its closing bracket is read.
        regions = list(held)
        begun = [0] * len(regions)
        region = regions[-1] if regions else None
        i, n = 0, len(data)
        while i < n:
            b = data[i]
            if mode == _STRING or mode == _KEY:
                if escaped:
                    escaped = False
                elif b == 0x5C:
                    escaped = True
                elif b == 0x22:
                    if mode == _KEY:
                        top = stack[-1][1]
                        pending = None
                        if top is not None and text is not None:
                            found = top.member(json.loads(b'"' + text + b'"'))
                            pending = (self.region_of(top, text) if found is UNLISTED
                                       else cast("PathNode | None", found))
                        mode, text = _COLON, None
                    else:
                        if region is not None and text is not None:  # an element
                            value = _used(json.loads(text + b'"'))
                            if value in region[2]:
                                return None
                            region = regions[-1] = (*region[:3], value, *region[4:])
                        mode, text = _AFTER, None
                    i += 1
                    continue
                if text is not None:
                    text += data[i:i + 1]
                i += 1
                continue
            if b in _WS or mode == _SCALAR and b not in _SCALAR_BYTES:
                if mode == _SCALAR:  # the byte ends the literal
                    if region is not None and text is not None:
                        value = _used(json.loads(text))
                        if value in region[2]:
                            return None
                        region = regions[-1] = (*region[:3], value, *region[4:])
                    mode, text = _AFTER, None
                    if b not in _WS:
                        continue  # read it again
                i += 1
                continue
            if mode == _SCALAR:
                if text is not None:
                    text += data[i:i + 1]
                i += 1
                continue
            if mode == _VALUE:
                element = region is not None and len(stack) == region[4]
                if b == 0x7B or b == 0x5B:  # { or [
                    if element:
                        assert region is not None
                        region = regions[-1] = (*region[:5], b"", (), Automaton.DEAD)
                        begun[-1] = i
                    if b == 0x5B and pending is not None and pending.array is not None:
                        pending = pending.array
                    stack = (*stack, (b == 0x5B, pending, 0))
                    if b == 0x7B:
                        mode, pending = _KEY_NEXT, None
                    else:
                        if pending is not None and pending.guard is not None:
                            region = (pending.guard, 0, frozenset(), _NO_VALUE, len(stack),
                                      None, (), Automaton.DEAD)
                            regions.append(region)
                            begun.append(0)
                        pending = pending.element(0) if pending is not None else None
                elif b == 0x22:
                    mode = _STRING
                    text = b'"' if element else None
                elif b == 0x5D:  # an empty array
                    mode = _AFTER
                    continue
                else:
                    mode = _SCALAR
                    text = b"" if element else None
                    continue  # read again as the scalar's first byte
                i += 1
                continue
            if mode == _KEY_NEXT:
                if b == 0x22:
                    mode = _KEY
                    text = b"" if stack[-1][1] is not None else None
                elif b == 0x7D:
                    mode = _AFTER
                    continue
                i += 1
                continue
            if mode == _COLON:
                mode = _VALUE  # the colon
                i += 1
                continue
            if mode == _END:
                i += 1
                continue
            # _AFTER: a comma or a closing bracket.
            is_array, node, index = stack[-1]
            if b == 0x2C:
                if is_array:
                    stack = (*stack[:-1], (True, node, index + 1))
                    if region is not None and len(stack) == region[4]:
                        guard, _, used, last, depth = region[:5]
                        region = regions[-1] = (
                            guard, index + 1,
                            used if last is _NO_VALUE else used | {cast(_Used, last)},
                            _NO_VALUE, depth, None, (), Automaton.DEAD)
                    pending = node.element(index + 1) if node is not None else None
                    mode = _VALUE
                else:
                    mode = _KEY_NEXT
            else:
                stack = stack[:-1]
                pending = None
                if region is not None and len(stack) < region[4]:  # a guarded array ends
                    regions.pop()
                    begun.pop()
                    region = regions[-1] if regions else None
                if region is not None and region[5] is not None and len(stack) == region[4]:
                    value = _used(json.loads(region[5] + data[begun[-1]:i + 1]))
                    if value in region[2]:
                        return None
                    region = regions[-1] = (*region[:3], value, region[4], None, (),
                                            Automaton.DEAD)
                mode = _AFTER if stack else _END
            i += 1
        for k, r in enumerate(regions):
            if r[5] is not None:
                regions[k] = self._read_on(r, data[begun[k]:])
        return (mode, escaped, text, pending, stack, tuple(regions))

    def _read_on(self, region: _Region, data: bytes) -> _Region:
        """``region`` with ``data`` more of its object or array element read, and where the
        used values' spellings are after it (each automaton is kept with its state: their
        cache may be emptied while a document is read)."""
        text, spelt, e = region[5], region[6], region[7]
        assert text is not None
        if not text:  # just opened
            spelt = self._spelt(region[2], data)
            e = self._element(region[0], region[1], whole=True).start
        elif spelt and data:
            stepped = ((a, a.step_bytes(s, data)) for a, s in spelt)
            spelt = tuple(pair for pair in stepped if pair[1] != Automaton.DEAD)
        else:
            return (*region[:5], text + data, spelt, e)
        # The element's own state, while a used value may still be spelt (after that,
        # every ending is new: it is not needed).
        e = (self._element(region[0], region[1], whole=True).step_bytes(e, data) if spelt
             else Automaton.DEAD)
        return (*region[:5], text + data, spelt, e)


def _innermost(track: _Track) -> _Region | None:
    """The innermost guarded array open at ``track``, if any."""
    regions = track[5]
    return regions[-1] if regions else None


def _bits(mask: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Which of ``tokens`` the packed ``mask`` allows."""
    words = mask[tokens >> 5].astype(np.int64)
    allowed: np.ndarray = ((words >> (tokens & 31)) & 1).astype(bool)
    return allowed



class UniqueItemsMatcher(Matcher):
    """A :class:`~constrain.Matcher` that also keeps guarded arrays' elements distinct
    (made by :meth:`CompiledConstraint.matcher
    <constrain.compiler.CompiledConstraint.matcher>` where the grammar has guards)."""

    __slots__ = ("_guards", "_track", "_tracks")

    def __init__(self, compiled: CompiledConstraint, guards: UniqueGuards) -> None:
        super().__init__(compiled)
        self._guards = guards
        self._track = guards.start
        self._tracks: list[_Track] = []

    def _mask(self) -> np.ndarray:
        state = self._state
        base = self._compiled.masks_for_state(state)
        if state == TERMINATED:
            return base
        return self._guards.mask(base, state, self._track)

    def fill_bitmask(self, bitmask: Any, row: int = 0) -> None:
        mask = self._mask()
        if isinstance(bitmask, np.ndarray):
            write_row(mask, bitmask, row)
        else:
            import torch

            write_tensor_row(torch.from_numpy(mask.copy()), bitmask, row)

    def advance(self, token: int) -> bool:
        if not super().advance(token):
            return False
        if self._state == TERMINATED:
            self._tracks.append(self._track)
            return True
        return self._follow(self._compiled.vocab.token_bytes[token])

    def advance_bytes(self, data: bytes) -> bool:
        if not super().advance_bytes(data):
            return False
        return self._follow(data)

    def _follow(self, data: bytes | None) -> bool:
        after = None if data is None else self._guards.feed(self._track, data)
        if after is None or not self._guards.live(after):
            self._state = self._history.pop()
            return False
        self._tracks.append(self._track)
        self._track = after
        return True

    def rollback(self, n: int = 1) -> None:
        super().rollback(n)
        if n:
            self._track = self._tracks[-n]
            del self._tracks[-n:]

    def reset(self) -> None:
        super().reset()
        self._track = self._guards.start
        self._tracks.clear()

    def copy(self) -> UniqueItemsMatcher:
        twin = UniqueItemsMatcher.__new__(UniqueItemsMatcher)
        twin._compiled = self._compiled
        twin._state = self._state
        twin._history = list(self._history)
        twin._guards = self._guards
        twin._track = self._track
        twin._tracks = list(self._tracks)
        return twin


