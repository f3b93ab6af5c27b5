"""Numbers and strings: merged bounds, ``multipleOf``, lengths, ``pattern`` and ``format``.

The number part comes from :mod:`constrain.json_numbers` (exact decimal bounds; the
tightest of the merged bounds wins, an exclusive one on a tie). Since draft 6 an integral
float is an integer, so ``integer`` also takes the float spellings ``json.dumps`` writes for
integral values (``3.0``, ``1e+16``); drafts 3 and 4 want integer spellings.

The string part is a language of *decoded* values (lengths in code points, ``pattern`` in
search mode, ``format`` from :mod:`constrain.json_formats`) encoded once by
:mod:`constrain.json_strings`. Where the language is complemented (negative position) the
regexes and formats switch to supersets of what Python's ``re`` and ``jsonschema``'s format
checker accept, so complements stay sound (see :meth:`Scalars.pattern`).

>>> from constrain.automaton import Automaton
>>> from constrain.json_compiler import Compiler
>>> from constrain.json_schema import JsonSchemaOptions
>>> s = {"type": "integer", "exclusiveMinimum": 0, "maximum": 10, "multipleOf": 5}
>>> a = Automaton(Compiler(s, JsonSchemaOptions()).grammar())
>>> [a.matches(t) for t in (b"0", b"5", b"10", b"10.0", b"15")]
[False, True, True, True, False]
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .errors import RegexSyntaxError, ResourceLimitError, UnsupportedRegexError
from .grammar import (
    ANY_CHAR,
    NOTHING,
    Alt,
    And,
    Expr,
    alt,
    complement,
    intersect,
    may_read,
    normalize_ranges,
    repeat,
)
from .json_nodes import Node
from .json_numbers import NotExpressible, integer_expr, number_expr, unexact_spellings
from .regex import parse_regex

if TYPE_CHECKING:
    from .json_compiler import Compiler

__all__ = ["Scalars", "integral_values"]


class Scalars:
    """Number and string parts for one :class:`~constrain.json_compiler.Compiler`."""

    def __init__(self, compiler: Compiler) -> None:
        self.c = compiler
        self._patterns: dict[tuple[str, bool], Expr | None] = {}

    def number(self, flat: list[Node], integer: bool, negative: bool) -> tuple[Expr, bool]:
        lower: tuple[Any, bool] | None = None
        upper: tuple[Any, bool] | None = None
        multiples: list[tuple[Any, Node]] = []
        # Whether 1.0 is an integer is the dialect's of the schemas that ask for one.
        floats = all(n.dialect.integer_floats for n in flat if _integer_only(n))
        for n in flat:
            for value, exclusive, is_lower in _bounds(n, not n.dialect.integer_floats):
                bound = (value, exclusive)
                if is_lower:
                    lower = bound if lower is None else _tighter(lower, bound, lower=True)
                else:
                    upper = bound if upper is None else _tighter(upper, bound, lower=False)
            if n.has("multipleOf"):
                multiples.append((n.get("multipleOf"), n))
        if lower is None and upper is None and not multiples and not integer:
            return self.c.syn.number, True
        kwargs: dict[str, Any] = {
            "minimum": lower[0] if lower else None, "maximum": upper[0] if upper else None,
            "exclusive_minimum": bool(lower and lower[1]),
            "exclusive_maximum": bool(upper and upper[1]),
        }
        exprs = []
        cases: list[tuple[Any, Node | None]] = list(multiples) or [(None, None)]
        for multiple, node in cases:
            try:
                exprs.append(self._numbers(integer, floats, multiple, kwargs))
            except NotExpressible as e:
                assert node is not None
                self.c.refuse("multipleOf", node.pointer + "/multipleOf", e.reason, negative)
        if not exprs:  # every multipleOf was refused leniently
            exprs.append(self._numbers(integer, floats, None, kwargs))
        expr = exprs[0] if len(exprs) == 1 else intersect(*exprs)
        if negative:  # to be complemented: never smaller than the true language
            expr = alt(expr, unexact_spellings())
        return expr, False

    def _numbers(self, integer: bool, floats: bool, multiple: Any,
                 bounds: dict[str, Any]) -> Expr:
        # The same few languages recur in every schema (an integer, a number, a count
        # from 0): built once per process (IR nodes are immutable). Values keep their
        # type in the key: an int and a float of equal value can spell different
        # languages (a float multipleOf is taken at float precision).
        key = (integer, floats, type(multiple).__name__, multiple,
               *((name, type(v).__name__, v) for name, v in sorted(bounds.items())))
        try:
            found = _NUMBER_LANGUAGES.get(key)
        except TypeError:  # an unhashable value: nothing to share
            return _number_language(integer, floats, multiple, bounds)
        if found is None:
            found = _number_language(integer, floats, multiple, bounds)
            if len(_NUMBER_LANGUAGES) >= 1024:
                _NUMBER_LANGUAGES.clear()
            _NUMBER_LANGUAGES[key] = found
        return found

    def string(self, flat: list[Node], negative: bool) -> Expr:
        low = max((n.get("minLength", 0) for n in flat), default=0)
        highs = [n.get("maxLength") for n in flat if n.has("maxLength")]
        high = min(highs) if highs else None
        decoded: list[Expr] = []
        if low > 0 or high is not None:
            if high is not None and high < low:
                return NOTHING
            decoded.append(repeat(ANY_CHAR, low, high))
        for n in flat:
            if n.has("pattern"):
                e = self.pattern(n.get("pattern"), f"{n.pointer}/pattern", negative)
                if e is not None:
                    decoded.append(e)
        for n in flat:  # after the patterns, which may already confine a format's strings
            if n.has("format"):
                e = self.format(n.get("format"), f"{n.pointer}/format", negative, decoded)
                if e is not None:
                    decoded.append(e)
        if not decoded:
            return self.c.syn.string
        return self.c.syn.strings.string(decoded[0] if len(decoded) == 1 else intersect(*decoded))

    def pattern(self, pattern: str, pointer: str, negative: bool) -> Expr | None:
        """The strings containing a match of ``pattern`` (decoded).

        Positive: classes and ``.`` within both ECMA-262's and Python's meanings (see
        :mod:`constrain.regex`), ``$`` the end (ECMA). Negative: classes and ``.`` around
        both, and ``$`` also before a final newline (Python's reading), which contains
        both. A negative lookahead reads its body on the other side. ``None`` when refused
        (leniently: the caller drops it).
        """
        key = (pattern, negative)
        if key in self._patterns:
            return self._patterns[key]
        try:
            expr = parse_regex(pattern, search=True, unicode=negative,
                               ecma="around" if negative else "within")
        except (UnsupportedRegexError, RegexSyntaxError, ResourceLimitError) as e:
            self.c.refuse("pattern", pointer, str(e), negative)
            self._patterns[key] = None
            return None
        self._patterns[key] = expr
        return expr

    def format(self, name: str, pointer: str, negative: bool,
               beside: Sequence[Expr] = ()) -> Expr | None:
        """The decoded language of format ``name`` (``None``: any string).

        :mod:`constrain.json_formats` gives, for most formats, a realistic *subset* of what
        ``jsonschema``'s checker accepts. That is right where the language is kept. Where
        it is complemented (``negative``), the complement of a subset would hold strings
        that have the format, so a language holding all of the checker's is used
        (:func:`~constrain.json_formats.checker_superset`: exact for some formats, a
        superset close to it for others); a format without one is refused (under
        ``lenient``, the subset is complemented: an over-approximation, with a warning),
        unless the languages ``beside`` it (the same value's patterns and lengths) hold
        only strings of that subset: the format then adds nothing, exactly.
        """
        from .json_schema import UnknownFormatWarning

        try:
            from .json_formats import checker_superset, format_expr
        except ImportError:
            self.c.refuse("format", pointer, "format languages (constrain.json_formats) are "
                        "not available", negative)
            return None
        expr = format_expr(name)
        if expr is None:
            self.c.warn_once("format:" + name,
                           f"unknown format {name!r} at {pointer}: any string is accepted",
                           UnknownFormatWarning)
            return None
        if negative:
            superset = checker_superset(name)
            if superset is not None:
                return superset
            if beside and self.c.combinators.is_empty(intersect(*beside, complement(expr))):
                return None
            # Not negative=True: dropping the format there would silently take every
            # string out of the complement (an `if` on a format rejected them all).
            self.c.refuse("format", pointer, f"format {name!r} is built as a subset of what "
                          "its checker accepts, which cannot be complemented exactly "
                          "(under not, if or an overlapping oneOf)")
        return expr


_NUMBER_LANGUAGES: dict[tuple[Any, ...], Expr] = {}
# The integer languages made, by id (each kept, so that an id is never another's).
_INTEGRAL: dict[int, Expr] = {}
_INTEGRAL_KEPT = 4096


def integral_values(expr: Expr) -> bool:
    """Whether every text of the number language ``expr`` has an integral value, as far
    as how it was built tells (``False`` when unsure): an integer language made here
    (integral floats such as ``3.0`` included), integer spellings alone, or a union or
    intersection of such languages."""
    if (_INTEGRAL.get(id(expr)) is expr or _INTEGRAL_PARTS.get(id(expr)) is expr
            or not may_read(expr, _FRACTION_OR_EXPONENT)):
        return True
    if isinstance(expr, Alt):
        return all(integral_values(item) for item in expr.items)
    if isinstance(expr, And):
        return any(integral_values(item) for item in expr.items)
    return False


_FRACTION_OR_EXPONENT = normalize_ranges([(ord("."), ord(".")), (ord("E"), ord("E")),
                                          (ord("e"), ord("e"))])


def _number_language(integer: bool, integer_floats: bool, multiple: Any,
                     bounds: dict[str, Any]) -> Expr:
    if not integer:
        return number_expr(multiple_of=multiple, **bounds)
    ints = integer_expr(multiple_of=multiple, **bounds)
    if not integer_floats:
        return ints
    # Since draft 6 an integral float is an integer. json_numbers' complete set of such
    # spellings derives slowly (one alternative per exponent); this subset holds every
    # float json.dumps writes for an integral value (``3.0``, ``1e+16``).
    if multiple is None and bounds["minimum"] is None and bounds["maximum"] is None:
        found = alt(ints, _integral_floats())  # no intersection: no emptiness searches
    else:
        found = alt(ints, intersect(number_expr(multiple_of=multiple, **bounds),
                                    _integral_floats()))
    if len(_INTEGRAL) >= _INTEGRAL_KEPT:
        _INTEGRAL.clear()
    _INTEGRAL[id(found)] = found
    return found


_INTEGRAL_FLOATS: list[Expr] = []
_INTEGRAL_PARTS: dict[int, Expr] = {}  # the integral floats and their branches, kept


def _integral_floats() -> Expr:
    """``3.0``, ``-12.000``, and exponent forms ``d.ddd e+k`` with k >= 16 and at most 16
    fraction digits (always integral; k <= 307 keeps them finite)."""
    if not _INTEGRAL_FLOATS:
        found = parse_regex(
            r"-?(0|[1-9][0-9]*)\.0+"
            r"|-?[1-9](\.[0-9]{1,16})?[eE]\+?0*(1[6-9]|[2-9][0-9]|[12][0-9][0-9]|30[0-7])")
        _INTEGRAL_FLOATS.append(found)
        # Its branches too: a union of integer languages is flattened into one.
        for part in (found, *(found.items if isinstance(found, Alt) else ())):
            _INTEGRAL_PARTS[id(part)] = part
    return _INTEGRAL_FLOATS[0]


def _bounds(node: Node, draft4: bool) -> list[tuple[Any, bool, bool]]:
    """(value, exclusive, is_lower) for each numeric bound of ``node``."""
    out = []
    for keyword, exclusive_kw, is_lower in (("minimum", "exclusiveMinimum", True),
                                            ("maximum", "exclusiveMaximum", False)):
        if node.has(keyword):
            out.append((node.get(keyword), draft4 and node.get(exclusive_kw) is True, is_lower))
        if not draft4 and node.has(exclusive_kw):
            out.append((node.get(exclusive_kw), True, is_lower))
    return out


def _decimal(value: Any) -> Any:
    return Fraction(Decimal(repr(value))) if isinstance(value, float) else Fraction(value)


def _tighter(a: tuple[Any, bool], b: tuple[Any, bool], lower: bool) -> tuple[Any, bool]:
    va, vb = _decimal(a[0]), _decimal(b[0])
    if va == vb:
        return a if a[1] else b
    return (a if va > vb else b) if lower else (a if va < vb else b)


def _integer_only(node: Node) -> bool:
    """Whether ``node``'s ``type`` allows integers but not every number."""
    declared = node.get("type")
    types = [declared] if isinstance(declared, str) else declared or ()
    return "integer" in types and "number" not in types
