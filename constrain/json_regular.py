"""Regular stand-ins for rule references, for intersections and complements.

An intersection or complement cannot contain a rule reference (the language of a free-form
value or of a ``$ref`` cycle nests without bound, so it is not regular). Where the compiler
must intersect or complement such a language (``not``, overlapping ``oneOf``, ``if``/
``else``, ``contains``, large objects), :class:`Regularizer` replaces each reference by a
regular language on the *safe side*, unfolding it up to ``depth`` levels of nested arrays
and objects:

- :meth:`Regularizer.under` (a language that is kept): the unfolded rule, and *nothing*
  beyond the depth, so the result is a subset: sound, and complete for values that nest
  at most ``depth`` containers deep;
- :meth:`Regularizer.over` (a language that is removed or complemented): the unfolded rule,
  and beyond the depth *token soup* (any sequence of JSON tokens inside the right brackets),
  so the result is a superset and its complement a subset: sound again.

With ``depth=0`` nothing is unfolded and :class:`~constrain.json_typed.NeedsRegular` tells
the compiler to refuse instead.

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar, ref
>>> from constrain.json_syntax import JsonSyntax, whitespace_gap
>>> syn = JsonSyntax(whitespace_gap(1))
>>> rules = syn.universe_rules()
>>> r = Regularizer(syn, rules, depth=4)
>>> a = Automaton(Grammar.single(r.under(ref("json.value"))))
>>> a.matches(b'[1, {"a": [[2]]}]'), a.matches(b'[[[[[1]]]]]')
(True, False)
>>> Automaton(Grammar.single(r.over(ref("json.value")))).matches(b'[[[[[1]]]]]')
True
"""

from __future__ import annotations

from collections.abc import Mapping

from .grammar import (
    NOTHING,
    Alt,
    And,
    Expr,
    Not,
    Ref,
    Repeat,
    Seq,
    alt,
    complement,
    intersect,
    literal,
    plus,
    repeat,
    seq,
    star,
)
from .json_syntax import ARRAY_RULE, OBJECT_RULE, VALUE_RULE, WS_CHAR, JsonSyntax
from .json_typed import NeedsRegular, RefTracker

__all__ = ["Regularizer"]


class Regularizer:
    """Replaces rule references by regular under- or over-approximations (see module)."""

    def __init__(self, syn: JsonSyntax, rules: Mapping[str, Expr], depth: int,
                 refs: RefTracker | None = None) -> None:
        self.syn = syn
        self.rules = rules
        self.depth = depth
        self.refs = refs or RefTracker()
        self._memo: dict[tuple[int, bool, int], tuple[Expr, Expr]] = {}
        self.missed = False
        """Whether a reference to a rule not defined yet (a recursion still being compiled)
        was replaced by its depth-0 stand-in; the compiler then compiles once more with the
        first pass's rules at hand."""
        token = alt(syn.string, syn.number, syn.null, syn.true, syn.false,
                    *(literal(c) for c in "[]{},:"), WS_CHAR)
        self._tokens = star(token)
        self._soup = {
            VALUE_RULE: plus(token),
            ARRAY_RULE: seq(literal("["), self._tokens, literal("]")),
            OBJECT_RULE: seq(literal("{"), self._tokens, literal("}")),
        }

    def under(self, expr: Expr) -> Expr:
        """A regular subset of ``expr`` (references unfolded ``depth`` times, then empty)."""
        return self._walk(expr, False, self.depth)

    def over(self, expr: Expr) -> Expr:
        """A regular superset of ``expr`` (references unfolded ``depth`` times, then soup)."""
        return self._walk(expr, True, self.depth)

    def _soup_for(self, rule: str) -> Expr:
        if rule in self._soup:
            return self._soup[rule]
        json_type = rule.rsplit(".", 1)[-1]
        if json_type == "array":
            return self._soup[ARRAY_RULE]
        if json_type == "object":
            return self._soup[OBJECT_RULE]
        return self._soup[VALUE_RULE]  # a scalar rule: any token sequence contains it

    def _walk(self, expr: Expr, over: bool, depth: int) -> Expr:
        if self.depth <= 0:
            raise NeedsRegular("reference")
        if not self.refs.has_ref(expr):
            return expr
        key = (id(expr), over, depth)
        found = self._memo.get(key)
        if found is not None:
            return found[1]
        result: Expr
        if isinstance(expr, Ref):
            body = self.rules.get(expr.name)
            # Depth counts container levels: every reference cycle goes through an array or
            # object rule, so only those use it up.
            container = expr.name.endswith((".array", ".object"))
            if body is None or (container and depth == 0):
                self.missed = self.missed or body is None
                result = self._soup_for(expr.name) if over else NOTHING
            else:
                result = self._walk(body, over, depth - 1 if container else depth)
        elif isinstance(expr, Seq):
            result = seq(*(self._walk(i, over, depth) for i in expr.items))
        elif isinstance(expr, Alt):
            result = alt(*(self._walk(i, over, depth) for i in expr.items))
        elif isinstance(expr, Repeat):
            result = repeat(self._walk(expr.item, over, depth), expr.min, expr.max)
        elif isinstance(expr, And):
            result = intersect(*(self._walk(i, over, depth) for i in expr.items))
        elif isinstance(expr, Not):
            result = complement(self._walk(expr.item, not over, depth))
        else:  # pragma: no cover - only composites and Ref contain references
            result = expr
        self._memo[key] = (expr, result)
        return result
