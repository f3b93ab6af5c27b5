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

from collections.abc import Callable, Mapping

from .errors import ConstrainError, GrammarError, ResourceLimitError, UnsupportedSchemaError
from .grammar import (
    NOTHING,
    Alt,
    And,
    Expr,
    Lazy,
    Not,
    Ref,
    Repeat,
    Seq,
    alt,
    complement,
    inside,
    intersect,
    literal,
    plus,
    repeat,
    seq,
    star,
)
from .json_syntax import ARRAY_RULE, OBJECT_RULE, VALUE_RULE, WS_CHAR, JsonSyntax
from .json_typed import NeedsRegular, RefTracker

__all__ = ["MAX_UNFOLDED", "Regularizer"]

MAX_UNFOLDED = 100_000
"""Expressions one schema's unfoldings may build. A document whose recursion reaches dozens
of object types, unfolded ``intersection_depth`` levels for an overlapping ``oneOf``, would
otherwise take minutes and gigabytes; past this the keyword is refused, naming it."""


class Regularizer:
    """Replaces rule references by regular under- or over-approximations (see module)."""

    def __init__(self, syn: JsonSyntax, rules: Mapping[str, Expr], depth: int,
                 refs: RefTracker | None = None) -> None:
        self.syn = syn
        self.rules = rules
        self.depth = depth
        self.refs = refs or RefTracker()
        self._memo: dict[tuple[int, bool, int], tuple[Expr, Expr]] = {}
        self._unfolding: set[tuple[str, bool, int]] = set()  # scalar rules being unfolded
        self.built = 0
        """Expressions rebuilt so far, over every unfolding of this compile."""
        self.max_built = MAX_UNFOLDED
        self.pending = False
        """Whether a marker was left for a recursion still being compiled (see
        :meth:`finish`)."""
        # Made when an over-approximation first needs it: most compiles never do.
        self._soup: dict[str, Expr] | None = None
        # What finish() learnt: which expressions hold markers, and their unfoldings.
        self._marked: dict[int, tuple[Expr, bool]] = {}
        self._fixed: dict[int, tuple[Expr, Expr]] = {}
        self.released = False

    def under(self, expr: Expr) -> Expr:
        """A regular subset of ``expr`` (references unfolded ``depth`` times, then empty)."""
        return self._walk(expr, False, self.depth)

    def over(self, expr: Expr) -> Expr:
        """A regular superset of ``expr`` (references unfolded ``depth`` times, then soup)."""
        return self._walk(expr, True, self.depth)

    @staticmethod
    def _kind_of(expr: Expr) -> str:
        name = expr.name if isinstance(expr, Ref) else ""
        return name.rsplit(".", 1)[-1] if name.endswith((".array", ".object")) else "value"

    def _soup_for(self, rule: str) -> Expr:
        soup = self._soup
        if soup is None:
            syn = self.syn
            token = alt(syn.string, syn.number, syn.null, syn.true, syn.false,
                        *(literal(c) for c in "[]{},:"), WS_CHAR)
            tokens = star(token)
            soup = self._soup = {
                VALUE_RULE: plus(token),
                ARRAY_RULE: seq(literal("["), tokens, literal("]")),
                OBJECT_RULE: seq(literal("{"), tokens, literal("}")),
            }
        if rule in soup:
            return soup[rule]
        json_type = rule.rsplit(".", 1)[-1]
        if json_type == "array":
            return soup[ARRAY_RULE]
        if json_type == "object":
            return soup[OBJECT_RULE]
        return soup[VALUE_RULE]  # a scalar rule: any token sequence contains it

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
        self.built += 1
        if self.built > self.max_built:
            raise NeedsRegular(f"{self._kind_of(expr)} (unfolding it {self.depth} levels deep "
                               f"takes more than {self.max_built:,} expressions)")
        if isinstance(expr, Ref):
            result = self._unfold(expr.name, over, depth)
        else:
            result = self._rebuild(expr, lambda e, flip=False: self._walk(e, over != flip, depth),
                                   (self, over, depth))
        self._memo[key] = (expr, result)
        return result

    def _unfold(self, name: str, over: bool, depth: int) -> Expr:
        pending = _parse_pending(name)
        if pending is not None:
            # A marker inside a body being unfolded stands for its own request; a smaller
            # depth keeps the same side (fewer texts kept, more removed) and ends.
            rule, own_over, own_depth = pending
            return self._unfold(rule, own_over, min(own_depth, depth))
        # Depth counts container levels: every reference cycle goes through an array or
        # object rule, so only those use it up.
        container = name.endswith((".array", ".object"))
        if container and depth == 0:
            return self._soup_for(name) if over else NOTHING
        body = self.rules.get(name)
        if body is None and self.released:
            raise GrammarError("a lazy node of a grammar that was freed cannot be built: keep "
                               "the grammar for as long as its expressions are used", name)
        if body is None:
            # A recursion still being compiled: leave a marker, :meth:`finish` unfolds it.
            self.pending = True
            return Ref(f"{_PENDING}{int(over)}:{depth}:{name}")
        if container:
            return self._walk(body, over, depth - 1)
        # A cycle back to this rule with no container on the way (``{"not": {"$ref":
        # "#"}}``) would unfold for ever: no text is read before it recurs.
        request = (name, over, depth)
        if request in self._unfolding:
            raise UnguardedCycle(name)
        self._unfolding.add(request)
        try:
            return self._walk(body, over, depth)
        finally:
            self._unfolding.discard(request)

    @staticmethod
    def _rebuild(expr: Expr, walk: Callable[..., Expr], tag: object) -> Expr:
        """``expr`` with ``walk`` applied to its parts; ``tag`` names the walk, so that a
        lazy part keeps a key of its own (built, and walked, when first reached)."""
        if isinstance(expr, Lazy):
            def build() -> Expr:
                # Built when a walk first reaches it, with no compiler frame left to
                # refuse the keyword: a budget error, typed, instead.
                try:
                    return walk(expr.build())
                except NeedsRegular as e:
                    raise _unfolding_limit(e) from e

            return Lazy((expr.key, tag), build, expr.nullable,
                        tuple(walk(p) for p in expr.parts), tuple(walk(n) for n in expr.needs))
        if isinstance(expr, Seq):
            return seq(*(walk(i) for i in expr.items))
        if isinstance(expr, Alt):
            return alt(*(walk(i) for i in expr.items))
        if isinstance(expr, Repeat):
            return repeat(walk(expr.item), expr.min, expr.max)
        if isinstance(expr, And):
            return intersect(*(walk(i) for i in expr.items))
        if isinstance(expr, Not):
            return complement(walk(expr.item, True))
        return expr

    def finish(self, rules: dict[str, Expr]) -> None:
        """Unfold the markers left for recursions that were still being compiled, now that
        every rule is known (in place, in ``rules``)."""
        if not self.pending:
            return
        self._memo.clear()  # results from before every rule was known may hold markers
        try:
            for name in list(rules):
                rules[name] = self._fix(rules[name])
        except NeedsRegular as e:  # the keyword that asked is compiled already
            raise _unfolding_limit(e) from e

    def _has_marker(self, expr: Expr) -> bool:
        marked = self._marked
        stack = [expr]
        while stack:  # iterative post-order: expressions can be deep
            e = stack[-1]
            if id(e) in marked:
                stack.pop()
                continue
            todo = [i for i in inside(e) if id(i) not in marked]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            value = (isinstance(e, Ref) and e.name.startswith(_PENDING)) or any(
                marked[id(i)][1] for i in inside(e))
            marked[id(e)] = (e, value)
        return marked[id(expr)][1]

    def _fix(self, expr: Expr, flip: bool = False) -> Expr:
        """``expr`` with the markers :meth:`finish` unfolds unfolded (``flip``: the walk's
        signature, unused here: a marker says its own side)."""
        if not self._has_marker(expr):
            return expr
        found = self._fixed.get(id(expr))
        if found is not None:
            return found[1]
        if isinstance(expr, Ref):
            pending = _parse_pending(expr.name)
            assert pending is not None
            result = self._unfold(*pending)
        else:
            result = self._rebuild(expr, self._fix, (self, "finish"))
        self._fixed[id(expr)] = (expr, result)
        return result

    def release(self) -> None:
        """Forget the rules and every memo, once the grammar made with this is freed (see
        :meth:`Compiler.grammar`): the lazy nodes made here build through this object, and
        its memos and rules hold those nodes, a cycle that only the collector would free
        (~190,000 objects for one ``oneOf``-heavy MaskBench schema). Nothing can build
        through it afterwards."""
        self.rules = {}
        self._memo.clear()
        self._fixed.clear()
        self._marked.clear()
        self.refs = RefTracker()
        self.released = True


class UnguardedCycle(NeedsRegular):
    """A rule reached again from itself with no array or object on the way, where its
    language is complemented or intersected (``{"not": {"$ref": "#"}}``, a schema that
    would be its own complement): no unfolding ends."""

    def __init__(self, rule: str) -> None:
        # Rules of sub-schemas are named "schema:<pointer>.<JSON type>".
        self.pointer = rule.removeprefix("schema:").rsplit(".", 1)[0] if rule.startswith(
            "schema:") else "#"
        Exception.__init__(self, "the schema here is complemented or intersected with "
                           "itself through references that enter no array or object: it "
                           "recurs before reading any text, so no unfolding ends")
        self.json_type = "value"


def _unfolding_limit(error: NeedsRegular) -> ConstrainError:
    if isinstance(error, UnguardedCycle):
        return UnsupportedSchemaError("$ref", error.pointer, str(error))
    return ResourceLimitError(
        "unfolded_expressions", MAX_UNFOLDED,
        f"an intersection or complement inside a recursion cannot be made regular: {error}")


_PENDING = "pending:"


def _parse_pending(name: str) -> tuple[str, bool, int] | None:
    if not name.startswith(_PENDING):
        return None
    over, depth, rule = name[len(_PENDING):].split(":", 2)
    return rule, over == "1", int(depth)

