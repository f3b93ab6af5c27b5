"""JSON string literals whose *decoded* value lies in a given language.

JSON Schema constrains the decoded value of a string (``pattern``, ``format``, lengths in
code points), but the model writes the encoded literal, quotes and escapes included. A
:class:`StringEncoder` maps a language of decoded values (an IR expression over characters,
e.g. from :func:`~constrain.regex.parse_regex`) to the language of JSON string literals that
decode into it.

**Escape policy.** Every character has a set of *codewords*:

- the raw character, unless JSON forbids it raw (``"``, ``\\``, U+0000..U+001F);
- the short escapes ``\\" \\\\ \\/ \\b \\f \\n \\r \\t`` for their characters;
- ``\\uXXXX`` (hex digits in either case) for any BMP character, and a ``\\uD8xx\\uDCxx``
  surrogate pair for any character above U+FFFF.

With ``escapes="all"`` (the default) every codeword is allowed, so the language is exactly
"every JSON string literal that decodes into the set": text written by ``json.dumps`` with
``ensure_ascii`` on or off, or by any other encoder, is accepted. With
``escapes="required"`` a character that may appear raw has only its raw form, and escapes
are allowed only for the characters JSON requires to be escaped (in any of their forms).
Lone surrogate escapes (``\\uD800`` alone) are never produced: they decode to no Unicode
scalar value.

The codewords form a prefix code (a raw codeword is one character other than ``\\``; an
escape's length is fixed by its second and, for ``\\u``, its first hex digits), so mapping
each character set to its codewords maps concatenation, union, repetition and intersection
of decoded languages exactly; a complement is taken within all encoded strings.

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar, literal
>>> enc = StringEncoder()
>>> a = Automaton(Grammar.single(enc.string(literal("é/"))))
>>> [a.matches(s) for s in (b'"\\xc3\\xa9/"', b'"\\\\u00E9\\\\/"', b'"\\xc3\\xa9"')]
[True, True, False]
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Literal

from .errors import GrammarError
from .grammar import (
    EMPTY,
    Alt,
    And,
    Bytes,
    Chars,
    Expr,
    Lazy,
    Not,
    Ranges,
    Ref,
    Repeat,
    Seq,
    alt,
    chars,
    complement,
    intersect,
    intersect_ranges,
    literal,
    prefix_tree,
    repeat,
    seq,
    star,
)

__all__ = ["EscapePolicy", "StringEncoder", "hex_range"]

EscapePolicy = Literal["all", "required"]

_QUOTE = literal('"')
_BACKSLASH = literal("\\")
_U = literal("u")
# Characters JSON forbids raw inside a string.
_MUST_ESCAPE: Ranges = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C))
_SHORT_ESCAPES = {0x22: '"', 0x5C: "\\", 0x2F: "/", 0x08: "b", 0x0C: "f", 0x0A: "n",
                  0x0D: "r", 0x09: "t"}
_HEX_VALUES = [(0, 9, 0x30), (10, 15, 0x61), (10, 15, 0x41)]  # (lo, hi, code of lo)


def _hex_digit(lo: int, hi: int) -> Expr:
    """One hex digit whose value is in ``lo..hi`` (both letter cases)."""
    ranges = []
    for vlo, vhi, base in _HEX_VALUES:
        a, b = max(lo, vlo), min(hi, vhi)
        if a <= b:
            ranges.append((base + a - vlo, base + b - vlo))
    return chars(ranges)


_ANY_HEX = _hex_digit(0, 15)
_ANY_RANGES: Ranges = ((0, 0xD7FF), (0xE000, 0x10FFFF))


def hex_range(lo: int, hi: int, width: int = 4) -> Expr:
    """Exactly ``width`` hex digits (either case) spelling a value in ``lo..hi``.

    >>> from constrain.automaton import Automaton
    >>> from constrain.grammar import Grammar
    >>> a = Automaton(Grammar.single(hex_range(0x00E9, 0x0100)))
    >>> [a.matches(s) for s in (b"00e9", b"00E9", b"00ff", b"0100", b"00e8", b"0101")]
    [True, True, True, True, False, False]
    """
    if lo > hi:
        return Alt(())
    if width == 1:
        return _hex_digit(lo, hi)
    unit = 16 ** (width - 1)
    lo_head, lo_rest = divmod(lo, unit)
    hi_head, hi_rest = divmod(hi, unit)
    if lo_head == hi_head:
        return seq(_hex_digit(lo_head, lo_head), hex_range(lo_rest, hi_rest, width - 1))
    parts = []
    first, last = lo_head, hi_head
    if lo_rest:
        parts.append(seq(_hex_digit(lo_head, lo_head), hex_range(lo_rest, unit - 1, width - 1)))
        first += 1
    tail = None
    if hi_rest != unit - 1:
        tail = seq(_hex_digit(hi_head, hi_head), hex_range(0, hi_rest, width - 1))
        last -= 1
    if first <= last:
        parts.append(seq(_hex_digit(first, last), repeat(_ANY_HEX, width - 1, width - 1)))
    if tail is not None:
        parts.append(tail)
    return alt(*parts)


def _surrogate_pairs(lo: int, hi: int) -> Expr:
    """``HHHH\\uLLLL`` (after a first ``\\u``): surrogate pairs for code points ``lo..hi``."""
    a, b = lo - 0x10000, hi - 0x10000
    first, last = a >> 10, b >> 10

    def pair(high_lo: int, high_hi: int, low_lo: int, low_hi: int) -> Expr:
        return seq(hex_range(0xD800 + high_lo, 0xD800 + high_hi), _BACKSLASH, _U,
                   hex_range(0xDC00 + low_lo, 0xDC00 + low_hi))

    if first == last:
        return pair(first, first, a & 0x3FF, b & 0x3FF)
    parts = []
    if a & 0x3FF:
        parts.append(pair(first, first, a & 0x3FF, 0x3FF))
        first += 1
    tail = None
    if b & 0x3FF != 0x3FF:
        tail = pair(last, last, 0, b & 0x3FF)
        last -= 1
    if first <= last:
        parts.append(pair(first, last, 0, 0x3FF))
    if tail is not None:
        parts.append(tail)
    return alt(*parts)


@lru_cache(maxsize=4096)
def _encoded_chars(escapes: EscapePolicy, ranges: Ranges) -> Expr:
    """The codewords of the characters in ``ranges``: shared by every compilation (IR
    nodes are immutable), because the same keys' and strings' characters recur in almost
    every schema and encoding one costs tens of nodes (its ``\\uXXXX`` spellings)."""
    must = intersect_ranges(ranges, _MUST_ESCAPE)
    raw = chars(ranges) if not must else chars(_subtract(ranges, _MUST_ESCAPE))
    escaped = ranges if escapes == "all" else must
    parts: list[Expr] = []
    if raw.ranges:
        parts.append(raw)
    if escaped:
        escape = _escapes(escaped)
        if escape is not None:
            parts.append(seq(_BACKSLASH, escape))
    return alt(*parts) if parts else Alt(())


@cache
def _any_string(escapes: EscapePolicy) -> tuple[Expr, Expr, Expr]:
    """One encoded character, any string's inside, any string literal: the same nodes for
    every encoder, so that automata can share their conversion (see ``RuleLibrary``)."""
    char = _encoded_chars(escapes, _ANY_RANGES)
    content = star(char)
    return char, content, seq(_QUOTE, content, _QUOTE)


def _escapes(ranges: Ranges) -> Expr | None:
    """What may follow the backslash for the characters in ``ranges``."""
    short = [ord(_SHORT_ESCAPES[cp]) for cp in _SHORT_ESCAPES
             if any(lo <= cp <= hi for lo, hi in ranges)]
    unicode_parts = []
    for lo, hi in ranges:
        if lo <= 0xFFFF:
            unicode_parts.append(hex_range(lo, min(hi, 0xFFFF)))
        if hi > 0xFFFF:
            unicode_parts.append(_surrogate_pairs(max(lo, 0x10000), hi))
    options: list[Expr] = []
    if short:
        options.append(chars([(c, c) for c in short]))
    if unicode_parts:
        options.append(seq(_U, alt(*unicode_parts)))
    return alt(*options) if options else None


class StringEncoder:
    """Maps decoded-string languages to JSON string-literal languages (see module doc).

    One encoder memoizes by node identity, so shared sub-expressions stay shared.
    """

    def __init__(self, escapes: EscapePolicy = "all") -> None:
        if escapes not in ("all", "required"):
            raise ValueError(f"escapes must be 'all' or 'required', not {escapes!r}")
        self.escapes = escapes
        self._memo: dict[int, tuple[Expr, Expr]] = {}
        self._literals: dict[str, Expr] = {}
        # One encoded character (any code point), the inside of any JSON string literal,
        # and any JSON string literal.
        self.char, self.content, self.any_string = _any_string(escapes)

    def encode_chars(self, ranges: Ranges) -> Expr:
        """The codewords of the characters in ``ranges``."""
        return _encoded_chars(self.escapes, ranges)

    def encode(self, decoded: Expr) -> Expr:
        """The inside of the literals (no quotes) whose decoded value is in ``decoded``."""
        found = self._memo.get(id(decoded))
        if found is not None:
            return found[1]
        result: Expr
        if isinstance(decoded, Chars):
            result = self.encode_chars(decoded.ranges)
        elif isinstance(decoded, Seq):
            result = seq(*(self.encode(i) for i in decoded.items)) if decoded.items else decoded
        elif isinstance(decoded, Alt):
            result = alt(*(self.encode(i) for i in decoded.items)) if decoded.items else decoded
        elif isinstance(decoded, Repeat):
            result = repeat(self.encode(decoded.item), decoded.min, decoded.max)
        elif isinstance(decoded, And):
            result = intersect(*(self.encode(i) for i in decoded.items))
        elif isinstance(decoded, Not):
            # The complement of a decoded set is taken within all encoded strings.
            result = intersect(self.content, complement(self.encode(decoded.item)))
        elif isinstance(decoded, Lazy):
            # A language that refers to itself (a regex repeat holding lookarounds): the
            # encoded node is registered before its build runs, so the reference back to
            # it finds it in the memo.
            source = decoded
            result = Lazy(("encoded", self.escapes, decoded.key),
                          lambda: self.encode(source.build()), nullable=decoded.nullable,
                          parts=tuple(self.encode(x) for x in decoded.parts),
                          needs=tuple(self.encode(x) for x in decoded.needs))
        elif isinstance(decoded, (Bytes, Ref)):
            raise GrammarError(f"a decoded string language cannot contain {type(decoded).__name__}")
        else:  # pragma: no cover - Expr is a closed union
            raise GrammarError(f"not a grammar expression: {decoded!r}")
        self._memo[id(decoded)] = (decoded, result)
        return result

    def string(self, decoded: Expr) -> Expr:
        """The JSON string literals (with quotes) whose decoded value is in ``decoded``."""
        return seq(_QUOTE, self.encode(decoded), _QUOTE)

    def any_but(self, texts: Iterable[str]) -> Expr:
        """The JSON string literals that decode to any string but ``texts``: the
        language of ``string(intersect(<any string>, complement(<texts>)))``, made with the
        texts' tree spelt in encoded characters at once (encoding a decoded tree walked
        it all again: ~18% of lowering a small object that allows unlisted keys).

        >>> from constrain.automaton import Automaton
        >>> from constrain.grammar import Grammar
        >>> a = Automaton(Grammar.single(StringEncoder().any_but(["id"])))
        >>> a.matches(b'"id"'), a.matches(b'"\\\\u0069d"'), a.matches(b'"ids"'), a.matches(b'""')
        (False, False, True, True)
        """
        tree = prefix_tree([(tuple(map(ord, t)), EMPTY) for t in set(texts)],
                           lambda code: self.encode_chars(((code, code),)))
        return seq(_QUOTE, intersect(self.content, complement(tree)), _QUOTE)

    def literal(self, text: str) -> Expr:
        """The JSON string literals that decode to exactly ``text``.

        >>> from constrain.automaton import Automaton
        >>> from constrain.grammar import Grammar
        >>> a = Automaton(Grammar.single(StringEncoder("required").literal('a"b')))
        >>> a.matches(b'"a\\\\"b"'), a.matches(b'"a\\\\u0022b"'), a.matches(b'"\\\\u0061\\\\"b"')
        (True, True, False)
        """
        found = self._literals.get(text)
        if found is None:
            found = self._literals[text] = self.string(literal(text))
        return found


def _subtract(ranges: Ranges, remove: Ranges) -> Ranges:
    out = []
    for lo, hi in ranges:
        cur = lo
        for rlo, rhi in remove:
            if rhi < cur or rlo > hi:
                continue
            if rlo > cur:
                out.append((cur, rlo - 1))
            cur = max(cur, rhi + 1)
        if cur <= hi:
            out.append((cur, hi))
    return tuple(out)
