"""JSON Schema → grammar IR: the entry point and its options.

:func:`schema_to_grammar` compiles a JSON Schema (a dict or boolean, JSON text, or a
Pydantic model class) into a :class:`~constrain.grammar.Grammar` whose language is the JSON
texts (under the whitespace policy of :class:`JsonSchemaOptions`) whose parsed value
``jsonschema`` accepts, formats checked. The dialect is the document's ``$schema`` (drafts
4, 6, 7, 2019-09 and 2020-12; 2020-12 when absent, as ``jsonschema`` does), and keywords mean
exactly what that dialect's ``jsonschema`` validator makes them mean: e.g. a draft-04
``$ref`` hides its siblings, and ``dependencies`` is an unknown (ignored) keyword in 2020-12.

- Every keyword that asserts is enforced exactly, or refused with
  :class:`~constrain.errors.UnsupportedSchemaError` (keyword, JSON pointer, reason); with
  ``lenient=True`` it is instead ignored with an :class:`ApproximationWarning` (the language
  then over-approximates: ``oneOf`` becomes ``anyOf``, ``not``/``uniqueItems``/``contains``
  are dropped; a keyword dropped inside a complemented language, ``not`` or an ``if``,
  makes it under-approximate there instead, and its warning says so).
- Keywords the dialect does not know are ignored, as validators ignore them; annotations
  (``title``, ``description``, ``default``, ``examples``, ...) likewise.
- An unknown ``format`` accepts any string, with an :class:`UnknownFormatWarning`
  (``jsonschema`` ignores formats it has no checker for).
- A schema that fails its metaschema raises :class:`~constrain.errors.SchemaError` with the
  JSON pointer of the offending part.
- ``$ref`` cycles become rules that reference each other (exact, never unrolled);
  references that do not recurse are inlined. Unconstrained arrays and objects (``{}``, an
  absent ``additionalProperties``) nest to any depth and are rules too.

See :mod:`constrain.json_objects` for member order, :mod:`constrain.json_strings` for the
escape policy and :mod:`constrain.json_numbers` for number spellings.

>>> from constrain.automaton import Automaton
>>> g = schema_to_grammar({"type": "object", "properties": {"id": {"type": "integer"}},
...                        "required": ["id"], "additionalProperties": False})
>>> a = Automaton(g)
>>> a.matches(b'{"id": 42}'), a.matches(b'{"id": "42"}'), a.matches(b'{}')
(True, False, False)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from .errors import SchemaError
from .grammar import Grammar
from .json_strings import EscapePolicy

__all__ = [
    "ApproximationWarning",
    "JsonSchemaOptions",
    "UnknownFormatWarning",
    "schema_to_grammar",
]


class ApproximationWarning(UserWarning):
    """``lenient=True`` ignored a keyword it cannot enforce; the message names it and its
    JSON pointer."""


class UnknownFormatWarning(UserWarning):
    """A ``format`` has no known language: any string is accepted for it."""


@dataclass(frozen=True)
class JsonSchemaOptions:
    """How a JSON Schema is compiled. Every field has a default that suits generation.

    ``whitespace`` (default ``"flexible"``): ``"flexible"`` allows up to ``max_whitespace``
    JSON whitespace characters in each gap between tokens inside containers, so
    ``json.dumps`` output (``", "`` and ``": "``) and shallow pretty-printing are accepted
    while a model cannot run away in spaces or newlines. ``"compact"`` allows none (the
    ``separators=(",", ":")`` form).

    ``max_whitespace`` (default 20): the per-gap bound of ``"flexible"``; enough for a
    newline and the indentation of nine levels of two spaces.

    ``whitespace_pattern`` (default ``None``): a regex for one gap, overriding the two
    fields above; it is intersected with JSON whitespace, so it can only narrow it (e.g.
    ``"[ ]?"``).

    ``escapes`` (default ``"all"``): which spellings of string characters are accepted:
    ``"all"`` every JSON escape (``\\u00e9`` as well as ``é``: ``ensure_ascii`` output is
    accepted), ``"required"`` raw characters and only the escapes JSON requires. See
    :mod:`constrain.json_strings`.

    ``property_order`` (default ``"any"``): ``"any"`` accepts object members in every
    order (the parsed value is the same; real data and models do not follow schema order);
    ``"schema"`` wants listed properties in schema order, unlisted ones anywhere. Objects
    whose member values are rules (recursion, free-form values) use schema order unless the
    automaton can intersect such languages (see :mod:`constrain.json_objects`).

    ``strict_additional_properties`` (default ``False``): ``False`` follows the spec (an
    absent ``additionalProperties`` allows any other key); ``True`` forbids keys that no
    merged schema lists or matches unless some schema sets ``additionalProperties``.

    ``lenient`` (default ``False``): ignore unenforceable keywords with an
    :class:`ApproximationWarning` instead of raising.

    ``default_dialect`` (default 2020-12): the ``$schema`` assumed when a document has none.

    ``max_branch_product`` (default 64): how many combinations of ``anyOf``/``oneOf``/``if``
    branches one schema may expand into when merging them with their siblings; beyond it
    branches are intersected as languages instead, which needs them to be regular.

    ``max_unique_values`` (default 32): ``uniqueItems`` is exact in the grammar when
    elements come from at most this many values (one counted array per value); beyond,
    a guard in the matcher keeps them distinct (see :mod:`constrain.unique_items`).

    ``intersection_depth`` (default 8): an intersection or complement (``not``, overlapping
    ``oneOf``, ``if``/``else``, ``contains``) cannot contain a free-form value (``{}``) or a
    ``$ref`` cycle, whose nesting is unbounded. Inside one, such a value is unfolded this
    many levels of arrays/objects deep: a kept language accepts nothing deeper (sound), a
    removed one accepts any JSON tokens deeper (so its complement stays sound). Values
    nesting at most this deep are exact. 0 refuses such schemas instead.

    ``resources`` (default none): other schema documents a ``$ref`` may name, by absolute
    URI (``{"https://example.com/address.json": {...}}``), each read in the dialect its
    own ``$schema`` declares (else ``default_dialect``) and checked against its metaschema
    at compile. Nothing is ever fetched: a reference to any other document is a
    :class:`SchemaError`. Stored as ``(uri, JSON text)`` pairs, so options stay hashable
    and compiles are memoized by the documents' contents.
    """

    whitespace: Literal["flexible", "compact"] = "flexible"
    max_whitespace: int = 20
    whitespace_pattern: str | None = None
    escapes: EscapePolicy = "all"
    property_order: Literal["any", "schema"] = "any"
    strict_additional_properties: bool = False
    lenient: bool = False
    default_dialect: str = "https://json-schema.org/draft/2020-12/schema"
    max_branch_product: int = 64
    max_unique_values: int = 32
    intersection_depth: int = 8
    resources: Mapping[str, Any] | tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "resources", resource_texts(self.resources))
        if self.whitespace not in ("flexible", "compact"):
            raise ValueError(f"whitespace must be 'flexible' or 'compact', not {self.whitespace!r}")
        if self.max_whitespace < 0:
            raise ValueError("max_whitespace must be >= 0")
        if self.escapes not in ("all", "required"):
            raise ValueError(f"escapes must be 'all' or 'required', not {self.escapes!r}")
        if self.property_order not in ("any", "schema"):
            raise ValueError(
                f"property_order must be 'any' or 'schema', not {self.property_order!r}")
        if self.max_branch_product < 1 or self.max_unique_values < 0 or (
                self.intersection_depth < 0):
            raise ValueError("max_branch_product must be >= 1; max_unique_values and "
                             "intersection_depth >= 0")


def resource_texts(resources: Any) -> tuple[tuple[str, str], ...]:
    """``resources`` as sorted (absolute URI, JSON text) pairs, as :class:`JsonSchemaOptions`
    keeps them (its field's description says what is accepted).

    >>> resource_texts({"https://example.com/n.json": {"type": "integer"}})
    (('https://example.com/n.json', '{"type": "integer"}'),)
    """
    if isinstance(resources, Mapping):
        pairs = [(uri, _document_text(uri, document)) for uri, document in resources.items()]
    elif isinstance(resources, tuple) and all(
            isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
            for pair in resources):
        pairs = list(resources)  # already made so (a copy of options)
    else:
        raise TypeError("resources must be a mapping of absolute URIs to schema documents")
    for uri, _ in pairs:
        if not isinstance(uri, str) or not urlsplit(uri).scheme:
            raise ValueError(f"a resource needs an absolute URI (with a scheme), not {uri!r}")
    return tuple(sorted(pairs))


def _document_text(uri: Any, document: Any) -> str:
    if not isinstance(document, (dict, bool)):
        raise TypeError(f"the resource {uri!r} is not a schema document (a dict or a bool): "
                         f"{type(document).__name__}")
    try:
        return json.dumps(document, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"the resource {uri!r} is not JSON: {e}") from e


def schema_to_grammar(schema: Any, options: JsonSchemaOptions | None = None) -> Grammar:
    """Compile ``schema`` (dict, bool, JSON text or Pydantic model class) to a grammar.

    >>> from constrain.automaton import Automaton
    >>> a = Automaton(schema_to_grammar('{"enum": ["red", "green"]}'))
    >>> a.matches(b'"red"'), a.matches(b'"blue"')
    (True, False)
    """
    from .json_compiler import Compiler

    options = options or JsonSchemaOptions()
    compiler = Compiler(load_schema(schema), options)
    try:
        return compiler.grammar()
    finally:
        compiler.close()


def load_schema(schema: Any) -> Any:
    """The schema as a JSON value: parses JSON text, asks a Pydantic model for its schema."""
    if isinstance(schema, (dict, bool)):
        return schema
    if isinstance(schema, (str, bytes, bytearray)):
        try:
            return json.loads(schema)
        except json.JSONDecodeError as e:
            raise SchemaError(f"schema is not valid JSON: {e.msg} (char {e.pos})") from e
        except UnicodeDecodeError as e:
            raise SchemaError(f"schema is not valid JSON: its bytes are not UTF-8 ({e.reason} "
                              f"at byte {e.start})") from e
        except RecursionError as e:
            raise SchemaError("schema nests deeper than Python's json module reads (its "
                              "recursion limit)") from e
    method = getattr(schema, "model_json_schema", None)
    if isinstance(schema, type) and callable(method):
        return method()
    raise SchemaError(
        f"expected a JSON Schema (dict, bool, JSON text or Pydantic model class), "
        f"got {type(schema).__name__}")
