"""Languages of JSON values split by JSON type, and their Boolean algebra.

The JSON Schema compiler represents what a (sub-)schema accepts as a :class:`Typed`: one
text-level IR expression per JSON type (``null``, ``boolean``, ``number``, ``string``,
``array``, ``object``). Splitting by type is what makes ``not``, ``oneOf`` and ``if`` exact
in practice: the scalar parts are always regular, so they intersect and complement as
automata, while an array or object part that references a rule (recursion, or a free-form
value of unbounded depth) can still be combined whenever the other side leaves that type
alone (absent, or the whole type).

Every part uses the same whitespace and escape policy and accepts object members in any
order, so two parts accept the same text exactly when the parsed values are the same:
intersection and complement of text languages are intersection and complement of value
sets.

>>> from constrain.grammar import literal
>>> t = Typed({"null": literal("null"), "string": literal('"a"')}, frozenset({"null"}))
>>> t.types, t.only("string").types
(('null', 'string'), ('string',))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, cast

from .grammar import Alt, Expr, alt, complement, contents, intersect

__all__ = ["EMPTY_TYPED", "JSON_TYPES", "LazyKeyValues", "NeedsRegular", "ObjectKeys", "RefTracker",
           "Typed"]

JSON_TYPES = ("null", "boolean", "number", "string", "array", "object")
"""JSON types in the order their alternatives are listed."""


class NeedsRegular(Exception):
    """An intersection or complement was asked of a part that references a rule.

    Internal: the compiler catches it and raises :class:`~constrain.errors.UnsupportedSchemaError`
    naming the keyword that needed it.
    """

    def __init__(self, json_type: str) -> None:
        self.json_type = json_type
        super().__init__(f"the {json_type} part references a rule")


@dataclass(frozen=True)
class ObjectKeys:
    """Facts about an object part: the values of its required listed keys, the listed keys
    it forbids (no value allowed), and whether unlisted keys are forbidden (``closed``)."""

    required: Mapping[str, Typed]
    allowed: frozenset[str]
    forbidden: frozenset[str]
    closed: bool
    value_of: Callable[[str], Typed | None] | None = field(default=None, compare=False)
    """When known: the values ``key`` may hold where it is present (listed or not), never
    fewer than it truly may (``None``: not known); made when asked."""

    def forbids(self, key: str) -> bool:
        return key in self.forbidden or (self.closed and key not in self.allowed)

    def present_values(self, key: str) -> Typed | None:
        """The values ``key`` may hold where present, never fewer than it truly may (the
        other side of a disjointness proof); ``None``: not known."""
        if self.value_of is not None:
            return self.value_of(key)
        return self.required.get(key)


class LazyKeyValues(Mapping[str, "Typed"]):
    """:attr:`ObjectKeys.required` where the keys are known before their values: each
    value is made by ``values_of(key)`` when first asked (``fallback`` where that says
    ``None``: not known, so any value)."""

    def __init__(self, keys: Iterable[str], values_of: Callable[[str], Typed | None],
                 fallback: Typed) -> None:
        self._keys = tuple(keys)
        self._values_of = values_of
        self._fallback = fallback
        self._made: dict[str, Typed] = {}

    def __getitem__(self, key: str) -> Typed:
        found = self._made.get(key)
        if found is None:
            if key not in self._keys:
                raise KeyError(key)
            found = self._made[key] = self._values_of(key) or self._fallback
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


_NO_TYPES: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Typed:
    """Per-type text languages; ``full`` names the parts that are the whole type."""

    parts: Mapping[str, Expr]
    full: frozenset[str] = _NO_TYPES  # shared, not a factory call per value
    values: tuple[Any, ...] | None = None
    """When known: the finite list of values (the parts are exactly their literals)."""
    keys: ObjectKeys | None = None
    """When known: what the object part says about some keys (for disjointness checks)."""
    opaque: frozenset[str] = _NO_TYPES
    """Parts that could not be built as regular languages and stand in as their whole type
    (only in negative position, where a larger language is the safe side)."""
    call: Expr | None = None
    """When set: a rule reference whose language is the union of the parts, which
    :meth:`expr` gives instead of the union (any JSON value: ``json.value``). Decoding the
    value then enters the rule on a stack frame of its own, so the states inside it are
    the same wherever it occurs; inlined, they were derived again in front of each
    place's continuation (an unlisted key's value, after every set of keys written)."""

    @property
    def types(self) -> tuple[str, ...]:
        """The JSON types with a non-empty part, in :data:`JSON_TYPES` order."""
        return tuple(t for t in JSON_TYPES if t in self.parts)

    @cached_property
    def _union(self) -> Expr:
        return alt(*(self.parts[t] for t in self.types)) if self.parts else Alt(())

    def expr(self) -> Expr:
        """The union of all parts (the empty language when there are none), or
        :attr:`call`; the same object on every call, so memos keyed by identity keep
        working."""
        return self._union if self.call is None else self.call

    def only(self, *types: str) -> Typed:
        """The parts of the given types."""
        return Typed({t: e for t, e in self.parts.items() if t in types},
                     frozenset(t for t in self.full if t in types),
                     keys=self.keys if "object" in types else None,
                     opaque=frozenset(t for t in self.opaque if t in types))

    def is_empty(self) -> bool:
        return not self.parts


EMPTY_TYPED = Typed({}, values=())


class RefTracker:
    """Memoized "does this expression reference a rule" (by node identity)."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Expr, bool]] = {}
        self.regular: Callable[[Expr, bool], Expr] | None = None
        """``regular(expr, over)``: a regular stand-in for ``expr`` (a superset when
        ``over``, else a subset), or :class:`NeedsRegular`; without it parts that reference
        rules cannot be intersected or complemented."""

    def mark(self, expr: Expr, has_ref: bool) -> Expr:
        """Record what the caller knows (it built ``expr`` from parts it checked), so that
        large new structures are not walked again."""
        self._memo.setdefault(id(expr), (expr, has_ref))
        return expr

    def _regular(self, expr: Expr, over: bool, json_type: str) -> Expr:
        if not self.has_ref(expr):
            return expr
        if self.regular is None:
            raise NeedsRegular(json_type)
        try:
            return self.regular(expr, over)
        except NeedsRegular:
            raise NeedsRegular(json_type) from None

    def has_ref(self, expr: Expr) -> bool:
        found = self._memo.get(id(expr))
        if found is not None:
            return found[1]
        return contents(expr)[1]

    def union(self, items: Iterable[Typed]) -> Typed:
        """Values accepted by any item."""
        items = list(items)
        parts: dict[str, list[Expr]] = {}
        whole: dict[str, Expr] = {}
        for item in items:
            for t, e in item.parts.items():
                if t in item.full:
                    whole.setdefault(t, e)
                parts.setdefault(t, []).append(e)
        merged = {t: whole.get(t) or alt(*_dedupe(es)) for t, es in parts.items()}
        values: tuple[Any, ...] | None = None
        if all(i.values is not None for i in items):
            values = tuple(v for i in items for v in i.values or ())
        opaque = frozenset(t for i in items for t in i.opaque)
        return Typed(merged, frozenset(whole) - opaque, values,
                     keys=self.union_keys(items), opaque=opaque)

    def union_keys(self, items: list[Typed]) -> ObjectKeys | None:
        """What every object part of ``items`` says (``None`` if one says nothing): the
        keys all require, with the union of their values, and the keys all forbid, so
        that a ``oneOf`` of ``anyOf`` branches still sees a key one side requires and the
        other forbids."""
        objects = [i for i in items if "object" in i.parts]
        if not objects or any(i.keys is None or "object" in i.opaque for i in objects):
            return None
        if len(objects) == 1:
            return objects[0].keys
        facts = [cast(ObjectKeys, i.keys) for i in objects]
        required = {
            key: self.union(f.required[key] for f in facts)
            for key in facts[0].required if all(key in f.required for f in facts[1:])}
        allowed = frozenset().union(*(f.allowed for f in facts))
        candidates = allowed.union(*(f.forbidden for f in facts))
        forbidden = frozenset(key for key in candidates if all(f.forbids(key) for f in facts))
        value_of = None
        if all(f.value_of is not None for f in facts):
            def value_of(key: str) -> Typed | None:
                values = [f.present_values(key) for f in facts]
                return None if None in values else self.union(cast(list[Typed], values))
        return ObjectKeys(required, allowed - forbidden, forbidden,
                          all(f.closed for f in facts), value_of)

    def intersect(self, items: Iterable[Typed], negative: bool = False) -> Typed:
        """Values accepted by every item. Partial parts that reference rules are replaced by
        regular subsets (supersets when ``negative``); :class:`NeedsRegular` if that is not
        possible. An opaque part leaves the others."""
        items = list(items)
        if not items:
            raise ValueError("intersection of nothing")
        common = set(items[0].parts)
        for item in items[1:]:
            common &= set(item.parts)
        parts: dict[str, Expr] = {}
        full: set[str] = set()
        opaque: set[str] = set()
        for t in common:
            if any(t in i.opaque for i in items):
                opaque.add(t)
            partial = _dedupe([i.parts[t] for i in items if t not in i.full and t not in i.opaque])
            if not partial:
                parts[t] = next(i.parts[t] for i in items)
                if t not in opaque:
                    full.add(t)
            elif len(partial) == 1:
                parts[t] = partial[0]
            else:
                parts[t] = intersect(*(self._regular(e, negative, t) for e in partial))
        return Typed(parts, frozenset(full), keys=_intersect_keys(items),
                     opaque=frozenset(opaque))

    def difference(self, base: Typed, removed: Typed, negative: bool = False) -> Typed:
        """Values of ``base`` not accepted by ``removed``.

        ``removed`` must already be restricted to ``base`` where that matters (its parts
        may be larger than ``base``'s, never smaller on values ``base`` accepts). Raises
        :class:`NeedsRegular` for the first type that cannot be done; see :meth:`minus`.
        """
        parts: dict[str, Expr] = {}
        for t in base.parts:
            part = self.minus(base, removed, t, negative)
            if part is not None:
                parts[t] = part
        full = frozenset(t for t in parts if t in base.full and t not in removed.parts)
        opaque = frozenset(t for t in parts if t in base.opaque)
        return Typed(parts, full, keys=base.keys, opaque=opaque)

    def minus(self, base: Typed, removed: Typed, t: str, negative: bool = False,
              regularize: bool = True) -> Expr | None:
        """The ``t`` part of ``base`` minus ``removed`` (``None``: empty). Parts that
        reference rules are replaced by regular stand-ins on the safe side (``base`` kept,
        ``removed`` complemented; sides swap when the result itself is ``negative``) if
        ``regularize``, else :class:`NeedsRegular` is raised."""
        e = base.parts.get(t)
        if e is None or t in removed.full:
            return None
        if t not in removed.parts:
            return e
        if t in removed.opaque:
            raise NeedsRegular(t)
        if t in base.opaque:
            return e  # already a stand-in for "larger than needed"
        cut = removed.parts[t]
        if not regularize and (self.has_ref(e) or self.has_ref(cut)):
            raise NeedsRegular(t)
        return intersect(self._regular(e, negative, t),
                         complement(self._regular(cut, not negative, t)))


def _intersect_keys(items: list[Typed]) -> ObjectKeys | None:
    """What any object part of ``items`` says holds for all of them together: every
    item's required keys, a key forbidden where one item forbids it, and a key's values
    where present from the first item that knows them (each a superset of the truth)."""
    facts = [i.keys for i in items if i.keys is not None]
    if len(facts) <= 1:
        return facts[0] if facts else None
    required: dict[str, Typed] = {}
    for f in facts:
        for key, value in f.required.items():
            required.setdefault(key, value)
    closing = [f.allowed for f in facts if f.closed]
    allowed = (frozenset.intersection(*closing) if closing
               else frozenset().union(*(f.allowed for f in facts)))
    forbidden = frozenset().union(*(f.forbidden for f in facts))

    def value_of(key: str) -> Typed | None:
        return next((v for v in (f.present_values(key) for f in facts) if v is not None),
                    None)
    return ObjectKeys(required, allowed - forbidden, forbidden, bool(closing), value_of)


def _dedupe(items: list[Expr]) -> list[Expr]:
    seen: set[int] = set()
    out = []
    for e in items:
        if id(e) not in seen:
            seen.add(id(e))
            out.append(e)
    return out

