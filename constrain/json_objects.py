"""JSON objects: merging object keywords and building exact member-order languages.

**What is merged.** The object keywords of every schema in an ``allOf`` (after ``$ref``) are
merged into one :class:`ObjectSpec`, keeping each schema's own ``additionalProperties``
scope: a key's value must satisfy every ``properties`` entry for it, every matching
``patternProperties`` schema, and the ``additionalProperties`` of each schema in which it
is neither listed nor matched. Keys that are not listed anywhere are split into *regions*
by the set of patterns they match (at most :data:`MAX_REGIONS`).

**Member order.** A JSON object is a sequence of members; the parsed value does not depend
on their order. The ``"any"`` order accepts the members in every order, listed keys at most
once, required keys exactly once, and the number of members within
``minProperties``..``maxProperties``. Where the count says nothing beyond the keys (the
usual case), this is an automaton over the set of keys written so far whose nodes are
:class:`~constrain.grammar.Lazy`: built when decoding first reaches them, so any number of
keys, required or not, costs only the sets actually written, and values may be rules
(recursion, free-form values). Past :data:`MAX_SUBSET_KEYS` listed keys only the required
ones are tracked and the others may repeat (``"repeatable"``), so that the orders of
optional keys do not each make states of their own. Duplicate names are valid JSON;
Python's ``json`` (like most parsers) keeps the last one and every occurrence's value is
checked, so the parsed object still validates; it is also a superset of the exact language,
hence safe where a language is complemented. Two counts need no counting: at most one
member (``maxProperties`` 1: one member of any key, or of the required one) and at least
one with no upper bound that counts (``minProperties`` 1: the set automaton above, without
the empty object), so values may be rules there whatever the keys. When members are
counted otherwise, the set automaton
is explicit up to :data:`MAX_SUBSET_KEYS` keys (at most :data:`MAX_COUNTED_STATES` nodes);
beyond, it is the ``"repeatable"`` order, and only where that cannot be exact
(``minProperties`` above the required keys, or more than :data:`MAX_REQUIRED_KEYS`
required keys) is the language an intersection of one explicit automaton per group of
:data:`GROUP_KEYS` keys and a counting language, which needs regular values unless the
automaton supports references that stay aligned across the intersected languages
(:func:`refs_in_intersection_supported`). ``"schema"`` (option
``property_order="schema"``) wants listed keys in schema order (first appearance across the
merged schemas) with unlisted keys anywhere between them.

Keys that are not listed are not checked for duplicates (no regular language can compare
arbitrary keys); Python's ``json`` keeps the last duplicate, and every duplicate's value is
checked, so accepted text still validates unless ``minProperties`` counts a duplicate.

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar, literal
>>> from constrain.json_syntax import JsonSyntax, whitespace_gap
>>> syn = JsonSyntax(whitespace_gap(0))
>>> a_b = [Member(k, literal("1"), required=(k == "a")) for k in "ab"]
>>> a = Automaton(Grammar.single(object_language(syn, a_b, [], 0, None)))
>>> [a.matches(s) for s in (b'{"b":1,"a":1}', b'{"a":1}', b'{"b":1}', b'{"a":1,"a":1}')]
[True, True, False, False]
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import cast

from .grammar import (
    ANY_CHAR,
    EMPTY,
    NOTHING,
    Expr,
    Lazy,
    Seq,
    alt,
    complement,
    intersect,
    literal,
    prefix_tree,
    repeat,
    seq,
    star,
)
from .json_nodes import Node
from .json_syntax import JsonSyntax

__all__ = [
    "MAX_REGIONS",
    "MAX_SUBSET_KEYS",
    "Member",
    "ObjectSpec",
    "key_region",
    "object_language",
    "refs_in_intersection_supported",
]

MAX_REGIONS = 64
"""Key regions (sets of ``patternProperties`` patterns a key can match together) one object
may have; patterns that cannot match the same key do not multiply them."""

MAX_SUBSET_KEYS = 8
"""Objects with at most this many listed keys track every listed key (each at most once);
larger ones track the required keys only and let optional ones repeat."""

GROUP_KEYS = 6

MAX_REQUIRED_KEYS = 12
"""Required keys the ``"repeatable"`` order tracks in one explicit automaton when members
are also counted (beyond, an intersection of groups). Uncounted objects have no limit."""

MAX_COUNTED_STATES = 1024
"""Nodes allowed for an explicit automaton that also counts unlisted members
(``minProperties``/``maxProperties`` with extra keys)."""

_OBJECT_KEYWORDS = ("properties", "patternProperties", "additionalProperties", "required",
                    "propertyNames", "minProperties", "maxProperties")


@dataclass
class _Additional:
    """One schema's ``additionalProperties`` and the keys it does not apply to."""

    listed: frozenset[str]
    patterns: tuple[str, ...]
    node: Node


@dataclass
class ObjectSpec:
    """The object keywords of several schemas, merged (see the module docstring)."""

    properties: dict[str, list[Node]] = field(default_factory=dict)
    patterns: dict[str, list[Node]] = field(default_factory=dict)
    additional: list[_Additional] = field(default_factory=list)
    required: dict[str, None] = field(default_factory=dict)
    names: list[Node] = field(default_factory=list)
    min_properties: int = 0
    max_properties: int | None = None

    @classmethod
    def merge(cls, nodes: Sequence[Node], strict_additional: bool = False) -> ObjectSpec:
        spec = cls()
        explicit_additional = False
        for node in nodes:
            props = node.get("properties", {})
            pats = node.get("patternProperties", {})
            for key, sub in props.items():
                spec.properties.setdefault(key, []).append(
                    node.child(sub, "properties", key))
            for pattern, sub in pats.items():
                spec.patterns.setdefault(pattern, []).append(
                    node.child(sub, "patternProperties", pattern))
            if node.has("additionalProperties"):
                explicit_additional = True
                spec.additional.append(_Additional(
                    frozenset(props), tuple(pats),
                    node.child(node.get("additionalProperties"), "additionalProperties")))
            for key in node.get("required", []):
                spec.required[key] = None
            if node.has("propertyNames"):
                spec.names.append(node.child(node.get("propertyNames"), "propertyNames"))
            spec.min_properties = max(spec.min_properties, node.get("minProperties", 0))
            if node.has("maxProperties"):
                high = node.get("maxProperties")
                spec.max_properties = high if spec.max_properties is None else min(
                    spec.max_properties, high)
        if strict_additional and not explicit_additional and nodes:
            # Strict mode: keys no merged schema lists or matches are forbidden.
            first = nodes[0]
            spec.additional.append(_Additional(
                frozenset(spec.properties), tuple(spec.patterns),
                first.synthetic(False, "additionalProperties")))
        return spec

    def listed_keys(self) -> list[str]:
        """Listed keys in schema order, then required keys that are not in ``properties``."""
        keys = dict.fromkeys(self.properties)
        keys.update(self.required)
        return list(keys)

    def value_nodes(self, key: str,
                    matches: Callable[[str, str], bool] | None = None) -> list[Node]:
        """Every schema the value of the listed ``key`` must satisfy; ``matches(pattern,
        key)`` says which ``patternProperties`` apply (default: Python's ``re``, as
        ``jsonschema`` reads them)."""
        nodes = list(self.properties.get(key, []))
        search = matches or _py_search
        matched = {p for p in self.patterns if search(p, key)}
        for p in self.patterns:
            if p in matched:
                nodes.extend(self.patterns[p])
        for extra in self.additional:
            if key not in extra.listed and not any(p in matched for p in extra.patterns):
                nodes.append(extra.node)
        return nodes

    def region_nodes(self, matched: frozenset[str]) -> list[Node]:
        """Every schema the value of an unlisted key matching exactly ``matched`` must satisfy."""
        nodes: list[Node] = []
        for p in self.patterns:
            if p in matched:
                nodes.extend(self.patterns[p])
        for extra in self.additional:
            if not any(p in matched for p in extra.patterns):
                nodes.append(extra.node)
        return nodes

    def regions(self, overlap: Callable[[str, str], bool]) -> list[frozenset[str]] | None:
        """The pattern subsets that split unlisted keys: those whose patterns pairwise
        ``overlap`` (a key can only match a set of patterns that all meet). ``None`` beyond
        :data:`MAX_REGIONS`."""
        pats = list(self.patterns)
        meets = {(p, q): overlap(p, q) for p, q in itertools.combinations(pats, 2)}
        out: list[frozenset[str]] = []
        return out if _extend_regions(pats, meets, (), 0, out) else None


def _extend_regions(pats: list[str], meets: dict[tuple[str, str], bool], chosen: tuple[str, ...],
                    start: int, out: list[frozenset[str]]) -> bool:
    """Add ``chosen`` and each set it grows into with patterns from ``start`` on that meet
    all of it to ``out``; False past :data:`MAX_REGIONS` (see :meth:`ObjectSpec.regions`).
    A function, not a closure calling itself: that was a cycle per object."""
    out.append(frozenset(chosen))
    if len(out) > MAX_REGIONS:
        return False
    return all(_extend_regions(pats, meets, (*chosen, pats[i]), i + 1, out)
               for i in range(start, len(pats)) if all(meets[(c, pats[i])] for c in chosen))


def _py_search(pattern: str, key: str) -> bool:
    # Listed keys are classified exactly as jsonschema classifies them: with Python's re.
    return re.search(pattern, key) is not None


@dataclass
class Member:
    """Members of one kind: a listed key (its name: at most once; ``required``: exactly
    once) or, among the extras, a region of unlisted keys (a string-literal language)."""

    key: str | Expr
    value: Expr
    required: bool = False


def object_language(syn: JsonSyntax, listed: Sequence[Member], extras: Sequence[Member],
                    min_properties: int, max_properties: int | None, *, order: str = "any",
                    intersection_ok: bool = True, lazy: bool = True) -> Expr | None:
    """The object texts with the given members; ``order`` is ``"any"``, ``"repeatable"``
    or ``"schema"`` (see the module docstring). ``None`` when the language needs an
    intersection and ``intersection_ok`` is false, or needs exact counts ``"repeatable"``
    cannot give. ``lazy=False`` builds the any-order language whole, for languages to be
    complemented: :class:`~constrain.grammar.Lazy` nodes of two separately built copies
    of one object are not one term, which an emptiness search inside a complement needs."""
    members = [*listed, *extras]
    required = [m.required for m in listed]
    low, high = min_properties, max_properties
    if (high is not None and high < max(sum(required), low)) or (
            not extras and low > len(listed)):
        return NOTHING
    counted = _counted(len(listed), bool(extras), low, high, sum(required))
    n = len(listed)
    if counted and high is not None and high <= 1:
        # At most one member (what "exactly one of these keys" spells as minProperties 1,
        # maxProperties 1): one member of any key, or the required one; in any order
        # model, and with values that reference rules.
        must = [i for i in range(n) if required[i]]
        one = _choice(syn, members, must or range(len(members))) if high else NOTHING
        return syn.obj(one, low == 0 and not must)
    everyone = range(len(members))
    cap = high if high is not None else low
    # minProperties 1 and no upper bound that counts: the object is not empty, whatever
    # repeats ("repeatable" keys) or which keys.
    nonempty = counted and low == 1 and (high is None or (not extras and high >= n))
    if order == "any":
        if (not counted or nonempty) and lazy:
            # Past MAX_SUBSET_KEYS, optional keys may repeat ("repeatable", see above):
            # tracking them too would make every order of every subset its own state.
            track = range(n) if n <= MAX_SUBSET_KEYS else [i for i in range(n) if required[i]]
            return _any_order(syn, members, required, track, nonempty)
        if n <= MAX_SUBSET_KEYS and (not (counted and extras) or (
                2 ** n * (cap + 1) <= MAX_COUNTED_STATES)):
            return _tracked(syn, members, required, range(n), low, high)
        repeatable = object_language(syn, listed, extras, low, high, order="repeatable",
                                     lazy=lazy)
        if repeatable is not None:
            return repeatable
        if not intersection_ok:
            return None
        groups = [range(i, min(i + GROUP_KEYS, n)) for i in range(0, n, GROUP_KEYS)]
        conjuncts = [_tracked(syn, members, required, g, 0, None) for g in groups]
        if counted:
            conjuncts.append(_count(syn, members, set(everyone), low, high))
        return intersect(*conjuncts) if len(conjuncts) > 1 else conjuncts[0]
    if order == "repeatable":
        # Only maxProperties survives repeats (a repeated key makes the object smaller).
        must = [i for i in range(n) if required[i]]
        if low > sum(required) or len(must) > MAX_REQUIRED_KEYS or (
                counted and 2 ** len(must) * (cap + 1) > MAX_COUNTED_STATES):
            return None
        return _tracked(syn, members, required, must, 0, high)
    texts = [_text(syn, m) for m in members]
    body = _schema_order(syn, texts[:n], required, texts[n:])
    if counted:
        if not intersection_ok:
            return None
        return intersect(body, _count(syn, members, set(everyone), low, high))
    return body


def _text(syn: JsonSyntax, m: Member) -> Expr:
    key = syn.strings.literal(m.key) if isinstance(m.key, str) else m.key
    return syn.member(key, m.value)


def _choice(syn: JsonSyntax, members: Sequence[Member], indices: Iterable[int]) -> Expr:
    """One member among ``indices``; listed keys share a trie, so a derivative follows only
    the keys that match the text read so far."""
    named: list[tuple[str, Expr]] = []
    rest: list[Expr] = []
    for i in indices:
        m = members[i]
        if isinstance(m.key, str):
            named.append((m.key, seq(syn.colon, m.value)))
        else:
            rest.append(_text(syn, m))
    return alt(syn.keyed(named), *rest)


def _any_order(syn: JsonSyntax, members: Sequence[Member], required: Sequence[bool],
               track: Sequence[int], nonempty: bool = False) -> Expr:
    """Objects with ``members`` in any order: each tracked member at most once (required
    ones exactly once), the others any number of times; at least one member where
    ``nonempty``.

    One :class:`~constrain.grammar.Lazy` node per set of tracked members written so far,
    and one per member's value after it, built when decoding first reaches it: only the
    sets and values actually written cost anything (``2**n`` built eagerly would not do
    past a dozen keys), values may reference rules, and no intersection is needed.
    Tracked members are listed keys (``required[i]`` says whether ``members[i]`` is
    required).
    """
    order = _AnyOrder(syn, members, required, track)
    first = [order.next_member(0)] if order.track else []
    if order.untracked:
        first.append(seq(order.other, order.after(0)))
    return syn.obj(alt(*first), order.must == 0 and not nonempty)


class _AnyOrder:
    """What the lazy nodes of one :func:`_any_order` object build from.

    Nothing here holds a node it made: the nodes hold this (their builds are its bound
    methods), so a dropped constraint's nodes are freed by reference counting. Closures
    that called each other through their cells, with a memo of the nodes made, were
    cycles: ~450 objects per MaskBench schema left for the collector, whose full passes
    then came more often."""

    __slots__ = ("_unwritten", "bit", "family", "members", "more_others", "must", "other",
                 "parts", "required", "syn", "track", "untracked")

    def __init__(self, syn: JsonSyntax, members: Sequence[Member], required: Sequence[bool],
                 track: Sequence[int]) -> None:
        self.syn, self.members, self.required = syn, members, required
        self.track = list(track)
        self.bit = {i: 1 << j for j, i in enumerate(self.track)}
        self.untracked = [i for i in range(len(members)) if i not in self.bit]
        self.other = _choice(syn, members, self.untracked) if self.untracked else NOTHING
        self.more_others = star(seq(syn.comma, self.other)) if self.untracked else EMPTY
        self.must = sum(self.bit[i] for i in self.track if required[i])
        # One expression, made once, for thousands of nodes: a node judges its parts one
        # by one, and a tuple of every value would cost each set of keys written the
        # square of the keys.
        self.parts = (Seq((syn.comma, syn.colon, self.other,
                           *(members[i].value for i in self.track))),)
        self.family = object()  # names this object's nodes
        self._unwritten: dict[int, tuple[Expr]] = {}

    def required_left(self, seen: int) -> tuple[Expr]:
        """The required values not in ``seen``, as one expression made once per set: the
        needs of every node after ``seen`` hold it instead of each value, which would cost
        each set of keys written the square of the keys. In a tuple of its own, made once
        too: the nodes' needs share it (a tuple per node stayed tracked by the collector
        as long as the constraint lived)."""
        found = self._unwritten.get(seen)
        if found is None:
            bit, members, required = self.bit, self.members, self.required
            found = self._unwritten[seen] = (Seq(tuple(
                members[i].value for i in self.track if required[i] and not seen & bit[i])),)
        return found

    def next_member(self, seen: int) -> Expr:
        """One more tracked member (not in ``seen``), then what may follow it."""
        left = self.required_left(seen)
        bit, members = self.bit, self.members
        # The first trie is built with the object (at compile time, for most) and only
        # once: sharing its runs would cost a node per run for nothing. Tracked members
        # are listed keys: their keys are names.
        return self.syn.keyed([(cast(str, members[i].key), self.member_rest(seen | bit[i], i, left))
                               for i in self.track if not seen & bit[i]],
                              shared_runs=seen != 0)

    def member_rest(self, seen: int, i: int, left: tuple[Expr]) -> Expr:
        """Member ``i``'s colon and value, then what may follow once ``seen`` (which holds
        ``i``) is written: lazy, so that a value (often a whole object) is built only when
        decoding reaches its key, not with the key trie it hangs from. ``left`` holds the
        required values not written before ``i``."""
        needs = left if self.required[i] else (self.members[i].value, *left)
        # A partial, not a closure: one tracked object instead of four, for each of
        # thousands of nodes that live as long as their constraint (see Lazy).
        return Lazy((self.family, seen, i), partial(self.member_value, seen, i),
                    nullable=False, parts=self.parts, needs=needs)

    def member_value(self, seen: int, i: int) -> Expr:
        return seq(self.syn.colon, self.members[i].value, self.after(seen))

    def after(self, seen: int) -> Expr:
        """What may follow a member once the tracked members in ``seen`` are written.
        Not memoized here (a memo of nodes would be a cycle through their builds): the
        automaton builds each key once, and one decoding reaches a set from one member."""
        done = seen & self.must == self.must
        return Lazy((self.family, seen), partial(self.rest, seen, done), nullable=done,
                    parts=self.parts, needs=self.required_left(seen))

    def rest(self, seen: int, done: bool) -> Expr:
        options = [EMPTY] if done else []
        if any(not seen & self.bit[i] for i in self.track):
            options.append(seq(self.syn.comma, self.next_member(seen)))
        return seq(self.more_others, alt(*options))


def _tracked(syn: JsonSyntax, members: Sequence[Member], required: Sequence[bool],
             track: Sequence[int], low: int, high: int | None) -> Expr:
    """Objects with ``members`` in any order, where each tracked member occurs at most once
    (required ones exactly once) and the others any number of times, with ``low..high``
    members in all.

    An explicit automaton over the set of tracked members written so far and, when the
    count matters, the number of other members (capped where the bounds stop caring):
    ``2**len(track) * (cap + 1)`` shared nodes and no intersection, so values may
    reference rules.
    """
    nodes = _TrackedNodes(syn, members, required, track, low, high)
    starts: list[Expr] = []
    if high is None or high >= 1:
        starts = [seq(nodes.texts[i], nodes.after(nodes.bit[i], 0)) for i in nodes.track]
        if nodes.untracked:
            starts.append(seq(nodes.other, nodes.after(0, 1 if nodes.counting else 0)))
    return syn.obj(alt(*starts) if starts else NOTHING, nodes.must == 0 and low == 0)


class _TrackedNodes:
    """The nodes of one :func:`_tracked` automaton, made once per set of tracked members
    written and count of others (a class, not a closure that calls itself through its
    own cell: that was a cycle left to the collector at every compile)."""

    def __init__(self, syn: JsonSyntax, members: Sequence[Member], required: Sequence[bool],
                 track: Sequence[int], low: int, high: int | None) -> None:
        self.syn, self.low, self.high = syn, low, high
        self.track = list(track)
        tracked = set(self.track)
        self.texts = {i: _text(syn, members[i]) for i in self.track}
        self.untracked = [i for i in range(len(members)) if i not in tracked]
        self.other = _choice(syn, members, self.untracked) if self.untracked else NOTHING
        self.counting = bool(self.untracked) and (low > 0 or high is not None)
        self.cap = (high if high is not None else low) if self.counting else 0
        self.more_others = (star(seq(syn.comma, self.other))
                            if self.untracked and not self.counting else EMPTY)
        self.bit = {i: 1 << j for j, i in enumerate(self.track)}
        self.must = sum(self.bit[i] for i in self.track if required[i])
        self._memo: dict[tuple[int, int], Expr] = {}

    def after(self, seen: int, extra: int) -> Expr:
        found = self._memo.get((seen, extra))
        if found is not None:
            return found
        syn, low, high, counting = self.syn, self.low, self.high, self.counting
        size = seen.bit_count() + extra
        # Past the lower bound with no upper one, more others change nothing: loop.
        saturated = counting and high is None and extra >= self.cap
        options: list[Expr] = []
        if seen & self.must == self.must and low <= size:
            options.append(EMPTY)
        if high is None or size < high:
            left = [i for i in self.track if not seen & self.bit[i]]
            if left:
                options.append(seq(syn.comma, alt(*(
                    seq(self.texts[i], self.after(seen | self.bit[i], extra)) for i in left))))
            if counting and not saturated:
                options.append(seq(syn.comma, self.other, self.after(seen, extra + 1)))
        loop = star(seq(syn.comma, self.other)) if saturated else self.more_others
        result = seq(loop, alt(*options)) if options else NOTHING
        self._memo[(seen, extra)] = result
        return result


def _counted(listed: int, extras: bool, low: int, high: int | None, required: int) -> bool:
    """Whether ``minProperties``/``maxProperties`` say more than the members already do."""
    most = None if extras else listed
    return low > required or (high is not None and (most is None or high < most))


def _count(syn: JsonSyntax, members: Sequence[Member], counted: set[int], low: int,
           high: int | None) -> Expr:
    """Objects with ``members``, ``low..high`` of them from ``counted``."""
    rest = [i for i in range(len(members)) if i not in counted]
    other = _choice(syn, members, rest) if rest else NOTHING
    mine = _choice(syn, members, sorted(counted))
    return syn.obj(syn.counted(other, mine, low, high), low == 0)


def _schema_order(syn: JsonSyntax, listed: Sequence[Expr], required: Sequence[bool],
                  extras: Sequence[Expr]) -> Expr:
    """Listed members in order (optional ones may be missing), extras anywhere."""
    extra = alt(*extras) if extras else NOTHING
    more_extras = star(seq(syn.comma, extra)) if extras else EMPTY
    n = len(listed)
    # after[i]: what may follow a written member once the listed slots < i are decided.
    after: list[Expr] = [EMPTY] * (n + 1)
    slot: list[Expr] = [EMPTY] * (n + 1)
    after[n] = more_extras
    for i in reversed(range(n)):
        take = seq(syn.comma, listed[i], after[i + 1])
        slot[i] = take if required[i] else alt(take, slot[i + 1])
        after[i] = seq(more_extras, slot[i])
    # first: member lists that start with a listed member.
    first: Expr = NOTHING
    for i in reversed(range(n)):
        start = seq(listed[i], after[i + 1])
        first = start if required[i] else alt(start, first)
    body = alt(seq(extra, after[0]), first) if extras else first
    return syn.obj(body, not any(required))


def key_region(syn: JsonSyntax, listed: Sequence[str], matched: Sequence[Expr],
               unmatched: Sequence[Expr]) -> Expr:
    """The JSON string literals of unlisted keys that match every ``matched`` (decoded)
    language and no ``unmatched`` one."""
    if listed and not matched and not unmatched:  # most objects that allow unlisted keys
        return syn.strings.any_but(listed)
    decoded: list[Expr] = list(matched)
    decoded.extend(complement(u) for u in unmatched)
    if listed:
        # As a tree of shared prefixes: the complement's derivative then follows the
        # keys that start with what was read, not every listed key at every byte.
        decoded.append(complement(prefix_tree([(k, EMPTY) for k in sorted(set(listed))],
                                              literal)))
    if not decoded:
        return syn.string
    everything = repeat(ANY_CHAR, 0, None)
    return syn.strings.string(intersect(everything, *decoded))


_SUPPORT: list[bool] = []


def refs_in_intersection_supported() -> bool:
    """Whether the automaton intersects languages whose rule references stay aligned
    (every operand calls the same rule at the same place), e.g. object conjuncts whose
    member values are rules. Probed once on a two-rule grammar."""
    if not _SUPPORT:
        from .automaton import Automaton
        from .errors import GrammarError
        from .grammar import Grammar, ref

        value = ref("v")
        left = seq(literal("["), value, alt(literal("]"), literal(",]")))
        right = seq(literal("["), value, literal("]"))
        try:
            a = Automaton(Grammar({"s": intersect(left, right), "v": literal("x")}, "s"))
            ok = a.matches(b"[x]") and not a.matches(b"[x,]")
        except GrammarError:
            ok = False
        _SUPPORT.append(ok)
    return _SUPPORT[0]
