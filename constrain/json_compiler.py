"""The JSON Schema compiler proper: references, recursion, keyword dispatch, scalars.

:class:`Compiler` turns lists of :class:`~constrain.json_nodes.Node` (the schemas one value
must satisfy together) into :class:`~constrain.json_typed.Typed` languages:

1. ``allOf`` and ``$ref`` are flattened into the list (a draft-04..07 ``$ref`` replaces its
   schema); the list is the memo key, so a sub-schema used in many places is built once
   and shared.
2. A list that is being compiled and comes back (a ``$ref`` cycle) becomes references to
   rules named after its JSON pointer, one per JSON type; the rules are defined when the
   outer compilation finishes. Nothing is unrolled.
3. ``unevaluatedProperties``/``unevaluatedItems`` become the keywords they amount to
   (:mod:`constrain.json_unevaluated`), before anything else splits the list.
4. ``enum``/``const`` make the language finite: each candidate is validated by
   ``jsonschema`` against the whole list (so every other keyword, combinators included,
   is applied exactly) and the survivors' literals are the language.
5. ``anyOf``, ``oneOf``, ``not``, ``if`` and the dependency keywords are expanded by
   :mod:`constrain.json_combinators`.
6. The remaining keywords are merged per type: numbers (:mod:`constrain.json_numbers`),
   strings (patterns, formats, lengths, :mod:`constrain.json_strings`), arrays
   (:mod:`constrain.json_arrays`) and objects (:mod:`constrain.json_objects`).

**Polarity.** A language built to be complemented (under ``not``, the other branches of a
``oneOf``, the negation of an ``if``) must *contain* every text whose value the schema
accepts, while a language used directly must *only* contain such texts. Where our languages
differ from Python's ``re`` (``\\d`` and ``$``: see :meth:`Compiler.pattern`), the compiler
builds the smaller language in positive position and the larger one in negative position,
so the result is sound with ECMA-262 and with Python semantics alike.

>>> from constrain.automaton import Automaton
>>> from constrain.json_schema import JsonSchemaOptions
>>> tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}},
...         "additionalProperties": False}
>>> g = Compiler(tree, JsonSchemaOptions()).grammar()
>>> Automaton(g).matches(b'{"kids": [{"kids": []}, {}]}'), sorted(set(g.rules) - set(g.library.rules))
(True, ['root', 'schema:#.object'])
"""

from __future__ import annotations

import json
import re
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

from jsonschema import validators

from .errors import ResourceLimitError, UnsupportedSchemaError
from .grammar import (
    EMPTY,
    NOTHING,
    Expr,
    Grammar,
    alt,
    intersect,
    ref,
)
from .json_arrays import ArraySpec, array_language, counted_array
from .json_literals import canonical, float_spelled, integer_spelled, json_type
from .json_literals import literal as literal_expr
from .json_nodes import REFERENCES, Dialect, Node
from .json_objects import (
    MAX_REGIONS,
    Member,
    ObjectSpec,
    key_region,
    object_language,
    refs_in_intersection_supported,
)
from .json_regular import Regularizer
from .json_syntax import ARRAY_RULE, OBJECT_RULE, VALUE_RULE, JsonSyntax, whitespace_gap
from .json_typed import (
    EMPTY_TYPED,
    JSON_TYPES,
    LazyKeyValues,
    NeedsRegular,
    ObjectKeys,
    RefTracker,
    Typed,
)
from .regex import parse_regex

if TYPE_CHECKING:
    from .json_schema import JsonSchemaOptions
    from .unique_items import PathNode, PathTrace, UniqueItemsPlan

__all__ = ["SUPPORTED_KEYWORDS", "Compiler"]

_IN_PLACE = (*REFERENCES, "allOf")
_IN_PLACE_SET = frozenset(_IN_PLACE)
SUPPORTED_KEYWORDS = frozenset({
    "type", "enum", "const", *REFERENCES, "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    "properties", "required", "additionalProperties", "patternProperties", "propertyNames",
    "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies",
    "items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains",
    "minContains", "maxContains", "uniqueItems", "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "unevaluatedProperties", "unevaluatedItems",
})
"""Every asserting keyword the compiler enforces (each keyword of drafts 4 to 2020-12
that asserts, ``format`` as far as :mod:`~constrain.json_formats` knows it)."""

_CONTAINER_TYPES = frozenset({"object", "array"})
"""Element types whose values a ``uniqueItems`` guard counts by :func:`has_unbounded_values
<constrain.unique_items.has_unbounded_values>` (their texts are not their values)."""
_COMPLEMENTED = "it is in a complemented language (under not, if or oneOf)"
_UNIQUE_REFUSAL = ("exact only when every element comes from a small finite set of values "
                   "(enum, const, boolean, null), or for strings, numbers, objects and "
                   "arrays guarded while decoding, which this array cannot be: ")
_TOO_FEW_VALUES = "its elements have too few values to always leave a new one"

MAX_NESTING = 400
"""Sub-schemas being compiled inside each other at once (a budget against pathological
chains of merged schemas)."""

_ALL_TYPES = frozenset({*JSON_TYPES, "integer"})

_LEAF_KEYWORDS = frozenset({
    "type", "enum", "const", "minLength", "maxLength", "pattern", "format", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
})
_SCALAR_TYPES = frozenset({"null", "boolean", "number", "integer", "string"})
_SCALAR_VALUES = (str, int, float, bool, type(None))
_LEAF_LANGUAGES_KEPT = 4096
_LEAF_CONTENT_KEPT = 1024  # a long enum is rarely met twice, and its language is large
_LEAF_ARRAY_KEYWORDS = frozenset({"items", "minItems", "maxItems"})
_leaf_languages: dict[tuple[Any, ...], Typed] = {}
"""Languages of leaf schemas (see :meth:`Compiler._leaf_key`) by their content, shared by
every compile: ``{"type": "string"}`` under a description is most properties of most
schemas, and each took ~16 µs to lower (a median schema has a dozen). Cleared when full."""


@dataclass
class _Active:
    """A schema list being compiled; ``recursive`` once a reference came back to it."""

    name: str
    refs: Typed
    recursive: bool = False


@lru_cache(maxsize=32)
def _pattern_gap(pattern: str) -> Expr:
    """One gap node per whitespace pattern, so that compilations with the same pattern
    share their syntax (see :class:`~constrain.json_syntax.JsonSyntax`)."""
    return whitespace_gap(pattern=parse_regex(pattern))


class Compiler:
    """One compilation of one schema document (see the module docstring)."""

    def __init__(self, schema: Any, options: JsonSchemaOptions) -> None:
        self.options = options
        default = validators.validator_for({"$schema": options.default_dialect})
        self.dialect = Dialect.for_schema(schema, default=default)
        if self.dialect.name == "Draft3Validator":
            raise UnsupportedSchemaError("$schema", "#", "draft-03 is not supported")
        self.dialect.check_schema(schema)
        self.root = self.dialect.root(schema, options.resources, default)  # type: ignore[arg-type]
        if options.whitespace_pattern is not None:
            gap = _pattern_gap(options.whitespace_pattern)
        else:
            gap = whitespace_gap(options.max_whitespace if options.whitespace == "flexible"
                                 else 0)
        self.syn = JsonSyntax(gap, options.escapes)
        self.refs = RefTracker()
        self._warned: set[str] = set()
        # Warnings asked for, each time (warn_once says each only once): a language whose
        # making asked for one is not shared with later compiles, which must warn too.
        self._warnings_asked = 0
        self._synthetic: dict[Any, Any] = {}
        self._start()
        self.refs_in_and = (options.property_order == "any"
                            and refs_in_intersection_supported())
        from .json_combinators import Combinators
        from .json_scalars import Scalars
        from .json_unevaluated import Unevaluated

        self.combinators = Combinators(self)
        self.scalars = Scalars(self)
        self.unevaluated = Unevaluated(self)

    # -- entry -------------------------------------------------------------------------

    def _start(self) -> None:
        self.rules: dict[str, Expr] = {}
        self.regular = Regularizer(self.syn, self.rules, self.options.intersection_depth,
                                   self.refs)
        self.refs.regular = lambda e, over: self.regular.over(e) if over else self.regular.under(e)
        self._memo: dict[Any, Typed] = {}
        self._active: dict[Any, _Active] = {}
        self._names: set[str] = set()
        self._next_suffix: dict[str, int] = {}  # per base name, so naming stays linear
        self._universe: Typed | None = None
        self._key_verdicts: dict[tuple[str, str, bool], bool] = {}
        self._key_automata: dict[int, tuple[Expr, Any]] = {}
        self._trace: PathTrace | None = None  # made at the first uniqueItems a guard may take
        self._unique_plan: UniqueItemsPlan | None = None  # the trace's guards, once made
        # Guarded places whose arrays a complemented language holds too (see _guard_unique).
        self._complemented: list[tuple[PathNode, str]] = []
        # Guards over objects or arrays, checked once every rule is made (see grammar()):
        # the place, the keyword's pointer, and the element languages to hold infinitely
        # many values.
        self._container_guards: list[tuple[PathNode, str, list[Expr]]] = []

    def grammar(self) -> Grammar:
        """The grammar of the whole document (start rule ``root``)."""
        typed = self.value([self.root])
        name = self._fresh("root")
        self.rules[name] = typed.expr()
        self.regular.finish(self.rules)
        # Always the library: its terms come forked, and with them the conversion of the
        # characters keys are spelt with.
        rules = {**self.syn.universe_rules(), **self.rules}
        metadata: dict[str, object] = {"dialect": self.dialect.name}
        self._check_container_guards(rules)
        for path, pointer in self._complemented:
            if path.guard is None:
                self.refuse("uniqueItems", pointer, _COMPLEMENTED + ", where no guard "
                            "keeps the elements distinct outside it", True)
        plan = self._trace.plan(self.syn) if self._trace is not None else None
        if plan is not None:
            metadata["unique_items"] = plan
        grammar = Grammar(rules, name, metadata, self.syn.library)
        if plan is not None:
            from .unique_items import unlink_when_gone

            self._unique_plan = plan  # kept by close(); the rest of the trace unlinked
            unlink_when_gone(grammar, plan)
        if self.regular.built or self.regular.pending:
            # Its lazy nodes build through the regularizer, whose memos hold them: a cycle
            # the grammar's end breaks (the grammar itself is outside it).
            weakref.finalize(grammar, self.regular.release)
        return grammar

    def _check_container_guards(self, rules: dict[str, Expr]) -> None:
        """Refuse the guards over objects or arrays whose languages are not known to hold
        infinitely many values (which needs every rule: an element's language refers to
        the schema's)."""
        from .unique_items import has_unbounded_values

        for path, pointer, languages in self._container_guards:
            if not all(has_unbounded_values(e, self.syn.library, rules=rules)
                       for e in languages):
                path.guard = None
                self.refuse("uniqueItems", pointer + "/uniqueItems",
                            _UNIQUE_REFUSAL + _TOO_FEW_VALUES)

    def close(self) -> None:
        """Let go of everything this compilation held. Its memos hold facts that ask the
        compiler again when needed (a key's values, see :class:`ObjectKeys`), and its
        helpers hold it: without this, each compile left a few hundred objects in cycles
        for the collector to find (a median MaskBench schema: ~600). The grammar made
        does not need the compiler."""
        trace = vars(self).get("_trace")
        if trace is not None:  # its path nodes are a cycle where the schema recurses
            trace.release(vars(self).get("_unique_plan"))
        dialect = vars(self).get("dialect")
        if dialect is not None:
            dialect.release()
        vars(self).clear()

    # -- errors and warnings -----------------------------------------------------------

    def refuse(self, keyword: str, pointer: str, detail: str, negative: bool = False) -> None:
        """Raise :class:`UnsupportedSchemaError`, or with ``lenient`` warn and return (the
        caller then ignores ``keyword``).

        Ignoring a keyword over-approximates where the language is kept; in negative
        position (a language that will be complemented) it under-approximates: the
        complement loses every value the keyword alone would have refused
        (``{"if": {"pattern": ...}}`` with a refused pattern lost every string). Either
        way it is refused unless ``lenient``, whose warning says which."""
        if not self.options.lenient:
            raise UnsupportedSchemaError(keyword, pointer, detail)
        from .json_schema import ApproximationWarning

        effect = ("some valid values are refused: it sits in a complemented language"
                  if negative else "the language is larger than the schema's")
        warnings.warn(f"{keyword} at {pointer or '#'} is not enforced ({effect}): {detail}",
                      ApproximationWarning, stacklevel=4)

    def warn_once(self, key: str, message: str, category: type[Warning]) -> None:
        self._warnings_asked += 1
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, category, stacklevel=4)

    # -- lists of schemas --------------------------------------------------------------

    def value(self, nodes: list[Node], negative: bool = False) -> Typed:
        """The language of values satisfying every schema in ``nodes``."""
        flat = self._flatten(nodes)
        if flat is None:
            return EMPTY_TYPED
        key = (negative, tuple(n.key for n in flat))
        found = self._memo.get(key)
        if found is not None:
            return found
        active = self._active.get(key)
        if active is not None:
            if not active.recursive:
                active.recursive = True
                if "object" in active.refs.parts:
                    active.refs = replace(active.refs, keys=self._recursion_keys(flat))
            return active.refs
        if len(self._active) >= MAX_NESTING:
            raise ResourceLimitError("schema_nesting", MAX_NESTING,
                                     "the schema nests merged sub-schemas too deeply")
        content = self._leaf_key(flat, negative)
        if content is not None:
            found = _leaf_languages.get(content)
            if found is not None:
                self._memo[key] = found
                return found
            warned = self._warnings_asked
        name = self._fresh("schema:" + (flat[0].pointer if flat else "#"))
        types = self._possible_types(flat)
        act = _Active(name, Typed({t: ref(f"{name}.{t}") for t in types}))
        self._active[key] = act
        try:
            result = self._compile(flat, negative)
        finally:
            del self._active[key]
        if act.recursive:
            for t in types:
                self.rules[f"{name}.{t}"] = result.parts.get(t, NOTHING)
            result = Typed({t: ref(f"{name}.{t}") for t in result.types}, result.full,
                           result.values, result.keys, result.opaque)
        self._memo[key] = result
        if content is not None and self._warnings_asked == warned:  # each compile warns
            if len(_leaf_languages) >= _LEAF_LANGUAGES_KEPT:
                _leaf_languages.clear()
            _leaf_languages[content] = result
        return result

    def _leaf_key(self, flat: list[Node], negative: bool) -> tuple[Any, ...] | None:
        """What the language of ``flat`` depends on, where it is one leaf schema (see
        :func:`_leaf_content`): the dialect, the options, the position and the keywords'
        values. Such a language holds no rule and no reference and is made the same way
        in every compile. ``None`` for anything else, and under ``lenient``, whose
        warnings name each place they apply to."""
        if len(flat) != 1 or self.options.lenient:
            return None
        node = flat[0]
        content = _leaf_content(node.schema, node.dialect.keywords, node.skip)
        if content is None or len(content) > _LEAF_CONTENT_KEPT:
            return None
        return (negative, node.dialect.name, self.options, content)

    def synthetic(self, node: Node, key: Any, make: Any, *path: str | int) -> Node:
        """A compiler-made schema attached to ``node`` (built once, so memo keys hold)."""
        full_key = (id(node.schema), node.base, key)
        if full_key not in self._synthetic:
            self._synthetic[full_key] = make()
        return node.synthetic(self._synthetic[full_key], *path)

    def _fresh(self, base: str) -> str:
        name, i = base, self._next_suffix.get(base, 1)
        if i > 1:
            name = f"{base}~{i}"
        while name in self._names:
            i += 1
            name = f"{base}~{i}"
        self._next_suffix[base] = i + 1
        self._names.add(name)
        return name

    def _flatten(self, nodes: list[Node]) -> list[Node] | None:
        """Expand ``$ref`` and ``allOf``; ``None`` if a ``false`` schema is among them."""
        out: list[Node] = []
        seen: set[Any] = set()
        for n in nodes:
            if not self._flatten_into(n, out, seen):
                return None
        return out

    def _flatten_into(self, node: Node, out: list[Node], seen: set[Any]) -> bool:
        """Add ``node`` and what it references or holds in ``allOf`` to ``out`` (each
        node once, by ``seen``); False where one is the ``false`` schema. A method, not
        a closure calling itself: each such closure was a cycle, ~270 a heavy compile,
        for the collector to find."""
        if node.key in seen:
            return True
        seen.add(node.key)
        schema = node.schema
        if schema is True:
            return True
        if schema is False:
            return False
        if node.dialect.legacy_ref and "$ref" in schema and "$ref" not in node.skip:
            return self._flatten_into(node.resolve(schema["$ref"]), out, seen)
        # Set operations over the schema's keys at C speed: annotations (title,
        # description...) are most of the keys a schema has.
        if node.dialect.keywords.intersection(schema).difference(node.skip, _IN_PLACE_SET):
            # Marked as expanded, so flattening a list that holds it again (after a
            # combinator split) does not bring back the parts split off.
            out.append(node.without(*_IN_PLACE))
        for keyword in REFERENCES:
            ref = node.get(keyword)
            if ref is not None and not self._flatten_into(node.resolve(ref, keyword), out, seen):
                return False
        return all(self._flatten_into(node.child(sub, "allOf", i), out, seen)
                   for i, sub in enumerate(node.get("allOf", ())))

    def _possible_types(self, flat: list[Node]) -> tuple[str, ...]:
        allowed = set(JSON_TYPES)
        for n in flat:
            declared = _declared_types(n)
            if declared is not None:
                allowed &= declared
        return tuple(t for t in JSON_TYPES if t in allowed)

    # -- one list ----------------------------------------------------------------------

    def _compile(self, flat: list[Node], negative: bool) -> Typed:
        for n in flat:
            keywords = n.dialect.keywords
            if not keywords.intersection(n.schema).difference(n.skip, SUPPORTED_KEYWORDS):
                continue
            for k in n.schema:  # in the schema's order: the first is the one refused
                if k in keywords and k not in n.skip and k not in SUPPORTED_KEYWORDS:
                    # If this returns (lenient, or negative position) nothing below reads k.
                    self.refuse(k, f"{n.pointer}/{k}", "this keyword is not supported", negative)
        if not flat:
            return self.universe()
        # Before enum: its values are checked by jsonschema against each schema alone, and
        # what a schema's unevaluated keywords apply to depends on its allOf and $ref.
        lowered = self.unevaluated.expand(flat, negative)
        if lowered is not None:
            return lowered
        if any(n.has("enum") or n.has("const") for n in flat):
            return self._finite(flat)
        expanded = self.combinators.expand(flat, negative)
        if expanded is not None:
            return expanded
        return self._merge(flat, negative)

    def universe(self) -> Typed:
        """Any JSON value."""
        if self._universe is None:
            self.rules.update(self.syn.universe_rules())
            syn = self.syn
            self._universe = Typed({
                "null": syn.null, "boolean": alt(syn.true, syn.false), "number": syn.number,
                "string": syn.string, "array": ref(ARRAY_RULE), "object": ref(OBJECT_RULE),
            }, frozenset(JSON_TYPES), call=ref(VALUE_RULE))
        return self._universe

    def _is_universe(self, expr: Expr, json_type: str) -> bool:
        return self._universe is not None and self._universe.parts[json_type] is expr

    def _finite(self, flat: list[Node]) -> Typed:
        source = next(n for n in flat if n.has("enum") or n.has("const"))
        listed = "const" if source.has("const") else "enum"
        candidates = [source.get("const")] if listed == "const" else list(source.get("enum"))
        # Each spelling of a candidate equals it (jsonschema compares numbers by value), so
        # the keyword it comes from holds; checking it anyway compared every candidate with
        # every other (an enum of 800 values: 640,000 comparisons, most of a compile). The
        # source's other one, where it has both, is checked like any keyword.
        checks = [n.without(listed) if n is source else n for n in flat]
        parts: dict[str, list[Expr]] = {}
        kept: list[Any] = []
        strings: list[str] = []
        seen: set[Any] = set()
        for value in candidates:
            key = canonical(value)
            if key in seen:
                continue
            seen.add(key)
            exprs = []
            for variant, expr in self._spellings(value, source.dialect):
                if all(n.dialect.is_valid(n, variant) for n in checks):
                    exprs.append(expr)
            if exprs:
                kept.append(value)
                if isinstance(value, str):
                    strings.append(value)
                else:
                    parts.setdefault(json_type(value), []).extend(exprs)
        if strings:
            # One tree over their characters, as an object's keys are: a union of whole
            # spellings derived every listed string at every byte (an enum of 392 codes:
            # ~1 ms a step inside it).
            parts["string"] = [self.syn.keyed([(text, EMPTY) for text in strings])]
        return Typed({t: alt(*es) for t, es in parts.items()}, values=tuple(kept))

    def _spellings(self, value: Any, dialect: Dialect) -> list[tuple[Any, Any]]:
        """(parsed variant, its texts): a number's integer and float spellings parse to
        different Python types, which ``jsonschema`` may treat differently. Numbers inside
        an array or object take every spelling of their value from draft 6 on (``[0]``
        for ``[0.0]``): there no keyword tells ``1`` from ``1.0``. Draft 4's ``integer``
        does, so there each mix of integer and float types of the integral numbers inside
        is a variant of its own, checked like the others (``[0.0]`` equals ``[0]`` for
        ``enum`` and fails ``items: {"type": "integer"}``); past
        :data:`_MAX_TYPE_VARIANTS` mixes, only the value's own types."""
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            if not isinstance(value, (list, dict)):
                return [(value, literal_expr(self.syn, value))]
            if dialect.integer_floats:
                return [(value, literal_expr(self.syn, value, all_spellings=True))]
            variants = _type_variants(value, _MAX_TYPE_VARIANTS) or [value]
            return [(v, literal_expr(self.syn, v, all_spellings=False)) for v in variants]
        out: list[tuple[Any, Any]] = []
        if isinstance(value, int) or value == int(value):
            out.append((int(value), integer_spelled(int(value))))
        if isinstance(value, int) and abs(value) >= 2**53 and not _exact_float(value):
            return out  # its float would be another number
        # A Decimal (parse_float=Decimal) is checked as itself: exact decimal semantics.
        out.append((value if isinstance(value, Decimal) else float(value), float_spelled(value)))
        return out

    # -- merged keywords per type ------------------------------------------------------

    def _merge(self, flat: list[Node], negative: bool) -> Typed:
        allowed = set(_ALL_TYPES)
        for n in flat:
            declared = _declared_types(n, integer=True)
            if declared is not None:
                allowed &= declared
        parts: dict[str, Expr] = {}
        full: set[str] = set()
        finite: list[Any] = []
        values: list[Any] | None = finite
        keys: ObjectKeys | None = None
        syn = self.syn
        if "null" in allowed:
            parts["null"] = syn.null
            full.add("null")
            finite.append(None)
        if "boolean" in allowed:
            parts["boolean"] = alt(syn.true, syn.false)
            full.add("boolean")
            finite.extend((True, False))
        if "number" in allowed or "integer" in allowed:
            number, is_full = self.scalars.number(flat, "number" not in allowed, negative)
            if number is not NOTHING:
                parts["number"] = number
                if is_full:
                    full.add("number")
                values = None
        if "string" in allowed:
            string = self.scalars.string(flat, negative)
            parts["string"] = string
            if string is syn.string:
                full.add("string")
            values = None
        if "array" in allowed:
            array = self._array(flat, negative)
            if array is not NOTHING:
                parts["array"] = array
                if self._is_universe(array, "array"):
                    full.add("array")
                values = None
        opaque: set[str] = set()
        if "object" in allowed:
            obj, keys = self._object(flat, negative)
            if obj is None:
                parts["object"] = self.universe().parts["object"]
                opaque.add("object")
            elif obj is not NOTHING:
                parts["object"] = obj
                if self._is_universe(obj, "object"):
                    full.add("object")
            values = None
        return Typed(parts, frozenset(full), tuple(values) if values is not None else None,
                     keys, frozenset(opaque))

    def _array(self, flat: list[Node], negative: bool) -> Expr:
        spec = ArraySpec.merge(flat)
        if not (spec.splits or spec.contains or spec.min_items or spec.max_items is not None
                or spec.unique):
            return self.universe().parts["array"]
        n = spec.prefix_length
        positions = [self.value(spec.position_nodes(i), negative) for i in range(n)]
        rest = self.value(spec.position_nodes(n), negative)
        elements = self.refs.union([*positions, rest])
        max_items = spec.max_items
        unique = spec.unique is not None and (max_items is None or max_items > 1)
        if unique:
            max_items = self._unique_bound(elements, max_items)
        base = array_language(self.syn, [p.expr() for p in positions], rest.expr(),
                              spec.min_items, max_items)
        self.refs.mark(base, any(self.refs.has_ref(p.expr()) for p in [*positions, rest]))
        conjuncts = [base]
        for c in spec.contains:
            if c.low == 0 and c.high is None:
                continue
            if c.high is not None and c.high < c.low:  # no array holds the count
                conjuncts.append(NOTHING)
                continue
            pointer = c.node.pointer
            try:
                mine = self.refs.intersect([elements, self.value([c.node], negative)], negative)
                other = self.refs.difference(elements, self.value([c.node], not negative),
                                             negative)
            except NeedsRegular as e:
                self.refuse("contains", pointer,
                            f"its {e.json_type} elements are recursive or free-form", negative)
                continue
            conjuncts.append(counted_array(self.syn, other.expr(), mine.expr(), c.low, c.high))
        if unique:
            assert spec.unique is not None  # for mypy: that is what unique says
            distinct = self._unique(flat, spec.unique, [*positions, rest], elements, negative,
                                    max_items)
            if distinct is not None:
                conjuncts.extend(distinct)
        if len(conjuncts) == 1:
            return base
        try:
            return intersect(*(self.refs._regular(c, negative, "array") for c in conjuncts))
        except NeedsRegular:
            keyword = "contains" if spec.contains else "uniqueItems"
            self.refuse(keyword, flat[0].pointer, "the array's elements are recursive or "
                        "free-form, so they cannot be counted", negative)
            return base

    def _unique_bound(self, elements: Typed, max_items: int | None) -> int | None:
        """``max_items`` for an array with ``uniqueItems`` whose elements come from ``N``
        listed values, more than :attr:`JsonSchemaOptions.max_unique_values`: at most
        ``N``, since distinct elements cannot outnumber them. Written into the array's
        grammar, the guard that keeps them distinct while decoding always has a fresh
        value left (see :mod:`constrain.unique_items`); without it, an enum of 865 names
        was refused, its last elements possibly left with none. Fewer values are kept
        distinct by the grammar itself, which bounds the length already."""
        if elements.values is None:
            return max_items
        distinct = len({canonical(v) for v in elements.values})
        if distinct <= self.options.max_unique_values:
            return max_items
        return distinct if max_items is None else min(max_items, distinct)

    def _unique(self, flat: list[Node], node: Node, positions: list[Typed], elements: Typed,
                negative: bool, max_items: int | None) -> list[Expr] | None:
        """The conjuncts that keep the elements distinct (none where a guard does it while
        decoding, see :mod:`constrain.unique_items`); ``None`` where refused leniently."""
        pointer = node.pointer + "/uniqueItems"
        if elements.values is None:
            why = self._guard_unique(flat, node, positions, negative, max_items)
            if why is None:
                return []
            self.refuse("uniqueItems", pointer, _UNIQUE_REFUSAL + why, negative)
            return None
        values: dict[Any, Any] = {}
        for v in elements.values:
            values.setdefault(canonical(v), v)
        if len(values) > self.options.max_unique_values:
            why = self._guard_unique(flat, node, positions, negative, max_items)
            if why is None:
                return []
            self.refuse("uniqueItems", pointer, f"{len(values)} possible element values "
                        f"(max_unique_values={self.options.max_unique_values}), and no guard "
                        f"while decoding: {why}", negative)
            return None
        texts = {k: literal_expr(self.syn, v, all_spellings=True) for k, v in values.items()}
        return [counted_array(self.syn, alt(*(e for j, e in texts.items() if j != k)), texts[k],
                              0, 1) for k in texts]

    def _guard_unique(self, flat: list[Node], node: Node, positions: list[Typed],
                      negative: bool, max_items: int | None) -> str | None:
        """Register a guard for the array ``flat`` (``positions``: its element languages,
        the last for every later element; at most ``max_items`` elements); ``None`` if
        done, else why not."""
        from .unique_items import (
            COUNTED_NUMBERS,
            MIN_VALUES,
            PathTrace,
            UniqueGuard,
            has_enough_values,
        )

        if self._trace is None:
            self._trace = PathTrace(self)
        if negative:
            # In a language that is complemented (``place ∖ N``), the array without the
            # keyword makes N larger only by documents that repeat an element there; where
            # the place is guarded, the guard refuses those anyway, so the difference is
            # exact. Checked once the whole grammar is made (see grammar()).
            path = self._trace.guardable(flat, node)
            if path is None:
                return _COMPLEMENTED + ", at a place no guard follows"
            self._complemented.append((path, node.pointer + "/uniqueItems"))
            return None
        if any(p.opaque for p in positions):
            return "its elements' languages are not built exactly"
        path = self._trace.guardable(flat, node)
        if path is None:
            return ("its place in the document is not fixed by keys, array positions "
                    "and single branches (contains, enum, propertyNames, a not, if or "
                    "dependency saying something of a key on its path, several branches "
                    "taking arrays or keys split by patterns apply at or above it, or its "
                    "schema is reached there too)")
        numbers = any("number" in p.parts for p in positions)
        elements = [p.expr() if p.types else NOTHING for p in positions]
        library = self.syn.library
        # Element i starts with i values used: a tuple's position i needs i + 1 values,
        # later elements as many as the array may hold (2**24: more than a run's tokens).
        later = MIN_VALUES if max_items is None else min(MIN_VALUES, max_items)
        scalars = [alt(*(e for t, e in p.parts.items() if t not in _CONTAINER_TYPES))
                   for p in positions]
        unbounded: list[Expr] = []  # checked once every rule is made
        for i, (typed, expr) in enumerate(zip(positions, elements)):
            needed = i + 1 if i < len(elements) - 1 else later
            if expr is NOTHING:
                continue
            if typed.values is not None:
                enough = len({canonical(v) for v in typed.values}) >= needed
            else:
                # Strings and numbers by their spellings, numbers by those that read as
                # distinct values (3, not 3.0; 1.5, not 15e-1), of which 0 has two (-0);
                # else objects and arrays, which must hold infinitely many values (their
                # texts are not their values).
                counted = [intersect(e, COUNTED_NUMBERS) if t == "number" else e
                           for t, e in typed.parts.items() if t not in _CONTAINER_TYPES]
                containers = [e for t, e in typed.parts.items() if t in _CONTAINER_TYPES]
                enough = bool(counted) and has_enough_values(alt(*counted), library,
                                                             needed + numbers)
                if not enough and containers:
                    unbounded.append(alt(*containers))
                    enough = True
            if not enough:
                return _TOO_FEW_VALUES
        listed = tuple(None if p.values is None else tuple(p.values)
                       for p in positions)
        path.guard = UniqueGuard(tuple(elements[:-1]), elements[-1], node.pointer, listed,
                                 tuple(scalars))
        if any(_CONTAINER_TYPES.intersection(p.types) for p in positions):
            self._container_guards.append((path, node.pointer, unbounded))
        return None

    def _object(self, flat: list[Node], negative: bool) -> tuple[Expr | None, ObjectKeys | None]:
        """The object part (``None``: not regular, in negative position) and key facts."""
        options = self.options
        spec = ObjectSpec.merge(flat, options.strict_additional_properties)
        if not (spec.properties or spec.patterns or spec.additional or spec.required
                or spec.names or spec.min_properties or spec.max_properties is not None):
            return self.universe().parts["object"], None
        syn = self.syn
        listed_keys = spec.listed_keys()
        listed: list[Member] = []
        required_values: dict[str, Typed] = {}
        allowed: set[str] = set()
        for key in listed_keys:
            value = self.value(spec.value_nodes(key, self._key_matcher(negative)), negative)
            if spec.names and not self._name_allowed(spec.names, key, negative):
                value = EMPTY_TYPED
            if value.is_empty():
                if key in spec.required:
                    return NOTHING, None
                continue
            allowed.add(key)
            if key in spec.required:
                required_values[key] = value
            listed.append(Member(key, value.expr(), key in spec.required))
        regions = spec.regions(self._patterns_overlap)
        extras: list[Member] = []
        if regions is None:
            if negative:
                return None, None  # opaque: stands in as every object
            self.refuse("patternProperties", flat[0].pointer,
                        f"more than {MAX_REGIONS} sets of patterns a key could match")
        else:
            extras = self._extras(spec, regions, listed_keys, negative)
        order = "any" if negative or options.property_order == "any" else "schema"
        refs = any(self.refs.has_ref(m.value) for m in (*listed, *extras))
        keys = ObjectKeys(required_values, frozenset(allowed),
                          frozenset(k for k in listed_keys if k not in allowed), not extras,
                          partial(self._present_values, spec))
        low, high = spec.min_properties, spec.max_properties
        intersection_ok = not refs or (self.refs_in_and and order == "any")
        expr = object_language(syn, listed, extras, low, high, order=order,
                               intersection_ok=intersection_ok, lazy=not negative)
        if expr is None and negative:
            # A language to be complemented: larger is safe, so values become regular
            # supersets (see json_regular) and the members can be intersected.
            try:
                listed = [Member(m.key, self.regular.over(m.value), m.required) for m in listed]
                extras = [Member(m.key, self.regular.over(m.value)) for m in extras]
            except NeedsRegular:
                return None, None  # opaque: stands in as every object
            expr = object_language(syn, listed, extras, low, high, order=order, lazy=False)
        if expr is None and object_language(syn, listed, extras, 0, None, order=order,
                                            intersection_ok=False, lazy=not negative) is None:
            self.refuse("required", flat[0].pointer, "too many required keys to track in an "
                        "object whose values are recursive or free-form")
            # lenient: required keys may repeat or be missing (a superset)
            expr = object_language(syn, [Member(m.key, m.value) for m in listed], extras, 0,
                                   None, order="repeatable", lazy=not negative)
        if expr is None:
            keyword = "minProperties" if low else "maxProperties"
            asked = flat[0].pointer.rsplit("/", 1)[-1]
            if asked in ("minProperties", "maxProperties"):
                keyword = asked  # a failure of that keyword, spelt as the other bound
            self.refuse(keyword, flat[0].pointer, "the object's values are recursive or "
                        "free-form, so its members cannot be counted")
            expr = object_language(syn, listed, extras, 0, None, order=order,
                                   intersection_ok=False, lazy=not negative)
        assert expr is not None
        values = [m.value for m in (*listed, *extras)]
        return self.refs.mark(expr, any(self.refs.has_ref(v) for v in values)), keys

    def _present_values(self, spec: ObjectSpec, key: str) -> Typed | None:
        """The values ``key`` may hold where present in an object of ``spec``, read in
        negative position: never smaller than the values it may truly hold (where
        recursion meets an intersection, the positive language may be a subset), as
        proving two branches disjoint needs."""
        if spec.names and not self._name_allowed(spec.names, key, True):
            return EMPTY_TYPED
        try:
            return self.value(spec.value_nodes(key, self._key_matcher(True)), True)
        except UnsupportedSchemaError:  # not raised in negative position; kept safe
            return None

    def _recursion_keys(self, flat: list[Node]) -> ObjectKeys:
        """Key facts of ``flat``'s objects read from its keywords alone, for a reference
        back to a list still being compiled (its members are not known yet): the keys it
        requires, with their values where present. A ``oneOf`` of recursive branches told
        apart by a required key's value (``"@type": {"enum": ["csv"]}``) is then a plain
        union, where it would otherwise subtract each branch's unfolded languages from
        the others (Github_hard/o3905). Nothing is said about forbidden keys: the members
        are not known."""
        spec = ObjectSpec.merge(flat, self.options.strict_additional_properties)
        present = partial(self._present_values, spec)
        required = LazyKeyValues(spec.required, present, self.universe())
        return ObjectKeys(required, frozenset(spec.listed_keys()), frozenset(), False, present)

    def _key_matcher(self, negative: bool) -> Callable[[str, str], bool]:
        """Whether a listed key matches a ``patternProperties`` pattern, as ``value_nodes``
        asks it: where ECMA-262 and Python's ``re`` agree (printable ASCII keys), Python's
        answer; elsewhere, for a kept language, "either dialect may match" (the pattern's
        schema then applies: more constraints), and for a complemented one "both match"
        (fewer), read on the pattern's languages around and within both dialects."""

        def matches(pattern: str, key: str) -> bool:
            if _PRINTABLE_ASCII.fullmatch(key):
                return re.search(pattern, key) is not None
            found = self._key_verdicts.get((pattern, key, negative))
            if found is None:
                found = self._dialect_verdict(pattern, key, negative)
                self._key_verdicts[(pattern, key, negative)] = found
            return found

        return matches

    def _name_allowed(self, names: list[Node], key: str, negative: bool) -> bool:
        """Whether the listed ``key`` satisfies ``propertyNames``: ``jsonschema``'s verdict
        on printable ASCII keys (both regex dialects agree there), else the verdict of the
        names' own string language, whose patterns are read within both dialects where
        kept and around both where complemented."""
        if _PRINTABLE_ASCII.fullmatch(key):
            return all(n.dialect.is_valid(n, key) for n in names)
        typed = self.value(names, negative)
        string = typed.parts.get("string")
        if string is None or "string" in typed.full:
            return string is not None
        return self._accepts(string, json.dumps(key, ensure_ascii=False))

    def _accepts(self, expr: Expr, text: str) -> bool:
        found = self._key_automata.get(id(expr))
        if found is None:
            from .automaton import Automaton

            found = self._key_automata[id(expr)] = (expr, Automaton(Grammar.single(expr)))
        return bool(found[1].matches(text.encode("utf-8", "surrogatepass")))

    def _dialect_verdict(self, pattern: str, key: str, negative: bool) -> bool:
        try:
            # Kept: the pattern's language around both dialects; complemented: within.
            expr = self.scalars.pattern(pattern, "", not negative)
        except UnsupportedSchemaError:  # a language within: refused only when kept
            expr = None
        if expr is None:  # unknown: the answer that is safe in this position
            return not negative
        return self._accepts(expr, key)

    def _patterns_overlap(self, p: str, q: str) -> bool:
        """Whether some key may match both patterns (checked on their supersets)."""
        a = self.scalars.pattern(p, "", True)
        b = self.scalars.pattern(q, "", True)
        return a is None or b is None or not self.combinators.is_empty(intersect(a, b))

    def _extras(self, spec: ObjectSpec, regions: list[frozenset[str]], listed_keys: list[str],
                negative: bool) -> list[Member]:
        names: Expr | None = None
        if spec.names:
            typed = self.value(spec.names, negative)
            if "string" not in typed.parts:
                return []
            if "string" not in typed.full:
                names = typed.parts["string"]
        extras = []
        for region in regions:
            value = self.value(spec.region_nodes(region), negative)
            if value.is_empty():
                continue
            key = self.region_key(spec, region, listed_keys, negative)
            if key is not None:
                if names is not None:
                    key = intersect(key, names)
                extras.append(Member(key, value.expr()))
        return extras

    def region_key(self, spec: ObjectSpec, region: frozenset[str], listed_keys: list[str],
                   negative: bool) -> Expr | None:
        """The JSON string literals of the unlisted keys of ``region`` (those that match its
        patterns and none of the others). In a kept language (not ``negative``) regions
        are disjoint: a key is in one where both regex dialects match its patterns and
        neither matches the others (a key the dialects read apart is in none: not
        generated). ``None`` where a pattern was refused leniently (the region is dropped:
        fewer keys, the safe side)."""
        matched: list[Expr] = []
        unmatched: list[Expr] = []
        for p in spec.patterns:
            pointer = f"{spec.patterns[p][0].pointer}"
            e = self.scalars.pattern(p, pointer, negative if p in region else not negative)
            if e is None and not negative:
                return None
            if e is not None:  # (negative, leniently: a dropped condition admits more keys)
                (matched if p in region else unmatched).append(e)
        return key_region(self.syn, listed_keys, matched, unmatched)


# Keys on which ECMA-262 and Python's re read every pattern alike.
_PRINTABLE_ASCII = re.compile("[\x20-\x7e]*")


_MAX_TYPE_VARIANTS = 64


def _type_variants(value: Any, limit: int) -> list[Any] | None:
    """``value`` with each integral number inside as an ``int`` and as a ``float``, every
    mix (the value itself among them); ``None`` past ``limit`` mixes.

    >>> _type_variants([0, "a", 1.0], 8)
    [[0, 'a', 1], [0, 'a', 1.0], [0.0, 'a', 1], [0.0, 'a', 1.0]]
    """
    if isinstance(value, bool) or value is None or isinstance(value, (str, Decimal)):
        return [value]
    if isinstance(value, (int, float)):
        integral = isinstance(value, int) or value.is_integer()
        if integral and (abs(value) < 2**53 or _exact_float(int(value))):
            return [int(value), float(value)]
        return [value]
    items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
    mixes: list[list[Any]] = [[]]
    for _, item in items:
        inner = _type_variants(item, limit)
        if inner is None or len(mixes) * len(inner) > limit:
            return None
        mixes = [mix + [v] for mix in mixes for v in inner]
    if isinstance(value, dict):
        return [dict(zip(value, mix)) for mix in mixes]
    return mixes


def _exact_float(value: int) -> bool:
    """Whether a float holds ``value`` exactly (``2**53`` does, ``2**53 + 1`` does not):
    then ``9007199254740992.0`` parses to a number equal to it."""
    try:
        return float(value) == value
    except OverflowError:
        return False


def _declared_types(node: Node, integer: bool = False) -> set[str] | None:
    declared = node.get("type")
    if declared is None:
        return None
    names = {declared} if isinstance(declared, str) else set(declared)
    if integer:
        if "number" in names:
            names.add("integer")
        return names
    return {"number" if t == "integer" else t for t in names}



def _leaf_content(schema: Any, keywords: frozenset[str],
                  skip: frozenset[str] = frozenset()) -> str | None:
    """The asserting content of a leaf schema, as text (``repr``: it tells 1 from 1.0 and
    True, as a language may); ``None`` where ``schema`` is not one (see :func:`_leaf_parts`).
    One ``repr`` of the whole: the parts of nested leaves ``repr``-ed at each level
    escaped the level below's quotes again, doubling the text per level (26 nested arrays:
    1.5 GB)."""
    parts = _leaf_parts(schema, keywords, skip)
    return None if parts is None else repr(parts)


def _leaf_parts(schema: Any, keywords: frozenset[str],
                skip: frozenset[str] = frozenset()) -> list[tuple[str, Any]] | None:
    """The asserting keywords of a leaf schema with their values; ``None`` where
    ``schema`` is not one. A leaf asserts only
    :data:`_LEAF_KEYWORDS`, ``anyOf`` of leaves, and ``items`` (with ``minItems``,
    ``maxItems``) of a leaf; it declares its types, all scalars or arrays of such items,
    or lists scalar values (``enum``, ``const``) or branches (``anyOf``). No rule, no
    reference and nothing compiled elsewhere (an object's keys) comes into its language.
    Key order is kept: it only costs sharing."""
    if not isinstance(schema, dict):
        return None
    out: list[tuple[str, Any]] = []
    for k, v in schema.items():
        if k not in keywords or k in skip:
            continue  # annotations: no part of the language
        if k in _LEAF_KEYWORDS or k in _LEAF_ARRAY_KEYWORDS:
            if k == "items":
                v = _leaf_parts(v, keywords)
                if v is None:
                    return None
            out.append((k, v))
        elif k == "anyOf" and isinstance(v, list) and v:
            branches = [_leaf_parts(b, keywords) for b in v]
            if None in branches:
                return None
            out.append((k, branches))
        else:
            return None
    found = dict(out)
    declared = found.get("type")
    if declared is not None:
        names = [declared] if isinstance(declared, str) else declared
        if not isinstance(names, list) or not all(
                n in _SCALAR_TYPES or (n == "array" and "items" in found) for n in names):
            return None
    elif "anyOf" not in found:
        values = [found["const"]] if "const" in found else found.get("enum")
        if not isinstance(values, list) or not all(
                isinstance(v, _SCALAR_VALUES) for v in values):
            return None
    elif any(k in found for k in _LEAF_ARRAY_KEYWORDS):
        return None  # array keywords without a declared type: "items" says nothing alone
    return out
