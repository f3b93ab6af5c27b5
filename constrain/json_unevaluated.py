"""``unevaluatedProperties`` and ``unevaluatedItems`` (drafts 2019-09 and 2020-12), lowered
to the keywords they amount to.

Such a keyword applies to the members or items that no other keyword of its schema
*evaluated*: ``properties``, ``patternProperties``, ``additionalProperties`` (``prefixItems``,
``items``, ``contains``...) of the schema itself and of every sub-schema applied in place
(``$ref``, ``$dynamicRef``, ``allOf``, ``anyOf``, ``oneOf``, ``if``/``then``/``else``, ``dependentSchemas``) that
*validates*. ``not`` contributes nothing: its sub-schema must fail.

What is evaluated is read from the schema, not the value, where the in-place sub-schemas
all apply (``$ref`` and ``allOf``): ``{"allOf": [{"$ref": "#/$defs/base"}], "properties":
{"x": {}}, "unevaluatedProperties": false}`` is ``additionalProperties: false`` over the
names of ``base`` and ``x``. Here it becomes one more schema in the list compiled together:
``{"properties": {<evaluated names>: true}, "patternProperties": {<evaluated patterns>:
true}, "additionalProperties": <the keyword's schema>}`` (for items, ``prefixItems`` of
``true`` up to the longest evaluated prefix, then ``items``; an item that a ``contains``
matches is evaluated too, so the rest are ``{"anyOf": [<contains>..., <the keyword's
schema>]}``). An ``additionalProperties`` or ``items`` applied in place evaluates every
member or item, and the keyword then asserts nothing.

Where a sub-schema applies only sometimes (a branch of ``anyOf`` or ``oneOf``, ``then``,
``else``, a ``dependentSchemas`` entry), what is evaluated depends on which applies. The
language is then a union of *cases*: each case adds its conditions (the branches it
assumes to hold: a ``oneOf`` branch, an ``if`` with its ``then``, ``not if`` with its
``else``, a required key with its dependent schema) and the keyword over what they
evaluate. The cases are exact because what is evaluated only grows with the sub-schemas
that hold: a case whose conditions hold evaluates at most what the value's true sub-schemas
evaluate, so its language is no larger, and the case of exactly those sub-schemas holds.
An ``anyOf`` makes one case per set of branches that evaluate something; past
:data:`MAX_CASES` cases the keyword is refused.

>>> from constrain.automaton import Automaton
>>> from constrain.json_compiler import Compiler
>>> from constrain.json_schema import JsonSchemaOptions
>>> s = {"$defs": {"named": {"properties": {"name": {"type": "string"}}}},
...      "allOf": [{"$ref": "#/$defs/named"}], "properties": {"age": {"type": "integer"}},
...      "unevaluatedProperties": False}
>>> a = Automaton(Compiler(s, JsonSchemaOptions()).grammar())
>>> [a.matches(t) for t in (b'{"name": "x", "age": 3}', b'{"name": "x", "other": 1}')]
[True, False]
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .json_nodes import REFERENCES, Node
from .json_typed import Typed

if TYPE_CHECKING:
    from .json_compiler import Compiler

__all__ = ["MAX_CASES", "UNEVALUATED", "Unevaluated"]

UNEVALUATED = frozenset({"unevaluatedProperties", "unevaluatedItems"})

MAX_CASES = 32
"""Cases of what is evaluated (see the module docstring) one keyword may make."""

_PROPERTIES = "unevaluatedProperties"
_ITEMS = "unevaluatedItems"


@dataclass(frozen=True)
class _Evaluated:
    """What some sub-schemas evaluate: member names and patterns, or every member
    (``all_members``); the longest prefix of items, the ``contains`` sub-schemas (each
    item one matches), or every item (``all_items``)."""

    names: frozenset[str] = frozenset()
    patterns: frozenset[str] = frozenset()
    all_members: bool = False
    prefix: int = 0
    contains: tuple[Node, ...] = ()
    all_items: bool = False

    def __or__(self, other: _Evaluated) -> _Evaluated:
        contains = self.contains + tuple(n for n in other.contains if n not in self.contains)
        return _Evaluated(self.names | other.names, self.patterns | other.patterns,
                          self.all_members or other.all_members, max(self.prefix, other.prefix),
                          contains, self.all_items or other.all_items)

    def evaluates_some(self, keyword: str) -> bool:
        if keyword == _PROPERTIES:
            return bool(self.names or self.patterns or self.all_members)
        return bool(self.prefix or self.contains or self.all_items)


_NOTHING = _Evaluated()

# A case: the sub-schemas it assumes to hold, and what the schema then evaluates.
_Case = tuple[tuple[Node, ...], _Evaluated]


class _TooManyCases(Exception):
    pass


class Unevaluated:
    """Lowers the two keywords for one :class:`~constrain.json_compiler.Compiler`."""

    def __init__(self, compiler: Compiler) -> None:
        self.c = compiler

    def expand(self, flat: list[Node], negative: bool) -> Typed | None:
        """The language of ``flat`` if one of its schemas has either keyword, else ``None``."""
        for node in flat:
            if node.asserts_any(UNEVALUATED):
                keyword = _PROPERTIES if node.has(_PROPERTIES) else _ITEMS
                return self._expand(flat, node, keyword, negative)
        return None

    def _expand(self, flat: list[Node], node: Node, keyword: str, negative: bool) -> Typed:
        rest = [n.without(keyword) if n is node else n for n in flat]
        if node.get(keyword) is True:
            return self.c.value(rest, negative)
        try:
            cases = self._cases(node, keyword, top=True, seen=frozenset())
        except _TooManyCases:
            self.c.refuse(keyword, f"{node.pointer}/{keyword}",
                          f"what it applies to depends on more than {MAX_CASES} cases of "
                          "the sub-schemas around it (anyOf/oneOf branches, if/then/else, "
                          "dependentSchemas) that may hold", negative)
            return self.c.value(rest, negative)
        kept = [(conditions, self._remainder(node, keyword, evaluated))
                for conditions, evaluated in cases]
        if not kept[0][1]:
            # The first case assumes nothing and evaluates least: if it evaluates every
            # member or item, so does every case.
            return self.c.value(rest, negative)
        if len(kept) == 1:
            conditions, remainder = kept[0]
            return self.c.value(rest + list(conditions) + remainder, negative)
        return self.c.refs.union(self.c.value(rest + list(conditions) + remainder, negative)
                                 for conditions, remainder in kept)

    def _remainder(self, node: Node, keyword: str, evaluated: _Evaluated) -> list[Node]:
        """The schema that the keyword's sub-schema is over what ``evaluated`` leaves (none
        where it leaves nothing)."""
        value = node.get(keyword)
        if keyword == _PROPERTIES:
            if evaluated.all_members:
                return []
            names, patterns = sorted(evaluated.names), sorted(evaluated.patterns)

            def members() -> dict[str, Any]:
                return {"properties": dict.fromkeys(names, True),
                        "patternProperties": dict.fromkeys(patterns, True),
                        "additionalProperties": value}

            return [self.c.synthetic(node, (keyword, tuple(names), tuple(patterns)), members,
                                     keyword)]
        if evaluated.all_items:
            return []
        prefix = evaluated.prefix
        contains = [n.schema for n in evaluated.contains]
        rest_items = {"anyOf": [*contains, value]} if contains else value
        modern = "prefixItems" in node.dialect.keywords

        def items() -> dict[str, Any]:
            if not prefix:
                return {"items": rest_items}
            if modern:
                return {"prefixItems": [True] * prefix, "items": rest_items}
            return {"items": [True] * prefix, "additionalItems": rest_items}

        if any(n.base != node.base or n.scope != node.scope for n in evaluated.contains):
            # A contains schema from another resource would resolve its references here.
            self.c.refuse(keyword, f"{node.pointer}/{keyword}",
                          "a contains it depends on is in another schema resource")
            return []
        key = (keyword, prefix, tuple(n.key for n in evaluated.contains))
        return [self.c.synthetic(node, key, items, keyword)]

    # -- what sub-schemas evaluate ------------------------------------------------------

    def _cases(self, node: Node, keyword: str, top: bool, seen: frozenset[Any]) -> list[_Case]:
        """The cases of what ``node`` and the sub-schemas it applies in place evaluate for
        ``keyword`` (see the module docstring); ``top``: the node holding the keyword,
        whose own keyword is what is being lowered."""
        schema = node.schema
        if not isinstance(schema, dict) or node.key in seen:
            return [((), _NOTHING)]
        seen = seen | {node.key}
        asserting = node.dialect.keywords
        present = asserting.intersection(schema)
        cases: list[_Case] = [((), self._own(node, keyword, present, top))]
        for reference in REFERENCES:
            if reference in present:
                cases = _product(cases, self._cases(node.resolve(schema[reference], reference),
                                                    keyword, False, seen))
        for i, sub in enumerate(schema.get("allOf", ()) if "allOf" in present else ()):
            cases = _product(cases, self._cases(node.child(sub, "allOf", i), keyword, False,
                                                seen))
        for combinator in ("anyOf", "oneOf"):
            if combinator in present:
                cases = _product(cases, self._branch_cases(node, combinator, keyword, seen))
        if "if" in present:
            cases = _product(cases, self._conditional_cases(node, keyword, seen))
        if "dependentSchemas" in present:
            for name, sub in schema["dependentSchemas"].items():
                cases = _product(cases, self._dependent_cases(node, name, sub, keyword, seen))
        return cases

    def _own(self, node: Node, keyword: str, present: frozenset[str], top: bool) -> _Evaluated:
        """What ``node``'s own keywords evaluate."""
        schema = node.schema
        if keyword == _PROPERTIES:
            return _Evaluated(
                names=frozenset(schema["properties"]) if "properties" in present else frozenset(),
                patterns=(frozenset(schema["patternProperties"])
                          if "patternProperties" in present else frozenset()),
                all_members=("additionalProperties" in present
                             or (not top and _PROPERTIES in present)),
            )
        modern = "prefixItems" in node.dialect.keywords
        prefix = 0
        all_items = not top and _ITEMS in present
        if modern:
            prefix = len(schema["prefixItems"]) if "prefixItems" in present else 0
            all_items = all_items or "items" in present
        elif "items" in present:
            if isinstance(schema["items"], list):
                prefix = len(schema["items"])
                all_items = all_items or "additionalItems" in present
            else:
                all_items = True
        contains = (node.child(schema["contains"], "contains"),) if "contains" in present else ()
        return _Evaluated(prefix=prefix, contains=contains, all_items=all_items)

    def _branch_cases(self, node: Node, combinator: str, keyword: str,
                      seen: frozenset[Any]) -> list[_Case]:
        """Cases of an ``anyOf`` (every set of branches that may hold together) or a
        ``oneOf`` (one branch)."""
        branches = [node.child(sub, combinator, i)
                    for i, sub in enumerate(node.schema[combinator])]
        options = []
        for branch in branches:
            own = [((branch, *conditions), evaluated)
                   for conditions, evaluated in self._cases(branch, keyword, False, seen)
                   if evaluated.evaluates_some(keyword)]
            if own:
                options.append(own)
        cases: list[_Case] = [((), _NOTHING)]
        sizes = range(1, len(options) + 1) if combinator == "anyOf" else range(1, 2)
        for size in sizes:
            for chosen in itertools.combinations(options, size):
                combined: list[_Case] = [((), _NOTHING)]
                for option in chosen:
                    combined = [(a + b, x | y) for a, x in combined for b, y in option]
                    _check(combined)
                cases.extend(combined)
                _check(cases)
        return cases

    def _conditional_cases(self, node: Node, keyword: str, seen: frozenset[Any]) -> list[_Case]:
        """Cases of ``if``/``then``/``else``: the ``if`` holds (it and its ``then`` evaluate),
        or it fails (its ``else`` evaluates)."""
        schema = node.schema
        test = node.child(schema["if"], "if")
        cases: list[_Case] = [((), _NOTHING)]
        holds = self._cases(test, keyword, False, seen)
        if "then" in schema:
            holds = _product(holds, self._cases(node.child(schema["then"], "then"), keyword,
                                                False, seen))
        cases.extend(((test, *conditions), evaluated) for conditions, evaluated in holds
                     if evaluated.evaluates_some(keyword))
        if "else" in schema:
            other = node.child(schema["else"], "else")
            fails = self.c.synthetic(node, ("not-if",), lambda: {"not": schema["if"]}, "if")
            cases.extend(((fails, *conditions), evaluated)
                         for conditions, evaluated in self._cases(other, keyword, False, seen)
                         if evaluated.evaluates_some(keyword))
        _check(cases)
        return cases

    def _dependent_cases(self, node: Node, name: str, sub: Any, keyword: str,
                         seen: frozenset[Any]) -> list[_Case]:
        """Cases of one ``dependentSchemas`` entry: it applies when ``name`` is present."""
        child = node.child(sub, "dependentSchemas", name)
        present = self.c.synthetic(node, ("present", name), lambda: {"required": [name]},
                                   "dependentSchemas", name)
        cases: list[_Case] = [((), _NOTHING)]
        cases.extend(((present, *conditions), evaluated)
                     for conditions, evaluated in self._cases(child, keyword, False, seen)
                     if evaluated.evaluates_some(keyword))
        _check(cases)
        return cases


def _product(left: list[_Case], right: list[_Case]) -> list[_Case]:
    """Cases of two parts that both apply: each pair, its conditions and what both evaluate."""
    if len(right) == 1 and not right[0][0]:
        evaluated = right[0][1]
        return [(conditions, e | evaluated) for conditions, e in left]
    combined = [(a + b, x | y) for a, x in left for b, y in right]
    _check(combined)
    return combined


def _check(cases: list[_Case]) -> None:
    if len(cases) > MAX_CASES:
        raise _TooManyCases
