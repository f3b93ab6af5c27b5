"""Languages of decimal digit strings: value ranges and residues, built as small IR.

The building blocks of :mod:`constrain.json_numbers`:

- :func:`uint_range`: canonical spellings (no leading zeros) of the integers in ``[lo, hi]``,
  by the classic digit-range decomposition: O(digits) nodes, however large the bounds.
- :func:`fraction_range`: digit strings ``F`` whose value ``0.F`` lies in a range.
- :func:`multiple_language`: digit strings whose value is a multiple of ``k``, exact for any
  length: the factor ``2**a * 5**b`` of ``k`` only looks at the last ``max(a, b)`` digits (a
  layered automaton), the factor coprime to 10 is a cyclic automaton turned into a regular
  expression by state elimination (shared sub-expressions keep that cubic, not exponential).

Nested ranges recurse once per significant digit; callers keep bounds to a few hundred
significant digits (the automaton converts expressions recursively).

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar
>>> a = Automaton(Grammar.single(uint_range(17, 3050)))
>>> [a.matches(s) for s in (b"16", b"17", b"999", b"3050", b"3051", b"0017")]
[False, True, True, True, False, False]
"""

from __future__ import annotations

import os
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache, partial

from .grammar import (
    EMPTY,
    NOTHING,
    Expr,
    Lazy,
    alt,
    char_range,
    chars,
    intersect,
    literal,
    optional,
    repeat,
    seq,
    star,
)

__all__ = [
    "DIGIT",
    "MAX_MODULUS_STATES",
    "NONZERO",
    "decimal_digits",
    "digit_class",
    "digit_string",
    "fraction_range",
    "int_str",
    "multiple_language",
    "uint_range",
]

DIGIT = char_range("0", "9")
NONZERO = char_range("1", "9")
_ZERO = literal("0")
_DOT = literal(".")

SHARED_PIECES = 4096
"""How many results each pure builder of digit and number languages keeps. Expressions
are immutable, so equal arguments share one result, within a language and across
constraints: the two signs of a bounded number read the same limits, and bounds met
before share their pieces (a new ``minimum``/``maximum`` pair's language took ~0.8 ms
to build; ~0.1 ms when its pieces recur)."""

MAX_MODULUS_STATES = 5_000
"""Budget for :func:`multiple_language`: layered states of the ``2**a 5**b`` part plus the
cube of the part coprime to 10 (state elimination). Beyond it the caller gets ``None``."""


def int_str(n: int) -> str:
    """``str(n)``, also past Python's 4300-digit conversion limit.

    >>> len(int_str(10**5000))
    5001
    """
    return str(n) if n < _STR_LIMIT else format(Decimal(n), "f")


_STR_LIMIT = 10**4000  # a constant: computing the power on every call cost ~50 µs each


def digit_class(lo: int, hi: int) -> Expr:
    """One digit in ``lo..hi`` (the empty language when ``lo > hi``).

    >>> digit_class(3, 5).ranges
    ((51, 53),)
    """
    if lo > hi:
        return NOTHING
    return chars([(48 + lo, 48 + hi)])


@lru_cache(maxsize=SHARED_PIECES)
def digit_string(text: str) -> Expr:
    """The literal ``text``, runs of one character written as counted repeats (a long
    literal would otherwise be a long sequence).

    >>> digit_string("1000000")
    Seq(items=(Chars(ranges=((49, 49),)), Repeat(item=Chars(ranges=((48, 48),)), min=6, max=6)))
    """
    parts: list[Expr] = []
    i = 0
    while i < len(text):
        j = i
        while j < len(text) and text[j] == text[i]:
            j += 1
        parts.append(repeat(literal(text[i]), j - i, j - i) if j - i > 2 else literal(text[i:j]))
        i = j
    return seq(*parts)


def _any_digits(n: int) -> Expr:
    return repeat(DIGIT, n, n)


@lru_cache(maxsize=SHARED_PIECES)
def _fixed(lo: str | None, hi: str | None, n: int, first_min: int = 0) -> Expr:
    """Strings of exactly ``n`` digits between ``lo`` and ``hi`` (digit strings of length
    ``n``; ``None``: unconstrained), whose first digit is at least ``first_min``."""
    if lo is not None and (lo.count("0") == n or int(lo[0]) < first_min):
        lo = None  # no constraint, or the first digit alone already exceeds lo
    if hi is not None and hi.count("9") == n:
        hi = None
    if n == 0:
        return EMPTY
    if lo is None and hi is None:
        return seq(digit_class(first_min, 9), _any_digits(n - 1))
    if lo is not None and hi is None and first_min == 0 and lo[0] == "0":
        # A run of zeros: any non-zero digit in it already exceeds lo (keeps nesting flat).
        z = len(lo) - len(lo.lstrip("0"))
        return alt(
            *(seq(repeat(_ZERO, i, i), NONZERO, _any_digits(n - i - 1)) for i in range(z)),
            seq(repeat(_ZERO, z, z), _fixed(lo[z:], None, n - z)),
        )
    if hi is not None and lo is None and first_min == 0 and hi[0] == "9":
        z = len(hi) - len(hi.lstrip("9"))
        nines = chars([(57, 57)])
        return alt(
            *(seq(repeat(nines, i, i), digit_class(0, 8), _any_digits(n - i - 1)) for i in range(z)),
            seq(repeat(nines, z, z), _fixed(None, hi[z:], n - z)),
        )
    if lo is not None and hi is not None and lo[0] == hi[0] and int(lo[0]) >= first_min:
        # A common prefix is one literal (runs counted, so long bounds stay shallow).
        p = len(os.path.commonprefix([lo, hi]))
        return seq(digit_string(lo[:p]), _fixed(lo[p:], hi[p:], n - p))
    if lo is not None and hi is None and lo[0] == "9":
        z = len(lo) - len(lo.lstrip("9"))
        return seq(digit_string(lo[:z]), _fixed(lo[z:], None, n - z))
    if hi is not None and lo is None and hi[0] == "0" and first_min == 0:
        z = len(hi) - len(hi.lstrip("0"))
        return seq(digit_string(hi[:z]), _fixed(None, hi[z:], n - z))
    l0 = int(lo[0]) if lo is not None else first_min
    h0 = int(hi[0]) if hi is not None else 9
    if l0 > h0:
        return NOTHING
    lo_tail = lo[1:] if lo is not None else None
    hi_tail = hi[1:] if hi is not None else None
    if l0 == h0:
        return seq(digit_class(l0, l0), _fixed(lo_tail, hi_tail, n - 1))
    parts: list[Expr] = []
    if lo is not None:
        parts.append(seq(digit_class(l0, l0), _fixed(lo_tail, None, n - 1)))
        middle_lo = l0 + 1
    else:
        middle_lo = l0
    middle_hi = h0 - 1 if hi is not None else h0
    if middle_lo <= middle_hi:
        parts.append(seq(digit_class(middle_lo, middle_hi), _any_digits(n - 1)))
    if hi is not None:
        parts.append(seq(digit_class(h0, h0), _fixed(None, hi_tail, n - 1)))
    return alt(*parts)


@lru_cache(maxsize=SHARED_PIECES)
def uint_range(lo: int, hi: int | None) -> Expr:
    """Canonical decimal spellings of the integers in ``[lo, hi]`` (``hi=None``: no limit).

    >>> from constrain.automaton import Automaton
    >>> from constrain.grammar import Grammar
    >>> a = Automaton(Grammar.single(uint_range(0, None)))
    >>> a.matches(b"0"), a.matches(b"10"), a.matches(b"01")
    (True, True, False)
    """
    if lo < 0:
        raise ValueError("uint_range needs lo >= 0")
    if hi is not None and hi < lo:
        return NOTHING
    parts: list[Expr] = []
    if lo == 0:
        parts.append(_ZERO)
        if hi == 0:
            return _ZERO
        lo = 1
    low = int_str(lo)
    n = len(low)
    if hi is None:
        parts.append(_fixed(low, None, n, 1))
        parts.append(seq(NONZERO, repeat(DIGIT, n, None)))
        return alt(*parts)
    high = int_str(hi)
    m = len(high)
    if n == m:
        parts.append(_fixed(low, high, n, 1))
    else:
        parts.append(_fixed(low, None, n, 1))
        if m - n >= 2:
            parts.append(seq(NONZERO, repeat(DIGIT, n, m - 2)))
        parts.append(_fixed(None, high, m, 1))
    return alt(*parts)


def decimal_digits(value: Fraction) -> tuple[int, str]:
    """``(integer part, fraction digits)`` of a non-negative finite decimal, trailing zeros
    of the fraction removed.

    >>> decimal_digits(Fraction(1234, 100))
    (12, '34')
    """
    if value < 0:
        raise ValueError("decimal_digits needs a non-negative value")
    whole = value.numerator // value.denominator
    rest = value - whole
    digits = []
    while rest:
        rest *= 10
        d = rest.numerator // rest.denominator
        digits.append(str(d))
        rest -= d
        if len(digits) > 5000:
            raise ValueError(f"{value} is not a finite decimal")
    return whole, "".join(digits)


@lru_cache(maxsize=SHARED_PIECES)
def fraction_range(
    lo: str | None, lo_strict: bool, hi: str | None, hi_strict: bool, nonempty: bool = True
) -> Expr:
    """Digit strings ``F`` with ``0.lo <= 0.F <= 0.hi`` (``<`` where strict).

    ``lo=None`` means no lower limit (0 inclusive), ``hi=None`` no upper limit (below 1).

    >>> from constrain.automaton import Automaton
    >>> from constrain.grammar import Grammar
    >>> a = Automaton(Grammar.single(fraction_range("25", False, "5", True)))
    >>> [a.matches(s) for s in (b"2", b"25", b"250", b"4999", b"5", b"50")]
    [False, True, True, True, False, False]
    """
    if lo is not None:
        lo = lo.rstrip("0")
        if not lo and not lo_strict:
            lo = None
    if hi is not None:
        hi = hi.rstrip("0")
        if not hi:
            if hi_strict or lo is not None:
                return NOTHING
            return repeat(_ZERO, 1 if nonempty else 0, None)
    if lo is None and hi is None:
        return repeat(DIGIT, 1 if nonempty else 0, None)
    if lo == "":  # strictly above zero: some digit is not 0
        if hi is None:
            return seq(star(_ZERO), NONZERO, star(DIGIT))
        h0 = int(hi[0])
        if h0 == 0:  # F must follow hi's run of zeros
            z = len(hi) - len(hi.lstrip("0"))
            return seq(repeat(_ZERO, z, z), fraction_range("", True, hi[z:], hi_strict, False))
        return alt(
            seq(_ZERO, fraction_range("", True, None, False, False)),
            seq(digit_class(1, h0 - 1), star(DIGIT)),
            seq(digit_class(h0, h0), fraction_range(None, False, hi[1:], hi_strict, False)),
        )
    if lo is None:
        assert hi is not None
        h0 = int(hi[0])
        if h0 == 0:  # a run of zeros that F must follow as far as it goes
            z = len(hi) - len(hi.lstrip("0"))
            return alt(
                repeat(_ZERO, 1 if nonempty else 0, z - 1) if nonempty < z else NOTHING,
                seq(repeat(_ZERO, z, z), fraction_range(None, False, hi[z:], hi_strict, False)),
            )
        return alt(
            *([] if nonempty else [EMPTY]),  # nothing more: the value so far is below hi
            seq(digit_class(0, h0 - 1), star(DIGIT)),
            seq(digit_class(h0, h0), fraction_range(None, False, hi[1:], hi_strict, False)),
        )
    l0 = int(lo[0])
    if hi is None and l0 == 0:
        # A run of zeros: any non-zero digit in it already exceeds lo (keeps nesting flat).
        z = len(lo) - len(lo.lstrip("0"))
        return alt(
            seq(repeat(_ZERO, 0, z - 1), NONZERO, star(DIGIT)),
            seq(repeat(_ZERO, z, z), fraction_range(lo[z:], lo_strict, None, False, False)),
        )
    if hi is None:
        return alt(
            seq(digit_class(l0 + 1, 9), star(DIGIT)),
            seq(digit_class(l0, l0), fraction_range(lo[1:], lo_strict, None, False, False)),
        )
    h0 = int(hi[0])
    if l0 > h0:
        return NOTHING
    if l0 == h0:
        p = len(os.path.commonprefix([lo, hi]))
        return seq(
            digit_string(lo[:p]), fraction_range(lo[p:], lo_strict, hi[p:], hi_strict, False)
        )
    return alt(
        seq(digit_class(l0, l0), fraction_range(lo[1:], lo_strict, None, False, False)),
        seq(digit_class(l0 + 1, h0 - 1), star(DIGIT)),
        seq(digit_class(h0, h0), fraction_range(None, False, hi[1:], hi_strict, False)),
    )


# ---------------------------------------------------------------------------------------
# Multiples of k.


def _split_2_5(k: int) -> tuple[int, int, int]:
    """``k = 2**a * 5**b * m`` with ``m`` coprime to 10: returns ``(a, b, m)``."""
    a = b = 0
    while k % 2 == 0:
        k //= 2
        a += 1
    while k % 5 == 0:
        k //= 5
        b += 1
    return a, b, k


def _digit_token(cls: Expr, dotted: bool) -> Expr:
    # A dot may sit before any digit: the caller intersects with the real literal shape.
    return seq(optional(_DOT), cls) if dotted else cls


def _classes_by_target(step: dict[int, list[int]]) -> list[tuple[Expr, int]]:
    return [(chars([(48 + d, 48 + d) for d in ds]), target) for target, ds in step.items()]


def _suffix_multiples(a: int, b: int, dotted: bool) -> Expr:
    """Digit strings whose value is a multiple of ``2**a * 5**b``.

    Such a multiple ends in ``g = min(a, b)`` zeros, and the digits before them are a
    multiple of the prime power ``p**e`` left over, which only its last ``e`` digits decide.
    """
    g = min(a, b)
    p, e = (2, a - g) if a > b else (5, b - g)
    zero = _digit_token(_ZERO, dotted)
    # After i of the last e digits with value v, only v mod p**i matters.
    layers: list[dict[int, Expr]] = [{} for _ in range(e + 1)]
    layers[e] = {0: EMPTY}
    for i in range(e - 1, -1, -1):
        modulus = p ** (i + 1)
        for r in range(p**i):
            step: dict[int, list[int]] = {}
            for d in range(10):
                target = (10 * r + d) % modulus
                if target in layers[i + 1]:
                    step.setdefault(target, []).append(d)
            layers[i][r] = alt(
                *(seq(_digit_token(c, dotted), layers[i + 1][t]) for c, t in _classes_by_target(step))
            )
    free = star(_digit_token(DIGIT, dotted))
    # Strings shorter than e digits count as padded with zeros on the left.
    head = alt(seq(free, layers[0][0]), *(layers[i][0] for i in range(1, e + 1)))
    if g == 0:
        return head
    return alt(seq(head, repeat(zero, g, g)), repeat(zero, 1, g))


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _cyclic_multiples(m: int, dotted: bool) -> Expr:
    """Digit strings whose value is a multiple of ``m`` (coprime to 10), by eliminating the
    states of the residue automaton; ``(a|b)`` sub-expressions are shared, not copied."""
    if m == 1:
        return star(_digit_token(DIGIT, dotted))
    edges: dict[tuple[int, int], Expr] = {}
    for r in range(m):
        step: dict[int, list[int]] = {}
        for d in range(10):
            step.setdefault((10 * r + d) % m, []).append(d)
        for cls, target in _classes_by_target(step):
            edges[(r, target)] = cls
    if dotted:
        for r in range(m):
            edges[(r, r)] = alt(edges[(r, r)], _DOT) if (r, r) in edges else _DOT
    alive = list(range(m))
    for s in range(m - 1, 0, -1):
        alive.remove(s)
        loop = star(edges[(s, s)]) if (s, s) in edges else EMPTY
        ins = [(i, edges[(i, s)]) for i in alive if (i, s) in edges]
        outs = [(j, edges[(s, j)]) for j in alive if (s, j) in edges]
        for i, into in ins:
            for j, out in outs:
                path = seq(into, loop, out)
                edges[(i, j)] = alt(edges[(i, j)], path) if (i, j) in edges else path
    return star(edges[(0, 0)]) if (0, 0) in edges else EMPTY


def _residue_steps(m: int) -> list[list[tuple[Expr, int]]]:
    """Per residue modulo ``m``: the digit classes that lead to each next residue."""
    steps = []
    for r in range(m):
        step: dict[int, list[int]] = {}
        for digit in range(10):
            step.setdefault((10 * r + digit) % m, []).append(digit)
        steps.append(_classes_by_target(step))
    return steps


def _residue_multiples(m: int, dotted: bool) -> Expr:
    """Digit strings whose value is a multiple of ``m``, as the residue automaton itself:
    one :class:`~constrain.grammar.Lazy` node per residue, built when matching first
    reaches it (``m`` nodes, where eliminating its states grows too fast past 9)."""
    steps = _residue_steps(m)
    nodes: dict[int, Lazy] = {}

    def node(r: int) -> Lazy:
        found = nodes.get(r)
        if found is None:
            found = nodes[r] = Lazy(("residues", m, dotted, r), partial(build, r),
                                    nullable=r == 0, parts=(DIGIT, _DOT))
        return found

    def build(r: int) -> Expr:
        options = [seq(cls, node(t)) for cls, t in steps[r]]
        if dotted:
            options.append(seq(_DOT, node(r)))
        if r == 0:
            options.append(EMPTY)
        return alt(*options)

    return node(0)


def _bounded_multiples(m: int, max_digits: int, dotted: bool) -> Expr:
    """Digit strings of at most ``max_digits`` digits whose value is a multiple of ``m``:
    one node per (digits left, residue), so each derivative is the next node."""
    steps = _residue_steps(m)
    layer: dict[int, Expr] = {0: EMPTY}  # j = 0 digits left
    for _ in range(max_digits):
        nxt: dict[int, Expr] = {}
        for r in range(m):
            options = [seq(_digit_token(c, dotted), layer[t]) for c, t in steps[r] if t in layer]
            if r == 0:
                options.append(EMPTY)
            if options:
                nxt[r] = alt(*options)
        layer = nxt
    return layer.get(0, NOTHING)


_CYCLIC_ELIMINATION_MAX = 9
"""State elimination is used for the coprime part up to this modulus (3, 7, 9): beyond it
the derivative automaton of the eliminated expression grows too fast (11: 700 states)."""


def multiple_language(k: int, dotted: bool = False, max_digits: int | None = None) -> Expr | None:
    """Non-empty digit strings (leading zeros allowed) whose value is a multiple of ``k``, or
    ``None`` when that is beyond :data:`MAX_MODULUS_STATES`.

    ``max_digits``, when given, promises that the caller only wants strings of at most that
    many digits (it intersects with a bounded range anyway), which makes any ``k`` cheap
    enough. With ``dotted``, a ``.`` may appear before any digit and is ignored: intersect
    with the literal shape you need.

    >>> from constrain.automaton import Automaton
    >>> from constrain.grammar import Grammar
    >>> a = Automaton(Grammar.single(multiple_language(12)))
    >>> [n for n in range(60) if a.matches(str(n).encode())]
    [0, 12, 24, 36, 48]
    """
    if k < 1:
        raise ValueError("multiple_language needs k >= 1")
    a, b, m = _split_2_5(k)
    if 2 * max(2 ** (a - min(a, b)), 5 ** (b - min(a, b))) > MAX_MODULUS_STATES:
        return None
    parts = [repeat(_digit_token(DIGIT, dotted), 1, None)]
    if a or b:
        parts.append(_suffix_multiples(a, b, dotted))
    if m > 1:
        if m <= _CYCLIC_ELIMINATION_MAX:
            parts.append(_cyclic_multiples(m, dotted))
        elif max_digits is not None and max_digits * m <= MAX_MODULUS_STATES // 4:
            parts.append(_bounded_multiples(m, max_digits, dotted))
        elif m <= MAX_MODULUS_STATES:
            parts.append(_residue_multiples(m, dotted))
        else:
            return None
    return intersect(*parts) if len(parts) > 1 else parts[0]
