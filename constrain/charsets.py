"""Code point sets with Python ``re`` semantics: ``\\d \\w \\s`` and case-insensitivity.

:mod:`constrain.regex` uses these to turn classes and literals into
:class:`~constrain.grammar.Chars`. Everything is exact with respect to ``re`` (except ``re``'s
own quirks for cased characters outside the BMP inside multi-character classes) and is
computed from the running interpreter's ``re``, once per process and only when first needed
(a few tenths of a second each for the Unicode categories and case tables; ASCII is free).

>>> category("d", unicode=False)
((48, 57),)
>>> casefold_literal(ord("k"), unicode=True)  # k, K and the Kelvin sign
((75, 75), (107, 107), (8490, 8490))
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from .grammar import MAX_CODE_POINT, Ranges, intersect_ranges, normalize_ranges

__all__ = ["ECMA_LINE_TERMINATORS", "casefold_class", "casefold_literal", "category",
           "category_bound"]

_ASCII_CATEGORIES: dict[str, Ranges] = {
    "d": ((48, 57),),
    "w": ((48, 57), (65, 90), (95, 95), (97, 122)),
    "s": ((9, 13), (32, 32)),
}


_UNICODE_CATEGORIES: dict[str, Ranges] = {}

# ECMA-262's \s (WhiteSpace and LineTerminator: Zs, BOM, TAB, VT, FF, LF, CR, LS, PS); its
# \d and \w are the ASCII sets above, and its "." stops at the line terminators.
_ECMA_SPACE: Ranges = ((9, 13), (32, 32), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                       (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F),
                       (0x3000, 0x3000), (0xFEFF, 0xFEFF))
ECMA_LINE_TERMINATORS: Ranges = ((10, 10), (13, 13), (0x2028, 0x2029))


def category(letter: str, unicode: bool) -> Ranges:
    """Code points of ``\\d``, ``\\w`` or ``\\s`` (``letter`` in "dws"): ASCII or Unicode.

    >>> category("s", unicode=False)
    ((9, 13), (32, 32))
    >>> (0x0660, 0x0669) in category("d", unicode=True)  # ARABIC-INDIC DIGITs
    True
    """
    if not unicode:
        return _ASCII_CATEGORIES[letter]
    found = _UNICODE_CATEGORIES.get(letter)
    if found is None:
        # A C-speed scan of every code point with re itself: exactly re's semantics. Only
        # the letter asked (~12-17 ms each, once per process): most patterns use one.
        runs = re.finditer(rf"\{letter}+", _code_points(0, MAX_CODE_POINT + 1))
        found = _UNICODE_CATEGORIES[letter] = tuple((m.start(), m.end() - 1) for m in runs)
    return found


def category_bound(letter: str, widest: bool) -> Ranges:
    """``\\d``, ``\\w`` or ``\\s`` as read by both ECMA-262 (JSON Schema's regex dialect)
    and Python's ``re`` (Unicode): what both take (``widest=False``), or what either takes.

    A JSON Schema ``pattern`` is ECMA-262, and validators written in Python read it with
    ``re``; a language built to be kept must lie within both, one built to be complemented
    must contain both.

    >>> category_bound("d", widest=False), (0x0660, 0x0669) in category_bound("d", widest=True)
    (((48, 57),), True)
    >>> (0xFEFF, 0xFEFF) in category_bound("s", widest=False)  # ECMA's only, not Python's
    False
    """
    python = category(letter, unicode=True)
    if letter != "s":  # ECMA's \d and \w are ASCII, within Python's
        return python if widest else _ASCII_CATEGORIES[letter]
    if widest:
        return normalize_ranges([*python, *_ECMA_SPACE])
    return intersect_ranges(python, _ECMA_SPACE)


def _code_points(lo: int, hi: int) -> str:
    """The string of code points ``lo..hi-1`` (surrogates included), built at C speed."""
    import numpy as np

    return np.arange(lo, hi, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


@dataclass(frozen=True)
class _Fold:
    """Case-insensitivity data: which characters re treats as equal under IGNORECASE."""

    members: list[int]  # sorted code points whose case class has more than one member
    classes: dict[int, tuple[int, ...]]
    cased: tuple[list[int], Ranges]  # re's "iscased" code points (starts, ranges)
    lowered: tuple[tuple[int, int], ...]  # (c, lower(c)) wherever they differ


_FOLDS: dict[bool, _Fold] = {}


def _fold_data(unicode: bool) -> _Fold:
    fold = _FOLDS.get(unicode)
    if fold is None:
        fold = _FOLDS[unicode] = _unicode_fold() if unicode else _ascii_fold()
    return fold


def _ascii_fold() -> _Fold:
    classes: dict[int, tuple[int, ...]] = {m: (c, c + 32) for c in range(65, 91)
                                           for m in (c, c + 32)}
    cased = ((65, 90), (97, 122))
    return _Fold(sorted(classes), classes, ([65, 97], cased),
                 tuple((c, c + 32) for c in range(65, 91)))


def _unicode_fold() -> _Fold:
    import _sre

    try:
        from re._casefix import _EXTRA_CASES as fixes  # Python >= 3.11
    except ImportError:  # pragma: no cover - Python 3.10
        from sre_compile import _ignorecase_fixes as fixes  # type: ignore[attr-defined]
    # Cased characters all lie in planes 0-1; the check keeps that exact if Unicode changes.
    upper_planes = _code_points(0x20000, MAX_CODE_POINT + 1)
    uncased_above = upper_planes.lower() == upper_planes == upper_planes.upper()
    every = range(0x20000 if uncased_above else MAX_CODE_POINT + 1)
    lowered = tuple((c, lo) for c, lo in zip(every, map(_sre.unicode_tolower, every)) if c != lo)

    def key(lower: int) -> int:
        return int(min((lower, *fixes.get(lower, ()))))

    groups: dict[int, set[int]] = {}
    for c, lo in lowered:
        groups.setdefault(key(lo), set()).update((c, lo))
    for lo, others in fixes.items():
        groups.setdefault(key(lo), set()).update((lo, *others))
    classes = {m: tuple(sorted(g)) for g in groups.values() if len(g) > 1 for m in g}
    cased_points = [c for c, yes in zip(every, map(_sre.unicode_iscased, every)) if yes]
    cased = normalize_ranges((c, c) for c in cased_points)
    return _Fold(sorted(classes), classes, ([r[0] for r in cased], cased), lowered)


def _contains(table: tuple[list[int], Ranges], cp: int) -> bool:
    k = bisect_right(table[0], cp) - 1
    return k >= 0 and table[1][k][1] >= cp


def _intersects(ranges: Ranges, table: tuple[list[int], Ranges]) -> bool:
    for lo, hi in ranges:
        k = bisect_right(table[0], hi) - 1
        if k >= 0 and table[1][k][1] >= lo:
            return True
    return False


def _closure(ranges: Ranges, fold: _Fold) -> Ranges:
    """``ranges`` plus every character case-equal to one of them."""
    out = list(ranges)
    for lo, hi in ranges:
        for m in fold.members[bisect_left(fold.members, lo) : bisect_right(fold.members, hi)]:
            out.extend((x, x) for x in fold.classes[m])
    return normalize_ranges(out)


def _lower_preimage(ranges: Ranges, fold: _Fold) -> Ranges:
    """Characters whose lowercase is in ``ranges`` (how re tests categories under (?i))."""
    table = ([r[0] for r in ranges], ranges)
    add, drop = [], set()
    for c, lo in fold.lowered:
        inside, lower_inside = _contains(table, c), _contains(table, lo)
        if lower_inside and not inside:
            add.append((c, c))
        elif inside and not lower_inside:
            drop.add(c)
    out: list[tuple[int, int]] = []
    for lo, hi in normalize_ranges([*ranges, *add]):
        for c in sorted(x for x in drop if lo <= x <= hi):
            if c > lo:
                out.append((lo, c - 1))
            lo = c + 1
        if lo <= hi:
            out.append((lo, hi))
    return tuple(out)


def casefold_literal(cp: int, unicode: bool) -> Ranges:
    """The characters ``re`` matches for the literal ``cp`` under IGNORECASE.

    >>> casefold_literal(ord("a"), unicode=False)
    ((65, 65), (97, 97))
    >>> casefold_literal(ord("é"), unicode=False)  # ASCII mode folds only A-Z
    ((233, 233),)
    """
    fold = _fold_data(unicode)
    if _contains(fold.cased, cp):
        return _closure(((cp, cp),), fold)
    return ((cp, cp),)


def casefold_class(literals: Ranges, categories: Ranges, unicode: bool) -> Ranges:
    """The characters a (non-negated) class matches under IGNORECASE, as ``re`` does it.

    ``literals`` are the class's characters and ranges, ``categories`` the union of its
    ``\\d``-style members. ``re`` folds a class only when a literal is cased, and then tests
    the *lowercased* input character against the categories too.

    >>> casefold_class(((97, 98),), (), unicode=False)
    ((65, 66), (97, 98))
    """
    fold = _fold_data(unicode)
    if _intersects(literals, fold.cased):
        literals = _closure(literals, fold)
        categories = _lower_preimage(categories, fold) if categories else ()
    return normalize_ranges(literals + categories)
