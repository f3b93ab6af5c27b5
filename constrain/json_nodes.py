"""Sub-schemas with their reference scope: the compiler's unit of input.

A :class:`Node` is one (sub-)schema together with the ``referencing`` resolver in force
where it sits (so ``$ref`` resolves exactly as ``jsonschema`` resolves it, ``$id`` scopes
and ``$anchor`` included), its JSON pointer for error messages, and the keywords a
combinator split has already taken care of. Where ``$dynamicRef`` could resolve differently
by the way a node was reached, the node also carries the part of the dynamic scope that
decides it (see :meth:`Node.resolve`). A :class:`Dialect` wraps the ``jsonschema``
validator class of the document: which keywords assert, whether ``$ref`` hides its
siblings (drafts 4 to 7), and a validator for checking concrete values.

>>> d = Dialect.for_schema({"$schema": "http://json-schema.org/draft-07/schema#"})
>>> d.name, d.legacy_ref, "dependencies" in d.keywords
('Draft7Validator', True, True)
>>> root = d.root({"definitions": {"a~b": {"type": "string"}}})
>>> root.resolve("#/definitions/a~0b").schema, root.child({"type": "null"}, "not").pointer
({'type': 'string'}, '#/not')
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal
from urllib.parse import urldefrag, urljoin

import jsonschema_specifications
import referencing.exceptions
import referencing.jsonschema
from jsonschema import Draft202012Validator, FormatChecker, validators

from .errors import ResourceLimitError, SchemaError, UnsupportedSchemaError
from .recursion_limit import ensure_recursion_limit

__all__ = ["REFERENCES", "Dialect", "Node", "escape_pointer", "not_json", "resource_registry"]

REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
"""The keywords that apply the schema they name in place (see :meth:`Node.resolve`)."""

_NO_RETRIEVAL: referencing.Registry[Any] = jsonschema_specifications.REGISTRY
"""The registry validators are given: the metaschemas ``jsonschema`` ships (it adds the
document's own resources), nothing fetched. Without one, ``jsonschema`` fetches a remote
``$ref`` over HTTP with no timeout, inside a compile; with any other, it combines it with
this one at every validator made."""


def escape_pointer(token: str | int) -> str:
    """One JSON pointer reference token (``~`` and ``/`` escaped)."""
    return str(token).replace("~", "~0").replace("/", "~1")


class Dialect:
    """What the document's ``$schema`` (or the default dialect) means for compilation."""

    def __init__(self, validator_class: Any) -> None:
        self.validator_class = validator_class
        self.name: str = validator_class.__name__
        companions = set()
        if self.name in ("Draft3Validator", "Draft4Validator"):
            companions |= {"exclusiveMinimum", "exclusiveMaximum"}  # booleans read by min/max
        if "if" in validator_class.VALIDATORS:
            companions |= {"then", "else"}
        if "dependentRequired" in validator_class.VALIDATORS:
            companions |= {"minContains", "maxContains"}  # read by contains since 2019-09
        self.keywords: frozenset[str] = frozenset(validator_class.VALIDATORS) | companions
        """Keywords that assert in this dialect (with the ones another keyword reads); every
        other keyword is ignored, as ``jsonschema`` ignores it."""
        self.legacy_ref = self.name in ("Draft3Validator", "Draft4Validator",
                                        "Draft6Validator", "Draft7Validator")
        """Drafts 4 to 7: a schema with ``$ref`` is only its reference."""
        self.integer_floats = self.name not in ("Draft3Validator", "Draft4Validator")
        """Since draft 6, ``1.0`` is an integer (drafts 3 and 4 want an ``int``)."""
        meta = validator_class.META_SCHEMA
        self.specification = referencing.jsonschema.specification_with(
            meta.get("$id") or meta.get("id") or meta.get("$schema", ""))
        self._validator: Any = None
        self._stripped: dict[Any, dict[str, Any]] = {}
        self._type_only: dict[Any, tuple[str, ...] | None] = {}
        self._document = _Document(self)

    @classmethod
    def for_schema(cls, schema: Any, default: Any = Draft202012Validator) -> Dialect:
        """The dialect ``jsonschema`` would use for ``schema``."""
        if isinstance(schema, dict):
            declared = schema.get("$schema", "")
            if not isinstance(declared, str):
                raise SchemaError(f"$schema must be a string, not {declared!r}", "#/$schema",
                                  "$schema")
            return cls(validators.validator_for(schema, default=default))
        return cls(default)

    def check_schema(self, schema: Any) -> None:
        """Raise :class:`SchemaError` (with the JSON pointer) if ``schema`` fails its
        metaschema.

        With ``jsonschema-rs`` installed (the ``fast`` extra) a valid schema is confirmed in
        microseconds instead of milliseconds (``jsonschema`` spends ~6 ms on the 2020-12
        metaschema's dynamic references, most of a small schema's compile time); whatever it
        does not confirm goes through ``jsonschema`` for the verdict and the error.
        """
        import jsonschema.exceptions

        if _plain_document(schema) and _fast_metaschema_valid(schema, self.validator_class):
            return
        ensure_recursion_limit()  # jsonschema recurses a few frames per level
        try:
            self.validator_class.check_schema(schema)
        except RecursionError as e:
            raise ResourceLimitError("document_depth", MAX_DOCUMENT_DEPTH, "the schema document "
                                     "nests deeper than its metaschema check reaches") from e
        except jsonschema.exceptions.SchemaError as e:
            pointer = "#" + "".join("/" + escape_pointer(p) for p in e.absolute_path)
            raise SchemaError(f"invalid schema: {e.message}", pointer, str(e.validator)) from e
        except (TypeError, ValueError, ArithmeticError) as e:  # jsonschema on a non-JSON value
            found = not_json(schema)
            if found is None:
                raise
            raise SchemaError(f"not a JSON value: {found[1]!r}", "#" + found[0]) from e
        found = not_json(schema)
        if found is not None:
            raise SchemaError(f"not a JSON value: {found[1]!r}", "#" + found[0])

    def root(self, schema: Any, resources: tuple[tuple[str, str], ...] = (),
             default: Any = Draft202012Validator) -> Node:
        """The root node of ``schema``, with the resolver ``jsonschema`` itself builds; its
        references may name the documents of ``resources`` ((absolute URI, JSON text)
        pairs, read in the dialect of the validator class ``default`` unless they declare
        one; see :func:`resource_registry`) and the metaschemas ``jsonschema`` ships,
        nothing else."""
        if resources:
            document = self._document
            document.registry = resource_registry(resources, default)
            document.unchecked = {uri for uri, _ in resources}
            document.default = default
        self._validator = self.validator_class(schema, format_checker=FormatChecker(),
                                               registry=self._document.registry)
        resolver = self._validator._resolver  # jsonschema's own: identical resolution
        return Node(schema, resolver, _base_of(resolver), "#", self)

    def switched(self, schema: Any, pointer: str) -> Dialect:
        """The dialect of ``schema``, a sub-schema read in this one: its own where it
        declares another ``$schema`` (a 2020-12 document referring to the draft-04
        metaschema reads that metaschema as draft 4, as ``jsonschema`` does), else this."""
        declared = schema.get("$schema") if isinstance(schema, dict) else None
        if not isinstance(declared, str):
            return self
        cls = validators.validator_for(schema, default=self.validator_class)
        if cls is self.validator_class:
            return self
        if cls.__name__ == "Draft3Validator":
            raise UnsupportedSchemaError("$schema", pointer + "/$schema",
                                         "draft-03 is not supported")
        document = self._document
        found = document.dialects.get(cls)
        if found is None:
            found = Dialect(cls)
            found._validator = cls(schema, format_checker=FormatChecker(),
                                   registry=document.registry)
            found._document = document  # one dialect per class in a document
            document.add(found)
            # The first switch is made from the root's dialect: sub-schemas switched
            # back to its class find it here.
            document.dialects.setdefault(self.validator_class, self)
        return found

    def release(self) -> None:
        """Forget the other dialects of the document (they and this one refer to each
        other once a sub-schema switched: a cycle for the collector)."""
        self._document.dialects.clear()

    def is_valid(self, node: Node, instance: Any) -> bool:
        """Whether ``instance`` validates against ``node`` (formats checked)."""
        if self._validator is None:  # pragma: no cover - root() is always called first
            raise RuntimeError("Dialect.root() must be called first")
        schema = node.schema
        if isinstance(schema, dict):
            types = self._only_types(node)
            if types is not None:
                # Nothing but ``type`` asserts (an enum's own ``{"type": "string"}``): asked
                # of jsonschema's own type checker, without a validator made per value
                # (~40 µs each, a tenth of a small schema's compile).
                checker = self._validator.TYPE_CHECKER
                return not types or any(checker.is_type(instance, t) for t in types)
        if node.skip and isinstance(schema, dict):
            # Keywords a combinator split handled are not part of this node any more.
            key = node.key
            schema = self._stripped.get(key)
            if schema is None:
                schema = {k: v for k, v in node.schema.items() if k not in node.skip}
                self._stripped[key] = schema
        validator = self._validator.evolve(schema=schema, _resolver=node.resolver)
        return bool(validator.is_valid(instance))

    def _only_types(self, node: Node) -> tuple[str, ...] | None:
        """The type names of a dict schema node whose only asserting keyword is ``type``
        (``()`` when none asserts); ``None`` when any other keyword asserts (memoized)."""
        key = node.key
        found: tuple[str, ...] | None | Literal[False] = self._type_only.get(key, False)
        if found is False:
            asserting = [k for k in node.schema if k in self.keywords and k not in node.skip]
            found = None
            if not asserting:
                found = ()
            elif asserting == ["type"]:
                declared = node.schema["type"]
                if isinstance(declared, str):
                    found = (declared,)
                elif isinstance(declared, list) and all(isinstance(t, str) for t in declared):
                    found = tuple(declared)
            self._type_only[key] = found
        return found


_rust_meta: Any = None  # jsonschema_rs.meta once imported; False when not installed
MAX_DOCUMENT_DEPTH = 1_000
"""Levels of nested objects and arrays a schema document may have (a sub-schema in an
``allOf`` is two levels down); the compiler's own limit on nested sub-schemas is
:data:`~constrain.json_compiler.MAX_NESTING`."""
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


def _fast_metaschema_valid(schema: Any, validator_class: Any) -> bool:
    """Whether ``jsonschema-rs`` confirms ``schema`` against the metaschema ``jsonschema``
    would use; ``False`` means "not confirmed", never "invalid"."""
    global _rust_meta
    if _rust_meta is None:
        try:
            from jsonschema_rs import meta

            _rust_meta = meta
        except ImportError:
            _rust_meta = False
    if _rust_meta is False or not isinstance(schema, dict):
        return False
    # jsonschema-rs reads "$schema" like jsonschema; without one it assumes 2020-12.
    if "$schema" not in schema and validator_class is not Draft202012Validator:
        return False
    try:
        return bool(_rust_meta.is_valid(schema))
    except Exception:  # noqa: BLE001 - an unknown "$schema" and the like: let jsonschema judge
        return False


def _plain_document(schema: Any) -> bool:
    """Whether every pattern compiles and every value is JSON (see :func:`not_json`), read
    level by level; ``False`` sends the schema to ``jsonschema``, then to :func:`not_json`
    for where. ``jsonschema`` also asserts the metaschema's "regex" format (a pattern
    Python cannot compile fails the schema); ``jsonschema-rs`` does not, so every pattern
    is compiled here (data, such as an ``enum``'s values, is not read for patterns).

    Raises :class:`~constrain.errors.ResourceLimitError` for a document nested deeper than
    :data:`MAX_DOCUMENT_DEPTH`, before any recursive reader sees it: ``jsonschema-rs``
    overflowed its stack (a segmentation fault) on 30,000 nested ``items``."""
    import re

    level: list[Any] = [schema]
    data: list[Any] = []
    depth = 0
    while level or data:
        depth += 1
        if depth > MAX_DOCUMENT_DEPTH:
            raise ResourceLimitError("document_depth", MAX_DOCUMENT_DEPTH,
                                     "the schema document nests deeper than this")
        following: list[Any] = []
        following_data: list[Any] = []
        for node in level:
            if isinstance(node, dict):
                for key, value in node.items():
                    if type(key) is not str:
                        return False
                    if key in _DATA_KEYWORDS:
                        following_data.append(value)
                        continue
                    if key == "pattern" and isinstance(value, str):
                        patterns = [value]
                    elif key == "patternProperties" and isinstance(value, dict):
                        patterns = list(value)
                    else:
                        patterns = []
                    for pattern in patterns:
                        try:
                            re.compile(pattern)
                        except (re.error, OverflowError, RecursionError):
                            return False
                    following.append(value)
            elif type(node) not in _PLAIN_SCALARS and not _spread(node, following):
                return False
        for node in data:
            if type(node) not in _PLAIN_SCALARS and not _spread(node, following_data):
                return False
        level, data = following, following_data
    return True


_PLAIN_SCALARS = frozenset({str, int, bool, type(None)})


def _spread(node: Any, out: list[Any]) -> bool:
    """Append the values of a dict or the items of a list to ``out``; ``False`` where
    ``node`` (or a key of it) is not JSON."""
    if isinstance(node, dict):
        if not all(type(key) is str for key in node):
            return False
        out.extend(node.values())
        return True
    if isinstance(node, list):
        out.extend(node)
        return True
    return _is_json_scalar(node)


def not_json(value: Any) -> tuple[str, Any] | None:
    """The first part of ``value`` that is no JSON value, as (JSON pointer relative to
    ``value``, that part), or ``None``. JSON is what ``json.loads`` makes (with
    ``parse_float=Decimal`` too): dicts with string keys, lists, strings, numbers
    (finite: ``json.loads`` also reads ``NaN`` and ``Infinity``), booleans and null.

    >>> not_json({"enum": [1, "a", None]}) is None
    True
    >>> not_json({"enum": [1, float("nan")]}), not_json({"const": (1, 2)})
    (('/enum/1', nan), ('/const', (1, 2)))
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        pointer, node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if type(key) is not str:
                    return f"{pointer}/{key}", key
                stack.append((f"{pointer}/{escape_pointer(key)}", item))
        elif isinstance(node, list):
            stack.extend((f"{pointer}/{i}", item) for i, item in enumerate(node))
        elif not _is_json_scalar(node):
            return pointer, node
    return None


def _is_json_scalar(value: Any) -> bool:
    if value is None or isinstance(value, (str, int)):  # bool is an int
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, Decimal) and value.is_finite()


def _base_of(resolver: Any) -> str:
    # referencing keeps the base URI private; it only serves as part of a memo key here.
    return str(getattr(resolver, "_base_uri", ""))


_NO_KEYWORDS: frozenset[str] = frozenset()


@dataclass(frozen=True, eq=False, slots=True, init=False)
class Node:
    """A sub-schema in its reference scope (see the module docstring)."""

    schema: Any
    resolver: Any
    base: str
    pointer: str
    dialect: Dialect = field(repr=False)
    skip: frozenset[str] = _NO_KEYWORDS
    scope: tuple[str, ...] = ()
    _asserting: frozenset[str] = field(default=_NO_KEYWORDS, repr=False)

    # Written out, as the grammar's nodes are: the generated frozen __init__ sets each
    # field through object.__setattr__ by name, and a compile makes a few nodes per
    # property.
    def __init__(self, schema: Any, resolver: Any, base: str, pointer: str, dialect: Dialect,
                 skip: frozenset[str] = _NO_KEYWORDS, scope: tuple[str, ...] = ()) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "schema", schema)
        setattr_(self, "resolver", resolver)
        setattr_(self, "base", base)
        setattr_(self, "pointer", pointer)
        setattr_(self, "dialect", dialect)
        setattr_(self, "skip", skip)
        setattr_(self, "scope", scope)
        # The keywords get() answers for: the dialect's, less those skipped (none for a
        # boolean schema). Asked ~30 times a property, each a single membership test.
        setattr_(self, "_asserting", (dialect.keywords - skip if skip else dialect.keywords)
                 if isinstance(schema, dict) else _NO_KEYWORDS)

    @property
    def key(self) -> tuple[int, str, frozenset[str], tuple[str, ...]]:
        """Identity of what this node asserts (same sub-schema, scope and skipped keywords)."""
        return (id(self.schema), self.base, self.skip, self.scope)

    def get(self, keyword: str, default: Any = None) -> Any:
        """The value of an asserting ``keyword`` of this node (``default`` when absent,
        skipped, or not a keyword of the dialect)."""
        if keyword in self._asserting:
            return self.schema.get(keyword, default)
        return default

    def asserts_any(self, keywords: frozenset[str]) -> bool:
        """Whether this node asserts one of ``keywords`` (as :meth:`has` would say)."""
        return not self._asserting.isdisjoint(keywords.intersection(self.schema)) if (
            self._asserting) else False

    def has(self, keyword: str) -> bool:
        return self.get(keyword, _MISSING) is not _MISSING

    def without(self, *keywords: str) -> Node:
        """This node with ``keywords`` marked as handled."""
        return Node(self.schema, self.resolver, self.base, self.pointer, self.dialect,
                    self.skip | frozenset(keywords), self.scope)

    def child(self, value: Any, *path: str | int) -> Node:
        """The sub-schema ``value`` found at ``path`` below this node."""
        resolver, base, dialect = self.resolver, self.base, self.dialect
        pointer = self.pointer + "".join("/" + escape_pointer(p) for p in path)
        # Only a schema with an identifier starts a scope of its own ("id" in drafts 4
        # and 6, "$id" since): asking referencing of every sub-schema cost ~15% of lowering.
        # The identifier is read in the parent's dialect, even where the schema declares
        # another $schema: jsonschema descends with the parent's specification.
        if isinstance(value, dict) and ("$id" in value or "id" in value):
            resource = dialect.specification.create_resource(value)
            ident = _resource_id(resource, value, pointer)
            if isinstance(ident, str):
                resolver = resolver.in_subresource(resource)
                base = urljoin(base, ident)
        if isinstance(value, dict) and "$schema" in value:
            dialect = dialect.switched(value, pointer)
        # A descent never changes the dynamic scope (jsonschema enters a sub-resource
        # without recording it): only references do.
        return Node(value, resolver, base, pointer, dialect, scope=self.scope)

    def synthetic(self, value: Any, *path: str | int) -> Node:
        """A schema made by the compiler for this node (e.g. a case of ``dependentRequired``);
        its pointer is the keyword it came from."""
        return self.child(value, *path)

    def resolve(self, ref: str, keyword: str = "$ref") -> Node:
        """The node ``ref`` names under ``keyword`` (one of :data:`REFERENCES`), in its own
        scope, as ``jsonschema`` resolves it.

        ``$dynamicRef`` (and ``$ref`` to a ``$dynamicAnchor``, which ``jsonschema`` resolves
        the same way) names the outermost resource of the dynamic scope (the resources
        references passed through) that holds the anchor; draft 2019-09's
        ``$recursiveRef`` the outermost of the innermost resources in a row that declare
        ``$recursiveAnchor``. The scope grows with every reference a recursion follows,
        but what any later resolution reads from it is finite: the resources with a
        dynamic anchor in the order of their outermost occurrence, and that outermost
        recursive resource. That is the node's ``scope``, part of its key, so a
        sub-schema reached under scopes that resolve differently is compiled once per
        scope, and a recursion meets finitely many. It is empty (nodes are keyed as
        before) in documents of other dialects and wherever no resource in the scope has
        such an anchor.
        """
        try:
            if keyword == "$recursiveRef":
                resolved = referencing.jsonschema.lookup_recursive_ref(self.resolver)
            else:
                resolved = self.resolver.lookup(ref)
        except referencing.exceptions.Unresolvable as e:
            raise SchemaError(f"cannot resolve {keyword} {ref!r}", self.pointer + "/" + keyword,
                              keyword) from e
        except (AttributeError, TypeError) as e:  # an "$id" on the way is not a string
            raise SchemaError(f"cannot resolve {keyword} {ref!r}: a schema on its path has "
                              f"an identifier that is not a string",
                              self.pointer + "/" + keyword, keyword) from e
        target = resolved.contents
        resolver = resolved.resolver
        if self.dialect._document.unchecked:
            self.dialect._document.check_resource(urljoin(self.base, ref), self.resolver)
        if keyword == "$recursiveRef":
            pointer = _base_of(resolver) + "#"
        else:
            pointer = ref if ref.startswith("#") else urljoin(self.base, ref)
        dialect = self.dialect.switched(target, pointer)
        document = dialect._document
        scope = self._dynamic_scope(resolver, document) if document.scoped else ()
        return Node(target, resolver, _base_of(resolver), pointer, dialect, scope=scope)

    def _dynamic_scope(self, resolver: Any, document: _Document) -> tuple[str, ...]:
        """What later resolutions read from ``resolver``'s dynamic scope (see
        :meth:`resolve`): the resources with a dynamic anchor, each at its outermost
        occurrence, outermost first; then, marked, the outermost of the innermost run of
        resources with a recursive anchor."""
        uris = [uri for uri, _ in resolver.dynamic_scope()]  # innermost first
        if not uris:
            return ()
        kept: list[str] = []
        if document.dynamic:
            for uri in reversed(uris):
                if uri not in kept and document.anchors(resolver, uri)[0]:
                    kept.append(uri)
        if document.recursive:
            outermost = None
            for uri in uris:
                if not document.anchors(resolver, uri)[1]:
                    break
                outermost = uri
            if outermost is not None:
                kept.append(_RECURSIVE_MARK + outermost)
        return tuple(kept)


_RECURSIVE_MARK = "\0"  # no URI holds a NUL

_MISSING = object()


class _Document:
    """What the dialects of one document share: the dialect of each validator class its
    sub-schemas declare (see :meth:`Dialect.switched`), whether any of them has dynamic
    or recursive references (only then can the dynamic scope matter), and which
    resources hold such anchors."""

    def __init__(self, root: Dialect) -> None:
        self.dialects: dict[Any, Dialect] = {}  # filled at the first switch
        self.registry: referencing.Registry[Any] = _NO_RETRIEVAL
        self.unchecked: set[str] = set()  # documents given, not yet reached
        self.default: Any = Draft202012Validator
        self.dynamic = False
        self.recursive = False
        self._anchors: dict[str, tuple[bool, bool]] = {}
        self._read(root)

    @property
    def scoped(self) -> bool:
        return self.dynamic or self.recursive

    def add(self, dialect: Dialect) -> None:
        self.dialects[dialect.validator_class] = dialect
        self._read(dialect)

    def _read(self, dialect: Dialect) -> None:
        # Before any node of the dialect is made: a resource with such an anchor is
        # entered by a reference, which makes its dialect first.
        self.dynamic = self.dynamic or "$dynamicRef" in dialect.keywords
        self.recursive = self.recursive or "$recursiveRef" in dialect.keywords

    def check_resource(self, reference: str, resolver: Any) -> None:
        """Check the given document ``reference`` (an absolute URI) names against its
        metaschema, the first time one is reached (only then: one bad document does not
        fail every schema given it); :class:`SchemaError` with its URI in the pointer."""
        uri = urldefrag(reference)[0]
        if uri not in self.unchecked:
            return
        self.unchecked.discard(uri)
        document = resolver.lookup(uri).contents
        try:
            dialect = Dialect.for_schema(document, default=self.default)
            dialect.check_schema(document)
        except SchemaError as e:
            raise SchemaError(e.reason, uri + (e.pointer or "#"), e.keyword) from e

    def anchors(self, resolver: Any, uri: str) -> tuple[bool, bool]:
        """Whether the resource at ``uri`` holds a ``$dynamicAnchor``, and whether it
        declares ``$recursiveAnchor`` (as ``jsonschema`` reads it: at its root)."""
        found = self._anchors.get(uri)
        if found is None:
            try:
                contents = resolver.lookup(uri).contents
            except referencing.exceptions.Unresolvable:  # pragma: no cover - was in scope
                contents = None
            found = self._anchors[uri] = (
                _holds_dynamic_anchor(contents),
                isinstance(contents, dict) and bool(contents.get("$recursiveAnchor")))
        return found


@functools.lru_cache(maxsize=16)
def resource_registry(resources: tuple[tuple[str, str], ...],
                      default: Any) -> referencing.Registry[Any]:
    """A registry of the documents ``resources`` ((absolute URI, JSON text) pairs, as
    :class:`~constrain.json_schema.JsonSchemaOptions` keeps them) beside the shipped
    metaschemas; each is read in the dialect its ``$schema`` declares, else in that of
    the validator class ``default`` (checked when a reference first reaches it: see
    :meth:`_Document.check_resource`), except that an identifier that is not a string
    fails at once, with the document's URI: a lookup of a name no document has reads
    every identifier of every document."""
    made = []
    for uri, text in resources:
        try:
            document = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as e:
            raise SchemaError(f"the resource is not JSON: {e}", uri) from e
        dialect = Dialect.for_schema(document, default=default)
        resource = dialect.specification.create_resource(document)
        try:
            # What a lookup of a name no document has does to every document: one
            # identifier that is not a string would fail every such lookup, anywhere.
            referencing.Registry().with_resource(uri, resource).crawl()
        except (AttributeError, TypeError) as e:
            raise SchemaError("the resource has an identifier ($id or id) that is not a "
                              "string", uri) from e
        made.append((uri, resource))
    return _NO_RETRIEVAL.with_resources(made)


def _holds_dynamic_anchor(contents: Any) -> bool:
    """Whether a ``$dynamicAnchor`` key occurs anywhere in ``contents`` (one inside an
    embedded resource or in data only makes scopes finer than they need be)."""
    stack = [contents]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if "$dynamicAnchor" in value:
                return True
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _resource_id(resource: Any, schema: dict[str, Any], pointer: str) -> Any:
    """``resource.id()``; a :class:`SchemaError` where the identifier keyword is not a string.

    The metaschema check only reaches sub-schemas under keywords it knows; one reached by
    ``$ref`` into an unknown keyword (``{"id": {"type": "integer"}}`` under a property
    list misplaced as ``items``) may carry a non-string ``id``, on which ``referencing``
    (and so ``jsonschema`` itself) fails with an ``AttributeError``.
    """
    try:
        return resource.id()
    except (AttributeError, TypeError) as e:
        keyword = next((k for k in ("$id", "id") if k in schema and not isinstance(schema[k], str)),
                       "$id")
        raise SchemaError(f"invalid schema: {keyword} is not a string", f"{pointer}/{keyword}",
                          keyword) from e
