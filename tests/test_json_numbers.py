"""Number literals: exact within the spelling policy, never out of range (any spelling)."""

from __future__ import annotations

import json
import re
import time
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from constrain.automaton import Automaton
from constrain.digit_ranges import fraction_range, multiple_language, uint_range
from constrain.grammar import Alt, And, Expr, Grammar, Not, Repeat, Seq
from constrain.json_numbers import NotExpressible, integer_expr, number_expr

JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\Z")
POLICY_MANTISSA = re.compile(r"-?(0(\.0+)?|[1-9][0-9]{0,2}(\.[0-9]+)?|0\.0{0,2}[1-9][0-9]*)[eE]")


def accepts(expr: Expr, text: str) -> bool:
    return Automaton(Grammar.single(expr)).matches(text.encode())


def significant_digits(text: str) -> int:
    mantissa = re.split("[eE]", text.lstrip("-"))[0].replace(".", "")
    return len(mantissa.strip("0"))


def in_policy(text: str, bounded: bool, multiple: bool) -> bool:
    """Spellings the module promises to accept when the value is in range."""
    plain_integer = "." not in text and "e" not in text.lower()
    if plain_integer or not (bounded or multiple):
        return True
    if significant_digits(text) > 17:
        return False
    if "e" in text.lower():
        return not multiple and bool(POLICY_MANTISSA.match(text))
    return not multiple or abs(Decimal(text)) <= 2**53


def exact(value: object) -> Decimal:
    if isinstance(value, Fraction):
        return Decimal(value.numerator) / Decimal(value.denominator)
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)  # type: ignore


def schema_for(lo: object, hi: object, xlo: bool, xhi: bool) -> dict[str, object]:
    schema: dict[str, object] = {"type": "number"}
    if lo is not None:
        schema["exclusiveMinimum" if xlo else "minimum"] = lo
    if hi is not None:
        schema["exclusiveMaximum" if xhi else "maximum"] = hi
    return schema


def check(expr: Expr, schema: dict[str, object], candidates: list[str]) -> None:
    a = Automaton(Grammar.single(expr))
    validator = Draft202012Validator(schema)
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    for text in candidates:
        if not JSON_NUMBER.match(text):
            continue
        value = Decimal(text)
        in_range = (
            lo is None
            or (value > exact(lo) if "exclusiveMinimum" in schema else value >= exact(lo))
        ) and (
            hi is None
            or (value < exact(hi) if "exclusiveMaximum" in schema else value <= exact(hi))
        )
        valid = in_range and validator.is_valid(json.loads(text))
        got = a.matches(text.encode())
        if got:
            assert valid, f"accepted out-of-range {text} for {schema}"
        elif in_policy(text, lo is not None or hi is not None, False):
            assert not valid, f"rejected in-range {text} for {schema}"


# --- strategies ------------------------------------------------------------------------

bounds = st.one_of(
    st.none(),
    st.integers(-(10**6), 10**6),
    st.integers(-(10**40), 10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 3)),
    st.sampled_from([0, 0.0, -0.0, 1e-300, 1e308, -1e308, 5e-324, 1.7976931348623157e308,
                     0.1, 1.5, -2.5, 100, 1e-5]),
)


def literal_strategy(anchors: list[Decimal]) -> st.SearchStrategy[str]:
    near = st.builds(
        lambda a, k, sign, fmt: fmt.format(a + sign * Decimal(10) ** k),
        st.sampled_from(anchors or [Decimal(0)]),
        st.integers(-20, 3),
        st.sampled_from([-1, 0, 1]),
        st.sampled_from(["{}", "{:f}", "{:e}", "{:E}"]),
    )
    mantissa = st.sampled_from(["1", "5", "9.99", "12.5", "250", "0.5", "0.05", "0.001",
                                "1.2345", "0", "0.0", "999.999", "1234"])
    exponent_form = st.builds(
        lambda sign, m, e, esign, zeros, n: f"{sign}{m}{e}{esign}{zeros}{n}",
        st.sampled_from(["", "-"]), mantissa, st.sampled_from("eE"),
        st.sampled_from(["", "+", "-"]), st.sampled_from(["", "0", "00"]),
        st.integers(0, 330),
    )
    return st.one_of(
        st.integers(-(10**25), 10**25).map(str),
        st.floats(allow_nan=False, allow_infinity=False).map(json.dumps),
        st.decimals(allow_nan=False, allow_infinity=False, places=4).map(lambda d: f"{d:f}"),
        exponent_form,
        near,
    )


@settings(max_examples=120, deadline=None)
@given(lo=bounds, hi=bounds, xlo=st.booleans(), xhi=st.booleans(), data=st.data())
def test_number_ranges_are_exact_and_sound(
    lo: object, hi: object, xlo: bool, xhi: bool, data: st.DataObject
) -> None:
    expr = number_expr(lo, hi, exclusive_minimum=xlo, exclusive_maximum=xhi)  # type: ignore
    anchors = [exact(b) for b in (lo, hi) if b is not None]
    candidates = data.draw(st.lists(literal_strategy(anchors), min_size=30, max_size=30))
    check(expr, schema_for(lo, hi, xlo, xhi), candidates)


@settings(max_examples=60, deadline=None)
@given(
    lo=st.one_of(st.none(), st.integers(-(10**30), 10**30)),
    hi=st.one_of(st.none(), st.integers(-(10**30), 10**30)),
    values=st.lists(st.integers(-(10**31), 10**31), min_size=20, max_size=20),
)
def test_integer_ranges_are_exact(lo: int | None, hi: int | None, values: list[int]) -> None:
    a = Automaton(Grammar.single(integer_expr(lo, hi)))
    for v in values + [b + d for b in (lo, hi) if b is not None for d in (-1, 0, 1)]:
        expected = (lo is None or v >= lo) and (hi is None or v <= hi)
        assert a.matches(str(v).encode()) == expected, (lo, hi, v)
        assert not a.matches(f"{v}.0".encode())
        assert not a.matches(f"0{abs(v)}".encode())


DIVISORS = [1, 2, 3, 5, 7, 9, 10, 12, 15, 100, 1024, 3600, 0.5, 0.25, 2.5, 0.01, 0.1, 0.001,
            1e-8, 0.3, 1.5, Decimal("0.05")]


@settings(max_examples=80, deadline=None)
@given(
    divisor=st.sampled_from(DIVISORS),
    lo=st.one_of(st.none(), st.integers(-(10**6), 10**6), st.sampled_from([0, -100, 0.5])),
    hi=st.one_of(st.none(), st.integers(-(10**6), 10**6), st.sampled_from([100, 10**6, 99.9])),
    integer=st.booleans(),
    ks=st.lists(st.integers(-5000, 5000), min_size=15, max_size=15),
    noise=st.lists(st.integers(-(10**7), 10**7), min_size=5, max_size=5),
)
def test_multiple_of_is_exact(
    divisor: object, lo: object, hi: object, integer: bool, ks: list[int], noise: list[int]
) -> None:
    build = integer_expr if integer else number_expr
    try:
        expr = build(lo, hi, multiple_of=divisor)  # type: ignore[operator]
    except NotExpressible:
        assert hi is None or lo is None  # only unbounded coprime moduli above 9 give up
        return
    a = Automaton(Grammar.single(expr))
    d = exact(divisor)
    texts = []
    for k in ks:
        v = d * k
        texts += [f"{v:f}", str(k), f"{v:f}0" if "." in f"{v:f}" else f"{v:f}.00"]
    texts += [str(n) for n in noise] + [f"{n / 1000}" for n in noise]
    for text in texts:
        if not JSON_NUMBER.match(text):
            continue
        value = Decimal(text)
        is_plain_int = "." not in text
        expected = (
            (lo is None or value >= exact(lo))
            and (hi is None or value <= exact(hi))
            and value % d == 0
            and (is_plain_int or (not integer and abs(value) <= 2**53))
        )
        assert a.matches(text.encode()) == expected, (divisor, lo, hi, integer, text)


@pytest.mark.parametrize(
    ("kwargs", "yes", "no"),
    [
        ({"minimum": 0, "maximum": 1}, ["0", "-0", "0.5", "1", "1.0", "1e0", "5e-1", "10e-1"],
         ["1.0000000000001", "-1e-9", "2", "11e-1"]),
        ({"minimum": 0, "exclusive_minimum": True}, ["1e-300", "5", "1e400", "0.1"],
         ["0", "-0", "0.0", "0e5", "-1", "1e-400"]),
        ({"maximum": 1, "exclusive_maximum": True},
         ["0.99999999999999994", "-1e308", "0.5"],
         ["1", "0.99999999999999999", "1.0"]),
        ({"minimum": -1e308, "maximum": 1e308}, ["1e308", "-1e308", "1.5e307", "0"],
         ["1.1e308", "-2e308"]),
        ({"minimum": 1e-300, "maximum": 1e-299}, ["1e-300", "5e-300", "1E-299"],
         ["1e-301", "2e-299", "0"]),
        ({"minimum": 0, "maximum": 100, "multiple_of": 0.01},
         ["0.07", "12.34", "100", "99.990", "5"], ["0.001", "100.01", "1e1"]),
        ({"minimum": 0, "maximum": 10, "multiple_of": 2.5}, ["2.5", "7.50", "0", "10"],
         ["1", "2.4", "12.5"]),
    ],
    ids=["unit", "positive", "below-one", "huge", "tiny", "cents", "two-and-a-half"],
)
def test_number_examples(kwargs: dict[str, object], yes: list[str], no: list[str]) -> None:
    a = Automaton(Grammar.single(number_expr(**kwargs)))  # type: ignore[arg-type]
    assert [t for t in yes if not a.matches(t.encode())] == []
    assert [t for t in no if a.matches(t.encode())] == []


def test_unbounded_number_accepts_every_spelling() -> None:
    a = Automaton(Grammar.single(number_expr()))
    for text in ["0", "-0", "12345678901234567890.5e-400", "1E+999", "0.000001", "-0.0e0"]:
        assert a.matches(text.encode())
    for text in ["01", "1.", ".5", "+1", "1e", "--1", "1.5e+"]:
        assert not a.matches(text.encode())


def test_integer_float_spellings() -> None:
    plain = Automaton(Grammar.single(integer_expr(-5, 100)))
    loose = Automaton(Grammar.single(integer_expr(-5, 100, float_spellings=True)))
    for text in ["3.0", "1e2", "-5.00", "0e9", "100.0", "5E+01"]:
        assert loose.matches(text.encode()) and not plain.matches(text.encode())
    for text in ["3.5", "1e3", "1.25e1", "-6.0", "9e308", "1.5e1"]:
        assert not loose.matches(text.encode())
    unbounded = Automaton(Grammar.single(integer_expr(float_spellings=True)))
    assert unbounded.matches(b"1e308") and not unbounded.matches(b"2e308")


def test_integer_multiple_of_fraction() -> None:
    a = Automaton(Grammar.single(integer_expr(0, 100, multiple_of=2.5)))
    assert [n for n in range(30) if a.matches(str(n).encode())] == [0, 5, 10, 15, 20, 25]


def test_not_expressible() -> None:
    with pytest.raises(NotExpressible):
        integer_expr(multiple_of=10007)  # coprime to 10: one state per residue, too many
    with pytest.raises(NotExpressible):
        number_expr(0, None, multiple_of=5**7)
    assert isinstance(NotExpressible("x"), ValueError)
    integer_expr(0, 10**6, multiple_of=11)  # bounded: fine
    with pytest.raises(ValueError):
        number_expr(multiple_of=0)
    with pytest.raises(ValueError):
        number_expr(float("nan"))


def size(expr: Expr) -> int:
    seen: set[int] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, (Seq, Alt, And)):
            stack.extend(node.items)
        elif isinstance(node, (Repeat, Not)):
            stack.append(node.item)
    return len(seen)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"minimum": -1e308, "maximum": 1e308},
        {"minimum": 1e-300, "exclusive_maximum": True, "maximum": 1.7976931348623157e308},
        {"minimum": -(10**30), "maximum": 10**30},
        {"minimum": Fraction(1, 3), "maximum": Decimal("123456789.123456789")},
        {"minimum": 5e-324, "exclusive_minimum": True},
    ],
    ids=["1e308", "tiny-to-max", "10**30", "fraction-decimal", "subnormal"],
)
def test_extreme_bounds_stay_small_and_fast(kwargs: dict[str, object]) -> None:
    start = time.perf_counter()
    expr = number_expr(**kwargs)  # type: ignore[arg-type]
    assert time.perf_counter() - start < 0.5
    assert size(expr) < 3000
    a = Automaton(Grammar.single(expr))
    assert a.matches(b"1e-299") == ("minimum" in kwargs and exact(kwargs["minimum"]) <= Decimal(
        "1e-299"))


@pytest.mark.parametrize("divisor", [11, 13, 1.1, 0.17, 4999])
def test_unbounded_multiples_of_large_coprime_factors(divisor: float) -> None:
    """A factor coprime to 10 above 9 with no bound on the digits: the residue automaton
    itself, one lazily built node per residue (it used to be refused)."""
    d = Decimal(repr(divisor))
    number = Automaton(Grammar.single(number_expr(multiple_of=divisor)))
    integer = Automaton(Grammar.single(integer_expr(multiple_of=divisor)))
    for k in [0, 1, 2, 7, 10, 123456789, -3, -98765]:
        v = d * k
        assert number.matches(format(v, "f").encode()), v
        if v == v.to_integral_value():  # integer spellings only, by default
            assert integer.matches(str(int(v)).encode()), v
        off = v + Decimal("0.01") if d < 1 else v + 1
        assert not number.matches(format(off, "f").encode()), off
    assert not number.matches(b"1e3")
    if isinstance(divisor, int):  # a float divisor keeps to 2**53, where floats are exact
        big = str(divisor * 10**30).encode()
        assert number.matches(big) and integer.matches(big)


def test_digit_building_blocks() -> None:
    a = Automaton(Grammar.single(uint_range(10**20 - 3, 10**20 + 7)))
    assert [d for d in range(-5, 10) if a.matches(str(10**20 + d).encode())] == list(
        range(-3, 8))
    f = Automaton(Grammar.single(fraction_range("000000000000000000000000123", True, None, False)))
    assert f.matches(b"000000000000000000000000124") and not f.matches(b"000000000000000000000000123")
    m = multiple_language(7)
    assert m is not None
    seven = Automaton(Grammar.single(m))
    assert [n for n in range(50) if seven.matches(str(n).encode())] == [0, 7, 14, 21, 28, 35, 42, 49]


@settings(max_examples=40, deadline=None)
@given(
    lo=st.decimals(-1000, 1000, places=3, allow_nan=False),
    width=st.decimals(0, 50, places=2, allow_nan=False),
    texts=st.lists(st.decimals(-1100, 1100, places=5, allow_nan=False), min_size=20, max_size=20),
)
def test_decimal_bounds(lo: Decimal, width: Decimal, texts: list[Decimal]) -> None:
    hi = lo + width
    assume(hi.is_finite())
    a = Automaton(Grammar.single(number_expr(lo, hi)))
    for value in texts + [lo, hi]:
        text = f"{value:f}"
        if not JSON_NUMBER.match(text):
            continue
        assert a.matches(text.encode()) == (lo <= value <= hi), (lo, hi, text)
