"""Languages of one JSON value (``const``, ``enum``): every text that parses to it.

A value has many texts: whitespace, string escapes, object members in any order, and
number spellings. For numbers the *Python type* after ``json.loads`` matters to
``jsonschema`` (a draft-04 ``integer`` wants an ``int``, so ``1.0`` is not one), so a number
is spelled by class: integer spellings (``-?(0|[1-9][0-9]*)``, which parse to ``int``) and
float spellings (a fraction or an exponent, which parse to ``float``). :func:`literal`
spells a number by its own Python type; the compiler checks both classes of a top-level
enum value against the schema and keeps those that validate.

Values compare as JSON Schema compares them (:func:`canonical`): ``1 == 1.0``, ``true != 1``.

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar
>>> from constrain.json_syntax import JsonSyntax, whitespace_gap
>>> syn = JsonSyntax(whitespace_gap(1))
>>> a = Automaton(Grammar.single(literal(syn, {"a": [1, "x"], "b": None})))
>>> [a.matches(s) for s in (b'{"b": null, "a": [1, "x"]}', b'{"a":[1,"\\\\u0078"],"b":null}',
...                         b'{"a": [1.0, "x"], "b": null}')]
[True, True, False]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

from .grammar import Expr, alt, complement, intersect, seq
from .json_numbers import integer_expr, number_expr
from .json_objects import Member, object_language
from .json_syntax import JsonSyntax

__all__ = ["canonical", "float_spelled", "integer_spelled", "json_type", "literal"]

_INTEGER_SPELLINGS = integer_expr()


def json_type(value: Any) -> str:
    """The JSON type of a parsed value (``number`` for ``int``, ``float`` and ``Decimal``,
    what ``json.loads(..., parse_float=Decimal)`` makes of a fraction or exponent)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, Decimal)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise TypeError(f"not a JSON value: {value!r}")


def canonical(value: Any) -> Any:
    """A hashable key equal for values JSON Schema considers equal."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (json_type(value), value)
    if isinstance(value, (int, float, Decimal)):
        if isinstance(value, float) and math.isinf(value):
            return ("number", value)  # what json.loads reads past the largest float
        return ("number", Fraction(value))
    if isinstance(value, list):
        return ("array", tuple(canonical(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, canonical(v)) for k, v in value.items()))
    raise TypeError(f"not a JSON value: {value!r}")


def integer_spelled(value: int) -> Expr:
    """Integer spellings of ``value`` (``-0`` too for 0)."""
    return integer_expr(value, value)


def float_spelled(value: float | Decimal) -> Expr:
    """Spellings with a fraction or an exponent whose decimal value is ``value`` (a float
    means its ``repr``)."""
    return intersect(number_expr(value, value), complement(_INTEGER_SPELLINGS))


def literal(syn: JsonSyntax, value: Any, all_spellings: bool = False,
            number: Callable[[Any], Expr] | None = None) -> Expr:
    """The texts of ``value``; numbers are spelled by their Python type, or in every
    spelling of the same number when ``all_spellings``, or as ``number`` spells them
    where it is given (wherever they are in the value)."""
    if value is None:
        return syn.null
    if value is True:
        return syn.true
    if value is False:
        return syn.false
    if number is not None and isinstance(value, (int, float, Decimal)):
        return number(value)
    if isinstance(value, int):
        return number_expr(value, value) if all_spellings else integer_spelled(value)
    if isinstance(value, (float, Decimal)):  # a Decimal is a float's spelling, read exactly
        return number_expr(value, value) if all_spellings else float_spelled(value)
    if isinstance(value, str):
        return syn.strings.literal(value)
    if isinstance(value, list):
        if not value:
            return syn.array(alt(), True)
        items = [literal(syn, v, all_spellings, number) for v in value]
        body = items[0]

        for item in items[1:]:
            body = seq(body, syn.comma, item)
        return syn.array(body, False)
    if isinstance(value, dict):
        members = [Member(k, literal(syn, v, all_spellings, number), True)
                   for k, v in value.items()]
        expr = object_language(syn, members, [], 0, None)
        assert expr is not None  # literal values never reference rules
        return expr
    raise TypeError(f"not a JSON value: {value!r}")
