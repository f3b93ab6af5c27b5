"""Exact languages of JSON number literals with bounds and ``multipleOf``.

A JSON number is ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?``. :func:`integer_expr`
and :func:`number_expr` return the literals whose value satisfies JSON Schema's
``minimum``/``maximum``/``exclusive*``/``multipleOf``, as grammar IR of size O(digits of
the bounds), built in milliseconds even for bounds like ``1e308`` or ``1e-300``.

**Two meanings of "value", both respected (soundness).** A bound given as a Python ``float``
means the decimal it was written as (``Decimal(repr(x))``); ``int``, ``Decimal`` and
``Fraction`` bounds are exact. A literal is accepted only if its exact decimal value
satisfies the bounds *and*, for ``int``/``float`` bounds (a schema read by ``json.loads``),
it also passes ``jsonschema`` on the instance ``json.loads`` makes: an integer-spelled
literal becomes an ``int`` (exact) but one with a fraction or an exponent becomes a
rounded ``float``, so ``0.99999999999999999`` is ``1.0`` and fails ``exclusiveMaximum: 1``:
such literals are rejected too. ``Decimal``/``Fraction`` bounds mean the instance is
parsed exactly as well (``parse_float=Decimal``), so only the exact value counts.

**Spelling policy.**

- Integer spellings (``-?(0|[1-9][0-9]*)``): exact for every length, ``-0`` included
  (it is 0, which ``jsonschema`` accepts as an integer). Known gap: past 4300 digits
  Python's ``json.loads`` refuses integers unless ``sys.set_int_max_str_digits`` is raised
  (a counted limit would make every digit a new automaton state).
- No bounds and no ``multipleOf``: every JSON number spelling.
- Otherwise plain decimals (``12.50``) of any length, and exponent forms whose mantissa has
  1 to 3 integer digits (``1e-05``, ``1.5e+20``, ``12.5E3``, ``250e-2``) or is ``0.``
  followed by at most two zeros and a non-zero digit (``0.5e3``, ``0.001e9``); any exponent
  spelling (``e5``, ``E+05``, ``e-0005``). A zero mantissa (``0e7``, ``-0.0E1``) is 0.
  This covers every ``json.dumps`` of a float. A range that is the whole positive (or
  negative) half line accepts every spelling there.
- A language to be complemented (``not``, a ``oneOf``'s other branches, an ``if``) first
  takes in :func:`unexact_spellings`, so that its complement keeps only spellings judged
  exactly (integers and plain decimals of at most 15 digits): sound, at the cost of
  exponent forms and longer numbers there.
- Literals with a fraction or exponent are exact up to 17 significant digits (what
  ``repr`` of a float writes); longer ones are accepted only when they also lie within the
  bounds rounded inwards to 17 significant digits (sound, slightly incomplete within one
  float ulp of a bound).
- With ``multipleOf``: integer spellings and plain decimals only, no exponent forms;
  non-integer spellings are limited to magnitude ``2**53`` (where floats are exact). The
  semantics is exact decimal: ``0.07`` is a multiple of ``0.01``. Known gap:
  ``jsonschema`` divides floats (``0.07 / 0.01 == 7.000000000000001``) and rejects
  some exact multiples when the schema's ``multipleOf`` is a non-dyadic float (``0.1``,
  ``0.01``...); validating with ``json.loads(..., parse_float=Decimal)`` for both schema and
  instance gives the exact semantics.
- :func:`integer_expr` accepts integer spellings only by default (``json.dumps`` never
  writes an ``int`` otherwise); ``float_spellings=True`` adds integral values spelled
  ``3.0``/``-3.00``, ``7e2``/``4E+05`` (one-digit mantissa) and ``0e5``, which
  ``jsonschema`` also counts as integers (up to the largest float: ``2e308`` is inf).

``multipleOf`` is exact through modular automata (a factor coprime to 10 above 9 with no
maximum digit count is the residue automaton itself, built lazily); :class:`NotExpressible`
is raised when a modulus is beyond :data:`~constrain.digit_ranges.MAX_MODULUS_STATES`
(``10007``, ``5**7``). Boolean combinations of several large moduli (``not``/``anyOf`` of
``multipleOf`` 11, 13, 33, 77...) are exact too, but their products can spend the term or
liveness budget (a ResourceLimitError after up to a minute) where they used to be refused.

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar
>>> a = Automaton(Grammar.single(number_expr(0, 1.5, exclusive_maximum=True)))
>>> [a.matches(s) for s in (b"0", b"1.4999", b"1.5", b"-0.0", b"1.2e-3", b"15e-1")]
[True, True, False, True, True, False]
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Union

from .digit_ranges import (
    DIGIT,
    NONZERO,
    SHARED_PIECES,
    decimal_digits,
    digit_string,
    fraction_range,
    int_str,
    multiple_language,
    uint_range,
)
from .grammar import (
    NOTHING,
    Expr,
    alt,
    chars,
    intersect,
    literal,
    optional,
    plus,
    repeat,
    seq,
    star,
)

__all__ = ["JSON_NUMBER", "Bound", "NotExpressible", "integer_expr", "number_expr",
           "unexact_spellings"]

Bound = Union[int, float, Decimal, Fraction]  # noqa: UP007 (a runtime alias on 3.10)

SIGNIFICANT_DIGITS = 17
"""Non-integer spellings are exact up to this many significant digits (see module doc)."""

_MAX_BOUND_DIGITS = 40  # integer bounds are rounded inwards beyond this (nesting depth)
_FLOAT_EXACT = Fraction(2**53)
_OVERFLOW = Fraction(2**1024 - 2**970)  # at or above this a literal parses as inf
_MANTISSA_CLASSES = range(-3, 3)  # mantissa in [10**j, 10**(j+1)): 0.00d... up to ddd.

_MINUS = literal("-")
_ZERO = literal("0")
_DOT = literal(".")
_E = chars([(ord("e"), ord("e")), (ord("E"), ord("E"))])
_SIGN = chars([(ord("+"), ord("+")), (ord("-"), ord("-"))])
_EXPONENT = seq(_E, optional(_SIGN), plus(DIGIT))
_FRACTION = seq(_DOT, plus(DIGIT))
_INT_PART = alt(_ZERO, seq(NONZERO, star(DIGIT)))

JSON_NUMBER: Expr = seq(optional(_MINUS), _INT_PART, optional(_FRACTION), optional(_EXPONENT))
"""Every JSON number literal."""


def unexact_spellings() -> Expr:
    """Spellings whose value the languages here may judge short of exactly (see the
    spelling policy): every one with an exponent, and every integer or decimal with 16
    digits or more (a float ``multipleOf`` keeps integers to ``2**53``). A language to be complemented (``not``, the other branches of a ``oneOf``, an
    ``if``) takes them in, so that its complement holds no spelling of a value it left
    out: ``{"not": {"multipleOf": 3}}`` accepted ``3e0``, and ``{"not": {"minimum":
    10}}`` ``1000e10``. The complement keeps integer spellings and short plain
    decimals, which are exact (``json.dumps`` writes a float with an exponent below
    ``1e-4`` and from ``1e16`` on: those are left out there).

    >>> from constrain.automaton import Automaton
    >>> from constrain.grammar import Grammar
    >>> a = Automaton(Grammar.single(unexact_spellings()))
    >>> [a.matches(s) for s in (b"3e0", b"-1.5E+3", b"0.1234567890123456", b"0.5", b"12",
    ...                         b"1234567890123456")]
    [True, True, True, False, False, True]
    """
    if not _UNEXACT:
        digits = 16
        # A decimal point after k digits (one digit may be 0, more start with 1-9).
        parts = [seq(_INT_PART, optional(_FRACTION), _EXPONENT),
                 seq(NONZERO, repeat(DIGIT, digits - 1, None)),
                 seq(NONZERO, repeat(DIGIT, digits - 2, None), _FRACTION)]
        for k in range(1, digits - 1):
            head = DIGIT if k == 1 else seq(NONZERO, repeat(DIGIT, k - 1, k - 1))
            parts.append(seq(head, _DOT, repeat(DIGIT, digits - k, None)))
        _UNEXACT.append(seq(optional(_MINUS), alt(*parts)))
    return _UNEXACT[0]


_UNEXACT: list[Expr] = []


class NotExpressible(ValueError):
    """A numeric constraint whose exact language is beyond our budgets (the JSON Schema
    compiler turns it into :class:`~constrain.errors.UnsupportedSchemaError`)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


# A limit on values: (value, strict) meaning x <= value (or <) for an upper limit.
Limit = tuple[Fraction, bool]
# A bound: (decimal value, json.loads value or None, exclusive).
_Bound = tuple[Fraction, Fraction | None, bool]


def _exact(value: Bound, what: str) -> tuple[Fraction, Fraction | None]:
    """(decimal value, value as json.loads would give it, or None for Decimal/Fraction
    bounds, which mean exact decimal parsing of instances too)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal, Fraction)):
        raise ValueError(f"{what} must be a number, not {value!r}")  # noqa: TRY004
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{what} must be finite, not {value!r}")
        return Fraction(Decimal(repr(value))), Fraction(value)
    if isinstance(value, Decimal) and not value.is_finite():
        raise ValueError(f"{what} must be finite, not {value!r}")
    exact = Fraction(value)
    return exact, (exact if isinstance(value, int) else None)


def _tighter_upper(a: Limit | None, b: Limit | None) -> Limit | None:
    if a is None or b is None:
        return a if b is None else b
    if a[0] != b[0]:
        return a if a[0] < b[0] else b
    return (a[0], a[1] or b[1])


def _neg(limit: Limit | None) -> Limit | None:
    return None if limit is None else (-limit[0], limit[1])


def _float_upper(bound: Fraction, strict: bool) -> Limit | None:
    """The reals x with ``float(x) <= bound`` (``<`` when strict), as an upper limit."""
    def ok(f: float) -> bool:
        return f < bound if strict else f <= bound

    try:
        f = float(bound)
    except OverflowError:
        f = math.inf if bound > 0 else -math.inf
    while not ok(f):
        f = math.nextafter(f, -math.inf)
    while f != math.inf and ok(math.nextafter(f, math.inf)):
        f = math.nextafter(f, math.inf)
    if f == math.inf:
        return None
    if f == -math.inf:  # only literals that overflow to -inf
        return (-_OVERFLOW, False)
    if f == _MAX_DOUBLE:
        return (_OVERFLOW, True)
    g = math.nextafter(f, math.inf)
    # Halfway rounds to the even significand: to f (still accepted) when f's is even.
    even = struct.unpack("<Q", struct.pack("<d", abs(f)))[0] % 2 == 0
    return ((Fraction(f) + Fraction(g)) / 2, not even)


_MAX_DOUBLE = 1.7976931348623157e308


def _decade(v: Fraction) -> int:
    """e with 10**e <= v < 10**(e+1), for v > 0."""
    e = len(int_str(v.numerator)) - len(int_str(v.denominator))
    while Fraction(10) ** e > v:
        e -= 1
    while Fraction(10) ** (e + 1) <= v:
        e += 1
    return e


def _significant_digits(v: Fraction) -> int | None:
    """Significant digits of a finite decimal, None if v is not one."""
    if v == 0:
        return 0
    d = v.denominator
    s = 0
    while d % 10 == 0:
        d //= 10
        s += 1
    while d % 2 == 0:
        d //= 2
        s += 1
    while d % 5 == 0:
        d //= 5
        s += 1
    if d != 1:
        return None
    n = int_str(abs(v.numerator * 10**s // v.denominator)).rstrip("0")
    return len(n)


def _round_upper(limit: Limit | None, digits: int) -> Limit | None:
    """Round an upper limit down to ``digits`` significant digits (sound: never above)."""
    if limit is None:
        return None
    v = limit[0]
    n = _significant_digits(v)
    if n is not None and n <= digits:
        return limit
    unit = Fraction(10) ** (_decade(abs(v)) - digits + 1)
    return (math.floor(v / unit) * unit, False)


def _real_limits(
    lo: _Bound | None,
    hi: _Bound | None,
    clamp: Fraction | None,
) -> tuple[Limit | None, Limit | None]:
    """Limits for literals with a fraction or exponent (parsed as floats by json)."""
    upper: Limit | None = None
    lower: Limit | None = None  # stored negated: -x <= value
    if hi is not None:
        decimal, python, strict = hi
        upper = (decimal, strict)
        if python is not None:
            upper = _tighter_upper(upper, _float_upper(python, strict))
    if lo is not None:
        decimal, python, strict = lo
        lower = (-decimal, strict)
        if python is not None:
            lower = _tighter_upper(lower, _float_upper(-python, strict))
    if clamp is not None:
        upper = _tighter_upper(upper, (clamp, False))
        lower = _tighter_upper(lower, (clamp, False))
    return _neg(_round_upper(lower, SIGNIFICANT_DIGITS)), _round_upper(upper, SIGNIFICANT_DIGITS)


def _int_limits(
    lo: _Bound | None,
    hi: _Bound | None,
    clamp: Fraction | None,
) -> tuple[int | None, int | None]:
    """Smallest and largest integer satisfying both meanings of the bounds (None: none)."""
    a: int | None = None if clamp is None else -int(clamp)
    b: int | None = None if clamp is None else int(clamp)
    if hi is not None:
        for value in (v for v in hi[:2] if v is not None):
            n = math.floor(value)
            n = n - 1 if hi[2] and n == value else n
            b = n if b is None else min(b, n)
    if lo is not None:
        for value in (v for v in lo[:2] if v is not None):
            n = math.ceil(value)
            n = n + 1 if lo[2] and n == value else n
            a = n if a is None else max(a, n)
    return _round_int_bound(a, up=True), _round_int_bound(b, up=False)


def _round_int_bound(n: int | None, up: bool) -> int | None:
    """Keep at most _MAX_BOUND_DIGITS significant digits, rounding towards the inside."""
    if n is None or n == 0:
        return n
    text = int_str(abs(n))
    if len(text.rstrip("0")) <= _MAX_BOUND_DIGITS:
        return n
    unit: int = 10 ** (len(text) - _MAX_BOUND_DIGITS)
    return -((-n) // unit) * unit if up else (n // unit) * unit


# ---------------------------------------------------------------------------------------
# Spellings of positive values.


@lru_cache(maxsize=SHARED_PIECES)
def _positive_integers(a: int | None, b: int | None) -> Expr:
    """Spellings of the positive integers within a..b (None: unbounded)."""
    low = 1 if a is None else max(a, 1)
    return NOTHING if b is not None and b < low else uint_range(low, b)


@lru_cache(maxsize=SHARED_PIECES)
def _plain_decimals(lo: Limit, hi: Limit | None) -> Expr:
    """``I.F`` spellings (F non-empty) of values within lo..hi, lo >= 0."""
    i_lo, f_lo = decimal_digits(lo[0])
    if hi is None:
        return alt(
            seq(digit_string(int_str(i_lo)), _DOT, fraction_range(f_lo, lo[1], None, False)),
            seq(uint_range(i_lo + 1, None), _FRACTION),
        )
    i_hi, f_hi = decimal_digits(hi[0])
    if i_lo == i_hi:
        return seq(digit_string(int_str(i_lo)), _DOT, fraction_range(f_lo, lo[1], f_hi, hi[1]))
    parts = [seq(digit_string(int_str(i_lo)), _DOT, fraction_range(f_lo, lo[1], None, False))]
    if i_hi - i_lo >= 2:
        parts.append(seq(uint_range(i_lo + 1, i_hi - 1), _FRACTION))
    parts.append(seq(digit_string(int_str(i_hi)), _DOT, fraction_range(None, False, f_hi, hi[1])))
    return alt(*parts)


@lru_cache(maxsize=SHARED_PIECES)
def _mantissas(lo: Limit, hi: Limit) -> Expr:
    """Integer or plain-decimal spellings of values within lo..hi (0 < lo)."""
    a = math.ceil(lo[0]) + (1 if lo[1] and lo[0] == math.ceil(lo[0]) else 0)
    b = math.floor(hi[0]) - (1 if hi[1] and hi[0] == math.floor(hi[0]) else 0)
    return alt(_positive_integers(a, b), _plain_decimals(lo, hi))


@lru_cache(maxsize=SHARED_PIECES)
def _exponent_value(k: int) -> Expr:
    """Every spelling of the exponent k after e/E: +05, 5, -0003, +0..."""
    if k > 0:
        return seq(optional(literal("+")), star(_ZERO), digit_string(str(k)))
    if k < 0:
        return seq(_MINUS, star(_ZERO), digit_string(str(-k)))
    return seq(optional(_SIGN), plus(_ZERO))


@lru_cache(maxsize=SHARED_PIECES)
def _exponent_range(lo: int | None, hi: int | None) -> Expr:
    """Every spelling of the exponents in lo..hi (None: unbounded)."""
    if lo is not None and hi is not None and lo > hi:
        return NOTHING
    parts: list[Expr] = []
    if hi is None or hi >= 0:
        parts.append(seq(optional(literal("+")), star(_ZERO), uint_range(max(lo or 0, 0), hi)))
    if lo is None or lo < 0:
        a = 1 if hi is None or hi >= 0 else -hi
        parts.append(seq(_MINUS, star(_ZERO), uint_range(a, None if lo is None else -lo)))
        if hi is None or hi >= 0:
            parts.append(seq(_MINUS, plus(_ZERO)))
    return alt(*parts)


@lru_cache(maxsize=SHARED_PIECES)
def _mantissa_shape(j: int) -> Expr:
    if j >= 0:
        return seq(NONZERO, repeat(DIGIT, j, j), optional(_FRACTION))
    return seq(_ZERO, _DOT, repeat(_ZERO, -j - 1, -j - 1), NONZERO, star(DIGIT))


@lru_cache(maxsize=SHARED_PIECES)
def _exponent_forms(lo: Limit, hi: Limit | None) -> Expr:
    """``M e K`` spellings (policy mantissas) of positive values within lo..hi."""
    ten = Fraction(10)
    # Decades [10**e, 10**(e+1)) entirely inside, and the partial ones at each end.
    first_full: int | None = None
    last_full: int | None = None
    ends: set[int] = set()
    if lo[0] != 0:
        e_low = _decade(lo[0])
        starts_inside = ten**e_low > lo[0] or (ten**e_low == lo[0] and not lo[1])
        first_full = e_low if starts_inside else e_low + 1
        ends.add(e_low)
    if hi is not None:
        e_high = _decade(hi[0])
        last_full = e_high - 1
        ends.add(e_high)
    partial = sorted(
        e for e in ends
        if (first_full is not None and e < first_full) or (last_full is not None and e > last_full)
    )
    parts: list[Expr] = []
    for j in _MANTISSA_CLASSES:
        if first_full is None or last_full is None or first_full <= last_full:
            exps = _exponent_range(
                None if first_full is None else first_full - j,
                None if last_full is None else last_full - j,
            )
            parts.append(seq(_mantissa_shape(j), _E, exps))
        for e in partial:
            # The mantissa of class j times 10**(e - j) lands in decade e.
            scale = ten ** (e - j)
            m_lo = _tighter_lower((lo[0] / scale, lo[1]), (ten**j, False))
            m_hi = _tighter_upper((ten ** (j + 1), True), None if hi is None else (
                hi[0] / scale, hi[1]))
            assert m_lo is not None and m_hi is not None
            if m_lo[0] > m_hi[0] or (m_lo[0] == m_hi[0] and (m_lo[1] or m_hi[1])):
                continue
            parts.append(seq(_mantissas(m_lo, m_hi), _E, _exponent_value(e - j)))
    return alt(*parts)


_ANY_POSITIVE = alt(
    seq(NONZERO, star(DIGIT), optional(_FRACTION), optional(_EXPONENT)),
    seq(_ZERO, _DOT, star(_ZERO), NONZERO, star(DIGIT), optional(_EXPONENT)),
)
_ZERO_SPELLINGS = seq(_ZERO, optional(seq(_DOT, plus(_ZERO))), _EXPONENT)
_ZERO_DECIMALS = seq(_ZERO, _DOT, plus(_ZERO))


@lru_cache(maxsize=SHARED_PIECES)
def _positive_reals(lo: Limit, hi: Limit | None, exponents: bool) -> Expr:
    """Non-integer spellings of values within lo..hi, where 0 <= lo (0 itself excluded)."""
    if hi is not None and (hi[0] < lo[0] or (hi[0] == lo[0] and (hi[1] or lo[1]))):
        return NOTHING
    if hi is not None and hi[0] <= 0:
        return NOTHING
    if lo[0] == 0:
        lo = (Fraction(0), True)
        if hi is None and exponents:
            return _ANY_POSITIVE
    parts = [_plain_decimals(lo, hi)]
    if exponents:
        parts.append(_exponent_forms(lo, hi))
    return alt(*parts)


def _tighter_lower(a: Limit | None, b: Limit | None) -> Limit | None:
    return _neg(_tighter_upper(_neg(a), _neg(b)))


def _contains_zero(lo: Limit | None, hi: Limit | None) -> bool:
    return (lo is None or lo[0] < 0 or (lo[0] == 0 and not lo[1])) and (
        hi is None or hi[0] > 0 or (hi[0] == 0 and not hi[1])
    )


_ABOVE_ZERO: Limit = (Fraction(0), True)


def _literals(
    ints: tuple[int | None, int | None] | None,
    reals: tuple[Limit | None, Limit | None] | None,
    exponents: bool,
) -> Expr:
    """Signed literals: integer spellings within ``ints``, the others within ``reals``
    (a lower and an upper limit)."""
    parts: list[Expr] = []
    if ints is not None:
        a, b = ints
        parts.append(_positive_integers(a, b))
        parts.append(seq(_MINUS, _positive_integers(None if b is None else -b, None if a is None else -a)))
        if (a is None or a <= 0) and (b is None or b >= 0):
            parts.append(seq(optional(_MINUS), _ZERO))
    if reals is not None:
        lo, hi = reals
        positive_lo = _tighter_lower(lo, _ABOVE_ZERO)
        negative_lo = _tighter_lower(_neg(hi), _ABOVE_ZERO)
        assert positive_lo is not None and negative_lo is not None
        parts.append(_positive_reals(positive_lo, hi, exponents))
        parts.append(seq(_MINUS, _positive_reals(negative_lo, _neg(lo), exponents)))
        if _contains_zero(lo, hi):
            zeros = alt(_ZERO_DECIMALS, _ZERO_SPELLINGS) if exponents else _ZERO_DECIMALS
            parts.append(seq(optional(_MINUS), zeros))
    return alt(*parts)


# ---------------------------------------------------------------------------------------
# multipleOf.


def _divisor(multiple_of: Bound) -> tuple[int, int]:
    """``multiple_of = c / 10**s`` with the smallest s: returns (c, s)."""
    value = _exact(multiple_of, "multipleOf")[0]
    if value <= 0:
        raise ValueError(f"multipleOf must be positive, not {multiple_of!r}")
    s = 0
    while (value * 10**s).denominator != 1:
        s += 1
        if s > 400:
            raise NotExpressible(f"multipleOf {multiple_of!r} is not a short decimal")
    return int(value * 10**s), s


def _multiples(k: int, dotted: bool, max_digits: int | None) -> Expr:
    found = multiple_language(k, dotted, max_digits)
    if found is None:
        raise NotExpressible(
            f"a multiple-of-{k} automaton over decimal digits is beyond the budget"
            + ("" if max_digits is not None else " without a maximum")
        )
    return found


def _decimal_multiples(c: int, s: int, max_digits: int | None) -> Expr:
    """Unsigned ``I`` / ``I.F`` spellings of multiples of ``c / 10**s`` (the caller
    intersects with canonical spellings)."""
    some_digits = plus(DIGIT)
    forms = [seq(_multiples(c // math.gcd(c, 10**s), False, max_digits), optional(
        seq(_DOT, plus(_ZERO))))]
    # With f fraction digits (1 <= f <= s) the digit string, dot removed, must be a
    # multiple of c / gcd(c, 10**(s-f)); digits past the s-th are zeros.
    f = 1
    while f <= s:
        k = c // math.gcd(c, 10 ** (s - f))
        last = f
        while last < s and c // math.gcd(c, 10 ** (s - last - 1)) == k:
            last += 1
        shape = seq(some_digits, _DOT, repeat(DIGIT, f, last))
        form = shape if k == 1 else intersect(shape, _multiples(k, True, max_digits))
        forms.append(seq(form, star(_ZERO)) if last == s else form)
        f = last + 1
    return alt(*forms)


# ---------------------------------------------------------------------------------------
# Public API.


def _bound(value: Bound | None, exclusive: bool, what: str) -> _Bound | None:
    if value is None:
        return None
    decimal, python = _exact(value, what)
    return decimal, python, exclusive


def _max_digits(ints: tuple[int | None, int | None], s: int) -> int | None:
    """How many digits (dot removed) a literal within ``ints`` has at most, scaled by 10**s."""
    if ints[0] is None or ints[1] is None:
        return None
    return len(int_str(max(abs(ints[0]), abs(ints[1])))) + s + 1


def number_expr(
    minimum: Bound | None = None,
    maximum: Bound | None = None,
    *,
    exclusive_minimum: bool = False,
    exclusive_maximum: bool = False,
    multiple_of: Bound | None = None,
) -> Expr:
    """JSON number literals (JSON Schema ``type: number``) within the bounds.

    Bounds may be ``int``, ``float`` (meaning its repr), ``Decimal`` or ``Fraction``; the
    spelling policy is in the module docstring. Raises :class:`NotExpressible` for a
    ``multipleOf`` beyond the automaton budget, ``ValueError`` for a non-positive one.

    >>> from constrain.automaton import Automaton
    >>> from constrain.grammar import Grammar
    >>> a = Automaton(Grammar.single(number_expr(-1, 1e-5)))
    >>> [a.matches(s) for s in (b"-1", b"-1.0e0", b"1e-05", b"1.1e-05", b"-2", b"0.00001")]
    [True, True, True, False, False, True]
    """
    lo = _bound(minimum, exclusive_minimum, "minimum")
    hi = _bound(maximum, exclusive_maximum, "maximum")
    if multiple_of is None:
        if lo is None and hi is None:
            return JSON_NUMBER
        ints = _int_limits(lo, hi, None)
        return _literals(ints, _real_limits(lo, hi, None), exponents=True)
    c, s = _divisor(multiple_of)
    clamp = _FLOAT_EXACT if isinstance(multiple_of, float) else None
    ints = _int_limits(lo, hi, clamp)
    literals = _literals(ints, _real_limits(lo, hi, _FLOAT_EXACT), exponents=False)
    max_digits = _max_digits(ints, s)
    return intersect(literals, seq(optional(_MINUS), _decimal_multiples(c, s, max_digits)))


def _integral_spellings() -> Expr:
    """Non-integer spellings that always have an integral value: ``3.00``, ``7e2``,
    ``4E+05`` and zero mantissas (a fraction before an exponent is left out: which ones
    are integral depends on the exponent's value, which makes large automata)."""
    return seq(optional(_MINUS), alt(
        seq(_INT_PART, _DOT, plus(_ZERO)),
        seq(NONZERO, _E, optional(literal("+")), plus(DIGIT)),
        _ZERO_SPELLINGS,
    ))


_INTEGRAL: list[Expr] = []


def integer_expr(
    minimum: Bound | None = None,
    maximum: Bound | None = None,
    multiple_of: Bound | None = None,
    *,
    exclusive_minimum: bool = False,
    exclusive_maximum: bool = False,
    float_spellings: bool = False,
) -> Expr:
    """JSON integer literals (JSON Schema ``type: integer``) within the bounds.

    Integer spellings only (``-?(0|[1-9][0-9]*)``, ``-0`` included) unless
    ``float_spellings``, which adds integral values written ``4.0`` or ``4e0`` (see the
    module docstring). ``multiple_of`` may be fractional (2.5 keeps multiples of 5).

    >>> from constrain.automaton import Automaton
    >>> from constrain.grammar import Grammar
    >>> a = Automaton(Grammar.single(integer_expr(-10**30, 10**30, multiple_of=3)))
    >>> [a.matches(s) for s in (b"-999", b"1000", b"-0", b"3.0", str(10**30 - 1).encode())]
    [True, False, True, False, True]
    """
    lo = _bound(minimum, exclusive_minimum, "minimum")
    hi = _bound(maximum, exclusive_maximum, "maximum")
    clamp = _FLOAT_EXACT if isinstance(multiple_of, float) else None
    ints = _int_limits(lo, hi, clamp)
    result = _literals(ints, None, exponents=False)
    if multiple_of is not None:
        c, s = _divisor(multiple_of)
        k = c // math.gcd(c, 10**s)
        if k > 1:
            max_digits = _max_digits(ints, 0)
            result = intersect(result, seq(optional(_MINUS), _multiples(k, False, max_digits)))
    if not float_spellings:
        return result
    if not _INTEGRAL:
        _INTEGRAL.append(_integral_spellings())
        _INTEGRAL.append(number_expr(-_MAX_DOUBLE, _MAX_DOUBLE))  # past it: inf, not integral
    as_number = number_expr(
        minimum,
        maximum,
        exclusive_minimum=exclusive_minimum,
        exclusive_maximum=exclusive_maximum,
        multiple_of=multiple_of,
    )
    return alt(result, intersect(as_number, *_INTEGRAL))
