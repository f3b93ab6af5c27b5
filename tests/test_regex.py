"""Tests for constrain.regex: errors and positions, IR shape, and languages checked against
Python's ``re`` through the automaton (tables, exhaustive per-character sets, hypothesis)."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from constrain.automaton import Automaton
from constrain.charsets import category
from constrain.errors import RegexSyntaxError, ResourceLimitError, UnsupportedRegexError
from constrain.grammar import ANY_CHAR, Alt, And, Chars, Expr, Grammar, Not, Repeat, Seq
from constrain.regex import MAX_REPEAT_COUNT, parse_regex


@lru_cache(maxsize=512)
def _automaton(pattern: str, search: bool = False, unicode: bool = False) -> Automaton:
    return Automaton(Grammar.single(parse_regex(pattern, search=search, unicode=unicode)))


def accepts(pattern: str, text: str, *, search: bool = False, unicode: bool = False) -> bool:
    return _automaton(pattern, search, unicode).matches(text.encode())


def re_fullmatch(pattern: str, text: str, unicode: bool = False) -> bool:
    return re.fullmatch(pattern, text, 0 if unicode else re.ASCII) is not None


def node_count(expr: Expr) -> int:
    count, stack = 0, [expr]
    while stack:
        node = stack.pop()
        count += 1
        if isinstance(node, (Seq, Alt, And)):
            stack.extend(node.items)
        elif isinstance(node, (Repeat, Not)):
            stack.append(node.item)
    return count


def ids(cases: list[tuple[object, ...]]) -> list[str]:
    return [ascii(c[0])[1:-1] or "<empty>" for c in cases]


# ---------------------------------------------------------------------------------------
# Malformed patterns: rejected exactly when re rejects them, at re's position.

MALFORMED = [
    "(", ")", "a)", "(a", "((a)", "a(b|c", "[", "[a", "[a-", "[]", "[^]", "[z-a]", r"[\d-z]",
    r"[a-\d]", "ab[cd-a]", "*", "+a", "?", "{1}", "a**", "a*?*", "a*++", "a{2}{3}", "x{2,1}",
    "a|*", "(*)", "^*", r"\A+", r"\b*", r"\Z?", "(?i)*", "\\", "a\\", r"\q", r"\8", r"\1(a)",
    r"(a\1)", r"[\A]", r"[\8]", r"[\777]", r"\777", r"\400", r"\x4", r"\xg", r"\u12",
    r"\U0011ffff", r"\U1234567", r"\N", r"\N{", r"\N{}", r"\N{NO SUCH NAME}", "(?", "(?P",
    "(?Px)", "(?<x)", "(?z)", "(?i", "(?-", "(?-:a)", "(?i-i:a)", "(?-a:x)", "(?t:a)", "(?L)a",
    "(?au)x", "a(?i)", "a|(?i)b", "(?#abc", "(?P<1>a)", "(?P<n>a)(?P<n>b)", "(?P<n", "(?P<>a)",
    "(?P=n)", "(?P<n>(?P=n))", "(?(1)a|b)", "(?(2)a|b)(x)", "(?(0)a)", "(?(x)a)", "(?(1a)x)",
    "(a)(?(1)a|b|c)", "(?<n>a)", "(?<=a", "(?=a", "(?:a", "a[b-a]c",
]
# re words a bad range made of escapes with the escapes' first two characters only.
POSITION_DIFFERS = {r"[\x41-\x40]": 1}


@pytest.mark.parametrize("pattern", MALFORMED, ids=[ascii(p)[1:-1] for p in MALFORMED])
def test_malformed_matches_re(pattern: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(re.error) as expected:
            re.compile(pattern)
    with pytest.raises(RegexSyntaxError) as got:
        parse_regex(pattern)
    assert (got.value.reason, got.value.position) == (expected.value.msg, expected.value.pos)
    assert got.value.pattern == pattern


@pytest.mark.parametrize("pattern,position", POSITION_DIFFERS.items(), ids=list(POSITION_DIFFERS))
def test_malformed_with_own_position(pattern: str, position: int) -> None:
    with pytest.raises(RegexSyntaxError) as got:
        parse_regex(pattern)
    assert got.value.position == position


def test_syntax_error_is_value_error_with_readable_message() -> None:
    with pytest.raises(ValueError, match=r"multiple repeat at position 4 in regex 'ab\+\+\+'"):
        parse_regex("ab+++")


def test_malformed_wins_over_unsupported() -> None:
    with pytest.raises(RegexSyntaxError):
        parse_regex(r"\b(a")


# ---------------------------------------------------------------------------------------
# Well-formed but unsupported: typed error naming the construct and its exact position.

UNSUPPORTED = [
    (r"(a)\1", "backreference", 3),
    (r"(a)(b)x\2", "backreference", 7),
    ("(?P<n>a)b(?P=n)", "backreference", 9),
    ("(?<=ab)c", "lookbehind of more than one character", 0),
    ("x(?<!bc)", "lookbehind of more than one character", 1),
    (r"(?:(?=\b).)*", "lookbehind inside a lookahead", 3),
    ("(?:(?<!a).)*", "lookbehind inside an unbounded repeat", 11),
    ("(?:(?!a).)*(?<=b)", "lookbehind after an unbounded repeat holding lookarounds", 10),
    ("(a)(?(1)b|c)", "conditional", 3),
    ("(?P<g>a)?(?(g)b)", "conditional", 9),
    ("ab(?>c)", "atomic", 2),
    ("ab*+", "possessive", 2),
    ("a{2,3}+", "possessive", 1),
    ("(?t)a", "template", 0),
    # A start anchor after a lookahead that consumes: what precedes it would have to
    # match the empty string, which a lookahead's resolution cannot say yet.
    ("(?=a)b^c", "anchor ^", 6),
    ("(^a?|b){2}", "anchor inside a repeat", 1),
    ("(^a|b$)*", "anchor inside a repeat", 1),
    ("(?m)^a", "multiline", 4),
]


@pytest.mark.parametrize("pattern,construct,position", UNSUPPORTED, ids=ids(UNSUPPORTED))
def test_unsupported_construct(pattern: str, construct: str, position: int) -> None:
    search = "(?m)" in pattern  # multiline anchors only matter when searching
    with pytest.raises(UnsupportedRegexError) as got:
        parse_regex(pattern, search=search)
    assert construct in got.value.construct
    assert got.value.position == position
    assert got.value.pattern == pattern
    re.compile(pattern)  # every one of them is valid for re


# ---------------------------------------------------------------------------------------
# IR shape: bounded repeats stay small; long and deep patterns never recurse.


def test_bounded_repeat_is_one_node() -> None:
    e = parse_regex("[0-9]{1,1000}")
    assert isinstance(e, Repeat) and (e.min, e.max) == (1, 1000)
    assert isinstance(e.item, Chars) and e.item.ranges == ((48, 57),)


def test_repeated_group_is_not_expanded() -> None:
    e = parse_regex("(a|b){20}")
    assert isinstance(e, Repeat) and (e.min, e.max) == (20, 20)
    assert node_count(e) <= 4
    assert node_count(parse_regex("(?:[a-f0-9]{8}-){3}[a-f0-9]{12}")) < 10


@pytest.mark.parametrize(
    "pattern,bounds",
    [("a*", (0, None)), ("a+", (1, None)), ("a?", (0, 1)), ("a{3}", (3, 3)), ("a{2,}", (2, None)),
     ("a{,4}", (0, 4)), ("a{,}", (0, None)), ("a{2,5}?", (2, 5)), ("a*?", (0, None))],
)
def test_quantifier_bounds(pattern: str, bounds: tuple[int, int | None]) -> None:
    e = parse_regex(pattern)
    assert isinstance(e, Repeat) and (e.min, e.max) == bounds


def test_lookahead_unroll_limit() -> None:
    """Each iteration of a bounded repeat holding a lookahead is written out; nested ones
    multiply, so a budget keeps a short pattern from taking minutes."""
    parse_regex("(?:(?:(?=a).){30}){30}")
    with pytest.raises(ResourceLimitError, match="max_lookahead_unroll"):
        parse_regex("(?:(?:(?:(?=a).){64}){64}){64}")


def test_repeat_count_limit() -> None:
    assert isinstance(parse_regex(f"a{{{MAX_REPEAT_COUNT}}}"), Repeat)
    for pattern in (f"a{{{MAX_REPEAT_COUNT + 1}}}", "a{1,99999999999}", "a{200000,}"):
        with pytest.raises(ResourceLimitError):
            parse_regex(pattern)


def test_brace_that_is_not_a_repeat_is_literal() -> None:
    for pattern in ("x{", "x{}", "x{a}", "x{1", "x{1,2", "{", "a{,b}"):
        for text in (pattern.replace("\\", ""), "x"):
            assert accepts(pattern, text) == re_fullmatch(pattern, text), (pattern, text)


def test_long_literal_parses_flat() -> None:
    e = parse_regex("ab" * 5000)
    assert isinstance(e, Seq) and len(e.items) == 10000


def test_deep_nesting_parses_without_recursion() -> None:
    e = parse_regex("(" * 5000 + "a" + ")" * 5000)
    assert isinstance(e, Chars)
    e = parse_regex("(?:" * 2000 + "a|b" + ")*" * 2000)
    assert node_count(e) < 10_000


def test_deep_nesting_language() -> None:
    pattern = "(" * 500 + "a" + ")" * 500
    assert accepts(pattern, "a") and not accepts(pattern, "aa")
    pattern = "(?:a" * 100 + ")?" * 100
    assert accepts(pattern, "a" * 100) and not accepts(pattern, "a" * 101)


def test_long_literal_language() -> None:
    assert accepts("ab" * 5000, "ab" * 5000)
    assert not accepts("ab" * 5000, "ab" * 4999 + "a")


def test_deep_alternation_language() -> None:
    pattern = "(?:" * 500 + "a" + "|b)c" * 500
    assert accepts(pattern, "a" + "c" * 500) and accepts(pattern, "bc")


def test_unicode_categories_are_cached() -> None:
    first = category("w", unicode=True)
    assert category("w", unicode=True) is first
    for c in "é日_":
        assert any(lo <= ord(c) <= hi for lo, hi in first)
    assert not any(lo <= ord("😀") <= hi for lo, hi in first)


# ---------------------------------------------------------------------------------------
# Languages: the automaton of parse_regex(p) against re.fullmatch(p, s, re.ASCII).

LANGUAGE_CASES = [
    ("abc", ["abc", "ab", "abcd", ""]),
    ("a|b|", ["a", "b", "", "ab"]),
    ("[0-9]{1,3}", ["0", "123", "1234", "", "a"]),
    (r"\d+\.\d*", ["1.", "12.5", ".5", "1"]),
    (r"\w+", ["abc_19", "é", "a b", "ABC"]),
    (r"\s", [" ", "\t", "\n", "\r", "\f", "\v", "\xa0", "\u2003", "x"]),
    (r"\S\D\W", ["a.!", "ab!", " a!", "aa_"]),
    (r"[^a-c]", ["a", "d", "é", "\n", "😀"]),
    (".", ["a", "\n", "é", "😀", "\r"]),
    ("(?s).", ["\n", "a"]),
    ("(?s:.)|.", ["\n", "x"]),
    ("a.c", ["abc", "a\nc", "a😀c"]),
    (r"[a-]", ["a", "-", "b"]),
    (r"[-a]", ["a", "-", "b"]),
    ("[]a]", ["]", "a", "b"]),
    (r"[^]a]", ["]", "a", "b"]),
    (r"[\]\\\-]", ["]", "\\", "-", "a"]),
    (r"[\n\t\x41\u00e9\U0001F600\101\0]", ["\n", "\t", "A", "é", "😀", "\0", "B"]),
    (r"\x41\u00e9\U0001F600\0\07\101\N{EM DASH}", ["Aé😀\0\x07A—", "Aé😀"]),
    (r"\.\*\+\?\(\)\[\]\{\}\|\^\$\\\/\-\ ", [r".*+?()[]{}|^$\/- "]),
    (r"[\b]", ["\b", "b"]),
    ("日本語?|😀+", ["日本", "日本語", "😀😀😀", "語"]),
    ("é{2}", ["éé", "é", "ééé"]),
    ("(ab|cd)*e", ["e", "abe", "abcdabe", "ace"]),
    ("(?:a|ab)(?:c|bcd)(?:d*)", ["abcd", "abcdd", "acd", "abc"]),
    ("(a*)*b", ["b", "aaab", "a"]),
    ("(a|b)*?c", ["abac", "c"]),
    ("x{0}y", ["y", "xy"]),
    ("(?:)", ["", "a"]),
    ("()*", ["", "a"]),
    ("a(?#comment)b", ["ab", "a(?#comment)b"]),
    ("(?x) a  b # comment\n c", ["abc", "a b c"]),
    (r"(?x)a\ b[ ]c", ["a b c", "abc"]),
    ("(?x:a b)c d", ["abc d", "abcd"]),
    ("(?i)abc", ["ABC", "aBc", "abd"]),
    ("(?i:a)b", ["Ab", "AB"]),
    ("(?i)a(?-i:b)c", ["AbC", "ABC"]),
    ("(?i)[^a]", ["a", "A", "b"]),
    (r"(?i)[a-c\d]+", ["AbC9", "D"]),
    ("(?i)é", ["é", "É"]),
    ("(?i)k", ["k", "K", "\u212a"]),
    (r"^abc$", ["abc", "abc\n", "ab"]),
    (r"\Aabc\Z", ["abc", "abc\n"]),
    (r"^a$|^b$", ["a", "b", "ab"]),
    (r"^(a|b)$", ["a", "b", "ab"]),
    (r"(^a|b$)", ["a", "b"]),
    (r"(^a|b)c", ["ac", "bc", "c"]),
    (r"^^a$$", ["a"]),
    (r"$^", ["", "a"]),
    (r"(?:^)?a", ["a"]),
    (r"(?m)^a$", ["a", "a\n"]),
]


@pytest.mark.parametrize("pattern,texts", LANGUAGE_CASES, ids=ids(LANGUAGE_CASES))
def test_language_matches_re(pattern: str, texts: list[str]) -> None:
    for text in texts:
        assert accepts(pattern, text) == re_fullmatch(pattern, text), text


UNICODE_CASES = [
    (r"\d", ["5", "٣", "²", "a"]),
    (r"\w+", ["é日本_1", "😀", "ß"]),
    (r"\s", ["\xa0", "\u2003", "\x1c", "a"]),
    (r"[^\W\d]+", ["héllo", "a1", "_"]),
    (r"(?i)straße", ["STRASSE", "STRAßE", "strasse"]),
    (r"(?i)[k-m]", ["\u212a", "K", "j"]),
    (r"(?i)s", ["S", "ſ", "x"]),
    (r"(?i)[^s]", ["S", "ſ", "x"]),
    (r"(?i)Σ+", ["σς", "ΣΣ"]),
    (r"(?a)\w", ["é", "a"]),
    (r"(?a:\d)\d", ["1٣", "٣1"]),
]


@pytest.mark.parametrize("pattern,texts", UNICODE_CASES, ids=ids(UNICODE_CASES))
def test_unicode_language_matches_re(pattern: str, texts: list[str]) -> None:
    for text in texts:
        assert accepts(pattern, text, unicode=True) == re_fullmatch(pattern, text, True), text


def test_inline_u_flag_switches_to_unicode() -> None:
    assert accepts(r"(?u)\d", "٣") and not accepts(r"\d", "٣")
    assert accepts(r"(?u:\w)\w", "éa") and not accepts(r"(?u:\w)\w", "aé")


def test_dollar_is_end_of_string() -> None:
    # re's "$" also matches before a final newline; ours is ECMA's end of input.
    assert re.search("a$", "a\n") and not accepts("a$", "a\n", search=True)
    assert accepts("a$", "xa", search=True)


# Every single-character pattern below, compared with re over *all* code points.
CHAR_PATTERNS = [
    "a", "K", "k", "s", "é", "ß", "Σ", "ǅ", "İ", "µ", ".", r"\d", r"\w", r"\s", r"\D", r"\W",
    r"\S", "[a-z]", "[^a-z]", r"[\w-]", r"[a\W]", r"[^\d\s]", "[Σσ]", r"[\u0100-\u017f]", "[^k]",
    "[İı]", r"[\x00-\x7f]", r"[\W\d]", "[a-zA-Z0-9_]", "[😀-😂]", r"\N{KELVIN SIGN}", "[ǅa]",
    r"[^\W_]", r"[\s\S]", "[^µ]", r"[ſ\d]",
]
_ALL_CODE_POINTS = "".join(map(chr, range(0x110000)))


def _re_ranges(pattern: str, flags: int) -> set[tuple[int, int]]:
    runs = re.finditer(f"(?:{pattern})+", _ALL_CODE_POINTS, flags)
    out = set()
    for m in runs:  # surrogates cannot be encoded, so the IR never holds them
        lo, hi = m.start(), m.end() - 1
        if lo < 0xD800 <= hi or lo <= 0xDFFF < hi:
            out.update(r for r in ((lo, 0xD7FF), (0xE000, hi)) if r[0] <= r[1])
        elif not 0xD800 <= lo <= 0xDFFF:
            out.add((lo, hi))
    return out


@pytest.mark.parametrize("unicode", [False, True], ids=["ascii", "unicode"])
@pytest.mark.parametrize("ignorecase", [False, True], ids=["", "i"])
@pytest.mark.parametrize("pattern", CHAR_PATTERNS)
def test_character_set_exact(pattern: str, ignorecase: bool, unicode: bool) -> None:
    flags = (re.IGNORECASE if ignorecase else 0) | (0 if unicode else re.ASCII)
    e = parse_regex(("(?i)" if ignorecase else "") + pattern, unicode=unicode)
    assert isinstance(e, Chars)
    merged = {r for r in e.ranges}
    assert merged == _re_ranges(pattern, flags)


# ---------------------------------------------------------------------------------------
# Search mode (JSON Schema "pattern"): strings containing a match.

SEARCH_CASES = [
    ("a", ["a", "xay", "x\nay\n", "", "b"]),
    ("^a", ["a", "ab", "ba", "a\n"]),
    (r"a\Z", ["a", "ba", "ab", "b\na"]),
    (r"^a\Z", ["a", "aa"]),
    (r"^a|b", ["ax", "xa", "xbx", "b", ""]),
    (r"^a\Z|b", ["a", "ab", "xbx"]),
    (r"(^a|b)c", ["acx", "xbcx", "xac"]),
    ("", ["", "anything"]),
    ("^", ["", "x"]),
    (r"\Z", ["", "x"]),
    ("a.c", ["xa\ncx", "xabcx"]),
    (r"^\d{3}-\d{4}\Z", ["555-1234", "555-12345"]),
]


@pytest.mark.parametrize("pattern,texts", SEARCH_CASES, ids=ids(SEARCH_CASES))
def test_search_matches_re_search(pattern: str, texts: list[str]) -> None:
    for text in texts:
        assert accepts(pattern, text, search=True) == bool(re.search(pattern, text, re.ASCII))


def test_search_shape() -> None:
    e = parse_regex("^a|b", search=True)
    assert isinstance(e, Alt) and len(e.items) == 2
    assert node_count(parse_regex("^a$", search=True)) == 1
    whole = parse_regex("a", search=True)
    assert isinstance(whole, Seq) and len(whole.items) == 3
    star = whole.items[0]
    assert isinstance(star, Repeat) and star.item is ANY_CHAR


# ---------------------------------------------------------------------------------------
# Properties: random regexes and strings against re.

CHARS = ["a", "b", "A", "é", "日", "😀", "-", ".", "\n", " ", "1"]
POOL = st.sampled_from(CHARS + ["B", "_", "É", "2", "ſ", "\u212a"])
TEXT = st.text(alphabet=POOL, max_size=6)


@dataclass(frozen=True)
class Gen:
    """A random regex and a strategy for strings that match it, or nearly (re is the oracle).

    Built together because hypothesis's own ``from_regex`` is very slow on ``(?i:...)``.
    """

    pattern: str
    sample: st.SearchStrategy[str]

    def __repr__(self) -> str:
        return f"Gen({self.pattern!r})"


def _class(negate: bool, items: list[str]) -> Gen:
    return Gen("[" + ("^" if negate else "") + "".join(items) + "]", POOL)


def _concat(parts: list[Gen]) -> Gen:
    return Gen("".join(g.pattern for g in parts),
               st.tuples(*(g.sample for g in parts)).map("".join))


def _alternation(parts: list[Gen]) -> Gen:
    return Gen("(?:" + "|".join(g.pattern for g in parts) + ")",
               st.one_of(*(g.sample for g in parts)))


QUANTIFIERS = {"*": (0, 3), "+": (1, 3), "?": (0, 1), "{2}": (2, 2), "{1,3}": (1, 3),
               "{,2}": (0, 2), "{2,}": (2, 4), "*?": (0, 3), "{0,2}?": (0, 2)}


def _quantified(item: Gen, quantifier: str) -> Gen:
    lo, hi = QUANTIFIERS[quantifier]
    return Gen(f"(?:{item.pattern}){quantifier}",
               st.lists(item.sample, min_size=lo, max_size=hi).map("".join))


_class_char = st.sampled_from(CHARS).map(lambda c: re.escape(c) if c in "-]\\^" else c)
_class_item = st.one_of(
    _class_char,
    st.tuples(st.sampled_from(CHARS), st.sampled_from(CHARS)).map(
        lambda t: f"{re.escape(min(t))}-{re.escape(max(t))}"),
    st.sampled_from([r"\d", r"\w", r"\s", r"\W"]),
)
_atom = st.one_of(
    st.sampled_from(CHARS).map(lambda c: Gen(re.escape(c), st.sampled_from([c, c.swapcase()]))),
    st.just(Gen(".", POOL)),
    st.sampled_from([r"\d", r"\w", r"\s", r"\D", r"\W", r"\S"]).map(lambda p: Gen(p, POOL)),
    st.builds(_class, st.booleans(), st.lists(_class_item, min_size=1, max_size=3)),
)


def _extend(inner: st.SearchStrategy[Gen]) -> st.SearchStrategy[Gen]:
    return st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(_concat),
        st.lists(inner, min_size=2, max_size=3).map(_alternation),
        st.builds(_quantified, inner, st.sampled_from(list(QUANTIFIERS))),
        inner.map(lambda g: Gen(f"({g.pattern})", g.sample)),
        inner.map(lambda g: Gen(f"(?i:{g.pattern})", g.sample)),
    )


REGEX = st.recursive(_atom, _extend, max_leaves=8)
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])


def _draw_text(data: st.DataObject, gen: Gen) -> str:
    return data.draw(st.one_of(gen.sample, TEXT))


@PROPERTY_SETTINGS
@given(REGEX, st.data())
def test_property_fullmatch_ascii(gen: Gen, data: st.DataObject) -> None:
    text = _draw_text(data, gen)
    assert accepts(gen.pattern, text) == re_fullmatch(gen.pattern, text)


@PROPERTY_SETTINGS
@given(REGEX, st.data())
def test_property_fullmatch_unicode(gen: Gen, data: st.DataObject) -> None:
    text = _draw_text(data, gen)
    assert accepts(gen.pattern, text, unicode=True) == re_fullmatch(gen.pattern, text, True)


@PROPERTY_SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["", "^", r"\A"]), REGEX,
                          st.sampled_from(["", r"\Z"])), min_size=1, max_size=2), st.data())
def test_property_search(branches: list[tuple[str, Gen, str]], data: st.DataObject) -> None:
    pattern = "|".join(f"{a}{gen.pattern}{z}" for a, gen, z in branches)
    inside = st.one_of(*(gen.sample for _, gen, _ in branches))
    text = data.draw(st.one_of(TEXT, st.tuples(TEXT, inside, TEXT).map("".join)))
    assert accepts(pattern, text, search=True) == bool(re.search(pattern, text, re.ASCII))


def _lookahead(negative: bool, body: Gen) -> Gen:
    # Zero-width: the texts that exercise it come from what follows it in a concatenation.
    return Gen(f"(?{'!' if negative else '='}{body.pattern})", st.just(""))


def _lookbehind(negative: bool, char: str) -> Gen:
    return Gen(f"(?<{'!' if negative else '='}{re.escape(char)})", st.just(""))


def _extend_with_lookaheads(inner: st.SearchStrategy[Gen]) -> st.SearchStrategy[Gen]:
    return st.one_of(
        _extend(inner),
        st.builds(_lookahead, st.booleans(), inner),
        st.builds(_lookahead, st.booleans(), inner.map(lambda g: Gen(g.pattern + "$", g.sample))),
        # "^" inside: that alternative holds only where no character precedes
        st.builds(_lookahead, st.booleans(), inner.map(lambda g: Gen("^" + g.pattern, g.sample))),
        st.builds(_lookbehind, st.booleans(), st.sampled_from(CHARS)),
        st.sampled_from([r"\b", r"\B"]).map(lambda b: Gen(b, st.just(""))),
    )


LOOKAHEAD_REGEX = st.recursive(_atom, _extend_with_lookaheads, max_leaves=8)


def _accepts_or_reject(pattern: str, text: str, **kwargs: bool) -> bool:
    try:
        return accepts(pattern, text, **kwargs)
    except UnsupportedRegexError as e:  # a lookaround in an unbounded repeat, say
        assert "look" in e.construct, e
        reject()
        raise AssertionError("unreachable") from None


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(LOOKAHEAD_REGEX, LOOKAHEAD_REGEX, st.data())
def test_property_lookaheads_fullmatch(gen: Gen, after: Gen, data: st.DataObject) -> None:
    """Lookaheads anywhere (inside groups, alternatives and repeats, nested, with "$"),
    each checked against the whole rest of the string, and lookbehinds of one character
    and word boundaries, exactly as ``re`` does."""
    pattern = gen.pattern + after.pattern
    text = data.draw(st.one_of(TEXT, st.tuples(gen.sample, after.sample).map("".join)))
    # Our "$" is the end of the string (ECMA); re's also matches before a final newline.
    assert _accepts_or_reject(pattern, text) == re_fullmatch(pattern.replace("$", r"\Z"), text)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.sampled_from(["", "^"]), LOOKAHEAD_REGEX, st.sampled_from(["", "$"]), st.data())
def test_property_lookaheads_search(start: str, gen: Gen, end: str, data: st.DataObject) -> None:
    pattern = f"{start}{gen.pattern}{end}"
    text = data.draw(st.one_of(TEXT, st.tuples(TEXT, gen.sample, TEXT).map("".join)))
    # Our "$" is the end of the string (ECMA); re's also matches before a final newline.
    expected = bool(re.search(pattern.replace("$", r"\Z"), text, re.ASCII))
    assert _accepts_or_reject(pattern, text, search=True) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab()[]{}|*+?^$\\-,.:!=<>#Pi0123dx")), max_size=10))
def test_property_accepts_exactly_what_re_accepts(pattern: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            re.compile(pattern)
            valid = True
        except re.error as e:
            valid, position = False, e.pos
        except (OverflowError, ValueError):
            return
    try:
        parse_regex(pattern)
        assert valid, pattern
    except RegexSyntaxError as e:
        assert not valid, pattern
        # Python's tokenizer reads one token ahead, so a dangling final backslash is
        # reported before an error in the token just before it ("?\\"); we report that one.
        dangling = pattern.endswith("\\") and position == len(pattern) - 1
        assert e.position == position or dangling, pattern
    except UnsupportedRegexError:
        assert valid, pattern


def _agrees_with_re_exhaustively(pattern: str, alphabet: str, longest: int,
                                 python: re.Pattern[str], *, full: bool = True) -> None:
    """Every string over ``alphabet`` of up to ``longest`` characters: the search (and,
    with ``full``, the full-match) language against ``python``."""
    import itertools

    searched = Automaton(Grammar.single(parse_regex(pattern, search=True)))
    whole = _automaton(pattern) if full else None
    for n in range(longest + 1):
        for chars in itertools.product(alphabet, repeat=n):
            text = "".join(chars)
            if whole is not None:
                assert whole.matches(text.encode()) == bool(python.fullmatch(text)), text
            assert searched.matches(text.encode()) == bool(python.search(text)), text


# Anchors inside a pattern: ``^`` after what must consume, or ``$`` before it, can never
# match (``/^[0-9]{4}$/``, a regex literal pasted with its slashes); after what may be
# empty, what precedes ``^`` matches only the empty string.
MID_ANCHOR_PATTERNS = [
    "a^b", "a$b", r"a\Zb", r"a\A", "(?:a|b$)c", "a(^b|c)", "x*^y", "(a|)^b", "^$[ab$]*$",
    "a$b?", "(^a|b^)c", "(?:a|)^b$", "a$(?!b)x", "(?=a)a$b", "x?^a|b", "a(?:$|b)c",
]


@pytest.mark.parametrize("pattern", MID_ANCHOR_PATTERNS)
def test_anchors_inside_a_pattern_exhaustively(pattern: str) -> None:
    _agrees_with_re_exhaustively(pattern, "abxy", 4, re.compile(pattern, re.ASCII))


def test_a_pasted_regex_literal_matches_nothing() -> None:
    _agrees_with_re_exhaustively("/^[ab]{2}$/", "ab/", 5, re.compile("/^[ab]{2}$/"))
    assert not _automaton("/^[ab]{2}$/", search=True).matches(b"/ab/")


def test_dollar_before_what_may_read_the_final_newline_is_refused_where_python_reads_it() -> None:
    """Complemented (``ecma="around"``), ``$`` is also Python's, before a final newline
    that what follows could read: refused. Kept, only the end of the string (both
    dialects agree there), so nothing follows it."""
    with pytest.raises(UnsupportedRegexError):
        parse_regex("a$\\n", search=True, ecma="around")
    kept = Automaton(Grammar.single(parse_regex("a$\\n", search=True, ecma="within")))
    assert not kept.matches(b"a\n") and not kept.matches(b"a")


LOOKBEHIND_PATTERNS = [
    "a(?<=a)b", "(?<!a)b", ".(?<=[ab])c", r"\bab\b", r"a\b.", r"\w+\b.*", r"x\B.",
    "(?<=a|b)c", ".*(?<!a)", "(?<!x)(?=a)..", r"\b", r"a?\b", "(?:(?<!a).){1,3}",
    r"(?:\b.){0,4}", "(?<=a)(?<!b).", r"(?:a|\b)b", r"\B", r"a?\B", r"\B.?",
    # in an unbounded repeat's first iteration (its requirement was dropped)
    "(?:(?<!a)|b)+", "x(?:(?<=x)|a)+", r"(?:\b|a)+b",
    # at the start of a lookahead's body: asked of the character before the lookahead
    "(?=(?<=a)).", r"(?=\bab)..", r"(?!\ba).", "x(?=(?<=x)a).", "(?!(?<=a))b",
    r"a(?!\B).", r"(?=\w\b).+", ".(?!(?<!a)b).", r"(?:a|(?!\by)).",
]


@pytest.mark.parametrize("pattern", LOOKBEHIND_PATTERNS)
def test_lookbehinds_and_word_boundaries_exhaustively(pattern: str) -> None:
    """Lookbehinds of one character and ``\\b``/``\\B``, over every string of up to four
    characters with a space among them, full match and search, against ``re``."""
    _agrees_with_re_exhaustively(pattern, "abx y", 4, re.compile(pattern, re.ASCII))


def test_word_boundary_is_unicode_with_unicode_classes() -> None:
    assert accepts(r"\w\b.", "é!", unicode=True) and not accepts(r"\w\b.", "éa", unicode=True)
    assert accepts(r"a\b.", "aé") and not accepts(r"a\b.", "aé", unicode=True)  # ASCII \w


LOOKAHEAD_PATTERNS = [
    "(?!ab).*", "(?=a)[ab]*", "a(?!b)[a-c]*", "(?:(?!ab).)*", "(?:(?!ab).|(?!c)x)*",
    "(?:(?=a|b).)+", "(?!a$).*", "(?=.*b)(?=.*c).*", "(?:a(?!b)|b(?=c))+", "(?:a(?!b)|b)+",
    "(?:(?!a).){2,3}x?", "((?!b)a|b)(?!a)", "(?!(?=a)b).*", "(?:x(?!y)){0,2}",
    "(?!)a?", "(?=)a", "(?!a)*b", "(?:(?!ba).)+$", "((?!a).)*b", "(?:(?=a)ab)*",
    "(?:(?!ab)[ab])+b", "(?:a(?=b)|b)*c", "(?:(?!ba)..)*a?", "x(?:(?!ab).)*?y",
    "(?:(?=.*c)[ab])*c", "(?:(?:(?!b).)+b)*",
    # iterations that may be empty (their derivative was their own: RecursionError)
    "(?:a*(?=b)|x)*", "(?:(?=a)a*)*", "(?:a*(?!a))*", "(?:(?:(?=a)a*)*b)*",
    "(?:a*(?=b)|b*(?=a))*[ab]?", "(?:(?=a)|b)*a",
    # "^" inside: that alternative holds only at the start (searching, "(?!^)a" is an
    # "a" anywhere else; it pinned the whole pattern to the start)
    "(?!^)a", r"(?!\A)a", "(?=^a|b).", "b(?!^)a", "(?!^b|a).", "(?:x|(?!^)).", "a(?=^)",
]


@pytest.mark.parametrize("pattern", LOOKAHEAD_PATTERNS)
def test_lookaheads_exhaustively(pattern: str) -> None:
    """Every string of up to five characters over a small alphabet, full match and
    search, against ``re``."""
    _agrees_with_re_exhaustively(pattern, "abcxy", 5, re.compile(pattern.replace("$", r"\Z")))


@pytest.mark.parametrize("pattern", [
    r"^(a+(,|$)){3,}$", r"^(a(,|$)){2,3}$", r"(b(a|$)){2}", r"^(ab|b$){3,5}", r"(a($|b))*",
    # iterations that may be empty, and lookaheads beside the anchor: "(?=$)"
    r"(a?$|b){2}", r"^(a*(,|$)){3,}$", r"(a*$|b)*", r"((?!b)a$|b)*", r"(a$|(?=b)b)+a?",
    r"(?:(?=a)a$)*", r"(a$){2}b?",
])
def test_end_anchor_in_counted_repeats(pattern: str) -> None:
    """``$`` inside a repeat with any count: every string of up to seven characters,
    against ``re``."""
    _agrees_with_re_exhaustively(pattern, "ab,", 7, re.compile(pattern.replace("$", r"\Z")),
                                 full=False)


@pytest.mark.parametrize("pattern", [
    r"(^a|b)*", r"(^a|b)+c", r"(?:^a|b){2,3}", r"(?:^a){2}", r"(?:(?:^[*]|a)\.)*b",
])
def test_start_anchor_in_repeats(pattern: str) -> None:
    """``^`` inside a repeat: only its first iteration, where nothing precedes the repeat.
    Every string of up to six characters, full match and search, against ``re``."""
    _agrees_with_re_exhaustively(pattern, "ab*.c", 6, re.compile(pattern))


@pytest.mark.parametrize("pattern", [r"^(a($|/))*$", r"(a$|\n)*", r"^([^,]*(,|$)){2,}$"])
def test_end_anchor_in_repeats_read_as_python_takes_its_final_newline(pattern: str) -> None:
    """Read around both dialects (a complemented JSON Schema pattern), a ``$`` inside a
    repeat is Python's: before a final newline too, which a later iteration may then
    consume. The language holds every string ``re`` finds a match in (and ECMA's, which
    are those with ``\\Z``), over every string of up to six characters."""
    import itertools

    around = Automaton(Grammar.single(parse_regex(pattern, search=True, unicode=True,
                                                  ecma="around")))
    python, ecma = re.compile(pattern), re.compile(pattern.replace("$", r"\Z"))
    for n in range(7):
        for chars in itertools.product("a/,\n", repeat=n):
            text = "".join(chars)
            found = bool(python.search(text) or ecma.search(text))
            assert around.matches(text.encode()) == found, text
