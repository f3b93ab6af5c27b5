"""``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else`` and the dependency keywords.

A combinator is expanded *together with its sibling keywords* (the rest of the list being
compiled), so branches merge structurally with their context: ``{"required": ["a"],
"oneOf": [...]}`` compiles each branch with ``required`` already applied, and an object
branch's properties join the context's. Then, per JSON type:

- ``anyOf``: the union of the branches.
- ``oneOf``: branches that are *disjoint* on a type (different types, disjoint finite value
  sets, a key one branch requires whose values the other allows for it nowhere, or scalar
  languages with an empty intersection) are a plain union; overlapping ones become
  ``Bi ∖ ∪ Bj`` with complements, exact when the parts are regular.
- ``not X``: the context minus (context ∧ X).
- ``if I then T else E``: (context ∧ I ∧ T) ∪ ((context ∧ E) ∖ (context ∧ I)); without
  ``then`` no complement is needed: context ∧ (I ∪ E). Where ``I`` only tests one key
  against a few scalars (``{"properties": {"kind": {"const": "a"}}}``, perhaps under
  ``not``), every such ``if`` on that key is decided at once by cases of what the key
  holds (not an object, absent, each tested value, another value): a union with no
  complement, one case per value however many ``if``s test the key.
- ``dependentRequired``/``dependentSchemas``/``dependencies``: for each key, a two-way
  ``anyOf``: the key is absent, or it is present with its requirements.

A complement needs a regular part (no rule reference). When the context merged with X is
not regular for arrays or objects, the compiler refuses the keyword (or, with ``lenient``,
drops it with a warning). Expansions multiply (``anyOf`` of 3 inside ``anyOf`` of 4 gives
12 lists); beyond ``max_branch_product`` an ``anyOf`` is intersected as a language instead.

>>> from constrain.automaton import Automaton
>>> from constrain.json_compiler import Compiler
>>> from constrain.json_schema import JsonSchemaOptions
>>> s = {"oneOf": [{"type": "integer"}, {"minimum": 2}]}
>>> a = Automaton(Compiler(s, JsonSchemaOptions()).grammar())
>>> [a.matches(t) for t in (b"1", b"2", b"2.5", b'"x"')]
[True, False, True, True]
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .automaton import Automaton, AutomatonOptions
from .errors import ResourceLimitError, UnsupportedSchemaError
from .grammar import NOTHING, Expr, Grammar, alt, intersect
from .json_arrays import counted_array
from .json_literals import canonical, json_type
from .json_nodes import REFERENCES, Node
from .json_typed import JSON_TYPES, NeedsRegular, Typed

if TYPE_CHECKING:
    from .json_compiler import Compiler

__all__ = ["GROUP_KEYWORDS", "Combinators"]

GROUP_KEYWORDS = ("dependentRequired", "dependentSchemas", "dependencies", "anyOf", "oneOf",
                  "if", "not")
"""Keywords expanded here, in this order."""
_GROUP_SET = frozenset(GROUP_KEYWORDS)

_SCALARS = ("null", "boolean", "number", "string")
# Keywords that say nothing about objects (a schema made only of these and "required"/
# "properties" fails for an object exactly when a key fails).
_OBJECT_NEUTRAL = frozenset({
    "type", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "items", "prefixItems",
    "additionalItems", "minItems", "maxItems", "contains", "minContains", "maxContains",
    "uniqueItems", *REFERENCES, "allOf"})
# Keywords that say nothing about arrays (see _element_schemas).
_ARRAY_NEUTRAL = frozenset({
    "type", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "properties", "required",
    "additionalProperties", "patternProperties", "propertyNames", "minProperties",
    "maxProperties", "dependentRequired", "dependentSchemas", "dependencies", *REFERENCES,
    "allOf"})
# Object keywords whose failure is a union of plain object schemas (see _failures).
_FAILURE_KEYWORDS = frozenset({"required", "properties", "dependentRequired", "dependencies",
                               "dependentSchemas", "minProperties", "maxProperties"})
_EMPTINESS_BUDGET = AutomatonOptions(max_states=2_000, max_terms=200_000)


def _same_schema(a: Node, b: Node) -> bool:
    """Whether two sub-schemas surely assert the same: one object in one scope, or equal
    JSON in one dialect with nothing inside that a scope could read differently."""
    if a.schema is b.schema and a.base == b.base and a.scope == b.scope:
        return True
    return (a.dialect is b.dialect and a.schema == b.schema
            and not _scoped(a.schema))


def _scoped(schema: Any) -> bool:
    """Whether a reference or a scope (``$ref``, ``$id``, ...) occurs in ``schema``."""
    if isinstance(schema, dict):
        return any(k in _SCOPE_KEYWORDS or _scoped(v) for k, v in schema.items())
    if isinstance(schema, list):
        return any(_scoped(v) for v in schema)
    return False


_SCOPE_KEYWORDS = frozenset({"$ref", "$dynamicRef", "$recursiveRef", "$id", "id", "$anchor",
                             "$dynamicAnchor", "$recursiveAnchor", "$schema"})


def _spelling(text: str) -> bytes:
    """One JSON spelling of ``text``, the one every escape policy accepts (a lone
    surrogate has none: it is spelt so that no string part accepts it)."""
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")


class Combinators:
    """Expansion of combinators for one :class:`~constrain.json_compiler.Compiler`."""

    def __init__(self, compiler: Compiler) -> None:
        self.c = compiler
        self.refs = compiler.refs
        # Automata of string parts that listed values are tested against (see
        # disjoint), by the part's identity; the part is kept so the id stays its own.
        self._recognizers: dict[int, tuple[Expr, Automaton | None]] = {}

    def expand(self, flat: list[Node], negative: bool) -> Typed | None:
        """The language of ``flat`` if one of its schemas has a combinator, else ``None``."""
        if not any(node.asserts_any(_GROUP_SET) for node in flat):
            return None  # most schemas: one set operation each instead of a lookup a keyword
        for keyword in GROUP_KEYWORDS:
            for node in flat:
                if node.has(keyword):
                    result: Typed = getattr(self, "_" + keyword)(flat, node, negative)
                    return result
        return None

    # -- helpers -------------------------------------------------------------------------

    @staticmethod
    def _rest(flat: list[Node], node: Node, *keywords: str) -> list[Node]:
        return [n.without(*keywords) if n is node else n for n in flat]

    def _product(self, flat: list[Node]) -> int:
        total = 1
        for n in flat:
            total *= max(len(n.get("anyOf", ())), 1) * max(len(n.get("oneOf", ())), 1)
            total *= 2 if n.has("if") else 1
        return total

    # -- dependencies --------------------------------------------------------------------

    def _dependent(self, flat: list[Node], node: Node, keyword: str, negative: bool) -> Typed:
        deps = node.get(keyword)

        def cases() -> dict[str, Any]:
            branches: list[dict[str, Any]] = []
            for key, need in deps.items():
                absent = {"properties": {key: False}}
                if isinstance(need, list):
                    if need:
                        branches.append({"anyOf": [absent, {"required": [key, *need]}]})
                elif need is False:
                    branches.append(absent)
                elif need is not True:
                    branches.append({"anyOf": [absent, {"required": [key], "allOf": [need]}]})
            return {"allOf": branches}

        case_node = self.c.synthetic(node, keyword, cases, keyword)
        return self.c.value(self._rest(flat, node, keyword) + [case_node], negative)

    def _dependentRequired(self, flat: list[Node], node: Node, negative: bool) -> Typed:
        return self._dependent(flat, node, "dependentRequired", negative)

    def _dependentSchemas(self, flat: list[Node], node: Node, negative: bool) -> Typed:
        return self._dependent(flat, node, "dependentSchemas", negative)

    def _dependencies(self, flat: list[Node], node: Node, negative: bool) -> Typed:
        return self._dependent(flat, node, "dependencies", negative)

    # -- anyOf / oneOf -------------------------------------------------------------------

    def _branches(self, node: Node, keyword: str) -> list[Node]:
        return [node.child(b, keyword, i) for i, b in enumerate(node.get(keyword))]

    def _anyOf(self, flat: list[Node], node: Node, negative: bool) -> Typed:
        rest = self._rest(flat, node, "anyOf")
        branches = self._first_present(rest, node) or self._branches(node, "anyOf")
        if self._product(flat) <= self.c.options.max_branch_product:
            return self.refs.union(self.c.value(rest + [b], negative) for b in branches)
        base = self.c.value(rest, negative)
        options = self.refs.union(self.c.value([b], negative) for b in branches)
        try:
            return self.refs.intersect([base, options], negative)
        except NeedsRegular as e:
            self.c.refuse("anyOf", node.pointer + "/anyOf",
                          f"too many branch combinations to merge, and the {e.json_type} "
                          f"branches are not regular", negative)
            return base

    def _first_present(self, rest: list[Node], node: Node) -> list[Node] | None:
        """``anyOf`` of branches that each only require one key ("at least one of these
        keys"), as disjoint branches: each key without the keys before it, in the order
        the object lists its properties. The union is the same, but the plain branches
        overlap, so a state past the first key held one copy of the object's rest per
        branch still open (Github_medium/o21108: eight copies, 3.4 s of steps against
        0.3 s). ``None`` when the branches are not all of that kind."""
        schemas = node.get("anyOf")
        keys: list[str] = []
        for b in schemas:
            asserting = ([k for k in b if k in node.dialect.keywords]
                         if isinstance(b, dict) else None)
            required = b.get("required") if asserting == ["required"] else None
            if not (isinstance(required, list) and len(required) == 1
                    and isinstance(required[0], str)):
                return None
            keys.append(required[0])
        if len(keys) < 2 or len(set(keys)) < len(keys):
            return None
        listed: dict[str, int] = {}
        for n in rest:
            properties = n.get("properties", {})
            for key in properties if isinstance(properties, dict) else ():
                listed.setdefault(key, len(listed))
        order = sorted(range(len(keys)), key=lambda i: listed.get(keys[i], len(listed)))
        branches = []
        for rank, i in enumerate(order):
            before = tuple(keys[j] for j in order[:rank])
            branches.append(self.c.synthetic(
                node, ("first present", keys[i], before),
                lambda k=keys[i], b=before: {"required": [k],
                                             "properties": {x: False for x in b}},
                "anyOf", i))
        return branches

    def _oneOf(self, flat: list[Node], node: Node, negative: bool) -> Typed:
        rest = self._rest(flat, node, "oneOf")
        branches = self._branches(node, "oneOf")
        merged = self._product(flat) <= self.c.options.max_branch_product
        base = None if merged else self.c.value(rest, negative)

        def branch(i: int, polarity: bool, *extra: Node) -> Typed:
            if merged:
                return self.c.value(rest + [branches[i], *extra], polarity)
            return self.c.value([branches[i], *extra], polarity)

        langs = [branch(i, negative) for i in range(len(branches))]
        cuts: dict[int, Typed] = {}

        def cut(j: int) -> Typed:
            if j not in cuts:
                cuts[j] = branch(j, not negative)
            return cuts[j]
        wholes: dict[tuple[int, str], Typed | None] = {}

        def whole(j: int, t: str) -> Typed | None:
            # Branch j's t values read to hold all it accepts (None: refused there).
            if (j, t) not in wholes:
                only = self.c.synthetic(node, ("type", t), lambda: {"type": t}, "oneOf")
                try:
                    wholes[j, t] = branch(j, True, only)
                except UnsupportedSchemaError:
                    wholes[j, t] = None
            return wholes[j, t]

        def apart(i: int, j: int, t: str) -> bool:
            """Whether no t value is in both branches. Where the language is kept, a
            string or number part may be smaller than what its branch accepts (a pattern
            read within two regex dialects, a format's realistic subset, a number's
            policy spellings): each kept part must miss all the other accepts."""
            if not self.disjoint(langs[i], langs[j], t):
                return False
            if negative or t not in ("string", "number"):
                return True
            for mine, other in ((i, j), (j, i)):
                if langs[other].values is None:  # listed values are all it accepts
                    held = whole(other, t)
                    if held is None or not self.disjoint(langs[mine], held, t):
                        return False
            return True
        parts: dict[str, Expr] = {}
        full: set[str] = set()
        for t in JSON_TYPES:
            idx = [i for i, lang in enumerate(langs) if t in lang.parts]
            if not idx:
                continue
            if len(idx) == 1:
                parts[t] = langs[idx[0]].parts[t]
                if t in langs[idx[0]].full:
                    full.add(t)
                continue
            # A branch that says nothing about this type holds every value of it that
            # the others hold: two such branches leave no value valid, and beside one,
            # the others' values are all in two branches (decided here, where a search
            # of their differences' emptiness could exhaust its budget).
            neutral = [i for i in idx if self._neutral(branches[i], t)]
            if len(neutral) > 1:
                continue
            own = neutral or idx
            overlaps = {(i, j) for i, j in itertools.combinations(idx, 2)
                        if (i in own or j in own) and not apart(i, j, t)}
            if t == "object" and overlaps:
                own = self._not_within_others(rest if merged else [], branches, own, idx,
                                              overlaps)
            if not overlaps:
                parts[t] = alt(*(langs[i].parts[t] for i in own))
                continue
            pieces = self._exclusive(langs, own, idx, overlaps, t, negative, False, cut)
            if pieces is None and t == "object" and merged:
                pieces = self._objects_without_others(rest, branches, own, idx, overlaps,
                                                      negative)
            if pieces is None:
                pieces = self._exclusive(langs, own, idx, overlaps, t, negative, True, cut)
            if pieces is None:
                pair = min(overlaps)
                self.c.refuse("oneOf", node.pointer + "/oneOf",
                              f"branches {pair[0]} and {pair[1]} may both accept the same "
                              f"{t} values, and those are recursive or free-form", negative)
                pieces = [langs[i].parts[t] for i in idx]
            if pieces:
                parts[t] = alt(*pieces)
        result = Typed(parts, frozenset(full), _exactly_once(langs),
                       keys=self.refs.union_keys(langs),
                       opaque=frozenset(t for lang in langs for t in lang.opaque if t in parts))
        if base is not None:
            try:
                return self.refs.intersect([base, result], negative)
            except NeedsRegular as e:
                self.c.refuse("oneOf", node.pointer + "/oneOf",
                              f"too many branch combinations to merge, and the {e.json_type} "
                              f"branches are not regular", negative)
                return base
        return result

    def _not_within_others(self, rest: list[Node], branches: list[Node], own: list[int],
                           idx: list[int], overlaps: set[tuple[int, int]]) -> list[int]:
        """``own`` less the branches whose objects all satisfy another branch of ``idx``
        they overlap: such a branch adds no object (its difference is empty, which an
        emptiness search of that difference could spend its whole budget failing to
        show; Github_medium/o25763)."""
        demands: dict[int, tuple[set[str], list[tuple[str, Node]]] | None] = {}
        kept = []
        for i in own:
            for j in idx:
                if j == i or (min(i, j), max(i, j)) not in overlaps:
                    continue
                if j not in demands:
                    demands[j] = self._object_demands(branches[j])
                demand = demands[j]
                if demand is not None and self._objects_within(rest + [branches[i]], demand):
                    break
            else:
                kept.append(i)
        return kept

    def _object_demands(self, node: Node) -> tuple[set[str], list[tuple[str, Node]]] | None:
        """What ``node`` asks of objects where it says only ``required`` and
        ``properties``: the keys it requires and its listed keys' schemas; ``None`` where
        it says more (or takes no objects)."""
        flat = self.c._flatten([node])
        if flat is None:
            return None
        required: set[str] = set()
        values: list[tuple[str, Node]] = []
        for n in flat:
            declared = n.get("type")
            if declared is not None and "object" not in (
                    [declared] if isinstance(declared, str) else declared):
                return None
            for keyword in n.schema:
                if keyword in _OBJECT_NEUTRAL or keyword not in n.dialect.keywords or (
                        keyword in n.skip):
                    continue
                if keyword not in ("required", "properties"):
                    return None
            keys = n.get("required", [])
            if not isinstance(keys, list):
                return None
            required.update(keys)
            values.extend((key, n.child(sub, "properties", key))
                          for key, sub in n.get("properties", {}).items()
                          if sub is not True and sub != {})
        return required, values

    def _objects_within(self, inner: list[Node],
                        demands: tuple[set[str], list[tuple[str, Node]]]) -> bool:
        """Whether every object valid against all of ``inner`` meets ``demands`` (see
        :meth:`_object_demands`), judged from keywords alone (``False`` when unsure):
        ``inner`` requires each key demanded, and for each listed key holds that very
        schema among its own for the key (the same sub-schema, or an equal one without
        references: its values hold there too)."""
        mine = self.c._flatten(inner)
        if mine is None:
            return True  # inner holds nothing
        required: set[str] = set()
        listed: dict[str, list[Node]] = {}
        for n in mine:
            keys = n.get("required", ())
            if isinstance(keys, list):
                required.update(keys)
            for key, sub in n.get("properties", {}).items():
                listed.setdefault(key, []).append(n.child(sub, "properties", key))
        wanted, values = demands
        return wanted <= required and all(
            any(_same_schema(m, v) for m in listed.get(key, ())) for key, v in values)

    def _neutral(self, branch: Node, t: str) -> bool:
        """Whether ``branch`` accepts every object (``t`` is ``"object"``) or every array
        (``"array"``): it says nothing about that type. ``False`` when unsure, and for
        other types (their parts are regular, and cheap to subtract)."""
        if t == "object":
            return self._failures(branch) == []
        if t == "array":
            flat = self.c._flatten([branch])
            return flat is not None and _element_schemas(flat) == []
        return False

    def _exclusive(self, langs: list[Typed], own: list[int], idx: list[int],
                   overlaps: set[tuple[int, int]], t: str, negative: bool, regularize: bool,
                   cut: Any) -> list[Expr] | None:
        """The ``t`` part of each branch in ``own`` minus the branches of ``idx`` it
        overlaps (``cut(j)``: branch j in the opposite polarity); ``None`` if a part is
        not regular (see ``minus``)."""
        pieces = []
        try:
            for i in own:
                left = Typed({t: langs[i].parts[t]}, langs[i].full & {t},
                             opaque=langs[i].opaque & {t})
                for j in idx:
                    if (min(i, j), max(i, j)) not in overlaps:
                        continue
                    piece = self.refs.minus(left, cut(j), t, negative, regularize)
                    if piece is None:
                        break
                    left = Typed({t: piece})
                else:
                    pieces.append(left.parts[t])
        except NeedsRegular:
            return None
        return pieces

    def disjoint(self, a: Typed, b: Typed, t: str) -> bool:
        """Whether no ``t`` value is in both (``False`` when unsure)."""
        if t not in a.parts or t not in b.parts:
            return True
        if a.values is not None and b.values is not None:
            mine = {canonical(v) for v in a.values if json_type(v) == t}
            return not mine & {canonical(v) for v in b.values if json_type(v) == t}
        if t == "object" and a.keys is not None and b.keys is not None:
            for x, y in ((a, b), (b, a)):
                assert x.keys is not None and y.keys is not None
                for key in x.keys.required:
                    if y.keys.forbids(key):
                        return True
                    # A value both may hold where the key is present: x always has it.
                    # Both sides hold all the key may truly hold (a kept value may hold
                    # less: a pattern read within two regex dialects, say).
                    held, other = x.keys.present_values(key), y.keys.present_values(key)
                    if (held is not None and other is not None
                            and all(self.disjoint(held, other, u) for u in JSON_TYPES)):
                        return True
        if t in a.opaque or t in b.opaque:
            return False
        if t not in _SCALARS and a.values is None and b.values is None:
            # Two structured parts: their product is as big as both, and an object's
            # members in schema order are one spelling of many (no verdict from texts).
            return False
        if t == "string" and (a.values is None) != (b.values is None):
            # A few listed strings against a pattern or a format (an enum branch beside a
            # free-text one, cityjson has ~3,000 such pairs): each value's text through
            # the other part's automaton, built once per part, instead of an automaton
            # per pair. One spelling decides: a string part holds every spelling of the
            # strings it accepts, or none.
            listed, other = (a, b) if a.values is not None else (b, a)
            recognizer = self._recognizer(other.parts[t])
            if recognizer is not None:
                try:
                    return not any(recognizer.matches(_spelling(v))
                                   for v in listed.values or () if json_type(v) == t)
                except ResourceLimitError:
                    return False
        return self.is_empty(intersect(a.parts[t], b.parts[t]))

    def _recognizer(self, expr: Expr) -> Automaton | None:
        """An automaton of the string part ``expr`` (``None``: it references rules or is
        over the emptiness budget), memoized per part."""
        found = self._recognizers.get(id(expr))
        if found is None:
            automaton = None
            if not self.refs.has_ref(expr):
                try:
                    automaton = Automaton(Grammar.single(expr), _EMPTINESS_BUDGET)
                except ResourceLimitError:
                    pass
            found = self._recognizers[id(expr)] = (expr, automaton)
        return found[1]

    def is_empty(self, expr: Expr) -> bool:
        """Whether the regular language ``expr`` is empty (``False`` when unsure)."""
        if self.refs.has_ref(expr):
            return False  # scalar parts never reference rules but in a recursion's middle
        try:
            return Automaton(Grammar.single(expr), _EMPTINESS_BUDGET).start == Automaton.DEAD
        except ResourceLimitError:
            return False

    # -- not / if ------------------------------------------------------------------------

    def _objects_without_others(self, rest: list[Node], branches: list[Node], own: list[int],
                                idx: list[int], overlaps: set[tuple[int, int]],
                                negative: bool) -> list[Expr] | None:
        """Object parts of each ``oneOf`` branch in ``own`` minus the branches of ``idx``
        it overlaps, built structurally (see :meth:`_objects_without`)."""
        pieces = []
        for i in own:
            others = [branches[j] for j in idx if (min(i, j), max(i, j)) in overlaps]
            piece = self._objects_without(rest + [branches[i]], others, negative)
            if piece is None:
                return None
            pieces.append(piece)
        return pieces

    def _objects_without(self, context: list[Node], removed: list[Node],
                         negative: bool) -> Expr | None:
        """The objects of ``context`` that fail every schema in ``removed``, when each of
        those only says which keys are required and what listed keys' values are.

        Failing such a schema means one of: a required key is absent, or a listed key is
        present with a value its schema rejects. Each case is one more schema merged into
        the context, so values may be recursive or free-form (no complement of a rule is
        needed). ``None`` when a removed schema says more (counts, extra keys...).
        """
        cases = []
        for r in removed:
            failures = self._failures(r)
            if failures is None:
                return None
            cases.append(failures)
        combinations = 1
        for failures in cases:
            combinations *= max(len(failures), 1)
        if combinations > self.c.options.max_branch_product:
            return None
        parts = []
        for combo in itertools.product(*cases):
            part = self.c.value(context + list(combo), negative).parts.get("object")
            if part is not None:
                parts.append(part)
        return alt(*parts)

    def _arrays_without(self, context: list[Node], removed: Node,
                        negative: bool) -> Expr | None:
        """The arrays of ``context`` that fail ``removed``, when both say of arrays only
        what every element must be (``items`` as one schema): arrays of the context's
        elements of which at least one fails ``removed``'s items. Each element is a merge
        of schemas, so it may be recursive or free-form: the failing one is
        ``{"not": items}`` merged into the context's element, an object's or a scalar's
        complement again (an object's built from its failures, see
        :meth:`_objects_without`), not a complement of the whole array. ``None`` where
        either says more about arrays (counts, positions, ``contains``, a combinator).
        """
        flat_context = self.c._flatten(context)
        flat_removed = self.c._flatten([removed])
        if flat_context is None or flat_removed is None:
            return None
        elements = _element_schemas(flat_context)
        counts: dict[str, int] = {}
        tests = _element_schemas(flat_removed, counts)
        if elements is None or tests is None:
            return None
        syn = self.c.syn
        failures: list[Expr] = []
        if tests:
            passing = self.c.value(elements + tests, negative)
            failing = self.refs.union(
                self.c.value(elements + [self.c.synthetic(
                    test, "fails", lambda test=test: {"not": test.schema}, "not")], negative)
                for test in tests)
            # Disjoint parts: the elements before the first failing one pass every test.
            failures.append(counted_array(syn, passing.expr(), failing.expr(), 1, None))
        low, high = counts.get("minItems", 0), counts.get("maxItems")
        if low > 0 or high is not None:
            # Too few or too many elements, whatever they are: counted, not complemented
            # ({"not": {"maxItems": 10**30}} spent its liveness budget, 6 s, as a complement).
            element = self.c.value(elements, negative).expr()
            if low > 0:
                failures.append(counted_array(syn, NOTHING, element, 0, low - 1))
            if high is not None:
                failures.append(counted_array(syn, NOTHING, element, high + 1, None))
        return alt(*failures)  # none: every array passes

    def _failures(self, node: Node) -> list[Node] | None:
        """Schemas whose union is "an object that fails ``node``" (see
        :meth:`_objects_without`), or ``None``.

        Failing ``required`` is a key absent; ``properties``, a listed key present with a
        value its schema rejects; ``dependentRequired`` (and array-valued
        ``dependencies``), a key present and one it depends on absent;
        ``dependentSchemas`` (and schema-valued ``dependencies``), a key present and the
        object failing its schema, where that schema's failures are of these kinds too;
        ``minProperties`` and ``maxProperties``, the count on the other side."""
        flat = self.c._flatten([node])
        if flat is None:  # node is false: every object fails it
            return [node.synthetic(True)]
        out: list[Node] = []
        for n in flat:
            declared = n.get("type")
            if declared is not None and "object" not in (
                    [declared] if isinstance(declared, str) else declared):
                return [node.synthetic(True)]
            active = set()
            for keyword in n.schema:
                if keyword in _OBJECT_NEUTRAL or keyword not in n.dialect.keywords or (
                        keyword in n.skip):
                    continue
                if keyword not in _FAILURE_KEYWORDS or (
                        keyword in ("dependencies", "dependentSchemas") and not all(
                            isinstance(sub, list)
                            or self._failures(n.child(sub, keyword, key)) is not None
                            for key, sub in n.get(keyword).items())):
                    return None
                active.add(keyword)
            for keyword in ("dependentRequired", "dependencies", "dependentSchemas"):
                for key, deps in n.get(keyword, {}).items() if keyword in active else ():
                    if not isinstance(deps, list):
                        # The key present and the object failing its schema: that `not`
                        # is built from the schema's failures in turn (checked above).
                        out.append(self.c.synthetic(
                            n, ("dependent", keyword, key),
                            lambda k=key, v=deps: {"required": [k], "not": v}, keyword, key))
                        continue
                    for dep in deps:
                        out.append(self.c.synthetic(
                            n, ("dependent", keyword, key, dep),
                            lambda k=key, d=dep: {"required": [k], "properties": {d: False}},
                            keyword, key))
            low = n.get("minProperties", 0) if "minProperties" in active else 0
            if low > 0:
                out.append(self.c.synthetic(n, ("fewer", low),
                                            lambda m=low - 1: {"maxProperties": m},
                                            "minProperties"))
            if "maxProperties" in active:
                high = n.get("maxProperties")
                out.append(self.c.synthetic(n, ("more", high),
                                            lambda m=high + 1: {"minProperties": m},
                                            "maxProperties"))
            for key in n.get("required", ()):
                out.append(self.c.synthetic(n, ("absent", key),
                                            lambda k=key: {"properties": {k: False}},
                                            "required"))
            for key, sub in n.get("properties", {}).items():
                out.append(self.c.synthetic(
                    n, ("invalid", key),
                    lambda k=key, v=sub: {"required": [k], "properties": {k: {"not": v}}},
                    "properties", key))
        return out

    def _not(self, flat: list[Node], node: Node, negative: bool) -> Typed:
        rest = self._rest(flat, node, "not")
        excluded = node.child(node.get("not"), "not")
        base = self.c.value(rest, negative)
        cut = self.c.value(rest + [excluded], not negative)
        return self._difference(base, cut, "not", excluded.pointer, negative,
                                lambda: self._objects_without(rest, [excluded], negative),
                                lambda: self._arrays_without(rest, excluded, negative))

    def _if(self, flat: list[Node], node: Node, negative: bool) -> Typed:
        test = _key_test(node)
        if test is not None:
            return self._split_on_key(flat, test.key, negative)
        rest = self._rest(flat, node, "if", "then", "else")
        condition = node.child(node.get("if"), "if")
        then = node.child(node.get("then"), "then") if node.has("then") else None
        other = node.child(node.get("else"), "else") if node.has("else") else None
        if then is None and other is None:
            return self.c.value(rest, negative)
        if then is None:
            assert other is not None
            return self.refs.union([self.c.value(rest + [condition], negative),
                                    self.c.value(rest + [other], negative)])
        chosen = self.c.value(rest + [condition, then], negative)
        otherwise = self.c.value(rest + ([other] if other is not None else []), negative)
        cut = self.c.value(rest + [condition], not negative)
        kept = rest + ([other] if other is not None else [])
        return self.refs.union([chosen, self._difference(
            otherwise, cut, "if", condition.pointer, negative,
            lambda: self._objects_without(kept, [condition], negative),
            lambda: self._arrays_without(kept, condition, negative))])

    def _split_on_key(self, flat: list[Node], key: str, negative: bool) -> Typed:
        """Every ``if`` in ``flat`` that tests property ``key`` against a few scalars (see
        :func:`_key_test`), as a union over what ``key`` holds: a value that is not an
        object, an object without ``key``, each tested value, any other value. In each
        case every condition is known to pass or fail, so each ``if`` is its ``then`` or
        its ``else`` and nothing is complemented. The cases are as many as the values,
        where expanding the conditions one by one makes three lists per ``if`` and
        multiplies them (23 ``if``s on one discriminating key are common in SchemaStore).
        """
        group: list[tuple[Node, _KeyTest]] = []
        for n in flat:
            test = _key_test(n)
            if test is not None and test.key == key:
                group.append((n, test))
        members = [n for n, _ in group]
        rest = [n.without("if", "then", "else") if any(n is m for m in members) else n
                for n in flat]
        values: dict[Any, Any] = {}
        for _, test in group:
            values.update(test.values)
        anchor = members[0]

        def case(label: Any, make: Any, passes: Any) -> Typed:
            chosen = []
            for n, test in group:
                branch = "then" if passes(test) else "else"
                if n.has(branch):
                    chosen.append(n.child(n.get(branch), branch))
            where = self.c.synthetic(anchor, ("if", key, label), make, "if")
            return self.c.value(rest + [where] + chosen, negative)

        # Cases the context rules out are left out, so as not to expand the branches of
        # a case that is empty anyway (the context merges with it only after expansion).
        # That matters most for else-if chains on one key: inside the case where the key
        # holds "a", the next `if` on the key has one case left instead of all of them.
        known = _KeyContext.of(rest, key)
        cases = []
        if not known.objects_only:
            cases.append(case("not an object", lambda: {
                "type": [t for t in JSON_TYPES if t != "object"]},
                lambda test: test.on_non_object()))
        if not known.required:
            cases.append(case("absent", lambda: {"type": "object", "properties": {key: False}},
                              lambda test: test.on_absent()))
        if not known.absent:
            for c, v in values.items():
                if known.may_be(c):
                    cases.append(case(("is", c), lambda v=v: {
                        "type": "object", "required": [key],
                        "properties": {key: {"enum": [v]}}},
                        lambda test, c=c: test.on_value(c)))
            if known.allowed is None or not known.allowed <= values.keys():
                cases.append(case(("other", frozenset(values)), lambda: {
                    "type": "object", "required": [key],
                    "properties": {key: {"not": {"enum": list(values.values())}}}},
                    lambda test: test.on_other()))
        return self.refs.union(cases)

    def _difference(self, base: Typed, cut: Typed, keyword: str, pointer: str,
                    negative: bool, objects: Any = None, arrays: Any = None) -> Typed:
        """``base`` minus ``cut`` per type; ``objects()`` and ``arrays()`` may build the
        object and array parts structurally when they are not regular."""
        parts: dict[str, Expr] = {}
        for t in base.types:
            try:
                part = self.refs.minus(base, cut, t, negative, regularize=False)
            except NeedsRegular:
                part = objects() if t == "object" and objects is not None else None
                if t == "array" and arrays is not None:
                    part = arrays()
                if part is None:
                    try:
                        part = self.refs.minus(base, cut, t, negative)
                    except NeedsRegular:
                        self.c.refuse(keyword, pointer, f"its {t} part is recursive or "
                                      "free-form (has no regular complement)", negative)
                        part = base.parts[t]
            if part is not None:
                parts[t] = part
        return Typed(parts, frozenset(t for t in parts if t in base.full and t not in cut.parts),
                     keys=base.keys, opaque=frozenset(t for t in parts if t in base.opaque))


@dataclass(frozen=True)
class _KeyTest:
    """An ``if`` that only tests one property against a few scalar values."""

    key: str
    values: dict[Any, Any]
    """The values tested, by :func:`canonical` key."""
    required: bool
    """An object without the key fails (``"required": [key]``); else it passes."""
    objects_only: bool
    """A value that is not an object fails (``"type": "object"``); else it passes."""
    negated: bool = False
    """The test is ``{"not": ...}`` of the one described."""

    def on_non_object(self) -> bool:
        return self.objects_only == self.negated

    def on_absent(self) -> bool:
        return self.required == self.negated

    def on_value(self, value: Any) -> bool:
        return (value in self.values) != self.negated

    def on_other(self) -> bool:
        return self.negated


_SCALAR_VALUES = (type(None), bool, int, float, str)


def _element_schemas(flat: list[Node], counts: dict[str, int] | None = None) -> list[Node] | None:
    """What every element of an array must satisfy, where the schemas ``flat`` say
    nothing else of arrays (``items`` as one schema; other keywords only about other
    types) but, given ``counts``, ``minItems`` and ``maxItems``, merged into it; ``None``
    where they do, or allow no array at all."""
    out = []
    for n in flat:
        declared = n.get("type")
        if declared is not None and "array" not in (
                [declared] if isinstance(declared, str) else declared):
            return None
        for keyword in n.schema:
            if keyword in _ARRAY_NEUTRAL or keyword not in n.dialect.keywords or (
                    keyword in n.skip):
                continue
            if counts is not None and keyword in ("minItems", "maxItems"):
                bound = int(n.get(keyword))
                known = counts.get(keyword)
                counts[keyword] = bound if known is None else (
                    max(known, bound) if keyword == "minItems" else min(known, bound))
                continue
            if keyword != "items" or isinstance(n.get("items"), list):
                return None
        if n.has("items"):
            out.append(n.child(n.get("items"), "items"))
    return out


def _listed_values(schema: Any, keywords: frozenset[str]) -> list[Any] | None:
    """The values of a schema that is only ``const`` or ``enum`` (and annotations)."""
    if not isinstance(schema, dict) or any(
            k not in ("const", "enum") for k in schema if k in keywords):
        return None
    if ("const" in schema) == ("enum" in schema):
        return None
    values = [schema["const"]] if "const" in schema else schema["enum"]
    return values if isinstance(values, list) else None


@dataclass
class _KeyContext:
    """What the schemas merged around a split say about its key, read where plain."""

    objects_only: bool = False
    required: bool = False
    absent: bool = False
    allowed: set[Any] | None = None
    """The values the key may hold (:func:`canonical` keys); ``None``: not known."""
    excluded: set[Any] = field(default_factory=set)

    @classmethod
    def of(cls, nodes: list[Node], key: str) -> _KeyContext:
        known = cls()
        for n in nodes:
            known.objects_only |= n.get("type") in ("object", ["object"])
            required = n.get("required", ())
            known.required |= isinstance(required, list) and key in required
            properties = n.get("properties")
            if not isinstance(properties, dict) or key not in properties:
                continue
            value_schema = properties[key]
            if value_schema is False:
                known.absent = True
                continue
            keywords = n.dialect.keywords
            listed = _listed_values(value_schema, keywords)
            if listed is not None:
                mine = {canonical(v) for v in listed}
                known.allowed = mine if known.allowed is None else known.allowed & mine
            elif isinstance(value_schema, dict) and all(
                    k == "not" for k in value_schema if k in keywords):
                listed = _listed_values(value_schema.get("not"), keywords)
                if listed is not None:
                    known.excluded |= {canonical(v) for v in listed}
        return known

    def may_be(self, value: Any) -> bool:
        return (self.allowed is None or value in self.allowed) and value not in self.excluded


def _key_test(node: Node) -> _KeyTest | None:
    """``node``'s ``if`` as a :class:`_KeyTest`, when it is one: ``{"properties": {key:
    {"const": v}}}``, or ``"enum"`` for ``"const"``, with ``"required": [key]``,
    ``"type": "object"`` and a ``"type"`` beside the values allowed, any annotation, or
    ``{"not": ...}`` of such a test."""
    schema = node.get("if")
    keywords = node.dialect.keywords
    negated = False
    while isinstance(schema, dict) and "not" in schema and not any(
            k in keywords for k in schema if k != "not"):
        schema, negated = schema["not"], not negated
    if not isinstance(schema, dict):
        return None
    if any(k not in ("properties", "required", "type") for k in schema if k in keywords):
        return None
    properties = schema.get("properties")
    required = schema.get("required", [])
    kind = schema.get("type", "object")
    if not isinstance(properties, dict) or len(properties) != 1 or not isinstance(
            required, list) or kind not in ("object", ["object"]):
        return None
    ((key, value_schema),) = properties.items()
    if any(r != key for r in required) or not isinstance(value_schema, dict):
        return None
    candidates = _listed_values({k: v for k, v in value_schema.items() if k != "type"},
                                keywords)
    if candidates is None or not all(isinstance(v, _SCALAR_VALUES) for v in candidates):
        return None
    if "type" in value_schema:  # the values of another type fail the condition
        checked = node.child(value_schema, "if", "properties", key)
        candidates = [v for v in candidates if node.dialect.is_valid(checked, v)]
    return _KeyTest(key, {canonical(v): v for v in candidates}, bool(required),
                    "type" in schema, negated)


def _exactly_once(langs: list[Typed]) -> tuple[Any, ...] | None:
    """The values in exactly one branch, when every branch is a finite set."""
    if any(lang.values is None for lang in langs):
        return None
    counts: dict[Any, int] = {}
    first: dict[Any, Any] = {}
    for lang in langs:
        for key in {canonical(v): None for v in lang.values or ()}:
            counts[key] = counts.get(key, 0) + 1
        for v in lang.values or ():
            first.setdefault(canonical(v), v)
    return tuple(first[k] for k, n in counts.items() if n == 1)



