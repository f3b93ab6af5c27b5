"""Language tests of the grammar IR → lazy byte automaton (constrain.automaton).

The reference is ``oracle_match``: a set-of-end-positions matcher over UTF-8 bytes written
here from the IR's documented meaning, independent of the derivative machinery under test.
"""

from __future__ import annotations

import itertools
import json
import random
import signal
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constrain.automaton import Automaton, AutomatonOptions
from constrain.compiler import compile_grammar
from constrain.errors import ConstrainError, GrammarError, ResourceLimitError
from constrain.grammar import (
    ANY_CHAR,
    EMPTY,
    NOTHING,
    Alt,
    And,
    Bytes,
    Chars,
    Expr,
    Grammar,
    Lazy,
    Not,
    Ref,
    Repeat,
    RuleLibrary,
    Seq,
    alt,
    byte_literal,
    char_range,
    chars,
    complement,
    intersect,
    literal,
    optional,
    plus,
    prefix_tree,
    ref,
    repeat,
    seq,
    star,
)
from constrain.regex import parse_regex
from constrain.terms import _AND, _LAZY, EMPTYSET, TermStore
from constrain.terms import EPS as EMPTY_STRING
from constrain.vocab import Vocabulary

DEAD = Automaton.DEAD


# ------------------------------------------------------------------------- the oracle


def _utf8_char_at(data: bytes, i: int) -> tuple[int, int] | None:
    """(code point, length) of the valid UTF-8 character starting at ``data[i]``, if any."""
    lead = data[i]
    n = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    try:
        text = data[i : i + n].decode("utf-8")  # strict: no overlongs, no surrogates
    except UnicodeDecodeError:
        return None
    return (ord(text), n) if len(text) == 1 else None


def _valid_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Oracle:
    """Full-match reference for the IR: ``ends(expr, i)`` is every ``j`` such that
    ``expr`` matches ``data[i:j]``. Exponential-free thanks to memoization per (node, i)."""

    def __init__(self, rules: Mapping[str, Expr], data: bytes) -> None:
        self.rules = rules
        self.data = data
        self.memo: dict[tuple[int, int], frozenset[int]] = {}
        self.keep: list[Expr] = []  # keep ids stable while memoized

    def ends(self, expr: Expr, i: int) -> frozenset[int]:
        key = (id(expr), i)
        found = self.memo.get(key)
        if found is None:
            self.keep.append(expr)
            found = frozenset(self._ends(expr, i))
            self.memo[key] = found
        return found

    def _step(self, expr: Expr, positions: Iterable[int]) -> set[int]:
        out: set[int] = set()
        for p in positions:
            out |= self.ends(expr, p)
        return out

    def _ends(self, expr: Expr, i: int) -> set[int]:
        data = self.data
        if isinstance(expr, Chars):
            if i >= len(data):
                return set()
            found = _utf8_char_at(data, i)
            if found is None:
                return set()
            cp, n = found
            return {i + n} if any(lo <= cp <= hi for lo, hi in expr.ranges) else set()
        if isinstance(expr, Bytes):
            if i < len(data) and any(lo <= data[i] <= hi for lo, hi in expr.ranges):
                return {i + 1}
            return set()
        if isinstance(expr, Seq):
            cur = {i}
            for item in expr.items:
                cur = self._step(item, cur)
                if not cur:
                    break
            return cur
        if isinstance(expr, Alt):
            return self._step_all(expr.items, i)
        if isinstance(expr, Repeat):
            cur = {i}
            for _ in range(expr.min):
                cur = self._step(expr.item, cur)
            result = set(cur)
            k = expr.min
            while cur and (expr.max is None or k < expr.max):
                nxt = self._step(expr.item, cur)
                k += 1
                if expr.max is None:
                    nxt -= result
                elif nxt == cur:  # fixed point: further copies add nothing
                    result |= nxt
                    break
                result |= nxt
                cur = nxt
            return result
        if isinstance(expr, And):
            sets = [self.ends(item, i) for item in expr.items]
            return set.intersection(*map(set, sets)) if sets else set()
        if isinstance(expr, Not):
            inner = self.ends(expr.item, i)
            return {
                j for j in range(i, len(data) + 1) if j not in inner and _valid_utf8(data[i:j])
            }
        if isinstance(expr, Ref):
            return set(self.ends(self.rules[expr.name], i))
        raise TypeError(expr)

    def _step_all(self, items: Iterable[Expr], i: int) -> set[int]:
        out: set[int] = set()
        for item in items:
            out |= self.ends(item, i)
        return out


def oracle_match(grammar: Grammar, data: bytes) -> bool:
    oracle = Oracle(grammar.rules, data)
    return len(data) in oracle.ends(grammar.rules[grammar.start], 0)


def strings_over(atoms: Iterable[bytes], max_len: int) -> list[bytes]:
    atoms = list(atoms)
    return [b"".join(p) for n in range(max_len + 1) for p in itertools.product(atoms, repeat=n)]


def g1(expr: Expr) -> Grammar:
    return Grammar.single(expr)


def live_states_check(a: Automaton, limit: int = 400) -> int:
    """BFS from start (up to ``limit`` states); assert every reached state can still reach
    an accepting state. Returns how many states were explored."""
    seen = {a.start}
    order = [a.start]
    edges: dict[int, set[int]] = {}
    k = 0
    while k < len(order) and len(seen) < limit:
        s = order[k]
        k += 1
        succ = set(np.unique(a.row(s)).tolist()) - {DEAD}
        edges[s] = succ
        for t in succ:
            if t not in seen:
                seen.add(t)
                order.append(t)
    if k < len(order):
        return k  # too many states to decide liveness by a bounded search; skip
    good = {s for s in seen if a.is_accepting(s)}
    changed = True
    while changed:
        changed = False
        for s, succ in edges.items():
            if s not in good and succ & good:
                good.add(s)
                changed = True
    dead_ends = sorted(seen - good)
    assert not dead_ends, f"reachable states with an empty language: {dead_ends}"
    return len(seen)


A_ = literal("a")
B_ = literal("b")
AB = alt(A_, B_)


# -------------------------------------------------------------------- Seq / Alt / Repeat

SMALL_ATOMS = [b"a", b"b", b"c"]
SMALL_STRINGS = strings_over(SMALL_ATOMS, 5)

LANGUAGE_CASES = {
    "empty-string": EMPTY,
    "literal": literal("abc"),
    "alt": alt(literal("ab"), literal("ba"), literal("c")),
    "alt-shared-prefix": alt(literal("abc"), literal("ab"), literal("abca")),
    "star": star(AB),
    "plus": plus(literal("ab")),
    "optional": seq(optional(A_), B_),
    "repeat-exact": repeat(AB, 3, 3),
    "repeat-range": repeat(literal("ab"), 1, 2),
    "repeat-open": repeat(A_, 2, None),
    "repeat-nullable-item": repeat(optional(A_), 2, 3),
    "repeat-nested": repeat(repeat(A_, 1, 2), 2, 2),
    "star-of-star": star(star(literal("ab"))),
    "plus-of-optional": plus(optional(literal("ab"))),
    "seq-of-nullables": seq(star(A_), star(B_), star(literal("c"))),
    "mixed": seq(star(AB), literal("c"), optional(A_)),
    "nothing-in-alt": alt(NOTHING, literal("c")),
    "raw-nested-seq": Seq((Seq((A_,)), Seq(()), Seq((B_, Seq(()))))),
    "raw-repeat-1-1": Repeat(literal("ab"), 1, 1),
    "raw-repeat-0-0": Repeat(A_, 0, 0),
}


@pytest.mark.parametrize("expr", LANGUAGE_CASES.values(), ids=LANGUAGE_CASES.keys())
def test_regular_language_matches_oracle(expr: Expr) -> None:
    grammar = g1(expr)
    a = Automaton(grammar)
    for s in SMALL_STRINGS:
        assert a.matches(s) == oracle_match(grammar, s), s
    live_states_check(a)


def test_ab_star_a_ab20_builds_lazily_and_matches() -> None:
    """(a|b)*a(a|b){20}: the DFA has 2^21 states; only those reached may be built."""
    start = time.perf_counter()
    a = Automaton(g1(seq(star(AB), A_, repeat(AB, 20, 20))))
    assert time.perf_counter() - start < 1.0
    assert a.num_states <= 4  # DEAD, start and maybe a handful
    rng = random.Random(7)
    walked = 0
    for _ in range(40):
        text = "".join(rng.choice("ab") for _ in range(rng.randint(15, 40)))
        walked += len(text)
        expected = len(text) >= 21 and text[-21] == "a"
        assert a.matches(text.encode()) == expected, text
    # Computing a visited state's row interns its successors: at most 2 (for a and b).
    assert a.num_states <= 2 * walked + 3
    assert a.matches(b"a" + b"b" * 20) and not a.matches(b"b" * 21)
    assert time.perf_counter() - start < 10.0


@pytest.mark.parametrize(
    "expr, good, bad, max_states",
    [
        pytest.param(repeat(char_range("0", "9"), 1, 1000), b"7" * 1000, b"7" * 1001, 1010,
                     id="digits{1,1000}"),
        pytest.param(repeat(literal("ab"), 1000, 1000), b"ab" * 1000, b"ab" * 999 + b"a", 2010,
                     id="(ab){1000}"),
        pytest.param(seq(repeat(A_, 0, 1000), B_), b"a" * 1000 + b"b", b"a" * 1001 + b"b", 1010,
                     id="a{0,1000}b"),
        pytest.param(repeat(repeat(A_, 1, 3), 100, 100), b"a" * 300, b"a" * 301, 1000,
                     id="(a{1,3}){100}"),
    ],
)
def test_huge_bounded_repeats_are_counted_not_unrolled(
    expr: Expr, good: bytes, bad: bytes, max_states: int
) -> None:
    start = time.perf_counter()
    a = Automaton(g1(expr))
    assert a.num_states <= 4
    assert a.matches(good)
    assert not a.matches(bad)
    assert not a.matches(good[:0])
    assert a.num_states <= max_states
    assert time.perf_counter() - start < 5.0


DATE_LIKE = seq(repeat(char_range("0", "9"), 4, 4), literal("-"),
                alt(literal("01"), literal("12"), literal("1")))


def test_build_all_builds_a_small_regular_language_whole() -> None:
    a = Automaton(g1(DATE_LIKE))
    assert a.build_all(128)
    assert a.has_rows(np.arange(a.num_states)).all()
    assert 6 <= a.num_states <= 12  # the counts, the dash, the suffixes: nothing twice
    built = a.num_states
    for text, expected in [(b"2024-01", True), (b"2024-1", True), (b"2024-12", True),
                           (b"2024-13", False), (b"202-01", False), (b"2024-011", False)]:
        assert a.matches(text) == expected, text
    assert a.num_states == built  # matching needed nothing new


def test_build_all_tells_the_states_some_input_reaches() -> None:
    """Rows made from a run's tail make that tail a state of its own, which no input may
    reach; the masks made ahead are those of the states the rows lead to from the start."""
    a = Automaton(g1(parse_regex(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")))
    assert a.reachable_states() is None
    assert a.build_all(128)
    reachable = a.reachable_states()
    assert reachable is not None and reachable[0] == a.start
    seen, todo = {a.start}, [a.start]
    while todo:
        for target in set(a.row(todo.pop()).tolist()) - {Automaton.DEAD} - seen:
            seen.add(target)
            todo.append(target)
    assert len(reachable) == len(set(reachable)) and set(reachable) == seen
    assert len(seen) < a.num_states - 1  # the helpers exist, and are left out


@pytest.mark.parametrize(
    "expr, most_states",
    [
        # States double with every byte: gives up at the second doubling past 2 (a
        # counted repeat could double them past the limit).
        pytest.param(seq(star(AB), A_, repeat(AB, 20, 20)), 80, id="(a|b)*a(a|b){20}"),
        # A state per count: gives up before building anything.
        pytest.param(repeat(char_range("0", "9"), 1, 1000), 4, id="digits{1,1000}"),
        # Nested counts (300 states): stops at the limit.
        pytest.param(repeat(repeat(A_, 1, 3), 100, 100), 128 + 258, id="(a{1,3}){100}"),
    ],
)
def test_build_all_gives_up_where_states_would_be_many(expr: Expr, most_states: int) -> None:
    a = Automaton(g1(expr))
    assert not a.build_all(128)
    assert a.num_states <= most_states


def test_build_all_leaves_grammars_with_references_lazy() -> None:
    a = Automaton(Grammar({"start": star(seq(literal("("), ref("start"), literal(")")))}))
    assert not a.build_all(128)
    assert a.num_states <= 3


def test_build_all_within_a_small_state_budget_defers_the_error() -> None:
    """Building ahead is optional: a budget it would exceed is reported by the matching
    that reaches it, not by the compile."""
    options = AutomatonOptions(max_states=5)
    a = Automaton(g1(DATE_LIKE), options)
    assert not a.build_all(128)
    with pytest.raises(ResourceLimitError):
        a.matches(b"2024-01")
    vocab = Vocabulary.from_token_bytes([b"2", b"0", None], eos_token_ids=[2])
    compiled = compile_grammar(g1(DATE_LIKE), vocab, options=options)  # no error here
    assert compiled.matcher().advance(0)


def test_huge_repeat_lower_bound_enforced() -> None:
    a = Automaton(g1(repeat(char_range("0", "9"), 500, 1000)))
    assert not a.matches(b"1" * 499)
    assert a.matches(b"1" * 500)
    assert not a.is_accepting(a.step_bytes(a.start, b"1" * 499))


# --------------------------------------------------------------------------- And / Not

BOOL_ATOMS = [b"a", b"b", "é".encode(), b"\xc3"]  # the last one makes invalid UTF-8
BOOL_STRINGS = strings_over(BOOL_ATOMS, 4)
A_STAR = star(A_)

BOOLEAN_CASES = {
    "and-two-stars": intersect(star(AB), seq(star(A_), star(B_))),
    "and-disjoint": alt(intersect(literal("ab"), literal("ba")), literal("b")),
    "and-lengths": intersect(repeat(AB, 2, 3), seq(star(AB), B_)),
    "not-literal": complement(literal("a")),
    "not-star": complement(A_STAR),
    "not-not": complement(complement(seq(A_, B_))),
    "not-empty-lang": complement(NOTHING),
    "not-everything": alt(complement(star(ANY_CHAR)), literal("b")),
    "and-not": intersect(star(AB), complement(seq(star(AB), literal("bb"), star(AB)))),
    "not-in-seq": seq(complement(star(AB)), literal("é")),
    "not-under-star": star(seq(complement(A_STAR), B_)),
    "and-with-nonascii": intersect(star(ANY_CHAR), seq(star(AB), literal("é"))),
    "empty-and-inside-alt": alt(intersect(A_STAR, complement(A_STAR)), literal("b")),
    "empty-and-after-prefix": alt(seq(literal("a"), intersect(plus(A_), complement(A_STAR))),
                                  literal("ab")),
    "not-of-bytes": complement(Bytes(((0xC3, 0xC3),))),
    "not-beside-bytes": intersect(star(alt(A_, Bytes(((0xC3, 0xC3),)))), complement(literal("a"))),
}


@pytest.mark.parametrize("expr", BOOLEAN_CASES.values(), ids=BOOLEAN_CASES.keys())
def test_and_not_exact_against_brute_force(expr: Expr) -> None:
    grammar = g1(expr)
    a = Automaton(grammar)
    for s in BOOL_STRINGS:
        assert a.matches(s) == oracle_match(grammar, s), s
    live_states_check(a)


def test_complement_is_within_valid_utf8() -> None:
    a = Automaton(g1(complement(literal("a"))))
    assert a.matches(b"") and a.matches(b"b") and a.matches("é日😀".encode())
    assert not a.matches(b"a")
    for invalid in (b"\xc3", b"\xff", b"\xed\xa0\x80", b"\xc0\x80", b"a\x80"):
        assert not a.matches(invalid), invalid


def test_complement_beside_utf8_text_leaves_no_intersection_behind() -> None:
    """Off its excluded words, "any text but these" is the plain text loop again (the
    string of an unlisted key): one state wherever it occurs, not an intersection each."""
    text = star(alt(char_range("a", "z"), literal("é")))
    a = Automaton(g1(alt(seq(literal("A"), text),
                         seq(literal("B"), intersect(text, complement(literal("ab")))))))
    assert a.step_bytes(a.start, b"Az") == a.step_bytes(a.start, b"Bz") != DEAD
    assert a.step_bytes(a.start, "Aé".encode()) == a.step_bytes(a.start, "Bé".encode())
    assert [a.matches(s) for s in (b"B", b"Ba", b"Bab", b"Babc", "Bé".encode())] == [
        True, True, False, True, True]
    assert not a.matches(b"B\xc3") and not a.matches(b"Ba\xff") and not a.matches(b"BaZ")


@pytest.mark.parametrize("pattern, loops", [
    ('"[^"]*"', True),
    ('"[^"]*"x', True),
    ('"(\\\\.|[^"\\\\])*"', True),
    ('"[^"]*', False),  # what follows is not in the term: it cannot tell
    ('"[^"]*"?', False),
    ('"[^"]*(ä|")', False),  # what follows may start with the same bytes
    ('"[a-zé]*"', False),  # not every character is a copy
])
def test_loops_on_multibyte_chars_where_its_term_shows_it(pattern: str, loops: bool) -> None:
    a = Automaton(g1(parse_regex(pattern)))
    inside = a.step_bytes(a.start, b'"')
    assert a.loops_on_multibyte_chars(inside) == loops
    if loops:  # what it claims: each of them leads back
        for c in "é€😀\u0800\U00010000\U0010ffff\ufffd":
            assert a.step_bytes(inside, c.encode()) == inside, c


def test_dead_branch_of_intersection_is_not_offered() -> None:
    """`And(a*, Not(a*))` is empty: its branch must not make any byte look allowed."""
    a = Automaton(g1(alt(intersect(A_STAR, complement(A_STAR)), literal("b"))))
    assert np.flatnonzero(a.row(a.start) != DEAD).tolist() == [ord("b")]
    a = Automaton(g1(alt(seq(literal("x"), intersect(plus(A_), complement(A_STAR))),
                         literal("xy"))))
    after_x = a.step(a.start, ord("x"))
    assert np.flatnonzero(a.row(after_x) != DEAD).tolist() == [ord("y")]


# --------------------------------------------------------------------------------- Chars

UTF8_BOUNDARIES = {
    "ascii-top/2-byte": (0x7F, 0x80),
    "2-byte-top/3-byte": (0x7FF, 0x800),
    "3-byte-top/4-byte": (0xFFFF, 0x10000),
    "before/after-surrogates": (0xD7FF, 0xE000),
}


def _all_scalar_bytes() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every code point 0..0x10FFFF: its UTF-8 bytes (padded to 4), length, and code point
    (surrogates encoded with surrogatepass, i.e. the invalid ED A0..BF xx forms)."""
    cps = np.arange(0x110000, dtype=np.int64)
    out = np.zeros((len(cps), 4), dtype=np.int64)
    n = np.where(cps < 0x80, 1, np.where(cps < 0x800, 2, np.where(cps < 0x10000, 3, 4)))
    one, two, three, four = (n == 1), (n == 2), (n == 3), (n == 4)
    out[one, 0] = cps[one]
    out[two, 0] = 0xC0 | (cps[two] >> 6)
    out[two, 1] = 0x80 | (cps[two] & 0x3F)
    out[three, 0] = 0xE0 | (cps[three] >> 12)
    out[three, 1] = 0x80 | ((cps[three] >> 6) & 0x3F)
    out[three, 2] = 0x80 | (cps[three] & 0x3F)
    out[four, 0] = 0xF0 | (cps[four] >> 18)
    out[four, 1] = 0x80 | ((cps[four] >> 12) & 0x3F)
    out[four, 2] = 0x80 | ((cps[four] >> 6) & 0x3F)
    out[four, 3] = 0x80 | (cps[four] & 0x3F)
    return out, n, cps


_SCALARS = _all_scalar_bytes()


def _accepts_each_code_point(a: Automaton) -> np.ndarray:
    """For every code point (as its own 1-4 byte string): does ``a`` fully match it?"""
    data, lengths, _ = _SCALARS
    states = np.full(len(lengths), a.start, dtype=np.int64)
    for k in range(4):
        active = lengths > k
        table = a.rows_for(states[active])
        states[active] = table[states[active], data[active, k]]
    accepting = np.zeros(len(lengths), dtype=bool)
    alive = states != DEAD
    flags = a.accepting_flags()
    accepting[alive] = flags[states[alive]]
    return accepting


def _expected_members(ranges: Iterable[tuple[int, int]]) -> np.ndarray:
    _, _, cps = _SCALARS
    member = np.zeros(len(cps), dtype=bool)
    for lo, hi in ranges:
        member[lo : hi + 1] = True
    member[0xD800:0xE000] = False
    return member


CHAR_CASES = {
    "ascii": [(0x20, 0x7E)],
    "straddle-0x7F/0x80": [(0x70, 0x90)],
    "straddle-0x7FF/0x800": [(0x7F0, 0x810)],
    "straddle-0xFFFF/0x10000": [(0xFFF0, 0x10010)],
    "straddle-surrogates": [(0xD700, 0xE100)],
    "exact-2-byte-band": [(0x80, 0x7FF)],
    "exact-3-byte-band": [(0x800, 0xFFFF)],
    "exact-4-byte-band": [(0x10000, 0x10FFFF)],
    "everything": [(0, 0x10FFFF)],
    "single-points": [(0x7F, 0x7F), (0x80, 0x80), (0x7FF, 0x800), (0xFFFF, 0x10000),
                      (0x10FFFF, 0x10FFFF), (0xE9, 0xE9)],
    "odd-continuation-splits": [(0x3A5, 0x7C1), (0x1234, 0x5A7F), (0x1F600, 0x1F64F),
                                (0x2FFFF, 0x40001), (0xEFFFE, 0x10FFFE)],
    "cjk-and-emoji": [(0x4E00, 0x9FFF), (0x1F300, 0x1FAFF)],
}


@pytest.mark.parametrize("ranges", CHAR_CASES.values(), ids=CHAR_CASES.keys())
def test_chars_accept_exactly_their_code_points(ranges: list[tuple[int, int]]) -> None:
    """Exhaustive over all 1,114,112 code points (surrogates never accepted)."""
    a = Automaton(g1(chars(ranges)))
    got = _accepts_each_code_point(a)
    expected = _expected_members(ranges)
    wrong = np.flatnonzero(got != expected)
    assert not len(wrong), [hex(int(c)) for c in wrong[:10]]


@pytest.mark.parametrize("negate", [False, True], ids=["set", "negated"])
def test_raw_chars_node_with_surrogates_in_range_excludes_them(negate: bool) -> None:
    """A Chars built without the builder (surrogates inside the range) still excludes them."""
    ranges = ((0xD000, 0xE100),) if not negate else ((0, 0xCFFF), (0xE101, 0x10FFFF))
    a = Automaton(g1(Chars(ranges)))
    got = _accepts_each_code_point(a)
    assert not got[0xD800:0xE000].any()
    expected = _expected_members(ranges)
    assert (got == expected).all()


@pytest.mark.parametrize("pair", UTF8_BOUNDARIES.values(), ids=UTF8_BOUNDARIES.keys())
def test_utf8_length_boundaries(pair: tuple[int, int]) -> None:
    below, above = pair
    only_below = Automaton(g1(chars([(0, below)])))
    only_above = Automaton(g1(chars([(above, 0x10FFFF)])))
    assert only_below.matches(chr(below).encode()) and not only_below.matches(chr(above).encode())
    assert only_above.matches(chr(above).encode()) and not only_above.matches(chr(below).encode())
    both = Automaton(g1(repeat(chars([(below, above)]), 2, 2)))
    assert both.matches((chr(below) + chr(above)).encode())
    assert both.matches((chr(above) + chr(below)).encode())


INVALID_UTF8 = {
    "lone-continuation": b"\x80",
    "overlong-nul": b"\xc0\x80",
    "overlong-2": b"\xc1\xbf",
    "overlong-3": b"\xe0\x80\xaf",
    "overlong-4": b"\xf0\x80\x80\xaf",
    "surrogate-high": b"\xed\xa0\x80",
    "surrogate-low": b"\xed\xbf\xbf",
    "above-max": b"\xf4\x90\x80\x80",
    "f5": b"\xf5\x80\x80\x80",
    "ff": b"\xff",
    "truncated-2": b"\xc3",
    "truncated-3": b"\xe6\x97",
    "truncated-4": b"\xf0\x9f\x98",
}


@pytest.mark.parametrize("data", INVALID_UTF8.values(), ids=INVALID_UTF8.keys())
def test_any_char_rejects_invalid_utf8(data: bytes) -> None:
    a = Automaton(g1(star(ANY_CHAR)))
    assert not a.matches(data)
    assert not a.matches(b"x" + data + b"y")


def test_any_char_start_row_allows_exactly_valid_lead_bytes() -> None:
    a = Automaton(g1(ANY_CHAR))
    live = set(np.flatnonzero(a.row(a.start) != DEAD).tolist())
    assert live == set(range(0x80)) | set(range(0xC2, 0xF5))


def test_all_two_byte_strings_against_decoder() -> None:
    """Every 2-byte string is matched by one ANY_CHAR iff it decodes to one character."""
    a = Automaton(g1(ANY_CHAR))
    b0, b1 = np.divmod(np.arange(65536), 256)
    s1 = a.rows_for(np.array([a.start]))[a.start, b0]
    table = a.rows_for(s1)
    s2 = table[s1, b1]
    got = (s1 != DEAD) & (s2 != DEAD) & a.accepting_flags()[s2]
    expected = np.array(
        [_utf8_char_at(bytes([x, y]), 0) is not None and x >= 0x80
         for x, y in zip(b0.tolist(), b1.tolist())]
    )
    assert (got == expected).all()


# --------------------------------------------------------------------------------- Bytes


BYTES_CASES = {
    "invalid-utf8-literal": (byte_literal(b"\xff\xfe"), [b"\xff\xfe"], [b"\xff", b"\xfe\xff"]),
    "byte-range": (star(Bytes(((0x80, 0xFF),))), [b"", b"\x80\xff\xc3"], [b"a", b"\x80a"]),
    "bytes-then-chars": (seq(byte_literal(b"\xff"), literal("é")), [b"\xff\xc3\xa9"],
                         [b"\xff\xc3", b"\xc3\xa9"]),
    "bytes-spell-a-char": (seq(Bytes(((0xC3, 0xC3),)), Bytes(((0xA9, 0xA9),))),
                           ["é".encode()], [b"\xc3"]),
    "bytes-alt-chars-same-prefix": (alt(literal("é"), byte_literal(b"\xc3\x28")),
                                    ["é".encode(), b"\xc3\x28"], [b"\xc3", b"\xc3\xa8"]),
}


@pytest.mark.parametrize("expr, good, bad", BYTES_CASES.values(), ids=BYTES_CASES.keys())
def test_bytes_atoms(expr: Expr, good: list[bytes], bad: list[bytes]) -> None:
    a = Automaton(g1(expr))
    for s in good:
        assert a.matches(s), s
        assert oracle_match(g1(expr), s)
    for s in bad:
        assert not a.matches(s), s
        assert not oracle_match(g1(expr), s)


# ----------------------------------------------------------------------------- recursion

DYCK = Grammar({"start": star(seq(literal("("), ref("start"), literal(")")))})
ARRAY = Grammar(
    {
        "value": alt(literal("x"), ref("array")),
        "array": seq(literal("["), optional(seq(ref("value"), star(seq(literal(","),
                                                                        ref("value"))))),
                     literal("]")),
    },
    start="value",
)
ARITH = Grammar(
    {
        "expr": seq(ref("term"), star(seq(literal("+"), ref("term")))),
        "term": seq(ref("factor"), star(seq(literal("*"), ref("factor")))),
        "factor": alt(literal("x"), seq(literal("("), ref("expr"), literal(")"))),
    },
    start="expr",
)
EVEN_ODD = Grammar(
    {"even": alt(EMPTY, seq(literal("a"), ref("odd"))), "odd": seq(literal("b"), ref("even"))},
    start="even",
)
PALINDROMES = Grammar(
    {"start": alt(EMPTY, literal("a"), literal("b"),
                  seq(literal("a"), ref("start"), literal("a")),
                  seq(literal("b"), ref("start"), literal("b")))}
)

RECURSIVE_CASES = {
    "dyck": (DYCK, "()", 6),
    "nested-arrays": (ARRAY, "x[],", 5),
    "arithmetic": (ARITH, "x+*()", 5),
    "mutual-even-odd": (EVEN_ODD, "ab", 8),
    "palindromes": (PALINDROMES, "ab", 8),
}


@pytest.mark.parametrize("grammar, alphabet, max_len", RECURSIVE_CASES.values(),
                         ids=RECURSIVE_CASES.keys())
def test_recursive_grammar_matches_oracle(grammar: Grammar, alphabet: str, max_len: int) -> None:
    a = Automaton(grammar)
    for s in strings_over([c.encode() for c in alphabet], max_len):
        assert a.matches(s) == oracle_match(grammar, s), s


# A shared library of rules (value/list reference each other) and grammars including it
# under rules of their own, numbered before and after the library's in the rule dict.
LIST_LIBRARY = RuleLibrary(
    {"value": alt(literal("x"), ref("list")),
     "list": seq(literal("["), optional(seq(ref("value"), star(seq(literal(","),
                                                                   ref("value"))))),
                 literal("]"))},
    common=(literal("key"), char_range("a", "c")),
)


def _with_list_library(own: Mapping[str, Expr], start: str, first: bool,
                       library: RuleLibrary | None) -> Grammar:
    rules = {**LIST_LIBRARY.rules, **own} if first else {**own, **LIST_LIBRARY.rules}
    return Grammar(rules, start, library=library)


LIBRARY_USERS = [
    ({"start": seq(literal("key="), ref("list"))}, "start"),
    ({"pair": seq(ref("name"), literal(":"), ref("value")), "name": plus(char_range("a", "c"))},
     "pair"),
    ({"start": alt(ref("value"), seq(literal("("), ref("start"), literal(")")))}, "start"),
    # A nullable rule of its own (named as the library's own start rule is), and one that
    # never finishes: the library's rules are settled, the grammar's still found.
    ({"library.common": star(ref("value")),
      "start": alt(seq(ref("library.common"), literal(".")), seq(literal("!"), ref("never"))),
      "never": seq(literal("("), ref("never"))}, "start"),
]


@pytest.mark.parametrize("own, start", LIBRARY_USERS)
@pytest.mark.parametrize("first", [True, False])
def test_grammars_including_a_library_match_as_without_it(
        own: Mapping[str, Expr], start: str, first: bool) -> None:
    shared = Automaton(_with_list_library(own, start, first, LIST_LIBRARY))
    plain = Automaton(_with_list_library(own, start, first, None))
    assert shared._rule_nullable == plain._rule_nullable
    assert shared._rule_productive == plain._rule_productive
    for s in strings_over([b"key=", b"[", b"x", b",", b"]", b"a", b":", b"(", b")", b".",
                           b"!"], 4):
        assert shared.matches(s) == plain.matches(s), s
    for s in (b"key=[x,[x,[]]]", b"abc:[x]", b"((x))", b"(([x,x]))", b"key=[x,]", b".",
              b"x[x]."):
        assert shared.matches(s) == plain.matches(s) == oracle_match(plain.grammar, s), s


def test_a_library_is_converted_once_and_forked() -> None:
    from constrain import automaton as automaton_module

    first = Automaton(_with_list_library(*LIBRARY_USERS[0], True, LIST_LIBRARY))
    start = automaton_module._library_starts[LIST_LIBRARY]
    second = Automaton(_with_list_library(*LIBRARY_USERS[1], False, LIST_LIBRARY))
    assert automaton_module._library_starts[LIST_LIBRARY] is start
    # The library's rules are the same terms in both, numbered first, and the common
    # expressions are there before either grammar needs them.
    assert first.rule_terms[:2] == second.rule_terms[:2] == start.rule_terms[:2]
    assert second._rule_names[:2] == ["value", "list"]
    size = len(start.terms)
    assert len(first.terms) >= size and len(second.terms) >= size
    assert first.terms._kind[:size] == second.terms._kind[:size] == start.terms._kind
    # Forks are independent: growing one leaves the library's store as it was.
    first.step_bytes(first.start, b"key=[x,[x")
    assert len(start.terms) == size


def test_library_rules_must_be_the_grammars_and_self_contained() -> None:
    with pytest.raises(GrammarError, match="outside the library"):
        RuleLibrary({"a": ref("b")})
    with pytest.raises(GrammarError, match="may not reference"):
        RuleLibrary({}, common=(ref("a"),))
    with pytest.raises(GrammarError, match="not the library's"):
        Grammar({"value": alt(literal("x"), ref("list")), "list": LIST_LIBRARY.rules["list"]},
                "value", library=LIST_LIBRARY)


def test_balanced_brackets_to_depth_50() -> None:
    a = Automaton(DYCK)
    deep = b"(" * 50 + b")" * 50
    assert a.matches(deep)
    assert a.matches(deep + b"()" + deep)
    assert not a.matches(b"(" * 50 + b")" * 49)
    assert not a.matches(b"(" * 49 + b")" * 50)
    state = a.step_bytes(a.start, b"(" * 50)
    assert state != DEAD and not a.is_accepting(state)
    assert np.flatnonzero(a.row(state) != DEAD).tolist() == [ord("("), ord(")")]


def test_nested_arrays_depth_50() -> None:
    a = Automaton(ARRAY)
    text = b"[" * 50 + b"x" + b",x]" + b"]" * 49
    assert a.matches(text)
    assert not a.matches(text[:-1])
    assert not a.matches(b"[" * 50 + b"]" * 51)


def test_recursion_is_exact_not_unrolled() -> None:
    """Depth 300 works exactly: no fixed unrolling depth caps the language."""
    a = Automaton(DYCK)
    assert a.matches(b"(" * 300 + b")" * 300)
    assert not a.matches(b"(" * 300 + b")" * 299)


def _tail_recursive() -> Grammar:
    return Grammar({"start": alt(EMPTY, seq(literal("a"), ref("start")))})


def test_tail_recursion_stays_bounded_in_states() -> None:
    a = Automaton(_tail_recursive())
    assert a.matches(b"a" * 200)
    assert a.num_states < 20


def test_right_recursive_list_does_not_use_python_recursion_per_item() -> None:
    g = Grammar({
        "start": seq(literal("["), ref("items"), literal("]")),
        "items": alt(literal("x"), seq(literal("x,"), ref("items"))),
    })
    a = Automaton(g)
    old = sys.getrecursionlimit()
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    sys.setrecursionlimit(depth + 250)  # 250 spare frames; matching 400 items must fit
    try:
        assert a.matches(b"[" + b"x," * 400 + b"x]")
    finally:
        sys.setrecursionlimit(old)


@contextmanager
def cpu_time_limit(seconds: float) -> Iterator[None]:
    """Raise TimeoutError once this process has used ``seconds`` of CPU time (CPU, not wall
    time, so a loaded machine does not make it flaky; the code under test is Python, so the
    signal is delivered between bytecodes)."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s of CPU time")

    previous = signal.signal(signal.SIGVTALRM, expire)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


AMBIGUOUS = Grammar({"start": alt(literal("x"), seq(literal("("), ref("start"),
                                                      optional(literal(")"))))})


def _ambiguous_input(n: int) -> bytes:
    return b"(" * n + b"x" + b")" * (n // 2)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGVTALRM")
def test_ambiguous_nested_optional_closers_are_bounded() -> None:
    a = Automaton(AMBIGUOUS)
    with cpu_time_limit(3.0):
        try:
            assert a.matches(_ambiguous_input(150))
        except ResourceLimitError:
            pass  # a clear budget error would be acceptable too


def test_ambiguity_budget_raises_resource_limit() -> None:
    a = Automaton(AMBIGUOUS, AutomatonOptions(max_stacks_per_state=64))
    start = time.process_time()
    with pytest.raises(ResourceLimitError):
        a.matches(_ambiguous_input(150))
    assert time.process_time() - start < 1.0


@pytest.mark.xfail(
    strict=True,
    reason="BUG (invariant 5, bounded): matching the ambiguous grammar start: x | '(' start "
    "')'? on (^n x )^(n/2) still costs ~n^3 CPU (n=150: 0.55 s, n=300: 4.3 s; doubling n "
    "costs ~8x: 144,952 -> 1,162,402 stack pushes for n=100 -> 200), so inputs well inside "
    "max_stacks_per_state=4096 take hours",
)
def test_ambiguous_grammar_cost_grows_at_most_quadratically(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Work counted, not timed: stack pushes, the unit of matching's work, are exact and
    # immune to a busy machine (CPU time made this strict xfail pass by chance).
    pushes = [0]
    push = Automaton._push

    def counted(self: Automaton, below: int, term: int) -> int:
        pushes[0] += 1
        return push(self, below, term)

    monkeypatch.setattr(Automaton, "_push", counted)

    def work(n: int) -> int:
        pushes[0] = 0
        assert Automaton(AMBIGUOUS).matches(_ambiguous_input(n))
        return pushes[0]

    small, large = work(100), work(200)
    assert large < 5.5 * small, (small, large)


LEFT_RECURSIVE = {
    "direct": {"start": alt(seq(ref("start"), A_), B_)},
    "indirect": {"start": alt(seq(ref("x"), A_), B_), "x": seq(ref("start"), B_)},
    "through-nullable-prefix": {"start": alt(seq(optional(literal("c")), ref("start"), A_), B_)},
    "through-star-prefix": {"start": alt(seq(star(literal("c")), ref("start")), B_)},
    "through-nullable-rule": {"start": alt(seq(ref("n"), ref("start"), A_), B_),
                              "n": optional(literal("c"))},
    "self-only": {"start": alt(ref("start"), A_)},
}


@pytest.mark.parametrize("rules", LEFT_RECURSIVE.values(), ids=LEFT_RECURSIVE.keys())
def test_left_recursion_is_a_grammar_error(rules: dict[str, Expr]) -> None:
    start = time.perf_counter()
    with pytest.raises(GrammarError, match="left recursion"):
        Automaton(Grammar(rules))
    assert time.perf_counter() - start < 1.0


MALFORMED = {
    "ref-inside-and": lambda: Grammar({"start": intersect(ref("x"), A_), "x": A_}),
    "ref-inside-not": lambda: Grammar({"start": complement(ref("x")), "x": A_}),
    "byte-out-of-range": lambda: g1(Bytes(((0, 256),))),
    "not-an-expr": lambda: g1("abc"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("make", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_ir_raises_grammar_error(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(GrammarError):
        Automaton(make())


@pytest.mark.parametrize(
    "make",
    [
        lambda: Grammar({"start": ref("missing")}),
        lambda: Grammar({"a": A_}, start="start"),
        lambda: repeat(A_, 3, 2),
        lambda: repeat(A_, -1, None),
    ],
    ids=["undefined-rule", "undefined-start", "max-below-min", "negative-min"],
)
def test_invalid_grammar_construction(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(GrammarError):
        make()


# ------------------------------------------------------------------- empty / liveness


EMPTY_LANGUAGES = {
    "nothing": NOTHING,
    "empty-chars": Chars(()),
    "and-disjoint": intersect(literal("a"), literal("b")),
    "and-x-not-x": intersect(A_STAR, complement(A_STAR)),
    "seq-with-nothing": Seq((literal("a"), NOTHING)),
    "plus-of-nothing": Repeat(NOTHING, 1, None),
    "not-everything": complement(star(ANY_CHAR)),
}


@pytest.fixture(scope="module")
def tiny_vocab() -> Vocabulary:
    return Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None],
                                       eos_token_ids=[256])


@pytest.mark.parametrize("expr", EMPTY_LANGUAGES.values(), ids=EMPTY_LANGUAGES.keys())
def test_empty_language_is_rejected_at_compile(expr: Expr, tiny_vocab: Vocabulary) -> None:
    with pytest.raises(GrammarError, match="empty"):
        compile_grammar(g1(expr), tiny_vocab)


def test_non_productive_recursion_is_an_empty_language(tiny_vocab: Vocabulary) -> None:
    g = Grammar({"start": seq(literal("("), ref("start"), literal(")"))})
    with pytest.raises(GrammarError):
        compile_grammar(g, tiny_vocab)


def test_branch_into_non_productive_rule_is_dead() -> None:
    g = Grammar({
        "start": alt(literal("a"), seq(literal("b"), ref("x"))),
        "x": seq(literal("("), ref("x"), literal(")")),
    })
    a = Automaton(g)
    assert a.step(a.start, ord("b")) == DEAD


def test_empty_language_inside_repeat_and_seq_is_not_offered() -> None:
    dead = intersect(A_STAR, complement(A_STAR))
    a = Automaton(g1(alt(seq(literal("q"), dead), star(seq(literal("z"), dead)), literal("ok"))))
    assert np.flatnonzero(a.row(a.start) != DEAD).tolist() == [ord("o")]
    assert a.is_accepting(a.start)  # star(...) still gives the empty string
    live_states_check(a)


# --------------------------------------------------------------------- budgets / limits


def test_max_states_budget_raises_resource_limit() -> None:
    a = Automaton(g1(repeat(char_range("0", "9"), 1, 1000)), AutomatonOptions(max_states=10))
    with pytest.raises(ResourceLimitError) as info:
        state = a.start
        for _ in range(100):  # a row per count, a state per row
            state = a.step(state, ord("1"))
    assert info.value.limit == "max_states" and info.value.value == 10
    assert isinstance(info.value, ConstrainError) and isinstance(info.value, RuntimeError)


def test_stepping_through_bytes_makes_a_state_only_where_they_end() -> None:
    """A token's bytes from a state without a row go through its stacks: one state at
    the end, the very one the rows reach byte by byte."""
    a = Automaton(g1(seq(repeat(char_range("0", "9"), 1, 1000), literal("x"))))
    made = a.num_states
    end = a.step_bytes(a.start, b"1" * 100)
    assert a.num_states == made + 1
    assert a.step_bytes(a.start, b"1" * 100 + b"y") == Automaton.DEAD
    state = a.start
    for _ in range(100):
        state = a.step(state, ord("1"))
    assert state == end and a.is_accepting(a.step(end, ord("x")))


def test_max_states_too_small_for_start() -> None:
    with pytest.raises(ResourceLimitError):
        Automaton(g1(literal("a")), AutomatonOptions(max_states=1))


def test_max_terms_budget_raises_resource_limit() -> None:
    a = Automaton(g1(seq(star(AB), A_, repeat(AB, 20, 20))), AutomatonOptions(max_terms=200))
    rng = random.Random(1)
    with pytest.raises(ResourceLimitError) as info:
        for _ in range(200):
            a.matches("".join(rng.choice("ab") for _ in range(30)).encode())
    assert info.value.limit == "max_terms"


def test_budget_error_is_fast() -> None:
    start = time.perf_counter()
    a = Automaton(g1(seq(star(AB), A_, repeat(AB, 20, 20))), AutomatonOptions(max_states=500))
    rng = random.Random(3)
    with pytest.raises(ResourceLimitError):
        for _ in range(1000):
            a.matches("".join(rng.choice("ab") for _ in range(40)).encode())
    assert time.perf_counter() - start < 10.0


# ---------------------------------------------------------------------------- forced bytes


FORCED_CASES = {
    "literal": (literal("hello"), b"", b"hello"),
    "common-prefix": (alt(literal("abc"), literal("abd")), b"", b"ab"),
    "after-choice": (alt(literal("abc"), literal("abd")), b"abc", b""),
    "choice-then-literal": (seq(alt(A_, B_), literal("xyz")), b"b", b"xyz"),
    "none-at-choice": (seq(alt(A_, B_), literal("xyz")), b"", b""),
    "accepting-stops": (seq(literal("ab"), optional(literal("cd"))), b"ab", b""),
    "multibyte": (literal("日本"), b"", "日本".encode()),
    "mid-character": (literal("日本"), b"\xe6", "日本".encode()[1:]),
    "shared-lead-byte": (alt(literal("é"), literal("è")), b"", b"\xc3"),
    "recursion": (Grammar({"start": seq(literal("[["), alt(literal("x"), ref("start")),
                                         literal("]]"))}), b"[[x", b"]]"),
}


@pytest.mark.parametrize("expr, prefix, forced", FORCED_CASES.values(), ids=FORCED_CASES.keys())
def test_forced_bytes(expr: Expr | Grammar, prefix: bytes, forced: bytes) -> None:
    a = Automaton(expr if isinstance(expr, Grammar) else g1(expr))
    state = a.step_bytes(a.start, prefix)
    assert state != DEAD
    assert a.forced_bytes(state) == forced
    if forced:  # consuming the forced bytes is always possible
        assert a.step_bytes(state, forced) != DEAD


def test_forced_bytes_limit() -> None:
    a = Automaton(g1(literal("x" * 100)))
    assert a.forced_bytes(a.start, limit=10) == b"x" * 10
    assert a.forced_bytes(DEAD) == b""


# ------------------------------------------------------------------ property: random IR

ALPHABET_CHARS = [ord("a"), ord("b"), 0xE9]

leaf_exprs = st.one_of(
    st.sampled_from([
        literal("a"), literal("b"), literal("é"),
        chars([(ord("a"), ord("b"))]),
        chars([(ord("b"), 0xE9)]),
        chars([(ord("a"), ord("a"))], negate=True),
        ANY_CHAR,
        Bytes(((0xC3, 0xC3),)),
        Bytes(((0xA9, 0xA9), (0x61, 0x61))),
        Bytes(((0x80, 0xFF),)),
        EMPTY,
        NOTHING,
    ]),
)


def _extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    bounds = st.integers(0, 2).flatmap(
        lambda lo: st.tuples(st.just(lo), st.one_of(st.none(), st.integers(lo, lo + 2)))
    )
    return st.one_of(
        st.lists(children, min_size=0, max_size=3).map(lambda xs: Seq(tuple(xs))),
        st.lists(children, min_size=0, max_size=3).map(lambda xs: Alt(tuple(xs))),
        st.tuples(children, bounds).map(lambda t: Repeat(t[0], t[1][0], t[1][1])),
        st.lists(children, min_size=1, max_size=2).map(lambda xs: And(tuple(xs))),
        children.map(Not),
    )


random_exprs = st.recursive(leaf_exprs, _extend, max_leaves=7)
PROPERTY_STRINGS = strings_over(BOOL_ATOMS, 3)  # 85 strings incl. invalid UTF-8


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=random_exprs, extra=st.lists(st.sampled_from(BOOL_ATOMS), max_size=7))
def test_random_ir_matches_oracle(expr: Expr, extra: list[bytes]) -> None:
    grammar = g1(expr)
    a = Automaton(grammar)
    for s in [*PROPERTY_STRINGS, b"".join(extra)]:
        assert a.matches(s) == oracle_match(grammar, s), (s, expr)
    if a.start != DEAD:
        live_states_check(a, limit=150)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=random_exprs)
def test_first_bytes_hold_every_byte_a_derivative_takes(expr: Expr) -> None:
    """A byte outside a term's first bytes derives it to nothing (the byte derivative of
    a union skips such members), for every term an automaton made."""
    a = Automaton(g1(expr))
    a.step_bytes(a.start, b"ab\xc3\xa9a")  # a few more terms, made by stepping
    terms = a.terms
    for term in range(len(terms)):
        if terms._kind[term] == _LAZY:
            continue
        first = terms.first_bytes(term)
        pieces, refs = terms.derivative(term)
        taken = 0
        for bits, nxt in pieces:
            if nxt != EMPTYSET:
                taken |= bits
        assert not taken & ~first, (term, terms.show(term))
        assert not refs or first == (1 << 256) - 1


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet="abé\x00", max_size=6), min_size=1, max_size=12),
       st.text(alphabet="abé\x00", max_size=7))
def test_prefix_tree_is_exactly_the_set_of_keys(keys: list[str], probe: str) -> None:
    distinct = sorted(set(keys))
    tree = prefix_tree([(k.encode(), EMPTY) for k in distinct], lambda b: Bytes(((b, b),)))
    automaton = Automaton(Grammar.single(tree))
    for text in [*distinct, probe, *(k[:-1] for k in distinct), *(k + "a" for k in distinct)]:
        assert automaton.matches(text.encode()) == (text in distinct), text


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet='ab"é\\', max_size=5), min_size=1, max_size=10),
       st.text(alphabet='ab"é\\', max_size=6), st.booleans())
def test_json_key_trie_reads_each_key_then_its_own_tail(keys: list[str], probe: str,
                                                       shared_runs: bool) -> None:
    # Key i's tail is the digit i, so a key read with another key's tail is rejected.
    from constrain.json_syntax import JsonSyntax, whitespace_gap

    syn = JsonSyntax(whitespace_gap(0))
    distinct = sorted(set(keys))
    entries = [(k, literal(str(i % 10))) for i, k in enumerate(distinct)]
    automaton = Automaton(Grammar.single(syn.keyed(entries, shared_runs=shared_runs)))
    texts = [(k, i % 10) for i, k in enumerate(distinct)]
    texts += [(probe, 0), *((k[:-1], i % 10) for i, k in enumerate(distinct)),
              *((k, (i + 1) % 10) for i, k in enumerate(distinct) if len(distinct) > 1)]
    for text, digit in texts:
        written = json.dumps(text).encode() + str(digit).encode()
        wanted = text in distinct and distinct.index(text) % 10 == digit
        assert automaton.matches(written) == wanted, written


def test_json_key_tries_share_their_runs() -> None:
    # Tries of other tails (an object's keys left after each set written) read their
    # runs of characters through the same nodes, instead of one term per character each.
    from constrain.json_syntax import JsonSyntax, whitespace_gap

    syn = JsonSyntax(whitespace_gap(0))
    first = syn.keyed([("alpha", literal("1")), ("beta", literal("2"))], shared_runs=True)
    second = syn.keyed([("alpha", literal("3"))], shared_runs=True)
    runs = [syn._key_run((*map(ord, "alpha"), -1)), syn._key_run((*map(ord, "beta"), -1))]
    assert all(isinstance(run, Lazy) for run in runs)
    automaton = Automaton(Grammar.single(alt(first, second)))
    assert automaton.matches(b'"alpha"1') and automaton.matches(b'"alpha"3')
    assert not automaton.matches(b'"beta"3')
    assert syn._key_run((*map(ord, "alpha"), -1)) is runs[0]


def test_derivative_tables_leave_the_collector() -> None:
    # Emptiness searches make hundreds of thousands of derivatives: kept as tuples one
    # level deep, the collector stops tracking them in the young generations, so they
    # never reach the old one (where each full collection would walk them all).
    import gc

    pattern = intersect(star(char_range("a", "c")), complement(seq(star(ANY_CHAR),
                                                                   literal("cab"))))
    automaton = Automaton(Grammar.single(pattern))
    texts = [b"", b"abc", b"cab", b"acab", b"cabc", b"ccabb", b"abcab"]
    assert [automaton.matches(t) for t in texts] == [
        True, True, False, False, True, True, False]
    store = automaton.terms
    assert len(store._derivatives) > 10
    gc.collect(0)
    gc.collect(1)  # a young collection untracks a pair, the next one the tuple holding it
    tracked = [d for d in store._derivatives.values() if gc.is_tracked(d)]
    assert not tracked, tracked[:3]
    assert not any(gc.is_tracked(r) for r in store._derivative_refs.values())


def test_prefix_tree_rejects_duplicate_keys() -> None:
    with pytest.raises(GrammarError, match="distinct"):
        prefix_tree([(b"ab", EMPTY), (b"ab", EMPTY)], lambda b: Bytes(((b, b),)))


def test_liveness_of_a_long_sequence_before_an_intersection() -> None:
    # Liveness walks the sequence's spine in a loop: 25,000 elements would overflow a
    # recursion per element.
    tail = intersect(star(char_range("a", "z")), literal("ab"))
    automaton = Automaton(Grammar.single(seq(literal("x" * 25_000), tail)))
    assert automaton.matches(b"x" * 25_000 + b"ab")
    assert not automaton.matches(b"x" * 25_000 + b"ac")
    dead = Automaton(Grammar.single(alt(seq(literal("x" * 25_000), intersect(literal("a"),
                                                                              literal("b"))),
                                        literal("y"))))
    assert dead.row(dead.start)[ord("x")] == Automaton.DEAD  # no step into the empty branch


STEP_SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer"}, "bb": {"type": "string"}},
     "required": ["a"]},
    {"$defs": {"t": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/t"},
                                                          {"type": "boolean"}]}}},
     "$ref": "#/$defs/t"},
    {"type": "string", "pattern": "^[a-c]+x?$", "maxLength": 4},
    {"not": {"type": "string", "enum": ["ab", "abc"]}},
    # Unlisted keys: a string less the listed keys, an intersection with a complement.
    {"type": "object", "properties": {"ab": {"type": "integer"}, "b\u00e9": {"const": 1}},
     "additionalProperties": {"type": "boolean"}, "minProperties": 1},
]


@pytest.mark.parametrize("schema", STEP_SCHEMAS,
                         ids=["object", "recursive", "pattern", "not", "unlisted-keys"])
def test_single_byte_steps_reach_the_rows_states(schema: dict) -> None:
    """Leaving a state by one byte without building its row reaches the very state (the
    same number) its row would give, for every byte: so a matcher following tokens and a
    mask walk agree on states and share what they learn."""
    from constrain import Vocabulary, compile_json_schema

    vocab = Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None],
                                        eos_token_ids=[256])
    stepped = compile_json_schema(schema, vocab).automaton
    rng = random.Random(7)
    frontier = [stepped.start]
    seen = set(frontier)
    checked = 0
    while frontier and checked < 300:
        state = frontier.pop()
        steps = [stepped._step(state, b) for b in range(256)]
        assert steps == stepped.row(state).tolist(), state
        checked += 1
        live = sorted(set(steps) - {Automaton.DEAD})
        for nxt in rng.sample(live, k=min(3, len(live))):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    assert checked > 10


def test_unions_of_runs_then_different_tails_are_one_run_then_a_union() -> None:
    """``ws{0,3}·, | ws{0,3}·}`` is ``ws{0,3}·(,|})``: what follows a JSON member stays a
    run then a union at every count of its whitespace (cheap rows), and the language is
    the same. Unions whose members start otherwise stay unions."""
    from constrain.terms import TermStore

    store = TermStore()
    ws = store.repeat(store.byte_set(b" \n"), 0, 3)
    comma, close, x = (store.byte_set(c) for c in (b",", b"}", b"x"))
    after = store.alt([store.seq(ws, comma), store.seq(ws, close), x])
    assert after == store.alt([store.seq(ws, store.alt([comma, close])), x])
    letters = store.byte_set(b"ab")
    plain = store.alt([store.seq(letters, comma), store.seq(letters, close)])
    assert plain != store.seq(letters, store.alt([comma, close]))  # not a run: left alone
    a = Automaton(Grammar.single(alt(seq(repeat(chars([(32, 32)]), 0, 3), literal(",")),
                                     seq(repeat(chars([(32, 32)]), 0, 3), literal("}")))))
    assert [a.matches(t) for t in (b"  ,", b"}", b"   }", b"    }", b" ", b",}")] == [
        True, True, True, False, False, False]


def test_bounded_emptiness_check_gives_up_without_forgetting() -> None:
    """``is_live_within`` answers None past its budget and leaves no wrong verdict behind:
    the unbounded check still finds the answer afterwards (a long witness: 40 a's)."""
    from constrain.terms import TermStore

    store = TermStore()
    a = store.byte_set([ord("a")])
    at_least_40 = store.repeat(a, 40, None)
    # Neither a count bound nor an infinite language less a finite one, which are decided
    # from their form (see test_a_pattern_under_a_length_bound_needs_no_search).
    even = store.repeat(store.seq(a, a), 0, None)
    both = store.intersect([at_least_40, even])  # (aa){20,}: live, found deep
    disjoint = store.intersect([at_least_40, store.complement(store.repeat(a, 0, None))])
    assert store.is_live_within(both, 10) is None
    assert store.is_live_within(disjoint, 10) is None
    assert store.is_live(both) is True and store.is_live(disjoint) is False
    assert store.is_live_within(both, 10) is True  # now known
    assert store.is_live_within(a, 0) is True  # no intersection inside: never searched


def test_infinite_less_finitely_many_strings_is_live_without_a_search() -> None:
    """``a+ & ~(aa|aaa)`` is live however its search would go: an infinite language less
    a finite one (the string of an unlisted key) is decided from the terms' form. What
    the form does not show is still searched: a finite language less a count that holds
    it, an infinite language less an infinite one."""
    from constrain.terms import TermStore

    store = TermStore()
    a = store.byte_set([ord("a")])
    aa, aaa = store.seq(a, a), store.seq_all([a, a, a])
    store.max_liveness_search = 0  # a search would fail at once
    assert store.is_live(store.intersect([store.repeat(a, 1, None),
                                          store.complement(store.alt([aa, aaa]))]))
    a2to3 = store.repeat(a, 2, 3)
    for unknown in (store.intersect([aa, store.complement(a2to3)]),
                    store.intersect([store.repeat(a, 1, None),
                                     store.complement(store.repeat(a, 0, None))])):
        with pytest.raises(ResourceLimitError):
            store.is_live(unknown)
    store.max_liveness_search = 1000
    assert not store.is_live(store.intersect([aa, store.complement(a2to3)]))
    assert not store.is_live(store.intersect([store.repeat(a, 1, None),
                                              store.complement(store.repeat(a, 0, None))]))


def test_a_language_less_what_surely_contains_it_is_empty_when_made() -> None:
    """``A & ~B`` where ``B`` holds ``A`` by its shape (``A`` itself, an alternative, or
    after heads that may match nothing: a key matching no unanchored pattern,
    ``C* & ~(C*·w{1,16}·C* | w{0,15}·C*)``) is the empty set as it is made, without a
    search; where the shape does not show it (``a{0,3}·b`` does not hold ``b·a``), the
    intersection is made and searched as before."""
    from constrain.terms import EMPTYSET, TermStore

    store = TermStore()
    a, b, w = (store.byte_set([ord(c)]) for c in "abw")
    anything = store.repeat(store.alt([a, b, w]), 0, None)
    store.max_liveness_search = 0  # a search would fail at once
    key_off_pattern = store.intersect([anything, store.complement(store.alt([
        store.seq_all([anything, store.repeat(w, 1, 16), anything]),
        store.seq(store.repeat(w, 0, 15), anything)]))])
    assert key_off_pattern == EMPTYSET
    assert store.intersect([store.seq(a, b), store.complement(store.seq(a, b))]) == EMPTYSET
    assert store.intersect([b, store.complement(store.alt([a, store.seq(store.repeat(a, 0, 3),
                                                                        b)]))]) == EMPTYSET
    kept = store.intersect([store.seq(b, a), store.complement(store.seq(store.repeat(a, 0, 3),
                                                                        b))])
    assert kept != EMPTYSET
    store.max_liveness_search = 1000
    assert store.is_live(kept)


# Plain languages over a, b, é (two bytes) and the escape \\n (two bytes), as nested
# tuples: the other side of a length bound in the tests below.
_PLAIN_TREES = st.recursive(
    st.sampled_from([b"a", b"b", b"ab", "é".encode(), b"\\n", b"\\"]),
    lambda inner: st.one_of(
        st.tuples(st.just("seq"), inner, inner),
        st.tuples(st.just("alt"), inner, inner),
        st.tuples(st.just("rep"), inner, st.integers(0, 2), st.sampled_from([None, 0, 2]))),
    max_leaves=6)


def _plain_term(store: TermStore, tree: object) -> int:
    if isinstance(tree, bytes):  # one byte set ("ab"), or a literal of several bytes
        if tree == b"ab":
            return store.byte_set(tree)
        return store.seq_all([store.byte_set([b]) for b in tree])
    assert isinstance(tree, tuple)
    if tree[0] == "rep":
        lo, more = tree[2], tree[3]  # at least lo copies, and up to ``more`` more
        return store.repeat(_plain_term(store, tree[1]), lo, None if more is None else lo + more)
    parts = [_plain_term(store, t) for t in tree[1:]]
    return store.seq(*parts) if tree[0] == "seq" else store.alt(parts)


def _reaches_an_end(store: TermStore, term: int, limit: int = 20_000) -> bool | None:
    """Whether some string is in ``term``'s language, by derivatives and nullability alone
    (never ``is_live``); ``None`` past ``limit`` terms."""
    seen, todo = {term}, [term]
    while todo:
        t = todo.pop()
        if store.nullable(t):
            return True
        for _, nxt in store.derivative(t)[0]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
        if len(seen) > limit:
            return None
    return False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PLAIN_TREES, st.integers(0, 4), st.integers(0, 6), st.booleans())
def test_a_length_bound_is_decided_from_the_fewest_characters(
        tree: object, lo: int, extra: int, mid_character: bool) -> None:
    """``A & x·C{lo,hi}`` (a pattern and a string's length bound, ``C`` one character) is
    live exactly when some string of ``A`` has that form, at the intersection and at every
    derivative of it (where the counts go down and ``x`` is the rest of a character).
    A bound of at most one character (an optional piece) is left to the search."""
    from constrain.terms import TermStore

    store = TermStore()
    byte = store.byte_set
    unit = store.alt([byte(b"a"), byte(b"b"), store.seq(byte(b"\xc3"), byte(b"\xa9")),
                      store.seq(byte(b"\\"), byte(b"n"))])
    prefix = byte(b"\xa9") if mid_character else EMPTY_STRING
    bound = store.seq(prefix, store.repeat(unit, lo, lo + extra))
    pattern = _plain_term(store, tree)
    if mid_character:  # the pattern too starts inside an é
        pattern = store.seq(byte(b"\xa9"), pattern)
    todo, seen, decided = [store.intersect([pattern, bound])], set(), 0
    while todo and len(seen) < 60:
        term = todo.pop()
        if term in seen or store._kind[term] != _AND:
            continue
        seen.add(term)
        fast = store._counted_live(term)
        if fast is not None:
            decided += 1
            assert fast == _reaches_an_end(store, term), store.show(term)
        todo.extend(nxt for _, nxt in store.derivative(term)[0])
    if lo == 0 and extra >= 2 and not mid_character:  # the intersection itself has the form
        assert decided


def test_a_pattern_under_a_length_bound_needs_no_search() -> None:
    """A JSON string's ``maxLength`` with a ``pattern``: every count the string passes
    through is decided without an emptiness search, live or not."""
    from constrain.terms import TermStore

    store = TermStore()
    letter, at = store.byte_set(b"abc"), store.byte_set(b"@")
    email = store.seq_all([store.repeat(letter, 1, None), at, store.repeat(letter, 3, None)])
    store.max_liveness_search = 0  # any search fails at once
    chars = store.alt([letter, at])
    assert store.is_live(store.intersect([email, store.repeat(chars, 0, 225)]))
    assert store.is_live(store.intersect([email, store.repeat(chars, 5, 5)]))
    assert not store.is_live(store.intersect([email, store.repeat(chars, 0, 4)]))
    after_a = store.derivative(store.intersect([email, store.repeat(chars, 0, 6)]))[0]
    assert [store.is_live(t) for _, t in after_a] == [True]  # "a" then at least "@aaa"


def test_a_dropped_automaton_is_freed_without_the_garbage_collector() -> None:
    """Lazy terms' callbacks must not hold their automaton: a cycle would leave every
    dropped constraint (terms, derivatives, rows) to the collector's full passes."""
    import gc
    import weakref

    def digits(n: int) -> Expr:
        if n == 0:
            return literal("!")
        return Lazy(("digits", n), lambda: seq(char_range("0", "9"), digits(n - 1)),
                    nullable=False, parts=(char_range("0", "9"), literal("!")))

    automaton = Automaton(Grammar.single(seq(digits(5), star(literal(" ")))))
    assert automaton.matches(b"12345! ") and not automaton.matches(b"1234!")
    alive = weakref.ref(automaton)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del automaton
        assert alive() is None
    finally:
        if was_enabled:
            gc.enable()


def test_exponential_automaton_steps_through_a_token_to_the_same_state() -> None:
    """An exponential automaton follows a multi-byte token through its union's members
    (a bitset) and makes the state once, at the end; the state reached is the one
    byte-by-byte steps reach, on random strings, rejections included (see
    tests/test_member_sets.py for the verdicts against ``re``)."""
    a = Automaton(g1(seq(star(AB), A_, repeat(AB, 12, 12), literal("c"))))
    assert not a.build_all(128) and a.exponential
    rng = random.Random(7)
    for _ in range(300):
        state = a.start
        for _ in range(rng.randint(1, 6)):
            chunk = bytes(rng.choice(b"aabbc") for _ in range(rng.randint(2, 6)))
            whole = a.step_bytes(state, chunk)
            byte_by_byte = state
            for b in chunk:
                byte_by_byte = a.step_bytes(byte_by_byte, bytes([b]))
            assert whole == byte_by_byte, (state, chunk)
            if whole == Automaton.DEAD:
                break
            state = whole
    assert a.matches(b"ab" * 9 + b"a" + b"b" * 12 + b"c")
    assert not a.matches(b"ab" * 9 + b"a" + b"b" * 11 + b"c")


def _words_term(store, words: Iterable[str], lo: int = 0, hi: int | None = 3) -> int:  # type: ignore[no-untyped-def]
    """``(w1|w2|...){lo,hi}`` of literal words, built in ``store``."""
    members = [store.seq_all(store.byte_set([b]) for b in w.encode()) for w in words]
    return store.repeat(store.alt(members), lo, hi)


def test_structure_ids_are_equal_exactly_for_equal_structures() -> None:
    """Head plans are shared across constraints by :meth:`TermStore.fingerprint`: equal
    structures built in different stores (different term ids, members built in another
    order) get one id, and every change of a byte, a count or a member gives another."""
    from constrain.terms import TermStore

    first, second = TermStore(rule_nullable=[False]), TermStore()
    second.byte_set(b"zyx")  # shifts every id in the second store
    words = ["key", "kez", "name", "\u00e9t\u00e9"]
    assert (first.fingerprint(_words_term(first, words))
            == second.fingerprint(_words_term(second, reversed(words))))
    variants = [
        _words_term(first, words, hi=4),
        _words_term(first, words, lo=1),
        _words_term(first, words, hi=None),
        _words_term(first, ["key", "kez", "name"]),
        _words_term(first, ["key", "kez", "namf", "\u00e9t\u00e9"]),
        _words_term(first, ["key", "kez", "name", "\u00e9t\u00e9", "x"]),
        first.seq(_words_term(first, words), first.byte_set(b",")),
        first.complement(_words_term(first, words)),
    ]
    prints = [first.fingerprint(t) for t in [_words_term(first, words), *variants]]
    assert len(set(prints)) == len(prints)
    assert first.fingerprint(first.ref(0)) is None  # meaning depends on the automaton


def test_structure_ids_start_a_new_generation_when_the_table_is_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The process-wide table is bounded: past its limit it starts again, and ids of the
    old generation never equal new ones, while stores that numbered terms before agree
    again with stores that number them after."""
    from constrain import terms
    from constrain.terms import TermStore

    table = terms._StructureIds(limit=60)
    monkeypatch.setattr(terms, "_STRUCTURES", table)
    early, late = TermStore(), TermStore()
    before = early.fingerprint(_words_term(early, ["alpha", "beta"]))
    for i in range(100):  # other structures, until the table starts again
        early.fingerprint(_words_term(early, [f"w{i}xyz"]))
        if table.generation:
            break
    assert table.generation == 1 and len(table.ids) < 30
    after = late.fingerprint(_words_term(late, ["alpha", "beta"]))
    assert after != before and after[0] > before[0]
    assert early.fingerprint(_words_term(early, ["alpha", "beta"])) == after
    forked = early.fork(early.max_terms, early.rule_nullable)
    assert forked.fingerprint(_words_term(forked, ["beta", "alpha"])) == after


def test_an_optional_piece_is_not_taken_for_a_length_bound() -> None:
    """``A & B·.{0,1}`` (a hostname: labels, and at most 253 characters then an optional
    dot) is not decided as a length bound of one character: that search pairs every
    position of ``A`` with the dot, where an emptiness search stops at the first string."""
    from constrain.terms import TermStore

    store = TermStore()
    label = store.repeat(store.byte_set(b"ab"), 1, 63)
    name = store.seq(label, store.repeat(store.seq(store.byte_set(b"."), label), 0, None))
    dot = store.byte_set(b".")
    bound = store.seq(store.repeat(store.byte_set(b"ab."), 1, 253), store.repeat(dot, 0, 1))
    term = store.intersect([name, bound])
    assert store._counted_tail(bound) is None and store._counted_live(term) is None
    assert store.is_live(term)


def test_whole_copies_are_found_part_by_part_so_a_long_count_costs_nothing() -> None:
    """Whether every string of a finite term is whole copies of an item (a JSON
    character) is decided part by part for concatenations, unions and repeats, so a key
    pattern ``[a-é]{0,300}`` holds within a budget of 8 pairs that reading all of it
    would exceed (Github_medium/o65507: 0.5 s at each new count); a character's bytes,
    not whole apart, are read together; strings ending inside a copy do not hold."""
    from constrain.terms import TermStore

    store = TermStore()
    a = store.byte_set([ord("a")])
    lead, cont = store.byte_set([0xC3]), store.byte_set(range(0x80, 0xC0))
    char = store.alt([a, store.seq(lead, cont)])  # a prefix code, as a JSON character is
    keys = store.seq(a, store.repeat(char, 0, 300))
    assert store._copies_hold(keys, char, limit=8)
    assert store._copies_hold(store.seq(lead, store.byte_set([0x80])), char, limit=8)
    assert not store._copies_hold(store.seq(keys, lead), char)  # ends inside a character
    assert not store._copies_hold(store.seq(a, store.byte_set([ord("b")])), char)
    fresh = TermStore()
    a2 = fresh.byte_set([ord("a")])
    char2 = fresh.alt([a2, fresh.seq(fresh.byte_set([0xC3]), fresh.byte_set(range(0x80, 0xC0)))])
    long_count = fresh.repeat(char2, 0, 300)
    assert not fresh._read_as_copies(long_count, fresh.copy_automaton(char2), 8)  # the old way


def _bytes_to_end_by_search(store: TermStore, term: int) -> int | None:
    """The most bytes any live state of ``term`` needs to end, over all of its states
    (breadth first backwards from those that may end); ``None`` past 5,000 states."""
    edges: dict[int, list[int]] = {}
    todo = [term]
    while todo:
        t = todo.pop()
        if t in edges:
            continue
        if len(edges) > 5_000:
            return None
        edges[t] = [nxt for _, nxt in store.derivative(t)[0] if nxt != 0]
        todo.extend(edges[t])
    distance = {t: 0 for t in edges if store.nullable(t)}
    frontier = list(distance)
    while frontier:
        reached = []
        for t, afters in edges.items():
            if t not in distance and any(a in frontier for a in afters):
                distance[t] = distance[min(afters, key=lambda a: distance.get(a, 1 << 30))] + 1
                reached.append(t)
        frontier = reached
    return max(distance.values())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PLAIN_TREES)
def test_the_bytes_a_pattern_needs_to_end_are_bounded_from_its_shape(tree: object) -> None:
    """``TermStore._bytes_to_end`` (what lets a long ``maxLength`` over a pattern share the
    pattern's masks) is at least what any state of the pattern needs, by a search over
    all of them: a smaller value would let a token through that cannot finish in time."""
    from constrain.terms import TermStore

    store = TermStore()
    a, b = store.byte_set(b"a"), store.byte_set(b"b")
    thirds = store.repeat(store.alt([a, store.seq_all([b, b, b])]), 3, 3)
    assert _bytes_to_end_by_search(store, thirds) == 4  # after "b": "bb", then two copies
    assert store._bytes_to_end(thirds) in (4, 5)  # (the start of "bbb" alone counts too)
    pattern = _plain_term(store, tree)
    needed = _bytes_to_end_by_search(store, pattern)
    bound = store._bytes_to_end(pattern)
    assert bound is not None
    if needed is not None:
        assert bound >= needed, store.show(pattern)


def test_row_table_keeps_rows_and_accepting_flags_across_growth(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The table doubles, then reserves, then doubles again (64 -> 128 -> 300 -> 600 here);
    # every row and flag set before a growth must survive it.
    import constrain.automaton as automaton_module

    monkeypatch.setattr(automaton_module, "_DOUBLED_ROWS", 128)
    monkeypatch.setattr(automaton_module, "_RESERVED_ROWS", 300)
    # Distinct tails after distinct prefixes: a state per byte of most words.
    words = [f"{i:03d}{i * 7919 % 10007:05d}".encode() for i in range(120)]
    a = Automaton(Grammar.single(alt(*(byte_literal(w) for w in words))))
    rows: dict[int, np.ndarray] = {}
    for w in words:
        state = a.start
        for byte in w:
            assert not a.is_accepting(state)
            rows[state] = a.row(state).copy()
            state = int(rows[state][byte])
        assert a.is_accepting(state)
    assert a.num_states > 400 and len(a.table) == 600
    assert all((a.table[s] == row).all() for s, row in rows.items())
    assert all(a.matches(w) for w in words) and not a.matches(words[0] + b"0")



def _steps_in_heads(grammar: Grammar, texts: list[bytes], seed: int) -> int:
    """Follow each text in token-sized chunks on one automaton, asking each state's head
    split first as its mask would (and building some of the head's rows, as its walk
    would), and byte by byte on a fresh one: the two are dead at
    the same chunk boundaries and accept the same texts. Returns how many chunks the
    head path (``Automaton._step_in_head``) served."""
    rng = random.Random(seed)
    fast, reference = Automaton(grammar), Automaton(grammar)
    served = 0
    step_in_head = fast._step_in_head

    def counted(state: int, data: bytes) -> int | None:
        nonlocal served
        found = step_in_head(state, data)
        served += found is not None
        return found

    fast._step_in_head = counted  # type: ignore[method-assign]
    for text in texts:
        state = expected = fast.start
        at = 0
        while at < len(text) and state != DEAD:
            chunk = text[at:at + rng.randint(1, 7)]
            at += len(chunk)
            split = fast.head_split(state)
            if split is not None and rng.random() < 0.5:
                # Rows a mask's walk of the head would have built, along the chunk.
                head = split.head
                for byte in chunk[:rng.randint(0, len(chunk))]:
                    head = int(fast.row(head)[byte])
                    if head == DEAD:
                        break
            state = fast.step_bytes(state, chunk)
            for byte in chunk:
                expected = reference.step_bytes(expected, bytes([byte]))
            assert (state == DEAD) == (expected == DEAD), (text, at)
        accepted = state != DEAD and fast.is_accepting(state)
        assert accepted == reference.matches(text), text
    return served


def _mutations(texts: list[bytes], alphabet: bytes, count: int, seed: int) -> list[bytes]:
    """``count`` texts, each one of ``texts`` with a byte replaced, dropped or added."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        text = rng.choice(texts)
        at, byte = rng.randrange(len(text)), bytes([rng.choice(alphabet)])
        out.append(rng.choice([text[:at] + byte + text[at + 1:], text[:at] + text[at + 1:],
                               text[:at] + byte + text[at:]]))
    return out


def test_a_token_inside_a_head_steps_to_the_same_language() -> None:
    """A state whose mask was made from its head (see :meth:`Automaton.head_split`)
    follows a token that stays inside the head on the head's own term, then puts the tail
    back once. On JSON documents and their mutations, and on a grammar whose head may end
    where its tail may begin with the same bytes, that state is dead exactly where byte
    by byte steps are and accepts the same texts; the head path serves many steps."""
    from constrain.json_schema import schema_to_grammar

    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$"},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}},
            "size": {"type": "integer", "minimum": 10},
            "meta": {"type": "object", "properties": {"note": {"type": "string"}},
                     "required": ["note"], "additionalProperties": False},
        },
        "required": ["name"],
    }
    documents = [json.dumps(d, ensure_ascii=False).encode() for d in (
        {"name": "ab-cd-efg", "tags": ["x", "yyyyyyyy", "é ü"], "size": 120},
        {"name": "long-hyphenated-name-here", "meta": {"note": "a \"quoted\" note\n"}},
        {"tags": [], "name": "z", "meta": {"note": ""}},
    )]
    texts = documents + _mutations(documents, b'az-"{}[],: 09', 40, seed=11)
    assert _steps_in_heads(schema_to_grammar(schema), texts, seed=3) >= 40

    # The head [a-z]* may end anywhere, and the call after it reads letters too.
    overlapping = Grammar({"start": seq(star(char_range("a", "z")), ref("call"), literal(";")),
                           "call": alt(literal("ab"), literal("abc;x"))}, start="start")
    words = [b"ab;", b"zzab;", b"abab;", b"qab;", b"abc;x;", b"zabc;x;", b"abcab;"]
    texts = words + _mutations(words, b"abcxz;", 40, seed=5)
    _steps_in_heads(overlapping, texts, seed=1)


def _item_automaton_derived_whole(store: TermStore, item: int, limit: int) -> object:
    """``item_automaton`` with its shortcut off: every state derived until the limit."""
    original = TermStore._longer_than
    TermStore._longer_than = lambda *_: False  # type: ignore[method-assign]
    try:
        return store.item_automaton(item, limit)
    finally:
        TermStore._longer_than = original  # type: ignore[method-assign]


def test_item_automaton_refuses_a_long_finite_item_without_deriving_it() -> None:
    """A finite item whose longest string has more bytes than the automaton may have
    states is refused before any derivative (its automaton has a state per byte of that
    string); one whose longest string fits is built as before."""
    store = TermStore()
    quote, a, b = (store.byte_set([c]) for c in b'"ab')
    def quoted(text: bytes) -> int:
        return store.seq_all([quote, *(a if c == ord("a") else b for c in text), quote])
    fits = store.alt([quoted(b"a" * 30), quoted(b"b")])  # 32 bytes: 32 states
    too_long = store.alt([quoted(b"ab"), quoted(b"b" * 31)])  # 33 bytes
    derived = len(store._derivatives)
    assert store.item_automaton(too_long, 32) is None
    assert len(store._derivatives) == derived  # refused up front
    assert _item_automaton_derived_whole(store, too_long, 32) is None  # the same answer
    found = store.item_automaton(fits, 32)
    assert found is not None and len(found[0]) == 32
    assert found == _item_automaton_derived_whole(store, fits, 32)
    # A repeat of it is infinite: no length says anything, the states are derived.
    assert store._longer_than(store.repeat(too_long, 0, None), 32) is False
    assert store._longer_than(store.repeat(quoted(b"ab"), 0, 8), 32) is False  # 8 x 4 bytes
    assert store._longer_than(store.repeat(quoted(b"ab"), 0, 9), 32) is True

