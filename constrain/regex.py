"""Regex text (Python ``re`` syntax) → grammar IR.

:func:`parse_regex` reads what ``re`` accepts (which covers JSON Schema ``pattern`` strings and
what users write) and returns an :data:`~constrain.grammar.Expr` for the strings the regex
*fully* matches. Decisions callers must know:

- **Anchors.** ``^``/``\\A`` are accepted only where nothing can precede them (start of the
  pattern, of a top-level alternative or of a leading group: ``^a$|^b$``, ``(^a|b)c``), and
  ``$``/``\\Z`` only where nothing can follow them; there they are removed. ``$`` is the end
  of the string (ECMA), never "before a final newline" as in ``re`` (except where the
  language must contain Python's, see ``ecma``). A ``^`` may also sit in a repeat whose
  first iteration nothing precedes (``((^|-)\\w)*``, ``(?:^[*]|\\w)+``). A ``$`` inside a
  repeat (``^(\\w+($|/))*$``, ``^([^,]*(,|$)){3,}$``) ends the last iteration where no
  iteration may be empty, and is otherwise the lookahead ``(?=$)`` (so also where it is
  Python's, which a later iteration may follow past a final newline). Elsewhere, a ``^``
  after what must consume, or a ``$`` before it, can never match (``/^[0-9]{4}$/``, a
  regex literal pasted with its slashes, matches nothing), and what precedes a ``^`` but
  may be empty then matches only the empty string (``x*^y`` is ``^y``). Still refused:
  a ``^`` after a lookaround that consumes, a ``$`` before a group that holds one, a
  Python ``$`` (see ``ecma``) before what could read the final newline, and anchors under
  ``(?m)`` in search mode (UnsupportedRegexError).
- **Search mode** (``search=True``, JSON Schema ``pattern``): strings *containing* a match.
  Each unanchored side gets ``ANY_CHAR*``, which includes newline (``.`` in the pattern
  still excludes it unless ``(?s)``): ``^a|b`` gives ``a.*|.*b.*``.
- **Classes.** ``\\d \\w \\s`` are ASCII by default (``re.ASCII``):
  ``[0-9]``, ``[A-Za-z0-9_]``, ``[ \\t\\n\\r\\f\\v]``; ``unicode=True`` or ``(?u)`` gives
  Python's Unicode sets, ``(?a)`` forces ASCII. ``(?i)`` folds case exactly as ``re`` does
  (ASCII mode folds only ``A-Z``); see :mod:`constrain.charsets`.
- **Both dialects** (``ecma=``, JSON Schema ``pattern``): ECMA-262 and Python disagree on
  ``\\d \\w \\s``, their negations and ``.`` (ECMA's ``\\d`` is ASCII, its ``\\s`` takes the
  BOM, its ``.`` stops at ``\\r`` and the Unicode line separators). ``"within"`` reads each
  so that the language lies within both meanings (for a language that is kept),
  ``"around"`` so that it contains both (for one that is complemented); a class's
  negations, and a negated class's members, take the other side. ``(?a)``/``(?u)`` keep
  Python's meaning.
- **Lookaheads** (``(?=...)``, ``(?!...)``) are exact: the rest of the *whole* string from
  their position must (must not) start with a match of their body, as in ``re``. They are
  resolved once the pattern after them is known, as an intersection with (or the
  complement of) their body followed by anything; inside groups, alternatives and bounded
  repeats (each iteration written out, at most :data:`MAX_LOOKAHEAD_UNROLL` in all, nested
  ones multiplied: past it ResourceLimitError), and in unbounded repeats: where the repeat
  ends the pattern and its iterations are one character with lookaheads around it
  (``^((?!ab).)*$``) as one complement (every suffix starts with such an iteration),
  elsewhere (``((?!a).)*b``, ``(?:(?=a)ab)*``) as a language that refers to itself,
  ``T = rest | an iteration then T`` (a :class:`~constrain.grammar.Lazy` node). A
  negative lookahead reads its classes on the
  other side of the dialects (``ecma=``), and under ``"around"`` a ``$`` is also Python's
  "before a final newline", so lookaheads see that newline too. A lookahead's
  alternative starting with ``^`` holds only where no character precedes (``(?!^)a``,
  searching: an ``a`` anywhere but at the start).
- **Lookbehinds of one character** (``(?<=[a-z])``, ``(?<!-)``) and **word boundaries**
  (``\\b``, ``\\B``, with the ``\\w`` of the flags in force; ``\\B`` never matches in an
  empty string before Python 3.14, as in ``re``) are exact too: each is a requirement on
  the character before its position, met by the element to its left (or by the start of
  the string). Under ``ecma=`` a word boundary holds in both dialects (``"within"``) or
  in either (``"around"``): ECMA's ``\\w`` is ASCII. A lookbehind (or ``\\b``) at the
  start of a lookahead's body asks the character before the lookahead (``(?!\\bx)``); a
  negative lookahead is decided per class of that character. Longer lookbehinds, and
  lookbehinds inside a lookahead in a repeat of single characters, raise
  UnsupportedRegexError.
- **Unsupported** (UnsupportedRegexError with the construct's 0-based position): the
  lookarounds above, backreferences, conditionals, atomic groups, possessive quantifiers
  (they change the language) and ``(?t)``.
- **Errors.** Malformed input raises RegexSyntaxError with ``re``'s message and position
  (except a bad range, reported at its first character), even if it also holds unsupported
  constructs. Counts above :data:`MAX_REPEAT_COUNT` raise ResourceLimitError: valid, but
  over budget. A bounded repeat stays one :class:`~constrain.grammar.Repeat` node, and the
  parser keeps an explicit stack: long or deeply nested patterns never hit recursion limits.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias

from .charsets import (
    ECMA_LINE_TERMINATORS,
    casefold_class,
    casefold_literal,
    category,
    category_bound,
)
from .errors import RegexSyntaxError, ResourceLimitError, UnsupportedRegexError
from .grammar import (
    ANY_CHAR,
    EMPTY,
    MAX_CODE_POINT,
    NOTHING,
    Alt,
    And,
    Chars,
    Expr,
    Grammar,
    Lazy,
    Not,
    Ranges,
    Repeat,
    Seq,
    alt,
    chars,
    children,
    complement,
    intersect,
    intersect_ranges,
    normalize_ranges,
    repeat,
    seq,
    star,
)

__all__ = ["MAX_LOOKAHEAD_UNROLL", "MAX_REPEAT_COUNT", "parse_regex"]

MAX_REPEAT_COUNT = 100_000
"""Largest ``{m,n}`` count accepted; larger ones raise ResourceLimitError."""

_MAXGROUPS = 1073741823  # re's own limit for a conditional's group number

_I, _S, _X, _M, _A, _U, _L, _T = 1, 2, 4, 8, 16, 32, 64, 128
_FLAGS = {"i": _I, "s": _S, "x": _X, "m": _M, "a": _A, "u": _U, "L": _L, "t": _T}
_TYPE_FLAGS = _A | _U | _L
_DIGITS = "0123456789"
_OCT = "01234567"
_BRACES = re.compile(r"([0-9]*)(,([0-9]*))?\}")
_QUANTIFIERS = {"?": (0, 1), "*": (0, None), "+": (1, None)}
_HEX_RUN = re.compile("[0-9a-fA-F]*")
_OCT_RUN = re.compile("[0-7]*")
_WHITESPACE = " \t\n\r\v\f"
_SIMPLE_ESCAPES = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}
_DOT = chars([(10, 10)], negate=True)
_ECMA_DOT = chars(ECMA_LINE_TERMINATORS, negate=True)  # within both dialects' "."
_ANY_STAR = star(ANY_CHAR)
_ANY_PLUS = seq(ANY_CHAR, _ANY_STAR)
_EVERYTHING: Ranges = ANY_CHAR.ranges
_B_MATCHES_EMPTY = sys.version_info >= (3, 14)  # re's \B in an empty string, from 3.14
_NEWLINE = Chars(((10, 10),))
_FINAL_NEWLINE = alt(EMPTY, _NEWLINE)  # after Python's "$": nothing, or one newline
# The ends of the string an unbounded repeat holding lookaheads may be followed by, as
# sequences of single characters (an iteration's lookaheads see them too).
_ENDINGS: dict[int, tuple[Seq, ...]] = {id(EMPTY): (Seq(()),),
                                        id(_FINAL_NEWLINE): (Seq(()), Seq((_NEWLINE,)))}


@dataclass(slots=True)
class _Part:
    """One way a piece can match: whether it is anchored at its start and/or end, whether it
    consumes nothing by construction, its body, and where its anchors are (for errors).

    ``newline``: the end anchor is Python's ``$`` read around both dialects, so a final
    newline may follow it. ``lazy``: the body holds lookaheads (:class:`_Look`,
    :class:`_Choice`, :class:`_Looped`), which are resolved against what follows them
    (:func:`_resolve`) once the whole pattern is read."""

    start: bool
    end: bool
    empty: bool
    body: list[_Element]
    spos: int = -1
    epos: int = -1
    newline: bool = False
    lazy: bool = False

    def expr(self) -> Expr:
        assert not self.lazy, "a body with lookaheads is resolved against what follows it"
        return seq(*self.body)  # type: ignore[arg-type]


@dataclass(slots=True)
class _Look:
    """A lookahead: the rest of the string must (or, ``negative``, must not) start with a
    match of one of ``parts`` (a part anchored at its end must reach the string's end)."""

    parts: list[_Part]
    negative: bool
    pos: int = -1


@dataclass(slots=True)
class _Behind:
    """A lookbehind of one character: the character before this position must be one of
    ``ranges``, or (``start``) there may be none (the start of the string)."""

    ranges: Ranges
    start: bool


@dataclass(slots=True)
class _Choice:
    """Alternative bodies, at least one holding a lookahead."""

    bodies: list[list[_Element]]


@dataclass(slots=True)
class _Looped:
    """``{lo,hi}`` repeats of one of ``bodies`` (items holding lookaheads); ``pos`` is the
    repeat's position, for errors."""

    bodies: list[list[_Element]]
    lo: int
    hi: int | None
    pos: int


_Element: TypeAlias = "Expr | _Look | _Behind | _Choice | _Looped"
# A requirement on the character before a position: (its code points, whether the start
# of the string will do); None: no requirement.
_Before: TypeAlias = "tuple[Ranges, bool] | None"
_Ends: TypeAlias = "dict[_Before, Expr]"  # a language after a position, per requirement
_Item = tuple[str, list[_Part]]  # (kind: "atom" "anchor" "repeat" "group" "look", parts)

MAX_LOOKAHEAD_UNROLL = 1024
"""Most iterations of bounded repeats holding lookaheads written out for one pattern, nested
ones multiplied (each iteration's lookahead sees a different rest of the string); more
raise ResourceLimitError."""


def parse_regex(pattern: str, *, search: bool = False, unicode: bool = False,
                ecma: Literal["within", "around"] | None = None) -> Expr:
    """Parse ``pattern`` (Python ``re`` syntax) into a grammar-IR expression.

    The language is the strings ``pattern`` fully matches, or with ``search=True`` the
    strings containing a match. ``unicode`` gives ``\\d \\w \\s`` Python's Unicode meaning
    instead of ASCII. ``ecma`` reads classes and ``.`` within, or around, both
    ECMA-262's and Python's meanings; see the module docstring for it, anchors, flags and
    errors.

    >>> e = parse_regex(r"[0-9]{1,1000}")
    >>> type(e).__name__, e.min, e.max
    ('Repeat', 1, 1000)
    >>> from constrain.automaton import Automaton
    >>> from constrain.grammar import Grammar
    >>> a = Automaton(Grammar.single(parse_regex(r"(?!admin$)\\w+")))
    >>> [a.matches(s) for s in (b"admin", b"admins", b"bob")]
    [False, True, True]
    >>> parse_regex(r"a\\1")
    Traceback (most recent call last):
    ...
    constrain.errors.RegexSyntaxError: invalid group reference 1 at position 2 in regex 'a\\\\1'
    """
    return _Parser(pattern, search, unicode, ecma).run()


@dataclass
class _Frame:
    kind: str  # "top", "group", "lookahead", "look" (behind), "cond", "atomic"
    start: int
    outer_flags: int
    gid: int = 0
    negative: bool = False  # a negative lookahead
    outer_ecma: Literal["within", "around"] | None = None
    branches: list[list[_Part]] = field(default_factory=list)
    items: list[_Item] = field(default_factory=list)


def _plain(expr: Expr) -> list[_Part]:
    return [_Part(False, False, isinstance(expr, Seq) and not expr.items, [expr])]


def _merge(parts: Iterable[_Part]) -> list[_Part]:
    """Union the parts that share their anchoring, so a piece never has more than 16."""
    out: dict[tuple[bool, bool, bool, bool], _Part] = {}
    for v in parts:
        key = (v.start, v.end, v.empty, v.newline)
        old = out.get(key)
        if old is None:
            out[key] = _Part(v.start, v.end, v.empty, list(v.body), v.spos, v.epos,
                             v.newline, v.lazy)
        elif old.lazy or v.lazy:
            old.body = [_Choice([old.body, list(v.body)])]
            old.lazy = True
        else:
            old.body = [alt(old.expr(), v.expr())]
    return list(out.values())


def _matches_newline(expr: Expr) -> bool:
    """Whether ``expr`` matches the string ``"\\n"``."""
    from .automaton import Automaton  # the automaton module builds on this one's IR

    return Automaton(Grammar.single(expr)).matches(b"\n")


def _nullable(expr: Expr) -> bool:
    """Whether ``expr`` matches the empty string (a walk, not recursion: patterns nest
    deeply)."""
    memo: dict[int, bool] = {}
    stack = [expr]
    while stack:
        node = stack[-1]
        parts = children(node)
        todo = [c for c in parts if id(c) not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        found = [memo[id(c)] for c in parts]
        if isinstance(node, (Seq, And)):
            memo[id(node)] = all(found)
        elif isinstance(node, Alt):
            memo[id(node)] = any(found)
        elif isinstance(node, Repeat):
            memo[id(node)] = node.min == 0 or found[0]
        elif isinstance(node, Not):
            memo[id(node)] = not found[0]
        elif isinstance(node, Lazy):  # a repeat holding lookarounds (Parser.looped)
            memo[id(node)] = node.nullable
        else:  # characters and bytes (no references in a regex)
            memo[id(node)] = False
    return memo[id(expr)]


def _joined(pairs: Iterable[tuple[_Before, Expr]]) -> _Ends:
    """The languages with the same requirement on the character before them, united."""
    grouped: dict[_Before, list[Expr]] = {}
    for before, expr in pairs:
        grouped.setdefault(before, []).append(expr)
    return {before: alt(*exprs) for before, exprs in grouped.items()}


def _atoms(sets: list[Ranges]) -> list[Ranges]:
    """The partition of all code points that ``sets`` induce: each part lies wholly
    inside or outside each set."""
    parts: list[Ranges] = [_EVERYTHING]
    for ranges in sets:
        split: list[Ranges] = []
        for part in parts:
            split.extend(p for p in (intersect_ranges(part, ranges), _minus(part, ranges)) if p)
        parts = split
    return parts


def _both(before: _Before, behind: tuple[Ranges, bool]) -> _Before:
    """Two requirements on the same character."""
    if before is None:
        return behind
    return intersect_ranges(before[0], behind[0]), before[1] and behind[1]


def _consumed(expr: Expr, before: _Before, out: Expr) -> Iterable[tuple[_Before, Expr]]:
    """``expr`` then ``out``, where ``before`` constrains the character before ``out``: a
    non-empty match of ``expr`` must end in it; an empty one passes it on."""
    if before is None:
        yield None, seq(expr, out)
        return
    if before[0]:
        yield None, seq(intersect(expr, seq(_ANY_STAR, Chars(before[0]))), out)
    if _nullable(expr):
        yield before, out


def _minus(ranges: Ranges, removed: Ranges) -> Ranges:
    return intersect_ranges(ranges, chars(removed, negate=True).ranges)


def _one_character(parts: list[_Part]) -> Ranges | None:
    """The code points of a lookbehind's body when it is one character, else ``None``."""
    if len(parts) != 1 or parts[0].start or parts[0].end or parts[0].lazy:
        return None
    body = parts[0].body
    if len(body) != 1:
        return None
    item = body[0]
    options = item.items if isinstance(item, Alt) else (item,)
    if not options or not all(isinstance(x, Chars) for x in options):
        return None
    return normalize_ranges(r for x in options for r in x.ranges)  # type: ignore[union-attr]


def _single_character(body: list[_Element]) -> int | None:
    """Where ``body``'s one character is, when it is one character and lookaheads."""
    at = [i for i, x in enumerate(body) if not isinstance(x, _Look)]
    return at[0] if len(at) == 1 and isinstance(body[at[0]], Chars) else None


def _empty_only(body: list[_Element]) -> list[_Element] | None:
    """``body`` matching the empty string, as its zero-width elements (``None``: it
    cannot). A repeat may match it by not repeating, which asks nothing; one that must
    repeat asks what one of its iterations asks (the same position, again and again)."""
    out: list[_Element] = []
    for e in body:
        if isinstance(e, (_Look, _Behind)):
            out.append(e)
        elif isinstance(e, (_Choice, _Looped)):
            if isinstance(e, _Looped) and e.lo == 0:
                continue
            ways = [w for w in map(_empty_only, e.bodies) if w is not None]
            if not ways:
                return None
            if all(ways):  # an alternative that asks nothing makes the choice ask nothing
                out.append(_Choice(ways))
        elif not _nullable(e):
            return None
    return out


def _alternatives(bodies: list[list[_Element]]) -> list[list[_Element]]:
    """``bodies`` with each body that is one choice replaced by its alternatives."""
    out: list[list[_Element]] = []
    for b in bodies:
        if len(b) == 1 and isinstance(b[0], _Choice):
            out.extend(_alternatives(b[0].bodies))
        else:
            out.append(b)
    return out


class _Parser:
    def __init__(self, pattern: str, search: bool, unicode: bool,
                 ecma: Literal["within", "around"] | None = None) -> None:
        self.p = pattern
        self.ecma = ecma
        self.n = len(pattern)
        self.search = search
        self.default_unicode = unicode
        self.flags = 0
        self.groups = 0
        self.closed: set[int] = set()
        self.names: dict[str, int] = {}
        self.cond_refs: list[tuple[int, int]] = []
        self.unsupported: tuple[str, int] | None = None
        self.unrolled = 0  # iterations of repeats holding lookaheads written out so far

    # -- helpers ---------------------------------------------------------------------
    def err(self, message: str, pos: int) -> RegexSyntaxError:
        return RegexSyntaxError(message, self.p, pos)

    def unsupported_at(self, construct: str, pos: int) -> None:
        # Deferred: a malformed pattern must be reported as malformed, so parsing goes on.
        if self.unsupported is None:
            self.unsupported = (construct, pos)

    def tok(self, j: int) -> tuple[str | None, int]:
        """The token at ``j`` as re's tokenizer sees it (an escape is two characters)."""
        if j >= self.n:
            return None, j
        if self.p[j] == "\\":
            if j + 1 >= self.n:
                raise self.err("bad escape (end of pattern)", self.n - 1)
            return self.p[j : j + 2], j + 2
        return self.p[j], j + 1

    def unicode(self) -> bool:
        return bool(self.flags & _U) or (self.default_unicode and not self.flags & _A)

    def category(self, letter: str, as_is: bool) -> Ranges:
        """The code points of ``\\d``, ``\\w`` or ``\\s`` (``letter``), used as they are
        (``as_is``) or complemented: under ``ecma``, the side that keeps the language
        within (or around) both dialects."""
        if self.ecma is None or self.flags & (_A | _U):
            return category(letter, self.unicode())
        return category_bound(letter, widest=(self.ecma == "around") == as_is)

    def literal(self, cp: int) -> Expr:
        if self.flags & _I:
            return chars(casefold_literal(cp, self.unicode()))
        return chars([(cp, cp)]) if 0xD800 <= cp <= 0xDFFF else Chars(((cp, cp),))

    # -- main loop -------------------------------------------------------------------
    def run(self) -> Expr:
        p, n = self.p, self.n
        stack = [_Frame("top", -1, 0)]
        i = 0
        while True:
            f = stack[-1]
            if i >= n:
                if len(stack) > 1:
                    raise self.err("missing ), unterminated subpattern", f.start)
                break
            c = p[i]
            if c == "|":
                if f.kind == "cond" and f.branches:
                    raise self.err("conditional backref with more than two branches", i)
                f.branches.append(self.concat(f.items))
                f.items = []
                i += 1
            elif c == ")":
                if len(stack) == 1:
                    raise self.err("unbalanced parenthesis", i)
                stack.pop()
                self.flags = f.outer_flags
                if f.kind in ("lookahead", "lookbehind"):
                    self.ecma = f.outer_ecma
                if f.gid:
                    self.closed.add(f.gid)
                stack[-1].items.append(self.close(f))
                i += 1
            elif self.flags & _X and c in _WHITESPACE:
                i += 1
            elif self.flags & _X and c == "#":
                tok, i = self.tok(i + 1)
                while tok is not None and tok != "\n":
                    tok, i = self.tok(i)
            elif c == "\\":
                i = self.escape(i, f.items)
            elif c == "[":
                i = self.char_class(i, f.items)
            elif c in "*+?{":
                i = self.quantifier(i, f.items)
            elif c == "(":
                i = self.group(i, stack)
            elif c in "^$":
                self.anchor(c == "^", i, f.items, dollar=c == "$")
                i += 1
            elif c == ".":
                dot = _ECMA_DOT if self.ecma == "within" else _DOT
                f.items.append(("atom", _plain(ANY_CHAR if self.flags & _S else dot)))
                i += 1
            else:
                f.items.append(("atom", _plain(self.literal(ord(c)))))
                i += 1
        variants = self.close(stack[0])[1]
        for gid, pos in self.cond_refs:
            if gid > self.groups:
                raise self.err(f"invalid group reference {gid}", pos)
        if self.unsupported is not None:
            raise UnsupportedRegexError(self.unsupported[0], p, self.unsupported[1])
        if not self.search:
            out = [self.at_start(self.flow(v.body, {None: self.end_of(v) if v.end else EMPTY}),
                                 False) for v in variants]
        else:
            out = self.searched(variants)
        if self.unsupported is not None:  # met while resolving lookaheads
            raise UnsupportedRegexError(self.unsupported[0], p, self.unsupported[1])
        return alt(*out)

    def searched(self, variants: list[_Part]) -> list[Expr]:
        """The variants with each unanchored side free (search mode)."""
        out = []
        for v in variants:
            if v.lazy:
                ends = self.flow(v.body, {None: self.end_of(v) if v.end else _ANY_STAR})
                out.append(self.at_start(ends, not v.start))
                continue
            body = [] if v.empty else [v.expr()]
            if not v.start:
                body.insert(0, _ANY_STAR)
            if not v.end and (v.start or not v.empty):  # one ANY_CHAR* is enough
                body.append(_ANY_STAR)
            elif v.end and v.newline:
                body.append(_FINAL_NEWLINE)
            out.append(seq(*body))
        return out

    def anchor(self, at_start: bool, i: int, items: list[_Item], dollar: bool = False) -> None:
        if self.search and self.flags & _M:
            self.unsupported_at("multiline anchor in search mode", i)
        # Python's "$" also matches before a final newline: read around both dialects,
        # the language takes that newline too (ECMA's "$" and "\Z" are the end).
        newline = dollar and self.ecma == "around"
        items.append(("anchor", [_Part(at_start, not at_start, True, [],
                                       i if at_start else -1, -1 if at_start else i,
                                       newline)]))

    def word_boundary(self, between: bool) -> _Part:
        """``\\b`` (``between``: a word character on exactly one side) or ``\\B``.

        Under ``ecma`` (and neither ``(?a)`` nor ``(?u)``) ECMA's ``\\w`` is ASCII and
        Python's Unicode: the boundary must hold in both dialects (``"within"``) or in
        either (``"around"``). The characters fall into classes that each dialect treats
        alike; each pair of them (or the start, or the end) either is a boundary or not."""
        if self.ecma is None or self.flags & (_A | _U):
            words = [category("w", self.unicode())]  # Python's
        else:
            words = [category_bound("w", widest=True), category_bound("w", widest=False)]
        every = self.ecma != "around"
        union = normalize_ranges(r for w in words for r in w)
        common = words[0] if len(words) == 1 else intersect_ranges(words[0], words[1])
        classes = [c for c in (common, _minus(union, common), _minus(_EVERYTHING, union)) if c]

        def holds(before: Ranges | None, after: Ranges | None) -> bool:
            verdicts = []
            for d, word in enumerate(words):
                edge = before is None and after is None  # the empty string
                prev = before is not None and bool(intersect_ranges(before, word))
                nxt = after is not None and bool(intersect_ranges(after, word))
                if between:
                    verdicts.append(prev != nxt)
                else:  # d == 0 is Python's reading: \B in an empty string before 3.14
                    verdicts.append(prev == nxt and not (edge and d == 0 and not _B_MATCHES_EMPTY))
            return all(verdicts) if every else any(verdicts)

        bodies: list[list[_Element]] = []
        for before in [None, *classes]:  # None: the start of the string
            ahead = normalize_ranges(r for c in classes if holds(before, c) for r in c)
            at_end = holds(before, None)
            if not ahead and not at_end:
                continue
            body: list[_Element] = [_Behind((), True) if before is None else _Behind(before, False)]
            if at_end and ahead != _EVERYTHING:
                body.append(_Look([_Part(False, False, False, [Chars(_minus(_EVERYTHING, ahead))])],
                                  True))  # nothing but those characters, or the end
            elif not at_end:
                body.append(_Look([_Part(False, False, False, [Chars(ahead)])], False))
            bodies.append(body)
        return _Part(False, False, True, [_Choice(bodies)], lazy=True)

    # -- lookarounds -----------------------------------------------------------------
    @staticmethod
    def end_of(v: _Part) -> Expr:
        """What may follow a part anchored at the end of the string."""
        return _FINAL_NEWLINE if v.newline else EMPTY

    def resolve(self, body: list[_Element], follow: Expr, pos: int = -1) -> Expr:
        """The strings of ``body`` followed by one of ``follow`` (which reaches the end of
        the string), each lookahead checked against the whole rest of the string, where
        nothing may constrain the character before ``body`` (a lookbehind inside a
        lookahead, at ``pos``, is refused)."""
        ends = self.flow(body, {None: follow})
        if any(before is not None for before in ends):
            self.unsupported_at("lookbehind inside a lookahead", pos)
        return ends.get(None, NOTHING)

    def flow(self, body: list[_Element], ends: _Ends) -> _Ends:
        """``body`` followed by ``ends``, right to left: each lookahead checked against the
        rest of the string, each lookbehind becoming a requirement on the character
        before, met by the first element to its left that consumes one."""
        plain: list[Expr] = []
        for e in reversed(body):
            if not isinstance(e, (_Look, _Behind, _Choice, _Looped)) and list(ends) == [None]:
                plain.append(e)  # the common case: consecutive atoms are one sequence
                continue
            if plain:
                ends = {None: seq(*reversed(plain), ends[None])}
                plain = []
            if isinstance(e, _Look):
                # Zero-width: what it asks of the character before is asked of the same
                # character as what follows asks.
                ends = _joined((before if asked is None else _both(before, asked),
                                intersect(condition, out))
                               for asked, condition in self.look_conditions(e).items()
                               for before, out in ends.items())
            elif isinstance(e, _Behind):
                ends = _joined((_both(before, (e.ranges, e.start)), out)
                               for before, out in ends.items())
            elif isinstance(e, _Choice):
                ends = _joined(x for b in e.bodies for x in self.flow(b, ends).items())
            elif isinstance(e, _Looped):
                ends = self.looped(e, ends)
            else:
                ends = _joined(x for before, out in ends.items() for x in _consumed(e, before, out))
        if plain:
            ends = {None: seq(*reversed(plain), ends[None])}
        return ends

    def at_start(self, ends: _Ends, free: bool) -> Expr:
        """``ends`` at the start of the pattern: the start of the string, or with ``free``
        (search mode, no ``^``) any text before."""
        out = []
        for before, expr in ends.items():
            if before is None:
                out.append(seq(_ANY_STAR, expr) if free else expr)
                continue
            ranges, start = before
            if start:
                out.append(seq(_ANY_STAR, Chars(ranges), expr) if free and ranges else expr)
                if free:
                    out.append(expr)
            elif free and ranges:
                out.append(seq(_ANY_STAR, Chars(ranges), expr))
        return alt(*out)

    def look_language(self, look: _Look) -> Expr:
        """The rests of the string that start with a match of ``look``'s body."""
        return alt(*(self.resolve(v.body, self.end_of(v) if v.end else _ANY_STAR, look.pos)
                     for v in look.parts))

    def look_conditions(self, look: _Look) -> _Ends:
        """What ``look`` lets through, by what its body asks of the character before its
        position (a lookbehind or ``\\b`` at the body's start): a positive one, its body's
        rests per requirement; a negative one, per class of characters before (and the
        start of the string), the rests none of the alternatives that apply there match."""
        ends = _joined(x for v in look.parts for x in self.flow(
            v.body, {None: self.end_of(v) if v.end else _ANY_STAR}).items())
        if not look.negative:
            return ends
        free = [ends[None]] if None in ends else []
        asks = [b for b in ends if b is not None]
        if not asks:
            return {None: complement(alt(*free))}
        out: _Ends = {}
        for atom in _atoms([b[0] for b in asks]):
            matching = [ends[b] for b in asks if intersect_ranges(atom, b[0])]
            out[(atom, False)] = complement(alt(*free, *matching))
        out[((), True)] = complement(alt(*free, *(ends[b] for b in asks if b[1])))
        return out

    def look_condition(self, look: _Look) -> Expr:
        """The rests of the string that ``look`` lets through."""
        rest = self.look_language(look)
        return complement(rest) if look.negative else rest

    def recursive_loop(self, loop: _Looped, follow: Expr) -> _Ends:
        """``loop``'s repeats then ``follow``, unbounded, as the language that refers to
        itself: ``T = follow | (an iteration, then T)``, where each iteration's lookaheads
        see ``T`` as the rest; a :class:`~constrain.grammar.Lazy` node, built when
        matching reaches it (the loop's ``lo`` first iterations are written out, and what
        the first asks of the character before it is kept, as :meth:`flow` keeps it)."""
        # Only iterations that consume a character: an empty one leaves the rest to T
        # again (adding nothing to the language), and T's derivative would be its own.
        bodies = [c for b in loop.bodies for c in self.consuming(b, loop.pos)]
        # The iterations with ``follow`` for ``T``: the same structure, so whatever is
        # refused is found now, not while matching; and what the node is made of.
        trial = [self.flow(b, {None: follow}) for b in bodies]
        if any(before is not None for ends in trial for before in ends):
            self.unsupported_at("lookbehind inside an unbounded repeat", loop.pos)
            return {None: NOTHING}
        parser = self

        def build() -> Expr:
            counted, parser.unrolled = parser.unrolled, -(1 << 62)  # checked by the trial
            try:
                iterations = [parser.flow(b, {None: rest}) for b in bodies]
                return alt(follow, *(ends[None] for ends in iterations if None in ends))
            finally:
                parser.unrolled = counted

        rest = Lazy(("regex-loop", object()), build, nullable=_nullable(follow),
                    parts=(follow, *(ends[None] for ends in trial if None in ends)),
                    needs=(follow,))
        after: _Ends = {None: rest}
        self.unrolled += loop.lo
        for _ in range(loop.lo):
            after = _joined(x for b in loop.bodies for x in self.flow(b, after).items())
        return after  # with what the first iteration asks of the character before it

    def consuming(self, body: list[_Element], pos: int) -> list[list[_Element]]:
        """``body``'s matches of at least one character, as bodies: the first element to
        consume one, with each element before it matching the empty string (``pos``: the
        repeat's position, for a refusal)."""
        out: list[list[_Element]] = []
        for i, e in enumerate(body):
            before = _empty_only(body[:i])
            if before is None:
                break
            if isinstance(e, (_Look, _Behind)):
                continue
            if isinstance(e, _Choice):
                inner = [c for b in e.bodies for c in self.consuming(b, pos)]
                if inner:
                    out.append([*before, _Choice(inner), *body[i + 1:]])
            elif isinstance(e, _Looped):
                if e.lo and all(_empty_only(b) is None for b in e.bodies):
                    out.append([*before, *body[i:]])  # every iteration consumes
                elif e.lo or e.hi is not None:
                    self.unsupported_at("a counted repeat holding lookaheads that may match "
                                        "the empty string, inside an unbounded one", pos)
                    return []
                else:
                    inner = [c for b in e.bodies for c in self.consuming(b, pos)]
                    if inner:
                        out.append([*before, _Choice(inner), e, *body[i + 1:]])
            else:
                out.append([*before, intersect(e, _ANY_PLUS), *body[i + 1:]])
        return out

    def looped(self, loop: _Looped, ends: _Ends) -> _Ends:
        """``loop``'s repeats followed by ``ends``: written out iteration by iteration
        where the count is bounded (a free rest absorbs the iterations past ``lo``);
        unbounded before the end of the string with every iteration one character and
        lookaheads around it (``((?!ab).)*``, ``(a(?!b))*``), the strings each of whose
        suffixes longer than the ending starts with such an iteration; otherwise
        :meth:`recursive_loop`."""
        lo, hi = loop.lo, loop.hi
        follow = ends.get(None) if list(ends) == [None] else None
        if hi is None and follow is _ANY_STAR:
            hi = lo
        if hi is not None:
            self.unrolled += hi
            if self.unrolled > MAX_LOOKAHEAD_UNROLL:
                raise ResourceLimitError(
                    "max_lookahead_unroll", MAX_LOOKAHEAD_UNROLL,
                    f"repeats holding lookaheads would be written out more than "
                    f"{MAX_LOOKAHEAD_UNROLL} times (the repeat at position {loop.pos} in "
                    f"regex {self.p!r})")
            after = ends
            for done in range(hi - 1, -1, -1):
                step = [x for b in loop.bodies for x in self.flow(b, after).items()]
                after = _joined([*ends.items(), *step] if done >= lo else step)
            return after
        if follow is None:  # a lookbehind after the repeat waits for its last character
            self.unsupported_at("lookbehind after an unbounded repeat holding lookarounds",
                                loop.pos)
            return {None: NOTHING}
        endings = _ENDINGS.get(id(follow))
        single = [_single_character(b) for b in _alternatives(loop.bodies)]
        if endings is None or None in single:
            return self.recursive_loop(loop, follow)
        starts: list[Expr] = []
        for b, at in zip(_alternatives(loop.bodies), single):
            assert at is not None
            # Lookaheads before the character see the suffix from it, those after it
            # the suffix past it.
            seen_from = [self.look_condition(x) for x in b[:at] if isinstance(x, _Look)]
            seen_past = [self.look_condition(x) for x in b[at + 1:] if isinstance(x, _Look)]
            starts.append(intersect(seq(b[at], intersect(_ANY_STAR, *seen_past)),  # type: ignore[arg-type]
                                    *seen_from))
        # The iterations start at every position before the ending: every suffix longer
        # than the ending starts with an iteration.
        not_a_start = complement(alt(*starts))
        return {None: alt(*(intersect(seq(repeat(ANY_CHAR, lo, None), ending), complement(seq(
            _ANY_STAR, intersect(repeat(ANY_CHAR, len(ending.items) + 1, None), not_a_start))))
            for ending in endings))}

    # -- combining pieces ------------------------------------------------------------
    def concat(self, items: list[_Item]) -> list[_Part]:
        cur = [_Part(False, False, True, [])]
        for _, parts in items:
            if (len(parts) == 1 and not parts[0].start and not parts[0].end
                    and (parts[0].empty or not any(v.end for v in cur))):
                piece = parts[0]  # the common case: O(1) per atom, even for long literals
                for v in cur:
                    v.body.extend(piece.body)
                    v.empty = v.empty and piece.empty
                    v.lazy = v.lazy or piece.lazy
                if len(cur) > 1:
                    cur = _merge(cur)
                continue
            nxt = []
            for a in cur:
                for b in parts:
                    if a.end and not b.empty:
                        if self._after_end(a, b):
                            nxt.append(a)
                    elif b.start and not a.empty:
                        if self._before_start(a, b):
                            nxt.append(_Part(True, b.end, b.empty, b.body, b.spos, b.epos,
                                             b.newline, b.lazy))
                    else:
                        nxt.append(_Part(a.start or b.start, a.end or b.end, a.empty and b.empty,
                                         a.body + b.body, a.spos if a.start else b.spos,
                                         b.epos if b.end else a.epos,
                                         b.newline if b.end else a.newline, a.lazy or b.lazy))
            cur = _merge(nxt)
        return cur

    def _after_end(self, a: _Part, b: _Part) -> bool:
        """Whether ``a`` (anchored at the string's end) followed by ``b`` (which may
        consume) can match, in which case it matches exactly where ``a`` does: ``b`` can
        only match the empty string there, in both dialects. False where it cannot match
        (``$x``: nothing follows the end); unsupported where Python's ``$`` before a
        final newline would let ``b`` read that newline."""
        if b.lazy or (a.newline and _matches_newline(b.expr())):
            self.unsupported_at("anchor $ or \\Z not at the end", a.epos)
            return False
        return _nullable(b.expr())

    def _before_start(self, a: _Part, b: _Part) -> bool:
        """Whether ``a`` followed by ``b`` (anchored at the string's start) can match,
        in which case ``a`` matches the empty string: the start anchor holds at the first
        position only (no multiline mode here). False where ``a`` must consume (the
        slashes of ``/^[0-9]{4}$/``, a regex literal pasted whole)."""
        if a.lazy or a.end:
            self.unsupported_at("anchor ^ or \\A not at the start", b.spos)
            return False
        return _nullable(a.expr())

    def close(self, f: _Frame) -> _Item:
        if f.kind in ("look", "cond", "atomic"):  # unsupported; already recorded
            return ("look" if f.kind == "look" else "group"), _plain(EMPTY)
        last = self.concat(f.items)
        parts = _merge(v for b in [*f.branches, last] for v in b) if f.branches else last
        if f.kind == "lookahead":
            # Zero-width: it consumes nothing and constrains what follows it, so it is
            # resolved once the pattern after it is known. Its alternatives that start with
            # "^" hold only at the start of the string: no character before (a negative
            # one holds anywhere else, which pinning the whole pattern to the start lost).
            anchored = [replace(v, start=False) for v in parts if v.start]
            if not anchored:
                return "look", [_Part(False, False, True, [_Look(parts, f.negative, f.start)],
                                      lazy=True)]
            free = [v for v in parts if not v.start]
            at_start = _Behind((), True)
            body: list[_Element]
            if f.negative:  # not (at the start and X), and not Y
                body = [_Choice([[_Behind(_EVERYTHING, False)],
                                 [at_start, _Look(anchored, True, f.start)]])]
                if free:
                    body.append(_Look(free, True, f.start))
            else:  # at the start and X, or Y
                options: list[list[_Element]] = [[at_start, _Look(anchored, False, f.start)]]
                if free:
                    options.append([_Look(free, False, f.start)])
                body = [_Choice(options)] if free else options[0]
            return "look", [_Part(False, False, True, body, lazy=True)]
        if f.kind == "lookbehind":
            ranges = _one_character(parts)
            if ranges is None:
                self.unsupported_at("lookbehind of more than one character", f.start)
                return "look", _plain(EMPTY)
            behind = (_Behind(chars(ranges, negate=True).ranges, True) if f.negative
                      else _Behind(ranges, False))
            return "look", [_Part(False, False, True, [behind], lazy=True)]
        return "group", parts

    def repeat(self, parts: list[_Part], lo: int, hi: int | None, pos: int) -> list[_Part]:
        if len(parts) == 1:
            only = parts[0]
            if not (only.start or only.end or only.lazy or only.empty):
                # The common case (no anchor or lookahead, iterations that consume): the
                # plain repeat the general path below ends with, without its checks.
                return _plain(repeat(alt(only.expr()), lo, hi))
        counted = lo <= 1 or not any(_nullable(seq(*v.body)) for v in parts  # type: ignore[arg-type]
                                     if not v.lazy)
        if (any(v.end for v in parts) and not any(v.start for v in parts) and hi != 1
                and not (counted and not any(v.lazy or v.newline for v in parts))):
            # "$" inside a repeat that the anchored form below cannot take (Python's "$",
            # which a later iteration may follow past a final newline; iterations that
            # may be empty; lookaheads): the lookahead "(?=$)", which is what it means,
            # resolved against the rest of the string.
            parts = [_Part(False, False, v.empty, [*v.body, _Look([_Part(
                False, True, True, [], -1, v.epos, v.newline)], False, v.epos)],
                lazy=True) if v.end else v for v in parts]
        lazy = any(v.lazy for v in parts)
        if not any(v.start or v.end for v in parts):
            if all(v.empty for v in parts):
                # Zero-width: one iteration says all that many do, and none says nothing.
                return parts if lazy and lo > 0 else _plain(EMPTY)
            if lazy:
                return [_Part(False, False, False,
                              [_Looped([v.body for v in parts], lo, hi, pos)], lazy=True)]
            return _plain(repeat(alt(*(v.expr() for v in parts)), lo, hi))
        if hi == 1:
            return _merge([*parts, *(_plain(EMPTY) if lo == 0 else [])])
        if hi == 0:
            return _plain(EMPTY)
        if lazy:
            self.unsupported_at("lookahead inside a repeat with an anchor", pos)
            return _plain(EMPTY)
        if not any(v.start for v in parts) and counted:
            return self.repeat_anchored(parts, lo, hi, at_end=True)
        if not any(v.end for v in parts) and counted:
            return self.repeat_anchored(parts, lo, hi, at_end=False)
        pos = min(x for v in parts for x in (v.spos, v.epos) if x >= 0)  # some anchor's
        self.unsupported_at("anchor inside a repeat", pos)
        return _plain(EMPTY)

    def repeat_anchored(self, parts: list[_Part], lo: int, hi: int | None,
                        at_end: bool) -> list[_Part]:
        """``(N|A){lo,hi}``, where the ``N`` parts hold no anchor and the ``A`` parts end in
        ``$`` (``at_end``; ECMA: the end of the string) or start with ``^`` (only where
        nothing comes before the repeat, which :meth:`concat` checks): either iterations
        of ``N`` only, or one ``A`` as the last (first) iteration with ``lo - 1`` to
        ``hi - 1`` of ``N`` before (after) it. With ``lo > 1`` no part may match the empty
        string (the caller checks), so no iteration past the anchor could count."""
        plain = [v for v in parts if not (v.end if at_end else v.start)]
        anchored = [v for v in parts if (v.end if at_end else v.start)]
        out: list[_Part] = []
        others: list[Expr] = []
        if plain:
            item = alt(*(v.expr() for v in plain))
            empty = all(v.empty for v in plain)
            out.append(_Part(False, False, empty, [] if empty else [repeat(item, lo, hi)]))
            if not empty:
                others = [repeat(item, max(lo - 1, 0), None if hi is None else hi - 1)]
        elif lo == 0:
            out.append(_Part(False, False, True, []))
        elif lo > 1:
            return _plain(NOTHING)
        for a in anchored:
            body = [*others, *a.body] if at_end else [*a.body, *others]
            out.append(_Part(not at_end, at_end, a.empty and not others, body,
                             -1 if at_end else a.spos, a.epos if at_end else -1))
        return _merge(out)

    # -- atoms -----------------------------------------------------------------------
    def quantifier(self, i: int, items: list[_Item]) -> int:
        p, n = self.p, self.n
        c, j = p[i], i + 1
        lo, hi = _QUANTIFIERS.get(c, (0, None))
        if c == "{":
            m = _BRACES.match(p, j)
            if m is None or p[j] == "}":  # not a repeat: a literal "{", as in re
                items.append(("atom", _plain(self.literal(123))))
                return j
            lo = int(m[1] or 0)
            hi = (int(m[3]) if m[3] else None) if m[2] else lo
            if max(lo, hi or 0) > MAX_REPEAT_COUNT:
                raise ResourceLimitError(
                    "max_repeat_count", MAX_REPEAT_COUNT,
                    f"repeat count {max(lo, hi or 0)} at position {i} in regex {p!r}")
            if hi is not None and hi < lo:
                raise self.err("min repeat greater than max repeat", j)
            j = m.end()
        if not items or items[-1][0] == "anchor":
            raise self.err("nothing to repeat", i)
        if items[-1][0] == "repeat":
            raise self.err("multiple repeat", i)
        if j < n and p[j] == "?":  # lazy: same language
            j += 1
        elif j < n and p[j] == "+":
            self.unsupported_at("possessive quantifier", i)
            j += 1
        items[-1] = ("repeat", self.repeat(items[-1][1], lo, hi, i))
        return j

    def escape(self, i: int, items: list[_Item]) -> int:
        c, j = self.p[i + 1] if i + 1 < self.n else "", i + 2
        if not c:
            raise self.err("bad escape (end of pattern)", i)
        if c in "AZ":
            self.anchor(c == "A", i, items)  # \\Z is the end only, in both dialects
        elif c in "bB":
            items.append(("anchor", [self.word_boundary(c == "b")]))
        elif c in "dDwWsS":
            cat = self.category(c.lower(), as_is=c.islower())
            items.append(("atom", _plain(chars(cat, negate=c.isupper()))))
        elif c in _DIGITS and c != "0":
            j = self.backref_or_octal(i, j, items)
        else:
            cp, j = self.char_escape(i, c, j, False)
            items.append(("atom", _plain(self.literal(cp))))
        return j

    def backref_or_octal(self, i: int, j: int, items: list[_Item]) -> int:
        p, n = self.p, self.n
        if j < n and p[j] in _DIGITS:
            if p[i + 1] in _OCT and p[j] in _OCT and j + 1 < n and p[j + 1] in _OCT:
                value = int(p[i + 1 : j + 2], 8)
                if value > 0o377:
                    raise self.err(f"octal escape value {p[i:j + 2]} outside of range 0-0o377", i)
                items.append(("atom", _plain(self.literal(value))))
                return j + 2
            j += 1
        gid = int(p[i + 1 : j])
        if gid > self.groups:
            raise self.err(f"invalid group reference {gid}", i + 1)
        if gid not in self.closed:
            raise self.err("cannot refer to an open group", i)
        self.unsupported_at(f"backreference {p[i:j]}", i)
        items.append(("atom", _plain(EMPTY)))
        return j

    def char_escape(self, i: int, c: str, j: int, in_class: bool) -> tuple[int, int]:
        """A one-character escape starting at ``i`` (``c`` follows the backslash)."""
        p = self.p
        if c in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[c], j
        if in_class and c == "b":
            return 8, j
        width = {"x": 2, "u": 4, "U": 8}.get(c)
        if width:
            k = _HEX_RUN.match(p, j, j + width).end()  # type: ignore[union-attr]
            if k - j != width:
                raise self.err(f"incomplete escape {p[i:k]}", i)
            value = int(p[j:k], 16)
            if value > MAX_CODE_POINT:
                raise self.err(f"bad escape {p[i:k]}", i)
            return value, k
        if c == "N":
            return self.named_escape(i, j)
        if c in _OCT and (in_class or c == "0"):
            k = _OCT_RUN.match(p, j, j + 2).end()  # type: ignore[union-attr]
            value = int(p[i + 1 : k], 8)
            if value > 0o377:
                raise self.err(f"octal escape value {p[i:k]} outside of range 0-0o377", i)
            return value, k
        if c in _DIGITS or ("a" <= c <= "z") or ("A" <= c <= "Z"):
            raise self.err(f"bad escape \\{c}", i)
        return ord(c), j

    def named_escape(self, i: int, j: int) -> tuple[int, int]:
        import unicodedata

        if j >= self.n or self.p[j] != "{":
            raise self.err("missing {", j)
        name, k = self.until(j + 1, "}", "character name")
        try:
            return ord(unicodedata.lookup(name)), k
        except KeyError:
            raise self.err(f"undefined character name {name!r}", i) from None

    def until(self, j: int, terminator: str, what: str) -> tuple[str, int]:
        """re's ``getuntil``: the text up to ``terminator`` and the index after it."""
        start = j
        while True:
            tok, k = self.tok(j)
            if tok is None:
                if j == start:
                    raise self.err(f"missing {what}", j)
                raise self.err(f"missing {terminator}, unterminated name", start)
            if tok == terminator:
                if j == start:
                    raise self.err(f"missing {what}", j)
                return self.p[start:j], k
            j = k

    def char_class(self, here: int, items: list[_Item]) -> int:
        p = self.p
        j = here + 1
        negate = j < self.n and p[j] == "^"
        j += negate
        lits: list[tuple[int, int]] = []
        cats: list[tuple[int, int]] = []
        count = 0
        while True:
            start = j
            tok, j = self.tok(j)
            if tok is None:
                raise self.err("unterminated character set", here)
            if tok == "]" and count:
                break
            first, j = self.class_item(start, tok, j, negate)
            last = False
            if j < self.n and p[j] == "-":
                that, k = self.tok(j + 1)
                if that is None:
                    raise self.err("unterminated character set", here)
                if that != "]":
                    second, j = self.class_item(j + 1, that, k, negate)
                    if not isinstance(first, int) or not isinstance(second, int) or second < first:
                        raise self.err(f"bad character range {p[start:j]}", start)
                    lits.append((first, second))
                    count += 1
                    continue
                lits.append((45, 45))  # "-" right before "]" is a literal
                j, last = k, True
            if isinstance(first, int):
                lits.append((first, first))
            else:
                cats.extend(first)
            count += 1
            if last:
                break
        items.append(("atom", _plain(chars(self.class_set(lits, cats), negate=negate))))
        return j

    def class_item(self, i: int, tok: str, j: int,
                   negated_class: bool) -> tuple[int | Ranges, int]:
        """A class member: a code point, or the ranges of a ``\\d``-style category."""
        if tok[0] != "\\":
            return ord(tok), j
        c = tok[1]
        if c in "dDwWsS":
            # A negated class complements its members: they take the other side.
            cat = self.category(c.lower(), as_is=c.islower() != negated_class)
            return (chars(cat, negate=True).ranges if c.isupper() else cat), j
        return self.char_escape(i, c, j, True)

    def class_set(self, lits: list[tuple[int, int]],
                  cats: list[tuple[int, int]]) -> Sequence[tuple[int, int]]:
        """The class's code points, not yet sorted or merged (``chars`` does that)."""
        if self.flags & _I:
            return casefold_class(normalize_ranges(lits), normalize_ranges(cats), self.unicode())
        return lits + cats

    # -- groups ----------------------------------------------------------------------
    def group(self, i: int, stack: list[_Frame]) -> int:
        p, f = self.p, stack[-1]
        j = i + 1
        if j >= self.n or p[j] != "?":
            self.groups += 1
            stack.append(_Frame("group", i, self.flags, self.groups))
            return j
        tok, j = self.tok(j + 1)
        if tok is None:
            raise self.err("unexpected end of pattern", j)
        kind, gid, flags = "group", 0, self.flags
        if tok == "P":
            nxt = p[j : j + 1]
            if nxt == "<":
                name, j = self.until(j + 1, ">", "group name")
                self.check_name(name, j - 1)
                if name in self.names:
                    raise self.err(f"redefinition of group name {name!r} as group "
                                   f"{self.groups + 1}; was group {self.names[name]}",
                                   j - 1 - len(name))
                self.groups += 1
                gid = self.names[name] = self.groups
            elif nxt == "=":
                name, j = self.until(j + 1, ")", "group name")
                self.check_name(name, j - 1)
                if name not in self.names:
                    raise self.err(f"unknown group name {name!r}", j - 1 - len(name))
                if self.names[name] not in self.closed:
                    raise self.err("cannot refer to an open group", j - 1 - len(name))
                self.unsupported_at(f"backreference (?P={name})", i)
                f.items.append(("atom", _plain(EMPTY)))
                return j
            else:
                other, k = self.tok(j)
                if other is None:
                    raise self.err("unexpected end of pattern", k)
                raise self.err("unknown extension ?P" + other, i + 1)
        elif tok == "#":
            while True:
                other, j = self.tok(j)
                if other is None:
                    raise self.err("missing ), unterminated comment", i)
                if other == ")":
                    return j
        elif tok in ("=", "!", "<"):
            if tok == "<":
                other, j = self.tok(j)
                if other is None:
                    raise self.err("unexpected end of pattern", j)
                if other not in ("=", "!"):
                    raise self.err("unknown extension ?<" + other, i + 1)
            # Its body is checked (positive) or excluded (negative) where the pattern is:
            # a negative one reads its classes on the other side of the dialects.
            negative = (other if tok == "<" else tok) == "!"
            stack.append(_Frame("lookbehind" if tok == "<" else "lookahead", i, self.flags,
                                negative=negative, outer_ecma=self.ecma))
            if negative and self.ecma is not None:
                self.ecma = "around" if self.ecma == "within" else "within"
            return j
        elif tok == "(":
            j = self.condition(j)
            self.unsupported_at("conditional group (?(...)...)", i)
            kind = "cond"
        elif tok == ">":
            self.unsupported_at("atomic group (?>...)", i)
            kind = "atomic"
        elif tok in _FLAGS or tok == "-":
            add, remove, j, is_global = self.inline_flags(j, tok)
            if is_global:
                if len(stack) > 1 or f.branches or f.items:
                    raise self.err("global flags not at the start of the expression", i)
                if add & _T:
                    self.unsupported_at("template flag (?t)", i)
                if (self.flags | add) & _A and (self.flags | add) & _U:
                    raise self.err("ASCII and UNICODE flags are incompatible", i)
                self.flags |= add
                return j
            flags = (self.flags & ~_TYPE_FLAGS if add & _TYPE_FLAGS else self.flags)
            flags = (flags | add) & ~remove
        elif tok != ":":
            raise self.err("unknown extension ?" + tok, i + 1)
        stack.append(_Frame(kind, i, self.flags, gid))
        self.flags = flags
        return j

    def check_name(self, name: str, end: int) -> None:
        if not name.isidentifier():
            raise self.err(f"bad character in group name {name!r}", end - len(name))

    def condition(self, j: int) -> int:
        """Check a conditional's ``(name)`` or ``(number)`` as re does; the index after it."""
        name, k = self.until(j, ")", "group name")
        if name.isidentifier():
            if name not in self.names:
                raise self.err(f"unknown group name {name!r}", j)
            return k
        try:
            gid = int(name)
        except ValueError:
            gid = -1
        if gid < 0:
            raise self.err(f"bad character in group name {name!r}", j)
        if not gid:
            raise self.err("bad group number", j)
        if gid >= _MAXGROUPS:
            raise self.err(f"invalid group reference {gid}", j)
        self.cond_refs.append((gid, j))
        return k

    def inline_flags(self, j: int, char: str | None) -> tuple[int, int, int, bool]:
        """Port of re's ``_parse_flags``: (added, removed, next index, is global)."""
        add = remove = 0
        if char != "-":
            while True:
                if char == "L":
                    raise self.err("bad inline flags: cannot use 'L' flag with a str pattern", j)
                flag = _FLAGS[char or ""]
                add |= flag
                if flag & _TYPE_FLAGS and add & _TYPE_FLAGS != flag:
                    raise self.err("bad inline flags: flags 'a', 'u' and 'L' are incompatible", j)
                char, j = self.tok(j)
                if char is None:
                    raise self.err("missing -, : or )", j)
                if char in ")-:":
                    break
                if char not in _FLAGS:
                    raise self.err("unknown flag" if char.isalpha() else "missing -, : or )",
                                   j - len(char))
        if char == ")":
            return add, 0, j, True
        if add & _T:
            raise self.err("bad inline flags: cannot turn on global flag", j - 1)
        if char == "-":
            char, j = self.tok(j)
            if char is None:
                raise self.err("missing flag", j)
            if char not in _FLAGS:
                raise self.err("unknown flag" if char.isalpha() else "missing flag", j - len(char))
            while True:
                flag = _FLAGS[char]
                if flag & _TYPE_FLAGS:
                    raise self.err("bad inline flags: cannot turn off flags 'a', 'u' and 'L'", j)
                remove |= flag
                char, j = self.tok(j)
                if char is None:
                    raise self.err("missing :", j)
                if char == ":":
                    break
                if char not in _FLAGS:
                    raise self.err("unknown flag" if char.isalpha() else "missing :", j - len(char))
        if remove & _T:
            raise self.err("bad inline flags: cannot turn off global flag", j - 1)
        if add & remove:
            raise self.err("bad inline flags: flag turned on and off", j - 1)
        return add, remove, j, False
