"""The grammar IR every front end lowers to, and the builders that make it.

A :class:`Grammar` is a set of named rules. Each rule is an :data:`Expr`: a regular
expression over *characters* (Unicode code points, encoded as UTF-8 by the automaton) or raw
bytes, whose atoms may also be references to other rules. A regex or a choice set is a
one-rule grammar. Recursion is a rule that references itself (directly or not); the automaton
handles it exactly with a stack, never by unrolling.

Intersection (:class:`And`) and complement (:class:`Not`) are first-class because regular
languages are closed under both; they may not contain references (a recursive language is
not regular), which the automaton reports as a :class:`~constrain.errors.GrammarError`.

>>> g = Grammar.single(seq(literal("id-"), repeat(char_range("0", "9"), 1, 3)))
>>> g.start, sorted(g.rules)
('start', ['start'])
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from operator import itemgetter
from typing import Any, Union

from .errors import GrammarError

__all__ = [
    "ANY_CHAR",
    "EMPTY",
    "NOTHING",
    "Alt",
    "And",
    "Bytes",
    "Chars",
    "Expr",
    "Grammar",
    "Lazy",
    "Not",
    "Ref",
    "Repeat",
    "RuleLibrary",
    "Seq",
    "alt",
    "byte_literal",
    "char_range",
    "chars",
    "children",
    "complement",
    "contents",
    "held",
    "inside",
    "intersect",
    "intersect_ranges",
    "literal",
    "may_read",
    "normalize_ranges",
    "only_utf8",
    "optional",
    "plus",
    "prefix_tree",
    "ref",
    "repeat",
    "seq",
    "shortest_length",
    "star",
]

MAX_CODE_POINT = 0x10FFFF

Ranges = tuple[tuple[int, int], ...]


def normalize_ranges(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sort and merge inclusive ``(lo, hi)`` ranges.

    >>> normalize_ranges([(5, 9), (0, 3), (4, 4), (20, 21)])
    ((0, 9), (20, 21))
    """
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(r for r in ranges if r[0] <= r[1]):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def intersect_ranges(a: Ranges, b: Ranges) -> Ranges:
    """The code points in both of two normalized range tuples.

    >>> intersect_ranges(((0, 9), (20, 29)), ((5, 24),))
    ((5, 9), (20, 24))
    """
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def _contents_of(parts: tuple[Any, ...], boolean: bool) -> tuple[bool, bool] | None:
    # Built bottom-up, a node learns its contents from its parts at once; a part that does
    # not know them (not an expression) leaves it to contents(), which reports it.
    has_ref = False
    for part in parts:
        found = getattr(part, "_contents", None)
        if found is None:
            return None
        boolean = boolean or found[0]
        has_ref = has_ref or found[1]
    return (boolean, has_ref)


# The nodes are frozen dataclasses with __init__ written out: the generated one, then
# __post_init__, cost ~2x as much, and a schema's compile makes thousands of nodes.
_set_field = object.__setattr__
_PLAIN = (False, False)
_REF_CONTENTS = (False, True)


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Chars:
    """One character from a set of Unicode code points (inclusive ranges, surrogates excluded)."""

    ranges: Ranges
    _contents: tuple[bool, bool] | None = field(default=_PLAIN, init=False, repr=False)

    def __init__(self, ranges: Ranges) -> None:
        _set_field(self, "ranges", ranges)
        _set_field(self, "_contents", _PLAIN)


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Bytes:
    """One raw byte from a set of byte values (inclusive ranges within 0..255)."""

    ranges: Ranges
    _contents: tuple[bool, bool] | None = field(default=_PLAIN, init=False, repr=False)

    def __init__(self, ranges: Ranges) -> None:
        _set_field(self, "ranges", ranges)
        _set_field(self, "_contents", _PLAIN)


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Seq:
    """Concatenation; ``Seq(())`` is the empty string."""

    items: tuple[Expr, ...]
    _contents: tuple[bool, bool] | None = field(default=None, init=False, repr=False)

    def __init__(self, items: tuple[Expr, ...]) -> None:
        _set_field(self, "items", items)
        _set_field(self, "_contents", _contents_of(items, False))


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Alt:
    """Union; ``Alt(())`` is the empty language."""

    items: tuple[Expr, ...]
    _contents: tuple[bool, bool] | None = field(default=None, init=False, repr=False)

    def __init__(self, items: tuple[Expr, ...]) -> None:
        _set_field(self, "items", items)
        _set_field(self, "_contents", _contents_of(items, False))


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Repeat:
    """``item`` repeated between ``min`` and ``max`` times (``max=None``: unbounded)."""

    item: Expr
    min: int
    max: int | None
    _contents: tuple[bool, bool] | None = field(default=None, init=False, repr=False)

    def __init__(self, item: Expr, min: int, max: int | None) -> None:
        _set_field(self, "item", item)
        _set_field(self, "min", min)
        _set_field(self, "max", max)
        _set_field(self, "_contents", _contents_of((item,), False))


@dataclass(frozen=True, slots=True, eq=False, init=False)
class And:
    """Intersection of the items' languages (no references inside)."""

    items: tuple[Expr, ...]
    _contents: tuple[bool, bool] | None = field(default=None, init=False, repr=False)

    def __init__(self, items: tuple[Expr, ...]) -> None:
        _set_field(self, "items", items)
        _set_field(self, "_contents", _contents_of(items, True))


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Not:
    """Complement of ``item`` within all *valid UTF-8* strings (no references inside)."""

    item: Expr
    _contents: tuple[bool, bool] | None = field(default=None, init=False, repr=False)

    def __init__(self, item: Expr) -> None:
        _set_field(self, "item", item)
        _set_field(self, "_contents", _contents_of((item,), True))


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Ref:
    """The language of another rule of the same grammar."""

    name: str
    _contents: tuple[bool, bool] | None = field(default=(False, True), init=False, repr=False)

    def __init__(self, name: str) -> None:
        _set_field(self, "name", name)
        _set_field(self, "_contents", _REF_CONTENTS)


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Lazy:
    """A part of a language that is built only when matching first reaches it: for
    languages too large to build whole, such as an object's members in any order, one
    expression per set of keys written so far (2**n of them).

    ``build()`` returns the expression. ``key`` names it: nodes with equal keys must build
    the same language, and each is built once per automaton. What the automaton must know
    without building it: ``nullable`` (whether it matches the empty string); ``parts``,
    the expressions it is made of (other ``Lazy`` nodes of the same family aside), which
    tell whether rule references, intersections or complements occur inside; and
    ``needs``, expressions that all match something exactly when this does (it must match
    something otherwise).

    >>> from constrain.automaton import Automaton
    >>> def digits(n: int) -> Expr:  # n more digits, then "!"
    ...     if n == 0:
    ...         return literal("!")
    ...     return Lazy(("digits", n), lambda: seq(char_range("0", "9"), digits(n - 1)),
    ...                 nullable=False, parts=(char_range("0", "9"), literal("!")))
    >>> a = Automaton(Grammar.single(digits(30)))
    >>> a.matches(b"1" * 30 + b"!"), a.matches(b"1" * 29 + b"!")
    (True, False)
    """

    key: Hashable
    build: Callable[[], Expr]
    nullable: bool
    parts: tuple[Expr, ...] = ()
    needs: tuple[Expr, ...] = ()
    _contents: tuple[bool, bool] | None = field(default=None, init=False, repr=False)

    def __init__(self, key: Hashable, build: Callable[[], Expr], nullable: bool,
                 parts: tuple[Expr, ...] = (), needs: tuple[Expr, ...] = ()) -> None:
        _set_field(self, "key", key)
        _set_field(self, "build", build)
        _set_field(self, "nullable", nullable)
        _set_field(self, "parts", parts)
        _set_field(self, "needs", needs)
        found = _contents_of(parts, False)
        if needs and found is not None and not found[1]:
            # A reference among the needs counts too (see inside()): a walk that unfolds
            # references skips a node without any, and had left a reference marker in the
            # needs of a node whose parts it had made regular (Github_hard/o36016).
            in_needs = _contents_of(needs, False)
            found = None if in_needs is None else (found[0], in_needs[1])
        _set_field(self, "_contents", found)


def held(key: Hashable, expr: Expr, *, nullable: bool, needs: tuple[Expr, ...] = ()) -> Lazy:
    """A :class:`Lazy` node standing for ``expr``, an expression made already: an
    automaton converts it only when matching first reaches it (where converting is the
    cost, ``expr`` being large or shared by many places that matching seldom reaches).

    >>> from constrain.automaton import Automaton
    >>> node = held("ab", literal("ab"), nullable=False)
    >>> Automaton(Grammar.single(seq(node, literal("!")))).matches(b"ab!")
    True
    """
    return Lazy(key, partial(_itself, expr), nullable=nullable, parts=(expr,), needs=needs)


def _itself(expr: Expr) -> Expr:
    return expr


Expr = Union[Chars, Bytes, Seq, Alt, Repeat, And, Not, Ref, Lazy]  # noqa: UP007 (a runtime alias)

_EXPR_TYPES = (Chars, Bytes, Seq, Alt, Repeat, And, Not, Ref, Lazy)

_ASCII_CHARS = tuple(Chars(((code, code),)) for code in range(128))

EMPTY: Expr = Seq(())
NOTHING: Expr = Alt(())
ANY_CHAR: Chars = Chars(((0, 0xD7FF), (0xE000, MAX_CODE_POINT)))


@dataclass(frozen=True, eq=False)
class RuleLibrary:
    """Rules that many grammars share as the very same objects (the JSON universes, a
    grammar file's imports), and ``common`` expressions without references that grammars
    using them often contain (a JSON key's characters).

    A grammar names the library it includes (``Grammar(..., library=lib)``); the automaton
    then converts the library once per process and starts from a copy of that work, instead
    of converting the same expressions again for every grammar. The rules may reference
    only each other.

    >>> lib = RuleLibrary({"digit": char_range("0", "9")})
    >>> g = Grammar({**lib.rules, "start": plus(ref("digit"))}, "start", library=lib)
    >>> sorted(g.rules)
    ['digit', 'start']
    """

    rules: Mapping[str, Expr]
    common: tuple[Expr, ...] = ()

    def __post_init__(self) -> None:
        seen: set[int] = set()
        for name, expr in self.rules.items():
            for referenced in _refs(expr, seen):
                if referenced not in self.rules:
                    raise GrammarError(
                        f"a library rule references {referenced!r} outside the library", name)
        if any(contents(e)[1] for e in self.common):
            raise GrammarError("a library's common expressions may not reference rules")


@dataclass(frozen=True)
class Grammar:
    """Named rules and the rule the language starts from.

    Rule names are plain strings; front ends choose them (a JSON Schema compiler may use
    JSON pointers). ``Grammar.single(expr)`` wraps one expression. ``library``: a
    :class:`RuleLibrary` whose rules are among ``rules`` (the same objects).
    """

    rules: Mapping[str, Expr]
    start: str = "start"
    metadata: Mapping[str, object] = field(default_factory=dict, compare=False)
    library: RuleLibrary | None = field(default=None, compare=False)
    start_referenced: bool = field(default=False, init=False, compare=False, repr=False)
    """Whether a rule references the start rule (the automaton then needs the start's own
    nullability and productivity; otherwise nothing asks for them)."""

    def __post_init__(self) -> None:
        if self.start not in self.rules:
            raise GrammarError("start rule is not defined", self.start)
        shared: Mapping[str, Expr] = {}
        if self.library is not None:
            shared = self.library.rules  # their references were checked with the library
            for name, expr in shared.items():
                if self.rules.get(name) is not expr:
                    raise GrammarError("the grammar's rule is not the library's", name)
        seen: set[int] = set()  # shared: a sub-expression in several rules is checked once
        names: set[str] = set()
        for name, expr in self.rules.items():
            # contents() is memoized on the nodes and the automaton asks for it anyway;
            # with it known, the walk below enters only the parts that hold references.
            if name in shared or not contents(expr)[1]:
                continue
            for referenced in _refs(expr, seen):
                if referenced not in self.rules:
                    raise GrammarError(f"references undefined rule {referenced!r}", name)
                names.add(referenced)
        object.__setattr__(self, "start_referenced", self.start in names)

    @classmethod
    def single(cls, expr: Expr) -> Grammar:
        """A grammar with one rule named ``start``."""
        return cls({"start": expr}, "start")


def children(expr: Expr) -> tuple[Expr, ...]:
    """The expressions ``expr`` is made of (a :class:`Lazy` node's ``parts``).

    >>> len(children(seq(literal("a"), star(literal("b")))))
    2
    """
    if isinstance(expr, (Seq, Alt, And)):
        return expr.items
    if isinstance(expr, (Repeat, Not)):
        return (expr.item,)
    if isinstance(expr, Lazy):
        return expr.parts
    return ()


def inside(expr: Expr) -> tuple[Expr, ...]:
    """:func:`children`, with a :class:`Lazy` node's ``needs`` too: every expression a
    walk that rewrites references must reach (see :func:`contents`).

    >>> node = Lazy("k", lambda: literal("a"), False, parts=(literal("a"),), needs=(ref("r"),))
    >>> len(children(node)), len(inside(node)), contents(node)
    (1, 2, (False, True))
    """
    if isinstance(expr, Lazy):
        return (*expr.parts, *expr.needs)
    return children(expr)


def contents(expr: Expr) -> tuple[bool, bool]:
    """``(boolean, has_ref)``: whether an intersection or complement, and whether a rule
    reference, occurs in ``expr`` (in a :class:`Lazy` node: in its parts, and a reference
    in its needs too).

    Known from construction (each node combines its parts'), so this is a lookup; the walk
    below serves nodes whose parts did not know theirs.

    >>> contents(seq(literal("a"), ref("value"))), contents(complement(literal("a")))
    ((False, True), (True, False))
    """
    found: tuple[bool, bool] | None = getattr(expr, "_contents", None)
    if found is not None:
        return found
    stack = [expr]  # a walk, not recursion: front ends build expressions thousands deep
    while stack:
        node = stack[-1]
        if not isinstance(node, _EXPR_TYPES):
            raise GrammarError(f"not a grammar expression: {node!r}")
        if node._contents is not None:
            stack.pop()
            continue
        parts = inside(node)
        todo = [c for c in parts if getattr(c, "_contents", None) is None]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        boolean = isinstance(node, (And, Not))
        has_ref = isinstance(node, Ref)
        for c in parts:
            has_ref = has_ref or c._contents[1]  # type: ignore[index]
        for c in children(node):  # a lazy node's needs are no intersection of its own
            boolean = boolean or c._contents[0]  # type: ignore[index]
        object.__setattr__(node, "_contents", (boolean, has_ref))
    return expr._contents  # type: ignore[return-value]


def shortest_length(expr: Expr, memo: dict[int, tuple[Expr, int]]) -> int:
    """An estimate of the length in bytes of ``expr``'s shortest string, for ordering a
    search (``memo`` holds what was found, by node id, each with its node so the id stays
    its own).

    Exact for characters, bytes, concatenations, unions and repeats; an intersection
    counts as its longest item, a complement and a reference as nothing, and a
    :class:`Lazy` node as its ``needs`` written one after the other (an object's
    required values left), since it is not built.

    >>> shortest_length(seq(literal("ab"), alt(literal("c"), literal("de"))), {})
    3
    """
    stack = [expr]  # a walk, not recursion: front ends build expressions thousands deep
    while stack:
        node = stack[-1]
        if id(node) in memo:
            stack.pop()
            continue
        parts = node.needs if isinstance(node, Lazy) else children(node)
        todo = [c for c in parts if id(c) not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        lengths = [memo[id(c)][1] for c in parts]
        if isinstance(node, (Chars, Bytes)):
            found = 1
        elif isinstance(node, (Seq, Lazy)):
            found = sum(lengths)
        elif isinstance(node, Alt):
            found = min(lengths, default=0)
        elif isinstance(node, Repeat):
            found = node.min * lengths[0]
        elif isinstance(node, And):
            found = max(lengths, default=0)
        else:  # Not, Ref
            found = 0
        memo[id(node)] = (node, found)
    return memo[id(expr)][1]


def only_utf8(expr: Expr, memo: dict[int, tuple[Expr, bool]]) -> bool:
    """Whether every string of ``expr`` is valid UTF-8 because of how it is built (from
    characters, without raw bytes, complements, references or :class:`Lazy` nodes, or an
    intersection with such an item); ``memo`` as in :func:`shortest_length`.

    A complement is taken within valid UTF-8; intersected with an item that holds nothing
    else, it needs no such bound of its own.

    >>> only_utf8(star(chars([(0, 0x10FFFF)])), {}), only_utf8(complement(literal("a")), {})
    (True, False)
    """
    def judge(node: Expr, parts: list[bool]) -> bool:
        if isinstance(node, Chars):
            return True
        if isinstance(node, And):
            return any(parts)
        if isinstance(node, (Seq, Alt, Repeat)):
            return all(parts)
        return False  # Bytes, Not, Ref, Lazy

    return _fold(expr, memo, judge)


def _fold(expr: Expr, memo: dict[int, tuple[Expr, bool]],
          judge: Callable[[Expr, list[bool]], bool]) -> bool:
    """``judge`` of ``expr`` given the judgements of its parts (through ``Seq``, ``Alt``,
    ``Repeat`` and ``And``; other nodes are leaves), memoized by node in ``memo``. A walk,
    not recursion: front ends build expressions thousands deep."""
    stack = [expr]
    while stack:
        node = stack[-1]
        if id(node) in memo:
            stack.pop()
            continue
        parts = children(node) if isinstance(node, (Seq, Alt, Repeat, And)) else ()
        todo = [c for c in parts if id(c) not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        memo[id(node)] = (node, judge(node, [memo[id(c)][1] for c in parts]))
    return memo[id(expr)][1]


def may_read(expr: Expr, ranges: Ranges) -> bool:
    """Whether a string of ``expr`` may hold a character of ``ranges`` (code points, ASCII
    for raw bytes), judged from how it is built: ``False`` is certain, ``True`` may be
    wrong (a complement, a reference or a :class:`Lazy` node may read anything; an
    intersection only what each of its items may).

    >>> dot = normalize_ranges([(46, 46)])
    >>> may_read(seq(literal("1"), star(char_range("0", "9"))), dot), may_read(literal("1.5"), dot)
    (False, True)
    >>> may_read(intersect(literal("15"), complement(literal("1.5"))), dot)
    False
    """
    def judge(node: Expr, parts: list[bool]) -> bool:
        if isinstance(node, (Chars, Bytes)):
            return bool(intersect_ranges(node.ranges, ranges))
        if isinstance(node, And):
            return all(parts)
        if isinstance(node, (Seq, Alt, Repeat)):
            return any(parts)
        return True  # Not, Ref, Lazy

    return _fold(expr, {}, judge)


def _refs(expr: Expr, seen: set[int]) -> Iterable[str]:
    """Names referenced in ``expr``, skipping the nodes whose ids are in ``seen`` (and
    adding those it visits)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        key = id(node)
        if key in seen:
            continue
        seen.add(key)
        kind = type(node)
        if kind in _LEAF_TYPES:
            continue
        known = getattr(node, "_contents", None)  # None too for what is not an Expr
        if known is not None and not known[1]:
            continue  # no reference inside, as a walk of contents() found already
        if kind is Ref:
            yield node.name  # type: ignore[union-attr]
        elif kind is Seq or kind is Alt:
            stack.extend(node.items)  # type: ignore[union-attr]
        else:
            stack.extend(children(node))


_LEAF_TYPES = frozenset((Chars, Bytes))


# ---------------------------------------------------------------------------------------
# Builders: the only way front ends should make nodes (they flatten and simplify a little).


def literal(text: str) -> Expr:
    """The exact string ``text``.

    >>> literal("ab")
    Seq(items=(Chars(ranges=((97, 97),)), Chars(ranges=((98, 98),))))
    """
    if len(text) == 1:
        return _char(ord(text))
    return Seq(tuple(map(_char, map(ord, text))))


def _char(code: int) -> Chars:
    # Nodes are immutable, so a literal's ASCII characters are shared (keys and enum
    # values are mostly ASCII text: one node each instead of one per occurrence).
    return _ASCII_CHARS[code] if code < 128 else Chars(((code, code),))


def byte_literal(data: bytes) -> Expr:
    """The exact byte string ``data`` (which need not be valid UTF-8)."""
    if len(data) == 1:
        return Bytes(((data[0], data[0]),))
    return Seq(tuple(Bytes(((b, b),)) for b in data))


def prefix_tree(entries: Sequence[tuple[Sequence[Any], Expr]],
                unit: Callable[[Any], Expr],
                edge: Callable[[Sequence[Any]], Expr] | None = None) -> Expr:
    """``Alt`` of ``key tail`` over distinct keys, factored by common prefixes, so a
    derivative follows only the keys that share what was read (a choice among 200 names
    costs one step per character, not 200). ``unit`` turns one key element (a character,
    a byte) into its expression; ``edge``, when given, a run of two or more that the tree
    reads in one go (a node the caller shares among trees, say).

    >>> prefix_tree([(b"ab", EMPTY), (b"ac", EMPTY)], lambda b: Bytes(((b, b),)))
    Seq(items=(Bytes(ranges=((97, 97),)), Alt(items=(Bytes(ranges=((98, 98),)), Bytes(ranges=((99, 99),))))))
    """
    ordered = sorted(entries, key=itemgetter(0))
    # Common prefix lengths of neighbours: the keys sharing a branch are a run of sorted
    # neighbours, and their shared prefix is the least of these over the run.
    shared = [_common_prefix_length(key, nxt) for (key, _), (nxt, _) in pairwise(ordered)]
    for (key, _), (nxt, _) in pairwise(ordered):
        if key == nxt:
            raise GrammarError(f"prefix_tree keys must be distinct: {key!r} twice")
    return _prefix_tree(ordered, shared, 0, len(ordered), 0, unit, edge)


def _common_prefix_length(a: Sequence[Any], b: Sequence[Any]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _prefix_tree(entries: Sequence[tuple[Sequence[Any], Expr]], shared: Sequence[int],
                 lo: int, hi: int, depth: int, unit: Callable[[Any], Expr],
                 edge: Callable[[Sequence[Any]], Expr] | None) -> Expr:
    """The tree of ``entries[lo:hi]``, whose keys agree on their first ``depth`` elements."""
    options: list[Expr] = []
    i = lo
    while i < hi:
        key, tail = entries[i]
        if len(key) == depth:
            options.append(tail)
            i += 1
            continue
        # The run of keys that go on with the same element, and how far they agree (a key
        # alone: to its end, without recursing once per element).
        j = i + 1
        end = len(key)
        while j < hi and shared[j - 1] > depth:
            end = min(end, shared[j - 1])
            j += 1
        below = _prefix_tree(entries, shared, i, j, end, unit, edge)
        if edge is not None and end - depth > 1:
            options.append(seq(edge(key[depth:end]), below))
        else:
            options.append(seq(*map(unit, key[depth:end]), below))
        i = j
    return alt(*options)


def chars(ranges: Iterable[tuple[int, int]], negate: bool = False) -> Chars:
    """A character from code point ranges (or from their complement when ``negate``).

    Surrogates (U+D800..U+DFFF) are never included: they cannot be encoded in UTF-8.
    """
    merged = normalize_ranges(ranges)
    if negate:
        merged = _invert(merged, MAX_CODE_POINT)
    return Chars(_without_surrogates(merged))


def char_range(lo: str, hi: str) -> Chars:
    """One character between ``lo`` and ``hi`` inclusive.

    >>> char_range("a", "c").ranges
    ((97, 99),)
    """
    return chars([(ord(lo), ord(hi))])


def _invert(ranges: Ranges, top: int) -> Ranges:
    out = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= top:
        out.append((nxt, top))
    return tuple(out)


def _without_surrogates(ranges: Ranges) -> Ranges:
    out = []
    for lo, hi in ranges:
        if hi < 0xD800 or lo > 0xDFFF:
            out.append((lo, hi))
            continue
        if lo < 0xD800:
            out.append((lo, 0xD7FF))
        if hi > 0xDFFF:
            out.append((0xE000, hi))
    return tuple(out)


def seq(*items: Expr) -> Expr:
    """Concatenation, flattening nested sequences."""
    flat: list[Expr] = []
    for item in items:
        if isinstance(item, Seq):
            flat.extend(item.items)
        elif isinstance(item, Alt) and not item.items:
            return NOTHING
        else:
            flat.append(item)
    if len(flat) == 1:
        return flat[0]
    return Seq(tuple(flat))


def alt(*items: Expr) -> Expr:
    """Union, flattening nested unions and dropping empty languages."""
    flat: list[Expr] = []
    for item in items:
        if isinstance(item, Alt):
            flat.extend(item.items)
        else:
            flat.append(item)
    if len(flat) == 1:
        return flat[0]
    return Alt(tuple(flat))


def repeat(item: Expr, min: int = 0, max: int | None = None) -> Expr:
    """``item`` repeated ``min``..``max`` times (``max=None`` is unbounded)."""
    if min < 0 or (max is not None and max < min):
        raise GrammarError(f"invalid repetition bounds {{{min},{max}}}")
    if max == 0:
        return EMPTY
    if min == 1 and max == 1:
        return item
    return Repeat(item, min, max)


def optional(item: Expr) -> Expr:
    """Zero or one ``item``."""
    return repeat(item, 0, 1)


def star(item: Expr) -> Expr:
    """Zero or more ``item``."""
    return repeat(item, 0, None)


def plus(item: Expr) -> Expr:
    """One or more ``item``."""
    return repeat(item, 1, None)


def intersect(*items: Expr) -> Expr:
    """Strings in every item's language."""
    if len(items) == 1:
        return items[0]
    return And(tuple(items))


def complement(item: Expr) -> Expr:
    """Valid UTF-8 strings not in ``item``'s language."""
    return Not(item)


def ref(name: str) -> Ref:
    """A reference to the rule ``name``."""
    return Ref(name)
