"""JSON Schema compiler, keyword by keyword, at the byte level.

Every case compiles a schema and checks that the automaton accepts the ``json.dumps`` text
of an instance exactly when ``jsonschema`` (the schema's own dialect, formats checked)
accepts the instance.
"""

from __future__ import annotations

import json
from decimal import Decimal
from functools import cache
from typing import Any

import jsonschema
import numpy as np
import pytest
from jsonschema import Draft202012Validator, FormatChecker

from constrain.automaton import Automaton
from constrain.errors import ResourceLimitError, SchemaError, UnsupportedSchemaError
from constrain.grammar import Grammar
from constrain.json_compiler import Compiler
from constrain.json_schema import (
    ApproximationWarning,
    JsonSchemaOptions,
    UnknownFormatWarning,
    schema_to_grammar,
)
from constrain.vocab import Vocabulary

D4 = "http://json-schema.org/draft-04/schema#"
D7 = "http://json-schema.org/draft-07/schema#"


@cache
def _automaton(schema_text: str, options: JsonSchemaOptions) -> Automaton:
    return Automaton(schema_to_grammar(json.loads(schema_text), options))


def accepts(schema: Any, text: str | bytes, options: JsonSchemaOptions | None = None) -> bool:
    a = _automaton(json.dumps(schema), options or JsonSchemaOptions())
    return a.matches(text.encode() if isinstance(text, str) else text)


def verdict(schema: Any, instance: Any) -> bool:
    cls = jsonschema.validators.validator_for(schema, default=Draft202012Validator)
    return cls(schema, format_checker=FormatChecker()).is_valid(instance)


# (id, schema, instances): each instance is checked against jsonschema's verdict.
def _nested(depth: int) -> Any:
    """A value ``depth`` arrays deep."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


ARRAYS_FAILING_ITEMS = {"type": "array", "items": {"type": "object"},
                        "not": {"items": {"required": ["a"]}}}
NOT_MAX_ITEMS = {"not": {"maxItems": 2}}
NOT_MIN_ITEMS_AND_ITEMS = {"type": "array", "not": {"items": {"type": "integer"}, "minItems": 3}}
NOT_COUNT_RANGE = {"not": {"allOf": [{"minItems": 1, "maxItems": 3}, {"maxItems": 2}]}}
ONE_OF_ARRAYS = {"type": "object", "oneOf": [
    {"properties": {"xs": {"type": "array", "items": {"type": "object", "required": ["n"]}}}},
    {"properties": {"xs": {"type": "array", "items": {
        "type": "object", "required": ["n", "m"], "properties": {"m": {"type": "boolean"}}}}}}]}
IF_ITEMS = {"type": "array", "if": {"items": {"type": "integer"}},
            "then": {"items": {"minimum": 0}},
            "else": {"items": {"type": ["string", "integer", "object"]}}}


CASES: list[tuple[str, Any, list[Any]]] = [
    ("type-single", {"type": "string"}, ["a", 1, None, [], {}]),
    ("type-list", {"type": ["integer", "null"]}, [1, None, 1.5, "1", True]),
    ("type-integer-2020", {"type": "integer"}, [3, -0, 3.0, 3.5, 1e16, True]),
    ("type-integer-draft4", {"$schema": D4, "type": "integer"}, [3, 3.0, 3.5]),
    ("type-number", {"type": "number"}, [1, -2.5e-3, 1e300, "1", False]),
    ("type-boolean-null", {"type": ["boolean", "null"]}, [True, False, None, 0, "true"]),
    ("true-schema", True, [1, "x", [{"a": [None]}], {"k": {"k": {}}}]),
    ("false-schema", False, [1, None, {}]),
    ("empty-schema", {}, [0, "é", [1, [2, [3]]], {"a": {"b": {"c": None}}}]),
    ("enum-mixed", {"enum": ["red", 1, None, [1, "x"], {"a": 1, "b": [True]}]},
     ["red", "blue", 1, 1.0, 2, None, [1, "x"], ["x", 1], {"b": [True], "a": 1},
      {"a": 1}, True]),
    ("enum-bool-vs-int", {"enum": [1, True]}, [1, True, 1.0, False, 0]),
    ("const-object", {"const": {"x": 1, "y": "z"}}, [{"y": "z", "x": 1}, {"x": 1}, 1]),
    ("const-with-type", {"const": 2, "type": "integer"}, [2, 2.0, 3]),
    # 2**53 is a float exactly, so its float spelling parses to an equal number; one more
    # is not (the JSON Schema Test Suite's "float and integers are equal up to 64-bit
    # representation limits").
    ("const-2-to-the-53", {"const": 2**53},
     [2**53, 2**53 - 1, float(2**53), float(2**53 - 1), 2**53 + 1]),
    ("enum-filtered-by-siblings", {"enum": ["a", "bb", "ccc"], "minLength": 2},
     ["a", "bb", "ccc"]),
    ("enum-draft4-integer", {"$schema": D4, "enum": [1, 2.5], "type": "integer"},
     [1, 1.0, 2.5]),
    # enum values filtered by a sibling or an allOf part that asserts only its type
    # (checked without a validator per value) or more (through jsonschema)
    ("enum-type-list-annotated", {"enum": [1, 1.0, "1", True, None, 2.5, [1]],
                                   "type": ["integer", "null"], "description": "d"},
     [1, 1.0, "1", True, None, 2.5, [1]]),
    ("enum-draft7-integer-floats", {"$schema": D7, "enum": [3, 3.0, 3.5, False],
                                    "type": "integer", "title": "t"},
     [3, 3.0, 3.5, False, 0]),
    ("enum-allof-type-parts", {"enum": ["a", 2, {"k": 1}, ["x"]],
                               "allOf": [{"type": ["string", "object"]}, {"title": "x"}]},
     ["a", 2, {"k": 1}, ["x"]]),
    ("enum-format-sibling", {"enum": ["2024-01-31", "2024-02-31", 7],
                             "type": ["string", "integer"], "format": "date"},
     ["2024-01-31", "2024-02-31", 7]),
    # strings
    ("minLength-code-points", {"type": "string", "minLength": 2, "maxLength": 3},
     ["a", "ab", "abc", "abcd", "😀😀", "é", "\u00e9\u00e9\u00e9"]),
    ("pattern-search", {"type": "string", "pattern": "[0-9]{3}"},
     ["123", "ab123cd", "12", "", "a1b2c3"]),
    ("pattern-anchored", {"pattern": "^[a-z]+-[0-9]+$"}, ["abc-12", "abc-", "Abc-1", 5]),
    ("format-date", {"type": "string", "format": "date"},
     ["2024-02-29", "2023-02-29", "2024-13-01", "x"]),
    ("format-email", {"format": "email"}, ["a@b.co", "no-at-sign", 3]),
    ("format-uuid", {"format": "uuid"},
     ["123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000"]),
    ("format-ipv4", {"format": "ipv4"}, ["192.168.0.1", "256.1.1.1", "1.2.3"]),
    ("not-pattern-python-semantics", {"type": "string", "not": {"pattern": "^\\d+$"}},
     ["12", "\u0661\u0662", "12\n", "ab", ""]),
    ("not-format-email", {"type": "string", "not": {"format": "email"}}, ["a@b", "plain"]),
    # "$" inside a repeat (MaskBench Github_hard/o60770 and four more)
    ("pattern-end-anchor-in-repeat", {"pattern": r"^(\/?((\.{2})|([a-z0-9\-]*))($|\/))*$"},
     ["a/b", "../x/", "/a/b/", "a//b", "", "A/b", "a/B", "a$", "..a", 3]),
    ("pattern-end-anchor-in-plus", {"pattern": "(a$|b)+"}, ["a", "ba", "bb", "ab", "c", ""]),
    ("not-format-date", {"type": "string", "not": {"format": "date"}},
     ["2024-01-01", "2024-02-30", "x"]),
    # Complemented formats take a language holding all the checker accepts: an `if` on a
    # format once rejected every string that lacked it.
    ("not-format-uuid", {"not": {"format": "uuid"}},
     ["a", "123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000", 1]),
    ("if-format-uuid", {"if": {"format": "uuid"}, "then": {"maxLength": 3}},
     ["a", "abcd", "123e4567-e89b-12d3-a456-426614174000", 7]),
    ("if-format-date-time", {"if": {"format": "date-time"}, "then": {"maxLength": 20},
                             "else": {"maxLength": 4}},
     ["2024-01-15T10:30:00Z", "2024-01-15T10:30:00.5Z", "2024-01-15T10:30:00Z\n", "abcd",
      "abcde"]),
    ("not-format-uri", {"type": "string", "not": {"format": "uri"}},
     ["https://example.com", "not a uri", "http://[::1.02.3.4]/", "a:b\n", "/relative"]),
    ("not-format-hostname", {"not": {"format": "hostname"}},
     ["example.com", "-bad.com", "a..b", "٣.example", "example.com\n", "a b"]),
    ("oneOf-formats", {"oneOf": [{"format": "ipv4"}, {"format": "hostname"}]},
     ["1.2.3.4", "example.com", "1.2.3", "-x", 5]),
    # Branches are apart only if each kept part misses all the other accepts: a kept
    # pattern or format may be smaller than its branch ("٣" is a \d to Python's re).
    ("oneOf-kept-pattern-vs-const", {"oneOf": [{"type": "string", "pattern": "^\\d$"},
                                               {"const": "٣"}]}, ["٣", "3", "x"]),
    ("oneOf-unicode-word", {"oneOf": [{"type": "string", "pattern": "^\\w+$"},
                                      {"type": "string", "pattern": "é"}]},
     ["é", "a", "éa", "x é"]),
    ("oneOf-format-vs-enum", {"oneOf": [{"format": "date-time"},
                                        {"enum": ["2020-01-01T00:00:00Z\n", "now"]}]},
     ["2020-01-01T00:00:00Z\n", "2020-01-01T00:00:00Z", "now", "x"]),
    ("oneOf-objects-kept-value", {"oneOf": [
        {"type": "object", "required": ["k"], "properties": {"k": {"pattern": "^\\d$"}}},
        {"type": "object", "required": ["k"], "properties": {"k": {"const": "٣"}}}]},
     [{"k": "٣"}, {"k": "3"}, {"k": "x"}, {}]),
    ("string-escapes", {"enum": ["a\"b", "tab\there", "é/\\", "line\nbreak", "\u0000"]},
     ["a\"b", "tab\there", "é/\\", "line\nbreak", "\u0000", "ab"]),
    # numbers
    ("minimum-maximum", {"type": "number", "minimum": -1.5, "maximum": 10},
     [-1.5, -1.6, 0, 10, 10.0, 10.01, 5e0]),
    ("exclusive-2020", {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
     [0, 0.5, 1, 1e-9, 0.999]),
    ("exclusive-draft4-boolean",
     {"$schema": D4, "type": "number", "minimum": 0, "exclusiveMinimum": True,
      "maximum": 5, "exclusiveMaximum": False}, [0, 0.1, 5, 5.1]),
    ("integer-range", {"type": "integer", "minimum": 10, "maximum": 99},
     [9, 10, 50, 99, 100, 50.0, -50]),
    ("multipleOf-int", {"type": "integer", "multipleOf": 7}, [0, 7, -14, 15, 700, 21.0]),
    ("multipleOf-decimal", {"type": "number", "multipleOf": 0.5, "maximum": 3},
     [0, 0.5, 2.5, 3, 3.5, 0.25]),
    ("two-multipleOf", {"allOf": [{"multipleOf": 2}, {"multipleOf": 3}], "type": "integer"},
     [6, 12, 4, 9]),
    # objects
    ("properties-required", {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a"]},
     [{"a": 1}, {"a": 1, "b": "x"}, {"b": "x", "a": 1}, {"b": "x"}, {"a": "1"},
      {"a": 1, "c": [1, {"d": None}]}, {}, []]),
    ("additionalProperties-false", {
        "type": "object", "properties": {"a": {"type": "integer"}},
        "additionalProperties": False},
     [{}, {"a": 1}, {"a": 1, "b": 2}, {"b": 2}]),
    ("additionalProperties-schema", {
        "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
     [{"a": 1, "x": "s"}, {"x": 1}, {"x": "s", "a": 2, "y": "t"}]),
    ("patternProperties-overlap", {
        "type": "object",
        "patternProperties": {"^x": {"type": "integer"}, "y$": {"minimum": 10}},
        "additionalProperties": False},
     [{"x1": 1}, {"xy": 12}, {"xy": 5}, {"ay": 20}, {"ay": 2}, {"b": 1}, {"x": "s"}]),
    ("many-disjoint-patterns", {"type": "object", "additionalProperties": False,
                                "patternProperties": {f"^k{i}:(a|b)$": {"type": "integer"}
                                                      for i in range(10)}},
     [{"k1:a": 1, "k9:b": 2}, {"k1:c": 1}, {"k3:a": "x"}, {}]),
    ("property-matching-pattern", {
        "properties": {"id": {"type": "integer"}}, "patternProperties": {"^i": {"minimum": 5}}},
     [{"id": 6}, {"id": 4}, {"ix": 3}, {"ix": 9}]),
    ("propertyNames", {"type": "object", "propertyNames": {"maxLength": 3, "pattern": "^[a-z]"}},
     [{"abc": 1}, {"abcd": 1}, {"Ab": 1}, {}]),
    ("propertyNames-listed-key", {
        "properties": {"long_name": {}, "ok": {}}, "propertyNames": {"maxLength": 4}},
     [{"ok": 1}, {"long_name": 1}]),
    ("min-maxProperties", {"type": "object", "minProperties": 1, "maxProperties": 2,
                           "additionalProperties": {"type": "integer"}},
     [{}, {"a": 1}, {"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 3}]),
    # Found by hypothesis: a breadth-first emptiness search of the start state (and a
    # best-first one whose estimate of the bytes left falls a byte short) writes every
    # subset of fewer members before any twelfth, past max_liveness_search.
    ("minProperties-most-of-many-keys", {
        "type": "object", "properties": {f"k{i}": {"type": "integer"} for i in range(14)},
        "required": ["k0", "k1"], "additionalProperties": False, "minProperties": 12},
     [{f"k{i}": i for i in range(12)}, {f"k{i}": i for i in range(11)},
      {f"k{i}": i for i in range(2, 14)}, {f"k{i}": i for i in range(14)}]),
    ("unlisted-keys-beside-shared-prefixes", {
        "properties": {k: {"type": "integer"} for k in ("ab", "abc", "b", "é")},
        "additionalProperties": {"type": "string"}},
     [{"a": "x"}, {"ab": "x"}, {"ab": 1, "abc": 2}, {"abcd": "x"}, {"abc": "x"}, {"é": "x"},
      {"éé": "x"}, {"": "x"}, {"b": 1, "bb": "y"}, {"e": "x"}, {"ab": 1, "a": 2}]),
    ("minProperties-free-form", {"type": "object", "minProperties": 2},
     [{}, {"a": 1}, {"a": {}, "b": [1]}, {"a": 1, "b": 2, "c": {"d": None}}]),
    ("maxProperties-listed-and-extra", {"properties": {"a": {}, "b": {"type": "string"}},
                                        "required": ["a"], "maxProperties": 2},
     [{"a": 1}, {"a": [], "z": {}}, {"a": 1, "b": "x", "z": 2}, {"z": 1}, {"b": "x"}]),
    ("dependentRequired", {"dependentRequired": {"card": ["billing"]}},
     [{}, {"card": 1, "billing": 2}, {"card": 1}, {"billing": 2}]),
    ("dependentSchemas", {"dependentSchemas": {"a": {"required": ["b"],
                                                      "properties": {"b": {"type": "string"}}}}},
     [{"a": 1, "b": "x"}, {"a": 1, "b": 2}, {"a": 1}, {"b": 2}]),
    ("dependencies-draft7", {"$schema": D7, "dependencies": {
        "a": ["b"], "c": {"properties": {"d": {"const": 1}}}}},
     [{"a": 1, "b": 1}, {"a": 1}, {"c": 1, "d": 1}, {"c": 1, "d": 2}, {"d": 2}]),
    ("dependencies-ignored-in-2020", {"dependencies": {"a": ["b"]}}, [{"a": 1}]),
    ("any-order-many-keys", {
        "type": "object", "required": [f"k{i}" for i in range(0, 12, 3)],
        "properties": {f"k{i}": {"type": "integer"} for i in range(12)},
        "additionalProperties": False},
     [{f"k{i}": i for i in reversed(range(12))}, {f"k{i}": i for i in (9, 6, 3, 0)},
      {f"k{i}": i for i in (9, 6, 3)}, {f"k{i}": i for i in (9, 6, 3, 0, 1)}]),
    ("nested-objects", {"type": "object", "properties": {
        "user": {"type": "object", "properties": {"name": {"type": "string"}},
                 "required": ["name"]}}, "required": ["user"]},
     [{"user": {"name": "x"}}, {"user": {}}, {"user": {"name": "x", "extra": [1]}}]),
    # arrays
    ("items", {"type": "array", "items": {"type": "integer"}}, [[], [1, 2], [1, "2"], [1.5]]),
    ("prefixItems", {"prefixItems": [{"type": "string"}, {"type": "integer"}],
                     "items": False}, [[], ["a"], ["a", 1], ["a", 1, 2], [1]]),
    ("items-array-draft7", {"$schema": D7, "items": [{"type": "string"}],
                            "additionalItems": {"type": "boolean"}},
     [["a"], ["a", True, False], ["a", 1], [1]]),
    ("min-maxItems", {"type": "array", "minItems": 2, "maxItems": 3},
     [[1], [1, 2], [1, 2, 3], [1, 2, 3, 4]]),
    ("contains", {"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 5}},
     [[], [1, 2], [1, 6], [6, 7]]),
    ("min-maxContains", {"type": "array", "items": {"type": "integer"},
                         "contains": {"const": 1}, "minContains": 2, "maxContains": 3},
     [[1], [1, 1], [1, 2, 1, 1], [1, 1, 1, 1], [2, 1, 2, 1, 2]]),
    # No array holds the count; every other value is valid (was an internal GrammarError).
    ("maxContains-below-minContains", {"contains": {"const": 1}, "minContains": 3,
                                       "maxContains": 1},
     [[1, 1, 1], [1], [], "x", {}, 3]),
    ("uniqueItems-enum", {"type": "array", "items": {"enum": ["a", "b", 1]},
                          "uniqueItems": True},
     [["a", "b", 1], ["a", "a"], [1, 1.0], [], ["b", 1, "a"]]),
    ("uniqueItems-closed-tuple", {"prefixItems": [{"enum": ["a", "b"]}, {"enum": ["a", "b"]}],
                                  "items": False, "uniqueItems": True},
     [["a", "b"], ["a", "a"], ["b"], ["b", "a", "a"]]),
    ("uniqueItems-boolean", {"items": {"type": "boolean"}, "uniqueItems": True},
     [[True, False], [True, True], []]),
    # combinators
    ("allOf-merge-objects", {"allOf": [
        {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
        {"properties": {"b": {"type": "string"}}, "required": ["b"]},
        {"properties": {"a": {"minimum": 0}}}]},
     [{"a": 1, "b": "x"}, {"b": "x", "a": 1}, {"a": -1, "b": "x"}, {"a": 1}]),
    ("anyOf-inside-allOf", {"type": "object", "additionalProperties": False,
                            "properties": {"r": {}, "t": {}, "i": {}},
                            "allOf": [{"required": ["r"]},
                                      {"anyOf": [{"required": ["t"]}, {"required": ["i"]}]}]},
     [{"r": 1, "t": 2}, {"i": 1, "r": 2}, {"r": 1}, {"t": 1}]),
    ("allOf-additional-scope", {"allOf": [
        {"properties": {"a": {}}, "additionalProperties": False},
        {"properties": {"a": {}, "b": {}}}]},
     [{"a": 1}, {"b": 1}, {}]),
    ("anyOf", {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer"}]},
     ["ab", "abc", 3, 3.5]),
    ("oneOf-disjoint-types", {"oneOf": [{"type": "string"}, {"type": "number"}]},
     ["x", 1, None]),
    ("oneOf-overlapping-numbers", {"oneOf": [{"type": "integer"}, {"minimum": 2}]},
     [1, 2, 2.5, -1.5, "s"]),
    ("oneOf-overlapping-strings", {"oneOf": [{"pattern": "^a"}, {"pattern": "b$"}]},
     ["ax", "xb", "ab", "xx", 1]),
    ("oneOf-enum-beside-pattern", {"oneOf": [{"enum": ["Roof", "Wall", "é\n", 3]},
                                             {"type": "string", "pattern": "^(R|é)"}]},
     ["Roof", "Wall", "é\n", "Rx", "éa", 3, "Q", 4]),
    ("oneOf-discriminator", {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
         "required": ["kind"]},
        {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]}]},
     [{"kind": "a", "x": 1}, {"kind": "b", "x": "s"}, {"kind": "c"}, {}]),
    ("oneOf-overlapping-closed-objects", {"oneOf": [
        {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
        {"properties": {"a": {"type": "number", "minimum": 5}, "b": {"type": "null"}},
         "additionalProperties": False}]},
     [{}, {"a": 1}, {"a": 7}, {"b": None}, {"a": 7.5}]),
    ("oneOf-overlapping-free-form-values", {"oneOf": [
        {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
        {"properties": {"a": {"minimum": 5}, "b": {}}, "additionalProperties": False}]},
     [{}, {"a": 1}, {"a": 7}, {"b": 1}, {"a": 7.5}, {"a": [1]}, {"a": {"x": [2]}, "b": [3]}]),
    ("not-free-form-value", {"properties": {"a": {}}, "not": {"properties": {"a": {"type": "array"}}}},
     [{"a": 1}, {"a": [1]}, {"a": {"b": [[[1]]]}}, {}]),
    ("contains-free-form", {"type": "array", "contains": {"type": "object", "required": ["id"]}},
     [[], [{"id": 1}], [1, {"x": 2}], [{"id": {"deep": [1, {"a": []}]}}, "s"]]),
    ("oneOf-required-free-form", {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
     [{"a": 1}, {"b": [2]}, {"a": 1, "b": 2}, {}, {"c": {"a": 1}}, "x"]),
    ("not-required-free-form", {"type": "object", "not": {"required": ["a", "b"]}},
     [{}, {"a": 1}, {"a": {}, "b": []}, {"c": 1}]),
    # Arrays failing an `items` of free-form objects: some element fails it, at any depth
    # (deeper than the regular stand-ins' 8 levels).
    ("not-items-free-form", ARRAYS_FAILING_ITEMS,
     [[], [{"a": 1}], [{"b": 1}], [{"a": 1}, {"b": _nested(10)}], [{"a": _nested(10)}, {"a": 2}],
      [1], [{"a": 1}, 2]]),
    ("oneOf-arrays-of-free-form-objects", ONE_OF_ARRAYS,
     [{}, {"xs": [{"n": 1}]}, {"xs": [{"n": 1, "m": True}]},
      {"xs": [{"n": 1, "m": True}, {"n": 2, "m": {"deep": _nested(10)}}]},
      {"xs": [{"m": True}]}, {"xs": "x"}, {"xs": [{"n": _nested(10), "m": False}, {"n": 3}]}]),
    ("if-items-free-form", IF_ITEMS,
     [[1, 2], [-1], ["a", {"x": _nested(10)}], [1.5], [[1]], []]),
    # Both in one schema: each is asserted (the enum was dropped where a const stood).
    ("const-and-enum", {"const": 2, "enum": [1.5, 2]}, [2, 2.0, 1.5, 3]),
    ("const-outside-enum", {"anyOf": [{"const": 3, "enum": [1, 2]}, {"type": "string"}]},
     [3, 1, "x"]),
    ("enum-and-const-array", {"anyOf": [{"enum": [[1, 2], [3]], "const": [1]}, {"const": [3]}]},
     [[3], [1, 2], [1]]),
    # Arrays failing a count: too few or too many elements, whatever they are.
    ("not-max-items", NOT_MAX_ITEMS,
     [[], [1, 2], [1, _nested(10), {}], [[1, 2, 3]], 5, None, {"a": [1, 2, 3]}]),
    ("not-min-items-and-items", NOT_MIN_ITEMS_AND_ITEMS,
     [[], [1], ["a"], [1, 2, 3], [1, 2, "a"], ["a", "b", "c", "d"], "abc"]),
    ("not-count-range-merged", NOT_COUNT_RANGE,
     [[], [1], [1, 2], [1, 2, 3], [{"x": _nested(10)}, 2, 3, 4], {}]),
    ("not-property-value", {"not": {"properties": {"kind": {"const": "x"}}}},
     [{"kind": "x"}, {"kind": "y", "z": {}}, {}, 3]),
    ("if-then-free-form", {
        "if": {"properties": {"country": {"const": "US"}}, "required": ["country"]},
        "then": {"required": ["zip"]}, "else": {"required": ["postcode"]}},
     [{"country": "US", "zip": {}}, {"country": "US"}, {"country": "FR", "postcode": 1},
      {"postcode": [1]}, {"zip": 1}]),
    # Any order over 2**20 key sets, values free-form (rule references): built lazily.
    ("many-required-free-form", {
        "properties": {f"k{i}": {} for i in range(20)},
        "required": [f"k{i}" for i in range(0, 20, 2)], "additionalProperties": False},
     [{f"k{i}": i for i in range(20)}, {f"k{i}": [i] for i in reversed(range(0, 20, 2))},
      {f"k{i}": {"x": None} for i in (*range(0, 20, 2), 5, 1)},
      {f"k{i}": i for i in range(0, 18, 2)}, {f"k{i}": i for i in (*range(0, 20, 2), 20)}]),
    ("many-keys-with-extras", {
        "properties": {f"k{i}": {"type": "integer"} for i in range(16)},
        "required": ["k15", "k3"], "additionalProperties": {"type": "string"}},
     [{"k3": 1, "k15": 2}, {"x": "a", "k15": 2, "y": "b", "k3": 1, "k0": 0},
      {"k15": 2, "x": "a"}, {"k3": 1, "k15": 2, "x": 1}, {"k3": "1", "k15": 2}]),
    ("oneOf-overlapping-recursive", {
        "$defs": {"res": {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/sel"}]},
                  "sel": {"oneOf": [
                      {"type": "object", "required": ["ios", "android"],
                       "properties": {"ios": {"$ref": "#/$defs/res"},
                                      "android": {"$ref": "#/$defs/res"}},
                       "additionalProperties": False},
                      {"type": "object", "additionalProperties": False, "minProperties": 1,
                       "patternProperties": {"^[a-z]{2,3}$": {"$ref": "#/$defs/res"}},
                       "not": {"required": ["ios"]}}]}},
        "$ref": "#/$defs/res"},
     ["x", {"ios": "a", "android": "b"}, {"en": "x"}, {"ios": "a"}, {},
      {"en": {"ios": "a", "android": {"fr": "b"}}}, {"ios": "a", "android": "b", "en": "c"}]),
    ("not-type", {"not": {"type": ["string", "null"]}}, [1, "x", None, [], {}]),
    ("not-enum", {"type": "string", "not": {"enum": ["a", "b"]}}, ["a", "c", ""]),
    ("not-required-closed", {"properties": {"a": {}, "b": {}}, "additionalProperties": False,
                             "not": {"required": ["a", "b"]}},
     [{}, {"a": 1}, {"a": 1, "b": 2}, {"b": 1}]),
    ("if-then-else", {"if": {"type": "integer"}, "then": {"minimum": 10},
                      "else": {"type": "string"}},
     [10, 5, "x", 1.5, None]),
    ("if-then-object", {
        "type": "object", "properties": {"kind": {"enum": ["a", "b"]}, "v": {"type": "integer"}},
        "additionalProperties": False,
        "if": {"properties": {"kind": {"const": "a"}}, "required": ["kind"]},
        "then": {"required": ["v"]}},
     [{"kind": "a", "v": 1}, {"kind": "a"}, {"kind": "b"}, {}, {"v": 2}]),
    ("if-else-only", {"if": {"type": "string"}, "else": {"type": "number"}},
     ["x", 1, None]),
    # references
    ("ref-defs", {"$defs": {"pos": {"type": "integer", "minimum": 1}},
                  "type": "array", "items": {"$ref": "#/$defs/pos"}}, [[1, 2], [0], ["1"]]),
    ("ref-definitions-draft4", {"$schema": D4, "definitions": {"s": {"type": "string"}},
                                "properties": {"a": {"$ref": "#/definitions/s"}}},
     [{"a": "x"}, {"a": 1}]),
    ("ref-siblings-ignored-draft7", {"$schema": D7, "definitions": {"s": {"type": "string"}},
                                     "$ref": "#/definitions/s", "maxLength": 1}, ["abc", 1]),
    ("ref-siblings-apply-2020", {"$defs": {"s": {"type": "string"}},
                                 "$ref": "#/$defs/s", "maxLength": 1}, ["a", "abc", 1]),
    ("ref-escaped-pointer", {"$defs": {"a/b": {"const": 1}, "c~d": {"const": 2},
                                       "e%f": {"const": 3}},
                             "anyOf": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/$defs/c~0d"},
                                       {"$ref": "#/$defs/e%25f"}]}, [1, 2, 3, 4]),
    ("ref-anchor", {"$defs": {"x": {"$anchor": "name", "type": "string"}},
                    "properties": {"n": {"$ref": "#name"}}}, [{"n": "s"}, {"n": 1}]),
    ("ref-id-relative", {"$id": "https://example.com/root.json",
                         "$defs": {"item": {"$id": "item.json", "type": "integer"}},
                         "items": {"$ref": "item.json"}}, [[1], ["x"]]),
    ("ref-chain", {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"type": "boolean"}},
                   "$ref": "#/$defs/a"}, [True, 1]),
    # Any value (``json.value``, entered as a rule) as a listed key's value, an unlisted
    # key's, array items, a contains, a oneOf branch and under not.
    ("any-value-places", {"type": "object", "required": ["a"],
                          "properties": {"a": {}, "b": {"type": "array", "contains": {}}},
                          "not": {"properties": {"a": {"const": 0}}}},
     [{"a": {"x": [1, {"y": None}]}, "z": [True, "s"]}, {"a": 0}, {"a": 1.5, "b": []},
      {"a": [], "b": [[]]}, {"b": [1]}, {"a": "0", "c": {}}, {"a": None, "a2": [{}]}]),
    # Every object of the first branch is one of the second's (Github_medium/o25763):
    # only the second's objects outside the first are valid.
    ("oneOf-branch-within-another", {"oneOf": [
        {"type": "object", "required": ["a", "b"],
         "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
         "oneOf": [{"required": ["c"]}, {"required": ["d"]}]},
        {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}]},
     [{"a": "x"}, {"a": "x", "b": 1, "c": 1}, {"a": "x", "b": 1}, {"a": "x", "b": "s"},
      {"a": "x", "b": 1, "c": 1, "d": 2}, {"a": 1}, {"b": 1, "c": 1}]),
    ("any-value-one-of", {"oneOf": [{}, {"type": "string"}], "$comment": "not a string"},
     ["s", 1, [["x"]], {"k": "v"}, None]),
    ("any-value-root", True, [{"a": [1, {"b": None}]}, [], "x", 0]),
]


def _cases() -> list[Any]:
    out = []
    for name, schema, instances in CASES:
        for i, instance in enumerate(instances):
            out.append(pytest.param(schema, instance, id=f"{name}-{i}"))
    return out


@pytest.mark.parametrize(("schema", "instance"), _cases())
def test_matches_jsonschema(schema: Any, instance: Any) -> None:
    expected = verdict(schema, instance)
    for ensure_ascii in (False, True):
        text = json.dumps(instance, ensure_ascii=ensure_ascii)
        assert accepts(schema, text) == expected, text


LINKED_LIST = {
    "$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer"}, "next": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/node"}]}},
        "required": ["value", "next"], "additionalProperties": False}},
    "$ref": "#/$defs/node",
}
TREE = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}},
    "required": ["name"],
}
# A recursion through an overlapping-looking oneOf whose branches are told apart by their
# failures: a reference marker the unfolding left in a lazy node's needs reached the
# automaton as an unknown rule (a KeyError; MaskBench Github_medium/o39146).
EXCEPTION_CHAIN = {
    "type": "object",
    "properties": {"error": {"$ref": "#/definitions/exception"}},
    "definitions": {
        "exception": {"type": "object", "required": ["type"], "properties": {
            "type": {"type": "string"}, "causedBy": {"$ref": "#/definitions/maybe"}}},
        "cycle": {"type": "object", "additionalProperties": False,
                  "required": ["circularReference"],
                  "properties": {"circularReference": {"$ref": "#/definitions/exception"}}},
        "maybe": {"oneOf": [{"$ref": "#/definitions/exception"}, {"$ref": "#/definitions/cycle"}]},
    },
}



def _tagged(first: str, second: str) -> dict[str, Any]:
    """Two recursive object types in a ``oneOf``, each requiring ``@type`` with its own
    tag (MaskBench Github_hard/o3905): told apart by the tags while both are still being
    compiled, where equal tags make them overlap."""
    def either() -> dict[str, Any]:  # a fresh copy per place, as parsed JSON has
        return {"oneOf": [{"$ref": "#/$defs/direct"}, {"$ref": "#/$defs/csv"}]}

    def kind(tag: str, key: str) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["@type", key],
                "properties": {"@type": {"enum": [tag]}, key: {"type": "string"},
                               "inner": {"type": "array", "items": either()}}}
    return {"$defs": {"direct": kind(first, "data"), "csv": kind(second, "file")},
            "type": "object", "properties": {"inputs": {"type": "array", "items": either()}}}


TAGGED, TAGGED_ALIKE = _tagged("direct", "csv"), _tagged("same", "same")
# Two recursions told apart only through each other: a proof that they are disjoint would
# need itself first.
MIRRORED = {"oneOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}], "$defs": {
    tag: {"type": "object", "required": ["a"], "additionalProperties": False, "properties": {
        "a": {"anyOf": [{"$ref": f"#/$defs/{tag}"}, {"const": tag.lower()}]}}}
    for tag in "AB"}}


# Counted members whose values recurse, past the eight keys tracked one by one: a
# condition that is not empty (Github_hard/o62820), a step with exactly one key
# (JsonSchemaStore/circleciconfig), one that must be a given key.
NONEMPTY = {"$ref": "#/$defs/c", "$defs": {"c": {
    "type": "object", "minProperties": 1, "additionalProperties": False, "properties": {
        "and": {"type": "array", "items": {"$ref": "#/$defs/c"}}, "not": {"$ref": "#/$defs/c"},
        **{f"k{i}": {"type": "string"} for i in range(8)}}}}}
ONE_KEY = {"$ref": "#/$defs/step", "$defs": {"step": {
    "type": "object", "minProperties": 1, "maxProperties": 1, "properties": {
        "steps": {"type": "array", "items": {"$ref": "#/$defs/step"}},
        **{f"k{i}": {"type": "string"} for i in range(9)}}}}}
ONE_REQUIRED = {"$ref": "#/$defs/step", "$defs": {"step": {
    "type": "object", "maxProperties": 1, "required": ["steps"], "properties": {
        "steps": {"type": "array", "items": {"$ref": "#/$defs/step"}},
        **{f"k{i}": {"type": "string"} for i in range(9)}}}}}


def _linked(depth: int, bad: bool = False) -> Any:
    node: Any = None
    for i in range(depth):
        node = {"value": "x" if bad and i == 0 else i, "next": node}
    return node


def _tree(depth: int) -> Any:
    node: Any = {"name": "leaf"}
    for i in range(depth):
        node = {"children": [node, {"name": str(i)}], "name": f"n{i}"}
    return node


@pytest.mark.parametrize(("schema", "instance"), [
    pytest.param(LINKED_LIST, _linked(10), id="linked-list-10"),
    pytest.param(LINKED_LIST, _linked(10, bad=True), id="linked-list-10-bad-leaf"),
    pytest.param(TREE, _tree(10), id="tree-10"),
    pytest.param(TREE, {"children": [_tree(3)]}, id="tree-missing-name"),
    pytest.param(EXCEPTION_CHAIN, {"error": {"type": "a", "causedBy": {
        "circularReference": {"type": "b", "causedBy": {"type": "c"}}}}}, id="chain-cycle"),
    pytest.param(EXCEPTION_CHAIN, {"error": {"type": "a", "causedBy": {"type": "b", "x": 1}}},
                 id="chain-exception"),
    pytest.param(EXCEPTION_CHAIN, {"error": {"type": "a", "causedBy": {}}}, id="chain-neither"),
    pytest.param(EXCEPTION_CHAIN, {"error": {"type": "a", "causedBy": {
        "circularReference": {"type": "b"}, "type": "c"}}}, id="chain-cycle-with-extra-key"),
    pytest.param(TAGGED, {"inputs": [{"@type": "direct", "data": "x", "inner": [
        {"@type": "csv", "file": "f", "inner": [{"@type": "direct", "data": "y"}]}]}]},
                 id="tagged"),
    pytest.param(TAGGED, {"inputs": [{"@type": "direct", "file": "f"}]}, id="tagged-wrong-key"),
    pytest.param(TAGGED, {"inputs": [{"@type": "csv", "file": "f", "inner": [
        {"@type": "csv", "data": "y"}]}]}, id="tagged-inner-wrong-key"),
    pytest.param(TAGGED_ALIKE, {"inputs": [{"@type": "same", "data": "x"}]},
                 id="tagged-alike-one"),
    pytest.param(TAGGED_ALIKE, {"inputs": [{"@type": "same", "data": "x", "file": "f"}]},
                 id="tagged-alike-both"),
    pytest.param(TAGGED_ALIKE, {"inputs": [{"@type": "same", "file": "x", "inner": [
        {"@type": "same", "data": "x", "file": "y"}]}]}, id="tagged-alike-nested-both"),
    pytest.param(MIRRORED, {"a": {"a": "b"}}, id="mirrored-b"),
    pytest.param(MIRRORED, {"a": {"a": {"a": "a"}}}, id="mirrored-a"),
    pytest.param(MIRRORED, {"a": {"a": "c"}}, id="mirrored-neither"),
    pytest.param(NONEMPTY, {"and": [{"k1": "a"}, {"not": {"k7": "b", "k0": "c"}}]},
                 id="nonempty"),
    pytest.param(NONEMPTY, {"and": []}, id="nonempty-empty-list"),
    pytest.param(NONEMPTY, {}, id="nonempty-empty"),
    pytest.param(NONEMPTY, {"and": [{"k1": "a"}, {"not": {}}]}, id="nonempty-inner-empty"),
    pytest.param(NONEMPTY, {"k1": "a", "k1x": "b"}, id="nonempty-unlisted"),
    pytest.param(ONE_KEY, {"steps": [{"k1": "a"}, {"zz": 1}, {"steps": []}]}, id="one-key"),
    pytest.param(ONE_KEY, {"steps": [{"k1": "a", "k2": "b"}]}, id="one-key-two"),
    pytest.param(ONE_KEY, {"steps": [{"k1": "a"}, {}]}, id="one-key-none"),
    pytest.param(ONE_KEY, {"k1": "a", "zz": 1}, id="one-key-listed-and-unlisted"),
    pytest.param(ONE_REQUIRED, {"steps": [{"steps": []}]}, id="one-required"),
    pytest.param(ONE_REQUIRED, {"steps": [{"k1": "a"}]}, id="one-required-other-key"),
    pytest.param(ONE_REQUIRED, {"steps": [], "k1": "a"}, id="one-required-and-another"),
])
def test_recursion(schema: Any, instance: Any) -> None:
    assert accepts(schema, json.dumps(instance)) == verdict(schema, instance)


def test_recursive_branches_told_apart_by_a_tag_are_not_unfolded() -> None:
    """Neither branch is compiled yet when the ``oneOf`` asks whether they overlap; their
    required tags say they do not, so no regular stand-in is unfolded to subtract one
    from the other (before: 96,423 expressions for this schema, and over the 100,000
    budget for Github_hard/o3905)."""
    for schema in (TAGGED, TAGGED_ALIKE):
        compiler = Compiler(schema, JsonSchemaOptions())
        compiler.grammar()
        assert compiler.regular.built == 0


def test_recursion_is_rules_not_unrolled() -> None:
    grammar = schema_to_grammar(LINKED_LIST)
    assert any(name.startswith("schema:") for name in grammar.rules)
    deep = _linked(200)
    assert Automaton(grammar).matches(json.dumps(deep).encode())


_IMPOSSIBLE_STRING = {"type": "string", "allOf": [{"pattern": "^a$"}, {"pattern": "^b$"}]}


@pytest.mark.parametrize("value", [
    pytest.param(_IMPOSSIBLE_STRING, id="impossible-string"),
    pytest.param({"type": "object", "properties": {"x": _IMPOSSIBLE_STRING}, "required": ["x"]},
                 id="object-requiring-impossible"),
])
@pytest.mark.parametrize("closed", [False, True])
def test_a_member_whose_value_is_empty_is_never_offered(value: Any, closed: bool) -> None:
    """Member values are built lazily; their emptiness is still decided up front, so the
    key of an impossible optional member is a dead end at once, and a required one makes
    the whole schema empty."""
    schema = {"type": "object", "properties": {"a": value, "b": {"type": "integer"}},
              "required": ["b"], "additionalProperties": not closed}
    a = Automaton(schema_to_grammar(schema))
    assert a.step_bytes(a.start, b'{"a"') == a.DEAD
    assert (a.step_bytes(a.start, b'{"a') == a.DEAD) == closed
    assert a.matches(b'{"b": 1}') and not a.matches(b'{"a": "a", "b": 1}')
    assert Automaton(schema_to_grammar({**schema, "required": ["a", "b"]})).start == a.DEAD


def test_compilations_share_the_universe_library() -> None:
    """Every schema's grammar includes one shared library per syntax (the universe rules
    and the characters keys are spelt with, converted once per process); the language is
    the same as with the rules converted anew."""
    schema = {"type": "object", "properties": {"tags": {"type": "array"}}, "required": ["tags"]}
    first, second = schema_to_grammar(schema), schema_to_grammar({"type": "array"})
    assert first.library is not None and first.library is second.library
    string = schema_to_grammar({"type": "string", "maxLength": 3})
    assert string.library is first.library and Automaton(string).regular
    compact = schema_to_grammar({"type": "array"}, JsonSchemaOptions(whitespace="compact"))
    assert compact.library is not None and compact.library is not first.library
    spaced = JsonSchemaOptions(whitespace_pattern="[ ]?")
    assert (schema_to_grammar({"type": "array"}, spaced).library
            is schema_to_grammar(schema, spaced).library is not first.library)
    plain = Automaton(Grammar(first.rules, first.start))
    shared = Automaton(first)
    for text in ['{"tags": []}', '{"tags": [1, {"a": [null]}], "x": "\\u00e9"}', '{"x": 1}',
                 '{"tags": [1,]}', '{"tags": "a"}', '{"tags": [], "tags": [{}]}']:
        assert shared.matches(text.encode()) == plain.matches(text.encode()), text
    assert shared.matches(b'{"tags": [1, {"a": [null]}]}')


def _fresh_matches(schema: Any, text: str, options: JsonSchemaOptions | None = None) -> bool:
    return Automaton(schema_to_grammar(schema, options)).matches(text.encode())


def test_leaf_languages_are_shared_by_content_within_their_dialect_and_options() -> None:
    """A leaf schema's language (scalars only, no references) is made once per content and
    reused by later compiles (json_compiler._leaf_languages), but never across dialects or
    options that change it, in either order."""
    leaves = [  # (leaf, an instance with 1.0 where draft 4 wants an integer)
        ({"type": "integer"}, "1.0"),
        ({"type": "array", "items": {"type": "integer"}, "maxItems": 2}, "[1, 1.0]"),
        ({"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 1}]}, "1.0"),
        ({"items": {"type": "integer"}}, '{"a": 1}'),  # no type: not a leaf, any value
    ]
    for leaf, text in leaves:
        for first, second in ((D4, None), (None, D4)):
            for dialect in (first, second):
                schema: dict[str, Any] = {"type": "object", "properties": {"n": dict(leaf)}}
                if dialect is not None:
                    schema["$schema"] = dialect
                # draft-04's integer is a JSON integer; from draft 6 on 1.0 is one too
                expected = dialect is None or "items" in leaf and "type" not in leaf
                assert _fresh_matches(schema, f'{{"n": {text}}}') == expected, (leaf, dialect)
                assert _fresh_matches(schema, '{"n": 1}') == ("array" not in str(leaf))
    shared = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}
    required = JsonSchemaOptions(escapes="required")
    for options in (None, required, None):
        assert _fresh_matches(shared, '{"a": "\\u0061", "b": "x"}', options) == (
            options is None)
    # a leaf in negative position (under "not") keeps its own entry
    assert not _fresh_matches({"not": {"type": "string", "maxLength": 2}}, '"ab"')
    assert _fresh_matches({"not": {"type": "string", "maxLength": 2}}, '"abc"')
    assert _fresh_matches({"type": "string", "maxLength": 2}, '"ab"')


def test_a_keyword_refused_under_not_is_refused_there_and_in_place() -> None:
    """An unsupported pattern is refused under ``not`` too (dropped, the complement would
    lose every string); under ``lenient`` it is dropped there with a warning that says
    valid values may be refused, and the same leaf in place is still refused after."""
    backreference = {"type": "string", "pattern": "(a)\\1"}
    with pytest.raises(UnsupportedSchemaError) as raised:
        schema_to_grammar({"not": backreference})
    assert raised.value.pointer == "#/not/pattern"
    with pytest.warns(ApproximationWarning, match="#/not/pattern.*valid values are refused"):
        assert _fresh_matches({"not": backreference}, "1", JsonSchemaOptions(lenient=True))
    with pytest.raises(UnsupportedSchemaError, match="pattern"):
        schema_to_grammar(backreference)


def test_each_compile_warns_for_its_own_unknown_formats() -> None:
    """A language whose making warned is not shared: every compile that meets it warns."""
    made_up = {"type": "string", "format": "also-made-up"}
    for _ in range(2):  # two places in one compile: it warns once, and shares nothing
        with pytest.warns(UnknownFormatWarning, match="also-made-up"):
            schema_to_grammar({"type": "object",
                               "properties": {"a": dict(made_up), "b": dict(made_up)}})


@pytest.mark.parametrize("schema", [ARRAYS_FAILING_ITEMS, ONE_OF_ARRAYS, IF_ITEMS, NOT_MAX_ITEMS,
                                    NOT_MIN_ITEMS_AND_ITEMS, NOT_COUNT_RANGE,
                                    {"not": {"maxItems": 10**30}}],
                         ids=["not-items", "oneOf-items", "if-items", "not-maxItems",
                              "not-minItems-items", "not-count-range", "not-huge-maxItems"])
def test_arrays_failing_an_items_schema_need_no_regular_stand_in(schema: Any) -> None:
    """Arrays that fail an ``items`` of free-form objects are built from the element that
    fails it (its failures merged into the context's element), so they compile with no
    unfolding at all and stay exact at any depth (the cases above)."""
    schema_to_grammar(schema, JsonSchemaOptions(intersection_depth=0))


@pytest.mark.parametrize(("schema", "keyword", "pointer"), [
    # Objects of three values in all: refused once every rule is made.
    pytest.param({"type": "array", "uniqueItems": True, "items": {
        "type": "object", "properties": {"a": {"type": "boolean"}}, "additionalProperties": False}},
                 "uniqueItems", "#/uniqueItems", id="uniqueItems-few-objects"),
    # Failing maxProperties is having at least N + 1 members: the refusal names the
    # schema's keyword, not the bound it was spelt as.
    pytest.param({"not": {"maxProperties": 10**8}}, "maxProperties", "#/not/maxProperties",
                 id="not-huge-maxProperties"),
    # A format whose strings have no language here, complemented.
    pytest.param({"properties": {"a": {"not": {"format": "uri-template"}}}},
                 "format", "#/properties/a/not/format", id="complemented-format"),
    pytest.param({"$defs": {"o": {"oneOf": [{"patternProperties": {"^a": {"type": "string"}}},
                                            {"required": ["ab"]}]}},
                  "$ref": "#/$defs/o"}, "oneOf", "#/$defs/o/oneOf", id="oneOf-free-form"),
    pytest.param({"type": "string", "pattern": "(a)\\1"}, "pattern", "#/pattern",
                 id="pattern-backreference"),
    pytest.param({"properties": {f"k{i}": {} for i in range(14)},
                  "required": [f"k{i}" for i in range(14)], "minProperties": 16}, "minProperties",
                 "#", id="many-free-form-counted"),
])
def test_refusals_name_keyword_and_pointer(schema: Any, keyword: str, pointer: str) -> None:
    with pytest.raises(UnsupportedSchemaError) as info:
        schema_to_grammar(schema, JsonSchemaOptions(intersection_depth=0))
    assert info.value.keyword == keyword
    assert info.value.pointer == pointer


@pytest.mark.parametrize(("schema", "pointer"), [
    pytest.param({"type": "strin"}, "#/type", id="bad-type"),
    pytest.param({"properties": {"a": {"minLength": -1}}}, "#/properties/a/minLength",
                 id="negative-minLength"),
    pytest.param({"$schema": D4, "required": []}, "#/required", id="draft4-empty-required"),
    pytest.param({"pattern": "("}, "#/pattern", id="bad-regex"),
    # Reached by $ref through a keyword the metaschema does not know, so never checked;
    # referencing (and jsonschema) fail on the non-string id (MaskBench Github_medium/o28532).
    pytest.param({"$schema": D4, "properties": {"a": {"$ref": "#/misc"}},
                  "misc": {"type": "array", "items": {"id": {"type": "integer"}}}},
                 "#/misc/items/id", id="non-string-id-below-ref"),
])
def test_invalid_schema(schema: Any, pointer: str) -> None:
    with pytest.raises(SchemaError) as info:
        schema_to_grammar(schema)
    assert info.value.pointer == pointer


@pytest.mark.parametrize("schema, pointer", [
    pytest.param({"const": float("nan")}, "#/const", id="nan-const"),
    pytest.param({"enum": ["a", float("inf")]}, "#/enum/1", id="infinite-enum-value"),
    pytest.param({"type": "number", "minimum": float("nan")}, "#/minimum", id="nan-bound"),
    pytest.param({"multipleOf": float("inf")}, "#/multipleOf", id="infinite-multiple"),
    pytest.param({"properties": {"a": {"maximum": Decimal("NaN")}}}, "#/properties/a/maximum",
                 id="decimal-nan"),
    pytest.param({"const": {"x": [1, {2, 3}]}}, "#/const/x/1", id="set-in-const"),
    pytest.param({"enum": [(1, 2)]}, "#/enum/0", id="tuple-in-enum"),
    pytest.param({"const": b"x"}, "#/const", id="bytes-const"),
    pytest.param({"properties": {1: {"type": "string"}}}, "#/properties/1", id="int-key"),
    pytest.param('{"type": "number", "maximum": Infinity}', "#/maximum", id="text-infinity"),
    pytest.param({"$schema": {"$ref": "#"}}, "#/$schema", id="schema-uri-a-dict"),
    pytest.param({"$schema": Decimal("0.5")}, "#/$schema", id="schema-uri-a-number"),
])
def test_a_value_that_is_not_json_is_schema_error(schema: Any, pointer: str) -> None:
    # json.loads reads NaN and Infinity; Python code can put anything in a dict. Each is
    # refused where it is, never a crash further in.
    with pytest.raises(SchemaError, match="not a JSON value|must be a string") as info:
        schema_to_grammar(schema)
    assert info.value.pointer == pointer


def test_decimal_values_are_numbers_read_exactly() -> None:
    # What json.loads(..., parse_float=Decimal) makes of a schema: each Decimal is a
    # number of exactly its decimal value, spelt as floats are (a fraction or exponent),
    # and integer spellings too where it is whole.
    one_and_a_half = {"enum": [Decimal("1.5"), 2]}
    assert [accepts_decimal(one_and_a_half, t) for t in ("1.5", "15e-1", "1.50", "2", "3")] == [
        True, True, True, True, False]
    tenth = {"type": "object", "properties": {"x": {"const": Decimal("0.1")}}}
    assert [accepts_decimal(tenth, t) for t in ('{"x": 0.1}', '{"x": 1e-1}', '{"x": 0.2}')] == [
        True, True, False]
    whole = {"const": Decimal("1.0")}
    assert [accepts_decimal(whole, t) for t in ("1", "1.0", "1e0", "2")] == [True, True, True, False]
    bounded = {"type": "number", "exclusiveMinimum": Decimal("0.1"), "maximum": Decimal("0.3")}
    assert [accepts_decimal(bounded, t) for t in ("0.1", "0.10001", "0.3", "0.30001")] == [
        False, True, True, False]


def accepts_decimal(schema: Any, text: str) -> bool:
    return Automaton(schema_to_grammar(schema)).matches(text.encode())


@pytest.mark.parametrize("schema, pointer", [
    pytest.param({"not": {"$ref": "#"}}, "#", id="not-itself"),
    pytest.param({"oneOf": [{"$ref": "#"}, {"type": "null"}]}, "#", id="one-of-itself"),
    pytest.param({"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}},
                  "$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}}, "#/$defs/a", id="a-definition"),
    pytest.param({"$defs": {"a": {"not": {"$ref": "#/$defs/b"}},
                            "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
                 "#/$defs/a", id="through-another"),
])
def test_a_schema_complemented_by_itself_is_refused(schema: Any, pointer: str) -> None:
    # Its own complement through references that read no text first: unfolding it never
    # ended (a RecursionError). Through an array or object it is a recursion, and fine.
    with pytest.raises(UnsupportedSchemaError) as info:
        schema_to_grammar(schema)
    assert (info.value.keyword, info.value.pointer) == ("$ref", pointer)
    nested = {"type": "array", "items": {"not": {"$ref": "#"}}}
    for instance in ([], [[]], [[[]]], [1, [[]]], [[], 1]):
        assert accepts(nested, json.dumps(instance)) == verdict(nested, instance), instance


def test_nested_leaves_cost_their_size() -> None:
    # An array of arrays of... strings is a leaf at every level; its key was the repr of
    # the level below's repr, which doubled with each level (26 levels: 1.5 GB).
    from constrain.json_compiler import _leaf_content

    def nested(depth: int) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        for _ in range(depth):
            schema = {"type": "array", "items": schema}
        return schema

    keywords = frozenset(Draft202012Validator.VALIDATORS)
    short, long = (_leaf_content(nested(d), keywords) for d in (20, 40))
    assert short is not None and long is not None and len(long) < 2.5 * len(short)
    deep = nested(150)
    assert accepts(deep, "[" * 150 + '"x"' + "]" * 150)
    assert not accepts(deep, "[" * 149 + '"x"' + "]" * 149)


def test_documents_too_deep_for_their_readers_are_typed_errors() -> None:
    too_deep: Any = {"type": "string"}
    for _ in range(30_000):  # jsonschema-rs overflowed its stack on this (a crash)
        too_deep = {"items": too_deep}
    with pytest.raises(ResourceLimitError, match="document_depth"):
        schema_to_grammar(too_deep)
    with pytest.raises(SchemaError, match="nests deeper"):
        schema_to_grammar("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SchemaError, match="not UTF-8"):
        schema_to_grammar(b'{"type": "\xff"}')
    # Deep, within the limits, and sent to jsonschema's metaschema check (a value that is
    # not JSON at the bottom): a SchemaError there, not a RecursionError.
    deep: Any = {"type": "string", "const": (1, 2)}
    for _ in range(450):
        deep = {"items": deep}
    with pytest.raises(SchemaError, match="not a JSON value"):
        schema_to_grammar(deep)


@pytest.mark.parametrize("schema", [
    {"not": {"multipleOf": 3}},
    {"type": "number", "not": {"minimum": 10}},
    {"not": {"exclusiveMinimum": 1.5}},
    {"type": "number", "not": {"type": "integer"}},
    {"oneOf": [{"type": "number", "minimum": 5}, {"type": "number", "maximum": 10}]},
    {"type": "number", "if": {"minimum": 5}, "then": {"multipleOf": 2}},
    {"type": "integer", "oneOf": [{"multipleOf": 0.5}, {"maximum": 2}, {"minimum": 100}]},
], ids=["not-multipleOf", "not-minimum", "not-exclusiveMinimum", "not-integer", "oneOf-ranges",
        "if-minimum", "oneOf-float-multipleOf"])
def test_complemented_numbers_accept_no_spelling_of_a_value_left_out(schema: Any) -> None:
    # Bounded and multipleOf languages hold policy spellings only (no mantissa of four
    # integer digits before an exponent, no exponent with multipleOf...): complemented,
    # the spellings they left out came back whatever their value (3e0 under not
    # multipleOf 3, 1000e10 under not minimum 10). Sound now: what is accepted validates.
    texts = ["3", "3e0", "6E0", "30e-1", "4", "4e0", "12", "12e0", "1000e10", "1234e40",
             "81397.2624547e+048", "1.5", "1.5e1", "15.0", "7", "7e0", "0.5", "9.5",
             "0.1234567890123456", "-3e0", "1e-05", "2.5e0", "3479601696872255821168",
             "1"]
    accepted = [t for t in texts if accepts(schema, t)]
    assert accepted, "some plain spelling of a valid value is still accepted"
    for text in accepted:
        assert verdict(schema, json.loads(text)), text


def test_unresolvable_ref_is_schema_error() -> None:
    with pytest.raises(SchemaError) as info:
        schema_to_grammar({"$ref": "#/$defs/missing"})
    assert info.value.keyword == "$ref"


def test_end_anchor_in_repeat_is_exact_where_complemented() -> None:
    # Complemented, Python's "$" (before a final newline too, which a later iteration
    # may consume) must be contained: read as the lookahead "(?=$)". The Github_hard
    # pathType pattern under a oneOf was refused for it before.
    schema = {"type": "string", "not": {"pattern": "^(a($|/))*$"}}
    for value in ["b", "a", "a/", "a/a", "a\n", "a/\n", "a//", "a\n\n", "/a", ""]:
        assert accepts(schema, json.dumps(value)) == verdict(schema, value), value


def test_lenient_warns_and_over_approximates() -> None:
    schema = {"type": "array", "uniqueItems": True, "items": {
        "type": "object", "properties": {"a": {"type": "boolean"}}, "additionalProperties": False}}
    with pytest.warns(ApproximationWarning, match="uniqueItems at #/uniqueItems"):
        grammar = schema_to_grammar(schema, JsonSchemaOptions(lenient=True))
    assert Automaton(grammar).matches(b'[{}, {}]')


def test_unknown_format_accepts_any_string_with_warning() -> None:
    with pytest.warns(UnknownFormatWarning, match="made-up"):
        grammar = schema_to_grammar({"type": "string", "format": "made-up"})
    assert Automaton(grammar).matches(b'"anything"')


def test_positive_patterns_use_ecma_classes() -> None:
    # \\d is [0-9] (ECMA-262); Python's re would also take other Unicode digits, so the
    # language is a subset of what jsonschema accepts: sound with both.
    schema = {"type": "string", "pattern": "^\\d+$"}
    assert accepts(schema, '"12"')
    assert not accepts(schema, json.dumps("\u0661\u0662"))
    assert verdict(schema, "\u0661\u0662")


# (pattern, text, whether ECMA-262 finds a match): where ECMA and Python's re disagree on a
# class or ".", a kept pattern may accept only what both accept, a complemented one must
# remove everything either matches. Found by generated instances (hypothesis-jsonschema):
# positive "\\S" used to take U+00A0 (whitespace to both dialects), "not" with "\\D" kept
# Arabic-Indic digits that ECMA's "\\D" matches.
DIALECT_CASES = [
    ("^\\S+$", "a\u00a0b", False),   # NBSP: whitespace to both
    ("^\\S+$", "a\u3000b", False),
    ("^\\S+$", "a\x1cb", True),      # Python's \\s takes U+001C, ECMA's does not
    ("^\\S+$", "a\ufeffb", False),   # ECMA's \\s takes the BOM, Python's does not
    ("^[^\\s]+$", "a\u00a0b", False),
    ("^[\\S]+$", "a\u2028b", False),
    ("^\\s$", "\u00a0", True),
    ("^\\s$", "\ufeff", True),
    ("^\\s$", "\x1c", False),
    ("^\\W$", "\u00e9", True),       # ECMA's \\w is ASCII
    ("^\\w+$", "\u00e9", False),
    ("^\\D$", "\u0663", True),       # ARABIC-INDIC DIGIT THREE
    ("^\\d$", "\u0663", False),
    ("^[^\\D]$", "\u0663", False),
    ("^[^\\D]$", "3", True),
    ("^[^\\W]$", "\u00e9", False),
    ("^a.b$", "a\rb", False),        # ECMA's "." stops at line terminators
    ("^a.b$", "a\u2028b", False),
    ("^a.b$", "axb", True),
    # Lookaheads: a negative one reads its body on the other side, and "$" inside one is
    # Python's too (before a final newline) where the body is widened.
    ("^(?!\\d)", "\u0663x", True),
    ("^(?!\\D)", "\u0663", False),
    ("^(?=\\d)", "\u0663", False),
    ("^(?=\\d)", "3", True),
    ("^(?!a$)", "a\n", True),
    ("^(?=a$)", "a\n", False),
    ("^(?!a$)", "b", True),
    ("^(?!a$)", "a", False),
    ("^(?=.*\\.)[a-z.]+$", "ab.c", True),
    ("^(?=.*\\.)[a-z.]+$", "abc", False),
    ("^((?!ab).)*$", "xaby", False),
    ("^((?!ab).)*$", "xay", True),
    ("^(?!.*\\s).+$", "a\u00a0b", False),
    ("^(?!.*\\s).+$", "a\x1cb", True),
    ("^(?!pattern$).*$", "pattern", False),
    ("^(?!pattern$).*$", "patterns", True),
    ("x(?=\\w)", "x\u00e9", False),
    ("^.(?<!\\d)$", "\u0663", True),  # lookbehinds of one character, read the same way
    ("^.(?<=\\d)$", "\u0663", False),
    ("^.(?<=\\d)$", "3", True),
    ("^a.(?<!\\s)", "a\u00a0", False),
    ("^a\\b", "a\u00e9", True),  # word boundaries: ECMA's \\w is ASCII, Python's Unicode
    ("^a\\b", "a", True),
    ("^a\\b", "ab", False),
    ("^\u00e9\\b", "\u00e9", False),
    ("^a\\B", "a\u00e9", False),
    ("x\\B", "xy", True),
    ("^\\B$", "", True),
]


@pytest.mark.parametrize(("pattern", "text", "ecma_match"), DIALECT_CASES)
def test_patterns_are_sound_under_ecma_and_python(pattern: str, text: str,
                                                   ecma_match: bool) -> None:
    import re

    python_match = re.search(pattern, text) is not None
    encoded = json.dumps(text, ensure_ascii=False)
    kept = accepts({"type": "string", "pattern": pattern}, encoded)
    removed = accepts({"type": "string", "not": {"pattern": pattern}}, encoded)
    assert kept == (python_match and ecma_match)
    assert removed == (not python_match and not ecma_match)


@pytest.mark.parametrize(("key", "pattern"), [("\u00e9", "^\\W$"), ("\u0663", "^\\d$")])
def test_listed_keys_take_pattern_schemas_either_dialect_applies(key: str, pattern: str) -> None:
    # ECMA-262 and Python's re disagree on whether the key matches: kept, the pattern's
    # schema applies (valid under both readings); complemented, only what both reject
    # under "not" is removed.
    schema = {"type": "object", "properties": {key: {}},
              "patternProperties": {pattern: {"type": "integer"}}}
    assert accepts(schema, json.dumps({key: 1}, ensure_ascii=False))
    assert not accepts(schema, json.dumps({key: "x"}, ensure_ascii=False))
    negated = {"not": schema}
    assert not accepts(negated, json.dumps({key: 1}, ensure_ascii=False))
    # One dialect applies the pattern to the key and the other does not, so they disagree
    # on this instance: it is not generated.
    assert verdict(negated, {key: "x"}) == (pattern == "^\\d$")
    assert not accepts(negated, json.dumps({key: "x"}, ensure_ascii=False))


def test_listed_keys_meet_property_names_in_both_dialects() -> None:
    # "٣" matches ^\\d$ for Python only: the key is not generated, and "not" of the
    # schema does not generate it either (Python's reading rejects that instance).
    schema = {"type": "object", "properties": {"\u0663": {}, "3": {}},
              "propertyNames": {"pattern": "^\\d$"}}
    assert not accepts(schema, '{"\u0663": 1}')
    assert accepts(schema, '{"3": 1}')
    assert not accepts({"not": schema}, '{"\u0663": 1}')
    assert verdict(schema, {"\u0663": 1})  # what jsonschema alone would have allowed


@pytest.mark.parametrize(("schema", "texts"), [
    ({"enum": [[0.0]]}, ["[0]", "[0.0]", "[-0]", "[0e0]", "[false]", "[1]"]),
    ({"const": {"a": 1}}, ['{"a": 1}', '{"a": 1.0}', '{"a": 10e-1}', '{"a": true}']),
    ({"$schema": D4, "enum": [[1]], "items": {"type": "integer"}}, ["[1]", "[1.0]"]),
    ({"$schema": D4, "enum": [[1.0]]}, ["[1]", "[1.0]"]),
    ({"$schema": D4, "enum": [[0]]}, ["[0]", "[0.0]", "[0e0]", "[1]"]),
    ({"$schema": D4, "const": {"a": [1, 2.5], "b": 3.0},
      "additionalProperties": {"type": "integer"}},
     ['{"a": [1, 2.5], "b": 3}', '{"a": [1.0, 2.5], "b": 3}', '{"a": [1, 2.5], "b": 3.0}',
      '{"b": 3, "a": [1, 2.5]}']),
    ({"$schema": D4, "enum": [[1, {"x": 2}]], "items": {"type": ["integer", "object"]},
      "additionalItems": False},
     ["[1, {\"x\": 2}]", "[1.0, {\"x\": 2.0}]", "[1, {\"x\": 2.0}]"]),
], ids=["enum-array", "const-object", "draft4-integer-items", "draft4-float", "draft4-by-value",
        "draft4-mixed-object", "draft4-mixed-items"])
def test_numbers_inside_enum_containers_match_by_value(schema: Any, texts: list[str]) -> None:
    """jsonschema compares numbers by value, so ``[0]`` equals ``[0.0]``; draft 4 alone
    tells an integer from a float (``type: integer``), so there every mix of the two
    types is a candidate of its own, checked against the sibling keywords."""
    for text in texts:
        assert accepts(schema, text) == verdict(schema, json.loads(text)), text


def test_draft4_containers_with_many_integral_numbers_keep_their_own_types() -> None:
    """Past 64 mixes of integer and float types, a draft-4 candidate keeps only its own
    spellings: sound, and smaller than exact (``[0.0, ...]`` is refused)."""
    many = list(range(7))  # 2**7 mixes
    schema = {"$schema": D4, "enum": [many]}
    assert accepts(schema, json.dumps(many))
    assert verdict(schema, [0.0, *many[1:]])
    assert not accepts(schema, json.dumps([0.0, *many[1:]]))


def test_formats_with_no_complementable_language_are_refused_there() -> None:
    """``regex`` is built as a subset of its checker and has no superset language yet:
    complemented, it is refused with its pointer (dropping it took every string out of
    the complement); ``lenient`` complements the subset instead, with a warning."""
    schema = {"type": "string", "not": {"format": "regex"}}
    with pytest.raises(UnsupportedSchemaError) as raised:
        schema_to_grammar(schema)
    assert (raised.value.keyword, raised.value.pointer) == ("format", "#/not/format")
    with pytest.warns(ApproximationWarning, match="#/not/format"):
        grammar = schema_to_grammar(schema, JsonSchemaOptions(lenient=True))
    a = Automaton(grammar)
    assert a.matches(b'"((("') and not a.matches(b'"^a$"')
    assert accepts({"format": "regex"}, '"^a$"')  # kept: the subset, as before


def test_a_format_its_patterns_already_confine_is_complemented_exactly() -> None:
    """Complemented, ``regex`` has no superset; but where the value's pattern admits only
    strings of its subset (digits and colons here, as in MaskBench's timeout patterns),
    the format adds nothing and the complement is exact. A pattern that admits other
    strings ("(" is not a regex) leaves it refused."""
    confined = {"type": "string", "format": "regex", "pattern": "^[0-9]+(:[0-9]+)?$"}
    schema = {"oneOf": [confined, {"type": "string", "pattern": "^1"}]}
    for text, valid in (('"23"', True), ('"1:2"', False), ('"1x"', True), ('"x"', False),
                        ('"2:30"', True), ('"12"', False)):
        assert verdict(schema, json.loads(text)) == valid, text
        assert accepts(schema, text) == valid, text
    loose = {"oneOf": [{**confined, "pattern": "^[0-9(]+$"}, {"type": "string"}]}
    with pytest.raises(UnsupportedSchemaError) as raised:
        schema_to_grammar(loose)
    assert raised.value.pointer == "#/oneOf/0/format"


def test_branches_not_shown_apart_for_want_of_a_superset_are_refused() -> None:
    """The kept ``regex`` subset misses "(", but with no language holding all the checker
    passes, "(" cannot be shown outside the first branch: refused, not a union."""
    schema = {"oneOf": [{"type": "string", "format": "regex"}, {"const": "("}]}
    with pytest.raises(UnsupportedSchemaError) as raised:
        schema_to_grammar(schema)
    assert raised.value.keyword == "format"


def test_unsupported_under_not_is_refused_unless_lenient() -> None:
    # Ignoring a keyword inside "not" makes the removed language larger, so the result
    # loses valid values (["a", "a"] here): refused; lenient drops it with a warning.
    schema = {"type": "array", "not": {"items": {"type": "string"}, "uniqueItems": True}}
    with pytest.raises(UnsupportedSchemaError) as raised:
        schema_to_grammar(schema)
    assert raised.value.pointer == "#/not/uniqueItems"
    with pytest.warns(ApproximationWarning, match="valid values are refused"):
        a = Automaton(schema_to_grammar(schema, JsonSchemaOptions(lenient=True)))
    assert not a.matches(b'["a", "b"]') and not a.matches(b'["a", "a"]')
    assert a.matches(b'[1]')


def test_large_objects_let_optional_keys_repeat() -> None:
    # Beyond 8 listed keys, optional keys may repeat (Python's json keeps the last value;
    # each one is validated), required keys still occur exactly once, however many.
    schema = {"type": "object", "properties": {f"k{i}": {"type": "integer"} for i in range(10)},
              "required": ["k0"], "additionalProperties": False}
    assert accepts(schema, '{"k5": 1, "k0": 2, "k5": 3}')
    assert not accepts(schema, '{"k5": 1, "k0": 2, "k0": 3}')
    assert not accepts(schema, '{"k5": "x", "k0": 2, "k5": 3}')
    small = {"type": "object", "properties": {"a": {}, "b": {}}}
    assert not accepts(small, '{"a": 1, "a": 2}')
    many = {"type": "object", "properties": {f"k{i}": {} for i in range(40)},
            "required": [f"k{i}" for i in range(30)]}  # 2**30 sets of keys, built lazily
    every = {f"k{i}": [i] for i in reversed(range(30))}
    assert accepts(many, json.dumps(every))
    assert accepts(many, json.dumps({**every, "k35": {}, "zz": 1}))
    assert not accepts(many, json.dumps({k: v for k, v in every.items() if k != "k17"}))
    assert not accepts(many, json.dumps(every)[:-1] + ', "k3": 1}')


def test_counted_large_objects_let_optional_keys_repeat() -> None:
    # Counting members (maxProperties below the listed keys) past 8 listed keys: optional
    # keys may repeat (Python's json keeps the last value; each one is validated),
    # required keys still occur exactly once, and the count holds.
    schema = {"type": "object", "properties": {f"k{i}": {"type": "integer"} for i in range(10)},
              "required": ["k0"], "additionalProperties": False, "maxProperties": 3}
    assert accepts(schema, '{"k5": 1, "k0": 2, "k5": 3}')
    assert not accepts(schema, '{"k5": 1, "k0": 2, "k0": 3}')
    assert not accepts(schema, '{"k5": "x", "k0": 2, "k5": 3}')
    assert not accepts(schema, '{"k5": 1, "k0": 2, "k6": 3, "k7": 4}')


def test_annotations_and_unknown_keywords_are_ignored() -> None:
    schema = {"title": "t", "description": "d", "examples": [1], "default": 2, "$comment": "c",
              "deprecated": True, "readOnly": True, "x-custom": {"type": "string"},
              "type": "integer"}
    assert accepts(schema, "3") and not accepts(schema, '"3"')


# -- options ---------------------------------------------------------------------------

OBJ = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}},
                                        "b": {"type": "string"}}}


def test_default_whitespace_accepts_json_dumps_and_pretty_printing() -> None:
    value = {"a": [1, 2], "b": "x"}
    for text in (json.dumps(value), json.dumps(value, separators=(",", ":")),
                 json.dumps(value, indent=2)):
        assert accepts(OBJ, text), text
    assert not accepts(OBJ, '{"a": [1,' + " " * 21 + "2]}")
    assert not accepts(OBJ, ' {"b": "x"}')


def test_compact_whitespace() -> None:
    compact = JsonSchemaOptions(whitespace="compact")
    assert accepts(OBJ, '{"a":[1,2],"b":"x"}', compact)
    assert not accepts(OBJ, '{"a": [1, 2]}', compact)


def test_whitespace_pattern() -> None:
    one_space = JsonSchemaOptions(whitespace_pattern="( )?")
    assert accepts(OBJ, '{"a": [1, 2]}', one_space)
    assert not accepts(OBJ, '{"a":\n[1]}', one_space)


def test_escapes_policy() -> None:
    schema = {"type": "string", "maxLength": 3}
    assert accepts(schema, json.dumps("é😀", ensure_ascii=True))
    required = JsonSchemaOptions(escapes="required")
    assert accepts(schema, json.dumps("é😀", ensure_ascii=False), required)
    assert not accepts(schema, json.dumps("é", ensure_ascii=True), required)
    assert accepts(schema, '"\\n\\u0001"', required)


def test_property_order_schema() -> None:
    schema_order = JsonSchemaOptions(property_order="schema")
    assert accepts(OBJ, '{"b": "x", "a": []}')
    assert accepts(OBJ, '{"a": [], "b": "x"}', schema_order)
    assert not accepts(OBJ, '{"b": "x", "a": []}', schema_order)
    assert accepts(OBJ, '{"z": 1, "a": [], "y": 2, "b": "x", "w": 3}', schema_order)


def test_strict_additional_properties() -> None:
    strict = JsonSchemaOptions(strict_additional_properties=True)
    assert accepts(OBJ, '{"a": [], "c": 1}')
    assert not accepts(OBJ, '{"a": [], "c": 1}', strict)
    assert accepts(OBJ, '{"a": []}', strict)


def test_json_text_and_pydantic_inputs() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Point(pydantic.BaseModel):
        x: int
        y: float = 0.0

    a = Automaton(schema_to_grammar(Point))
    assert a.matches(b'{"x": 1, "y": 2.5}') and a.matches(b'{"y": 2.5, "x": 1}')
    assert not a.matches(b'{"y": 2.5}')
    assert Automaton(schema_to_grammar('{"type": "boolean"}')).matches(b"true")
    with pytest.raises(SchemaError):
        schema_to_grammar("{not json")


@pytest.mark.parametrize("schema, pointer", [
    pytest.param({"properties": {"a": {"type": "string", "pattern": "("}}},
                 "#/properties/a/pattern", id="pattern-python-cannot-compile"),
    pytest.param({"patternProperties": {"[": {}}}, "#/patternProperties", id="bad-pattern-key"),
    pytest.param({"$schema": "http://json-schema.org/draft-07/schema#", "exclusiveMinimum": True},
                 "#/exclusiveMinimum", id="draft7-boolean-exclusive"),
])
def test_metaschema_errors_survive_the_fast_check(schema: Any, pointer: str) -> None:
    # jsonschema-rs (when installed) confirms valid schemas quickly; it does not check the
    # "regex" format, so these must still reach jsonschema and fail with their pointer.
    with pytest.raises(SchemaError) as info:
        schema_to_grammar(schema)
    assert info.value.pointer == pointer


def test_valid_schema_is_confirmed_without_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("jsonschema_rs", reason="the fast metaschema check needs jsonschema-rs")
    import jsonschema

    def fail(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("jsonschema's metaschema check ran for a valid schema")

    monkeypatch.setattr(jsonschema.Draft202012Validator, "check_schema", fail)
    monkeypatch.setattr(jsonschema.Draft7Validator, "check_schema", fail)
    schema_to_grammar({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x+$"}},
                       "enum": [{"pattern": "("}]})
    schema_to_grammar({"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer"})


def test_unfolding_budget_refuses_instead_of_running_away(monkeypatch: pytest.MonkeyPatch) -> None:
    from constrain import json_regular

    schema = {"$defs": {"o": {"oneOf": [{"patternProperties": {"^a": {"type": "string"}}},
                                        {"required": ["ab"]}]}},
              "$ref": "#/$defs/o"}
    schema_to_grammar(schema)  # unfolded within the default budget
    monkeypatch.setattr(json_regular, "MAX_UNFOLDED", 50)
    with pytest.raises(UnsupportedSchemaError) as info:
        schema_to_grammar(schema)
    assert info.value.keyword == "oneOf" and info.value.pointer == "#/$defs/o/oneOf"


def test_unfolding_budget_after_the_fact_is_a_typed_error() -> None:
    # A recursion still being compiled when it was intersected is unfolded at the end (or
    # when a walk first reaches a lazy part), where no keyword is left to refuse: the
    # budget must surface as ResourceLimitError, not as the compiler's internal signal.
    from constrain.grammar import Grammar, ref
    from constrain.json_regular import Regularizer
    from constrain.json_syntax import JsonSyntax, whitespace_gap

    syn = JsonSyntax(whitespace_gap(1))
    rules = syn.universe_rules()
    regular = Regularizer(syn, rules, depth=4)
    rules["kept"] = regular.under(ref("later"))  # "later" is not compiled yet: a marker
    rules["later"] = ref("json.value")
    regular.max_built = 3
    with pytest.raises(ResourceLimitError, match="unfolded_expressions"):
        regular.finish(rules)
    regular = Regularizer(syn, rules := syn.universe_rules(), depth=4)
    rules["kept"] = regular.under(ref("later"))
    rules["later"] = ref("json.value")
    regular.finish(rules)  # within the default budget
    assert Automaton(Grammar(rules, "kept")).matches(b'[1, {"a": []}]')


def test_if_chain_on_one_key_is_a_case_per_value() -> None:
    # SchemaStore's idiom (minecraft-predicate has 23): expanding each `if` into its two
    # outcomes in the context of the others made 3**n lists, so this never finished.
    # A CPU budget turns a regression into a failure instead of a hang.
    from benchmarks.maskbench_bytes import CpuTimeout, arm_cpu_alarm, stop_cpu_alarm

    kinds = [f"kind{i}" for i in range(24)]
    schema = {"type": "object", "required": ["kind"], "allOf": [
        {"if": {"properties": {"kind": {"const": k}}},
         "then": {"properties": {f"x{i}": {"type": "integer"}}, "required": [f"x{i}"]}}
        for i, k in enumerate(kinds)]}
    arm_cpu_alarm(60)
    try:
        automaton = _automaton(json.dumps(schema), JsonSchemaOptions())
    except CpuTimeout:
        pytest.fail("the if chain was expanded per combination of outcomes")
    finally:
        stop_cpu_alarm()
    for instance in [{"kind": "kind3", "x3": 1}, {"kind": "kind3", "x4": 1},
                     {"kind": "kind3", "x3": "1"}, {"kind": "other"}, {"kind": "kind23",
                     "x23": 0, "x0": "s"}, {"x1": 1}]:
        text = json.dumps(instance).encode()
        assert automaton.matches(text) == verdict(schema, instance), instance


def _agrees_token_by_token(schema: Any, vocab: Any, instances: list[Any]) -> None:
    """Each instance's Qwen tokens are allowed by the masks and consumed, ending where EOS
    is allowed, exactly when jsonschema says the instance is valid."""
    import numpy as np

    from constrain import compile_json_schema
    from constrain.assets import load_qwen_encoding

    encoding = load_qwen_encoding()
    compiled = compile_json_schema(schema, vocab)
    for instance in instances:
        matcher = compiled.matcher()
        mask = np.zeros((1, compiled.mask_words), dtype=np.int32)
        followed = True
        for token in encoding.encode(json.dumps(instance)):
            matcher.fill_bitmask(mask, 0)
            if not mask[0, token // 32] >> (token % 32) & 1 or not matcher.advance(token):
                followed = False
                break
        assert (followed and matcher.is_accepting()) == verdict(schema, instance), instance


def test_many_required_keys_in_any_order(qwen_vocab: Any) -> None:
    # Past MAX_SUBSET_KEYS listed keys only the required ones are tracked: each set of
    # them written builds the trie of the keys left (with runs shared between tries).
    import random

    keys = [f"key{i:02d}{'x' * (i % 4)}" for i in range(14)]
    schema = {"type": "object", "additionalProperties": False,
              "properties": {**{k: {"type": "integer"} for k in keys},
                             "note": {"type": "string"}, "keynote": {"type": "boolean"}},
              "required": keys}
    rng = random.Random(7)
    full = {k: i for i, k in enumerate(keys)}
    instances: list[Any] = []
    for _ in range(3):
        order = keys[:]
        rng.shuffle(order)
        instances.append({k: full[k] for k in order})
        instances.append({"note": "n", **{k: full[k] for k in order}, "keynote": True})
    missing = dict(full)
    del missing[keys[5]]
    instances += [missing, {**full, "key00": "s"}, {**full, "other": 1}]
    _agrees_token_by_token(schema, qwen_vocab, instances)
    # A required key written twice (json.dumps cannot say it): the second time, it is
    # no longer among the keys left.
    automaton = Automaton(schema_to_grammar(schema))
    once = "{" + ", ".join(f'"{k}": 1' for k in keys) + "}"
    twice = "{" + ", ".join(f'"{k}": 1' for k in [*keys, keys[3]]) + "}"
    assert automaton.matches(once.encode()) and not automaton.matches(twice.encode())


def _many_structured_members(n: int) -> Any:
    """An object of ``n`` optional keys (past MAX_SUBSET_KEYS: untracked), each holding a
    different object with an array of objects inside, and unlisted keys holding arrays of
    another such object."""
    def value(i: int) -> Any:
        return {"type": "object", "additionalProperties": False,
                "properties": {f"a{i}": {"type": "string"}, "b": {"type": "integer"},
                               "c": {"type": "array", "items": {
                                   "type": "object", "required": [f"x{i}"],
                                   "properties": {f"x{i}": {"type": "boolean"}}}}}}
    return {"type": "object", "properties": {f"p{i}": value(i) for i in range(n)},
            "additionalProperties": {"type": "array", "items": value(n)}}


def test_large_object_with_structured_optional_and_unlisted_values(qwen_vocab: Any) -> None:
    """Past MAX_SUBSET_KEYS the optional keys are untracked and share one trie, each with
    its own object value, and unlisted keys hold arrays of another: the language agrees
    with jsonschema token by token, in any key order, on valid and invalid values."""
    schema = _many_structured_members(12)
    _agrees_token_by_token(schema, qwen_vocab, [
        {"p3": {"a3": "s", "b": 2, "c": [{"x3": False}, {"x3": True}]}, "p0": {}},
        {"p11": {"c": []}, "p2": {"b": -1}, "p11 ": {}},
        {"p1": {"a1": 1}}, {"p1": {"c": [{}]}}, {"p4": {"a3": "s"}}, {"p9": []},
        {"p6": {"b": 1.5}}, {"p8": {"c": [{"x8": None}]}},
        {"other": [{"a12": "s", "c": [{"x12": False}]}], "p1": {}}, {"other": [{"a1": "s"}]},
        {"other": {"a12": "s"}}, {"p0": {}, "other": [], "more": [{"b": 2}, {"c": [{}]}]},
    ])


def test_emptiness_search_finds_a_short_witness_under_recursion(qwen_vocab: Any) -> None:
    # A oneOf between recursive documents (keys not starting with "$") and "$date"
    # objects: the masks' states hold a difference whose emptiness search went depth
    # first down nested documents, a new term per level, and ran out of
    # max_liveness_search (Github_medium/o10566's idiom).
    schema = {"$defs": {
        "doc": {"type": "object", "patternProperties": {"^[^$]": {"$ref": "#/$defs/value"}},
                "additionalProperties": False},
        "value": {"oneOf": [{"type": "string"}, {"type": "number"},
                            {"type": "array", "items": {"$ref": "#/$defs/value"}},
                            {"$ref": "#/$defs/doc"}, {"$ref": "#/$defs/date"}]},
        "date": {"type": "object", "properties": {"$date": {"type": "integer"}},
                 "required": ["$date"], "additionalProperties": False}},
        "allOf": [{"$ref": "#/$defs/doc"}, {"required": ["_id"]}]}
    _agrees_token_by_token(schema, qwen_vocab, [
        {"_id": {"$date": 3}, "name": "Jo", "tags": ["a", {"b": 1}]},
        {"_id": {"$date": 3, "x": 1}}, {"_id": {"$date": "3"}}, {"a": 1}])


@pytest.mark.slow
def test_emptiness_search_heads_for_the_required_members(qwen_vocab: Any) -> None:
    # SchemaStore's task.json idiom: each oneOf branch requires its own key beside a
    # shared base with many optional members. A breadth-first emptiness search wrote
    # every subset of the optional members before the required ones and ran out of
    # max_liveness_search; guided by the required values still to write, it does not.
    kinds = ["node", "python", "shell", "docker"]
    optional = {f"opt{i}": {"type": ["string", "boolean", "number"][i % 3]} for i in range(10)}
    base = {"type": "object", "properties": {"slug": {"type": "string"}, **optional},
            "required": ["slug"]}
    runtime = {"type": "object", "properties": {"entrypoint": {"type": "string"}},
               "required": ["entrypoint"], "additionalProperties": False}
    schema = {"$defs": {"base": base}, "additionalProperties": False,
              "properties": {k: True for k in [*base["properties"], *kinds]},
              "oneOf": [{"allOf": [{"$ref": "#/$defs/base"},
                                   {"type": "object", "required": [k],
                                    "properties": {k: runtime}}]} for k in kinds]}
    _agrees_token_by_token(schema, qwen_vocab, [
        {"slug": "a", "node": {"entrypoint": "x"}},
        {"slug": "a", "node": {"entrypoint": "x"}, "shell": {"entrypoint": "y"}},
        {"slug": "a", "node": {"entrypoint": "x"}, "shell": 3}])


def test_overlapping_oneof_with_dependent_required_object() -> None:
    # Found by hypothesis: the emptiness search of "the anyOf's object minus the oneOf's
    # dependentRequired object" explored more than max_liveness_search terms (~50 s) on
    # the first byte of an object. Two branches that say nothing of objects now leave no
    # object valid without any search.
    schema = {"anyOf": [{"dependentRequired": {"a": ["b"]}}],
              "oneOf": [{"multipleOf": 0.5}, {"minimum": 0, "maximum": 3},
                        {"dependentRequired": {"a": ["b"]}}]}
    # Every instance matches two or three branches (non-objects pass dependentRequired,
    # non-numbers pass the numeric ones), so nothing is valid.
    assert not verdict(schema, 2) and not verdict(schema, {})
    assert not accepts(schema, "2")  # numbers: decided without touching the objects
    assert not accepts(schema, "{}")


_DEPENDS = {"dependentRequired": {"a": ["b"]}}
_DEPENDS_ON_SCHEMA = {"dependentSchemas": {
    "a": {"required": ["b"], "properties": {"b": {"type": "integer"}}}}}
_OBJECT_BRANCHES = {
    "depends": _DEPENDS, "min2": {"minProperties": 2}, "max1": {"maxProperties": 1},
    "needs_b": {"required": ["b"]}, "half": {"multipleOf": 0.5},
    "a_int": {"properties": {"a": {"type": "integer"}}},
    "legacy": {"dependencies": {"b": ["c"]}}, "object": {"type": "object"},
    "c_needs_ab": {"dependentRequired": {"c": ["a", "b"]}},
    "one_or_two": {"minProperties": 1, "maxProperties": 2},
}
_OBJECT_INSTANCES = [{}, {"a": 1}, {"a": "x"}, {"b": 1}, {"a": 1, "b": 2}, {"a": "x", "b": 2}, {"c": 1},
                     {"b": 1, "c": 2}, {"a": 1, "b": 1, "c": 1}, {"c": 1, "a": 1}, {"d": None},
                     2, 1.5, "s", [1]]


@pytest.mark.parametrize("names", [
    ("depends", "min2"), ("max1", "needs_b", "legacy"), ("half", "depends"),
    ("object", "a_int", "max1"), ("c_needs_ab", "one_or_two"), ("legacy", "depends", "min2"),
    ("object", "a_int", "depends"), ("a_int", "needs_b"),
])
@pytest.mark.parametrize("within", [False, True], ids=["alone", "within-anyOf"])
def test_overlapping_oneof_objects_from_their_failures(names: tuple[str, ...],
                                                     within: bool) -> None:
    """Overlapping ``oneOf`` branches over free-form objects: a branch that says nothing of
    objects holds the others' objects, and failing ``dependentRequired``,
    ``dependencies`` or a property count is a plain object schema, so each branch's
    objects minus the others' are built without an emptiness search (a search over such
    objects exhausted its budget after ~20 s on the first byte of any instance)."""
    schema: dict[str, Any] = {"oneOf": [_OBJECT_BRANCHES[n] for n in names]}
    if within:
        schema["anyOf"] = [_DEPENDS]
    verdicts = [verdict(schema, instance) for instance in _OBJECT_INSTANCES]
    if not within:  # some instance of each pair or triple alone is valid, some not
        assert any(verdicts) and not all(verdicts)
    for instance, valid in zip(_OBJECT_INSTANCES, verdicts):
        assert accepts(schema, json.dumps(instance)) == valid, instance


@pytest.mark.parametrize("schema", [
    {"not": {"dependentRequired": {"a": ["b"]}}},
    {"not": {"minProperties": 2}},
    {"not": {"maxProperties": 1, "required": ["a"]}},
    {"if": {"dependentRequired": {"a": ["b"]}}, "then": {"required": ["c"]},
     "else": {"maxProperties": 2}},
    {"if": {"minProperties": 2}, "then": {"required": ["a"]}},
    {"$schema": "http://json-schema.org/draft-07/schema#",
     "not": {"dependencies": {"a": ["b", "c"]}}},
    {"$schema": "http://json-schema.org/draft-04/schema#",
     "not": {"dependencies": {"a": ["b"]}, "minProperties": 1}},
    {"type": "object",
     "not": {"dependentRequired": {"a": ["b"]}, "properties": {"a": {"type": "string"}}}},
    {"not": _DEPENDS_ON_SCHEMA},
    {"oneOf": [_DEPENDS_ON_SCHEMA, {"minProperties": 2}]},
    {"anyOf": [_DEPENDS], "oneOf": [{"maxProperties": 3}, _DEPENDS_ON_SCHEMA]},
    {"if": _DEPENDS_ON_SCHEMA, "then": {"required": ["c"]}, "else": {"maxProperties": 1}},
    {"$schema": "http://json-schema.org/draft-07/schema#",
     "not": {"dependencies": {"a": {"maxProperties": 2}, "c": ["b"]}}},
    {"not": {"dependentSchemas": {"a": True, "b": False}}},
    {"oneOf": [True, {"dependentSchemas": {"c": {"dependentSchemas": {"a": {"required": ["b"]}}}}}]},
], ids=["not-depends", "not-min", "not-max-required", "if-depends", "if-min", "not-draft7",
        "not-draft4", "not-depends-properties", "not-schema", "oneof-schema",
        "oneof-schema-within-anyof", "if-schema", "not-draft7-schema", "not-booleans",
        "oneof-nested-schemas"])
def test_not_and_if_of_free_form_objects_from_their_failures(schema: dict[str, Any]) -> None:
    """``not``, ``if`` and ``oneOf`` over free-form objects that say only which keys they
    require or depend on (on a schema of the same kind too) and how many members they
    have: their failures are plain object schemas (``if-depends`` spent ~20 s on an
    emptiness search, then raised a budget error; ``oneof-schema-within-anyof`` ~200 s)."""
    instances = [*_OBJECT_INSTANCES, {"a": {"b": 1}}, {"a": 1, "b": "y"}, None]
    verdicts = [verdict(schema, instance) for instance in instances]
    assert any(verdicts) and not all(verdicts)
    for instance, valid in zip(instances, verdicts):
        assert accepts(schema, json.dumps(instance)) == valid, instance


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "forbidden-key"])
def test_oneof_branches_whose_anyof_objects_all_forbid_a_key_are_disjoint(closed: bool) -> None:
    """A ``oneOf`` branch that is an ``anyOf`` of objects (one ``required`` set or
    another) still forbids what every one of its objects forbids, so it is disjoint from
    a branch requiring such a key: a plain union, no complement (Github_hard/o47674 spent
    ~7 ms a step searching the complement's emptiness)."""
    from constrain.json_compiler import Compiler

    ecu: dict[str, Any] = {
        "type": "object", "properties": {"uuid": {"type": "string"}, "parent": {},
                                         "name": {"type": "string"}},
        "anyOf": [{"required": ["parent"]}, {"required": ["uuid", "name"]}]}
    if closed:
        ecu["additionalProperties"] = False
    else:
        ecu["properties"]["strings"] = False
    table = {"type": "object", "required": ["strings"], "properties": {"strings": {}}}
    schema = {"oneOf": [{"$ref": "#/$defs/ecu"}, {"$ref": "#/$defs/table"}],
              "$defs": {"ecu": ecu, "table": table}}
    compiler = Compiler(schema, JsonSchemaOptions())
    branches = [compiler.value([compiler.root.child(b, "oneOf", i)])
                for i, b in enumerate(schema["oneOf"])]
    assert branches[0].keys is not None and branches[0].keys.forbids("strings")
    assert compiler.combinators.disjoint(*branches, "object")
    automaton = Automaton(schema_to_grammar(schema, JsonSchemaOptions()))
    for instance in [{"parent": 1}, {"uuid": "u", "name": "n"}, {"strings": {}},
                     {"strings": 1, "parent": 2}, {"uuid": "u"}, {"parent": 1, "x": 2}]:
        text = json.dumps(instance).encode()
        assert automaton.matches(text) == verdict(schema, instance), instance


def test_oneof_branches_disjoint_on_the_value_a_required_key_may_hold() -> None:
    """xAPI's inverse functional identifier (Github_trivial/o88605): each branch requires
    one key and lets the others' keys hold only ``null`` (by ``patternProperties``), so
    an object in two branches would need a key both required as a string and held as
    ``null``: disjoint, a plain union (the complements cost ~170 ms a step)."""
    from constrain.json_compiler import Compiler

    keys = ["mbox", "openid", "account"]
    schema = {"oneOf": [
        {"type": "object", "properties": {k: {"type": "string"}}, "required": [k],
         "patternProperties": {"^(" + "|".join(o for o in keys if o != k) + ")$":
                               {"type": "null"}}}
        for k in keys]}
    compiler = Compiler(schema, JsonSchemaOptions())
    branches = [compiler.value([compiler.root.child(b, "oneOf", i)])
                for i, b in enumerate(schema["oneOf"])]
    assert all(compiler.combinators.disjoint(a, b, "object")
               for i, a in enumerate(branches) for b in branches[i + 1:])
    overlapping = {"oneOf": [{"type": "object", "required": ["mbox"]},
                             {"type": "object", "properties": {"mbox": {"type": "string"}}}]}
    compiler = Compiler(overlapping, JsonSchemaOptions())
    a, b = (compiler.value([compiler.root.child(s, "oneOf", i)])
            for i, s in enumerate(overlapping["oneOf"]))
    assert not compiler.combinators.disjoint(a, b, "object")
    automaton = Automaton(schema_to_grammar(schema, JsonSchemaOptions()))
    for instance in [{"mbox": "m"}, {"mbox": "m", "openid": None}, {"mbox": "m", "openid": "o"},
                     {"openid": "o", "account": None}, {}, {"x": 1, "account": "a"}]:
        text = json.dumps(instance).encode()
        assert automaton.matches(text) == verdict(schema, instance), instance


def test_nested_oneof_keeps_key_facts_and_enum_arrays_are_tested_by_language() -> None:
    """Github_medium/o65917's shape: an outer ``oneOf`` whose branch is itself a ``oneOf``
    (beside ``required``) keeps what its branches say about keys, and a key held as a
    listed array is disjoint from an array of other strings. Both were unknown: the
    branches were taken as overlapping and excluded by complements (4.8 s of steps)."""
    from constrain.json_compiler import Compiler

    changes = {"type": "array", "items": {"enum": ["size", "mode"]}, "minItems": 1}
    schema = {
        "type": "object",
        "oneOf": [{"$ref": "#/$defs/changed"},
                  {"required": ["status", "error"],
                   "properties": {"status": {"enum": ["error"]}, "error": {"type": "string"}}}],
        "$defs": {"changed": {
            "required": ["status"], "properties": {"status": {"enum": ["changed"]}},
            "oneOf": [{"required": ["changes", "kind"],
                       "properties": {"changes": changes, "kind": {"enum": ["file"]}}},
                      {"required": ["changes", "kind"],
                       "properties": {"changes": changes, "kind": {"enum": ["link"]}}},
                      {"required": ["changes"],
                       "properties": {"changes": {"enum": [["deleted"]]}}}]}}}
    compiler = Compiler(schema, JsonSchemaOptions())
    inner = compiler.root.child(schema["$defs"]["changed"], "$defs", "changed")
    branches = [compiler.value([inner.child(b, "oneOf", i)])
                for i, b in enumerate(schema["$defs"]["changed"]["oneOf"])]
    assert all(compiler.combinators.disjoint(a, b, "object")
               for i, a in enumerate(branches) for b in branches[i + 1:])
    outer = [compiler.value([compiler.root.without("oneOf"), compiler.root.child(b, "oneOf", i)])
             for i, b in enumerate(schema["oneOf"])]
    assert compiler.combinators.disjoint(outer[0], outer[1], "object")
    # Listed arrays that one of the other branch's arrays spells: not disjoint.
    both = {"oneOf": [{"required": ["changes"], "properties": {"changes": changes}},
                      {"required": ["changes"], "properties": {"changes": {"enum": [["mode"]]}}}]}
    compiler = Compiler(both, JsonSchemaOptions())
    a, b = (compiler.value([compiler.root.child(s, "oneOf", i)])
            for i, s in enumerate(both["oneOf"]))
    assert not compiler.combinators.disjoint(a, b, "object")
    for s in (schema, both):
        automaton = Automaton(schema_to_grammar(s, JsonSchemaOptions()))
        for instance in [{"status": "changed", "changes": ["size"], "kind": "file"},
                         {"status": "changed", "changes": ["deleted"]},
                         {"status": "changed", "changes": ["mode"]},
                         {"status": "changed", "changes": ["deleted"], "kind": "link"},
                         {"status": "error", "error": "e"}, {"status": "error"},
                         {"changes": ["mode"], "kind": "link", "status": "changed"}]:
            text = json.dumps(instance).encode()
            assert automaton.matches(text) == verdict(s, instance), (s is both, instance)


@pytest.mark.parametrize("order", ["schema", "any"])
def test_anyof_of_single_required_keys_becomes_disjoint_first_present_branches(order: str) -> None:
    """"At least one of these keys" (Github_medium/o21108's eight ``{"required": [k]}``
    branches): each branch is made to forbid the keys before its own, in the order the
    object lists them, so the branches are disjoint and the language is the same."""
    from constrain.json_compiler import Compiler

    schema = {"type": "object", "additionalProperties": False,
              "properties": {"x": {"type": "integer"}, "b": {"type": "array"},
                             "a": {"type": "string"}, "c": {"type": "boolean"}},
              "anyOf": [{"required": ["a"], "title": "t"}, {"required": ["b"]},
                        {"required": ["c"]}]}
    options = JsonSchemaOptions(property_order=order)
    compiler = Compiler(schema, options)
    rest = [compiler.root.without("anyOf")]
    branches = compiler.combinators._first_present(rest, compiler.root)
    assert branches is not None
    assert [b.schema for b in branches] == [
        {"required": ["b"], "properties": {}},
        {"required": ["a"], "properties": {"b": False}},
        {"required": ["c"], "properties": {"b": False, "a": False}}]
    values = [compiler.value(rest + [b]) for b in branches]
    assert all(compiler.combinators.disjoint(p, q, "object")
               for i, p in enumerate(values) for q in values[i + 1:])
    automaton = Automaton(schema_to_grammar(schema, options))
    for instance in [{}, {"x": 1}, {"a": "s"}, {"b": []}, {"c": True}, {"x": 2, "c": False},
                     {"b": [], "a": "s", "c": True}, {"a": 1}, {"b": [], "d": 1}]:
        text = json.dumps(instance).encode()
        assert automaton.matches(text) == verdict(schema, instance), instance
    for not_single in ([{"required": ["a", "b"]}, {"required": ["c"]}],
                       [{"required": ["a"]}, {"required": ["a"]}],
                       [{"required": ["a"], "minProperties": 2}, {"required": ["c"]}]):
        other = dict(schema, anyOf=not_single)
        compiler = Compiler(other, options)
        assert compiler.combinators._first_present(
            [compiler.root.without("anyOf")], compiler.root) is None


_LOOKAHEAD_SCHEMAS = [
    {"type": "object", "patternProperties": {"^(?!x-)[a-z]+$": {"type": "integer"},
                                             "^x-": {"type": "string"}},
     "additionalProperties": False},
    {"type": "object", "propertyNames": {"pattern": "^(?!_)\\w+$"}},
    {"type": "object", "required": ["name"],
     "properties": {"name": {"type": "string", "pattern": "^(?!admin$|root$)[a-z]{2,8}$"}}},
    {"type": "string", "pattern": "^(?=.*[A-Z])(?=.*\\d).{6,}$"},
    {"not": {"type": "string", "pattern": "^(?=.*[A-Z])(?=.*\\d).{6,}$"}},
    {"oneOf": [{"type": "string", "pattern": "^(?!a)"}, {"type": "string", "maxLength": 2}]},
    {"type": "string", "pattern": "^((?!--).)*$", "maxLength": 6},
    {"type": "string", "pattern": "^((?!--).)*-$"},  # lookarounds in a repeat: a self-reference
    {"not": {"type": "string", "pattern": "^(?:(?=a)ab)*$"}},
    {"type": "object", "propertyNames": {"pattern": "^(?:(?!__)[a-z_])+x$"}},
]
_LOOKAHEAD_INSTANCES = [
    {"ab": 1, "x-y": "s"}, {"x-y": 3}, {"ab": "s"}, {"AB": 1}, {"_a": 1}, {"a_": 1},
    {"name": "admin"}, {"name": "bob"}, {"name": "admins"}, "Passw0rd", "password",
    "PASSWORD1", "aB1", "", "ab", "ba", "abc", "bcd", "a--b", "a-b-c", {}, 5,
    "a-", "a--", "abab", "aba", {"a_x": 1}, {"a__x": 1},
]


@pytest.mark.parametrize("schema", _LOOKAHEAD_SCHEMAS, ids=range(len(_LOOKAHEAD_SCHEMAS)))
def test_lookaheads_in_patterns_match_jsonschema(schema: dict[str, Any]) -> None:
    """Lookaheads in ``pattern``, ``patternProperties`` and ``propertyNames``, kept and
    complemented (``not``, ``oneOf``): exact, as jsonschema judges (it used to refuse them;
    llguidance and xgrammar refuse them too)."""
    verdicts = [verdict(schema, instance) for instance in _LOOKAHEAD_INSTANCES]
    assert any(verdicts) and not all(verdicts)
    for instance, valid in zip(_LOOKAHEAD_INSTANCES, verdicts):
        assert accepts(schema, json.dumps(instance)) == valid, instance


@pytest.mark.parametrize(("inner", "outer", "within"), [
    pytest.param({"required": ["a", "b"], "properties": {"a": {"type": "string"}}},
                 {"required": ["a"], "properties": {"a": {"type": "string"}}}, True,
                 id="more-required-same-value"),
    pytest.param({"required": ["a"]}, {"required": ["a", "b"]}, False, id="fewer-required"),
    pytest.param({"properties": {"a": {"type": "string"}}},
                 {"properties": {"a": {"type": "string", "minLength": 1}}}, False,
                 id="looser-value"),
    pytest.param({"properties": {"a": {"type": "string"}}}, {"properties": {"a": {}}}, True,
                 id="any-value"),
    pytest.param({"required": ["a"]}, {"required": ["a"], "minProperties": 2}, False,
                 id="outer-counts"),
    pytest.param({"properties": {"a": {"$ref": "#/$defs/x"}}},
                 {"properties": {"a": {"$ref": "#/$defs/x"}}}, False, id="equal-with-ref"),
    pytest.param({"allOf": [{"required": ["a"]}, {"properties": {"a": {"const": 1}}}]},
                 {"type": ["object", "null"], "required": ["a"],
                  "properties": {"a": {"const": 1}}}, True, id="through-allOf"),
])
def test_a_branch_within_another_is_judged_from_keywords(inner: Any, outer: Any,
                                                         within: bool) -> None:
    schema = {"oneOf": [inner, outer], "$defs": {"x": {"type": "string"}}}
    compiler = Compiler(schema, JsonSchemaOptions())
    nodes = [compiler.root.child(b, "oneOf", i) for i, b in enumerate(schema["oneOf"])]
    combinators = compiler.combinators
    demands = combinators._object_demands(nodes[1])
    assert (demands is not None and combinators._objects_within([nodes[0]], demands)) is within


_FREED_SCHEMAS = [
    {"type": "object", "required": ["id", "tags"], "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "owner": {"type": "object", "properties": {"login": {"type": "string"},
                                                   "site": {"type": "string"}}}}},
    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}},
     "patternProperties": {"^x-": {"type": "boolean"}}, "additionalProperties": False},
    {"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "required": ["v"], "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}},
    {"oneOf": [{"type": "object", "required": ["a"]}, {"type": "object", "required": ["b"],
                                                        "properties": {"b": {"const": 1}}}]},
    {"type": "object", "properties": {"k": {"enum": ["p", "q"]}, "n": {"type": "integer"}},
     "if": {"properties": {"k": {"const": "p"}}}, "then": {"required": ["n"]},
     "else": {"not": {"required": ["n"]}}, "minProperties": 1, "maxProperties": 3},
    {"type": "array", "uniqueItems": True, "maxItems": 4,
     "items": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8}},
    {"anyOf": [{"type": "number", "minimum": 0, "multipleOf": 0.5},
               {"type": "string", "format": "date"}]},
    # A complement of free-form values: regular stand-ins, whose lazy nodes build through
    # the compiler's regularizer.
    {"type": "object", "patternProperties": {"^[0-9]$": {"type": "array"}},
     "not": {"anyOf": [{"required": ["1", "3"]}, {"patternProperties": {"^(1|2)$": False}}]}},
    # A guard in a recursive schema: its path nodes refer to each other.
    {"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {
        "tags": {"type": "array", "uniqueItems": True, "items": {"type": "string"}},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}},
    # A guard over objects: the automata and masks of their spellings.
    {"type": "array", "uniqueItems": True, "items": {"type": "object"}},
    # A sub-schema in another dialect: the document's dialects refer to each other.
    {"properties": {"a": {"$schema": "http://json-schema.org/draft-04/schema#",
                          "type": "integer"}}},
    # A dynamic reference under a scope.
    {"$id": "https://example.com/list", "type": "array",
     "items": {"$dynamicRef": "#item"}, "$defs": {"item": {"$dynamicAnchor": "item"}}},
]
_FREED_INSTANCES = [
    {"id": 1, "tags": ["x"], "owner": {"site": "s", "login": "l"}, "name": "n"},
    {"b": 2.5, "x-y": True, "a": "q"},
    {"v": 1, "kids": [{"v": 2, "kids": []}, {"v": 3}]},
    {"b": 1},
    {"k": "p", "n": 4},
    ["ab", "c"],
    "2024-02-29",
    {"1": [1, 2], "4": []},
    {"tags": ["a", "b"], "kids": [{"tags": ["a"], "kids": []}]},
    [{"a": 1}, {"a": [1]}, {}],
    {"a": 3},
    [1, "x"],
]
# Refused, after the path trace of their uniqueItems was made.
_FREED_REFUSED = [
    {"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {
        "tags": {"type": "array", "uniqueItems": True, "items": {"type": "number", "minimum": 0,
                                                                 "maximum": 9,
                                                                 "multipleOf": 0.000001}},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}},
]


def test_a_dropped_constraint_is_freed_without_the_collector(byte_vocab: Vocabulary) -> None:
    """Compiling and decoding leave nothing in reference cycles: a long-lived process that
    compiles many schemas would otherwise hand each one's lazy object nodes to the
    collector, whose full passes come more often the more it is given (closures that
    called each other through their cells left ~450 objects per MaskBench schema)."""
    import gc

    from constrain.compiler import CompiledConstraint

    def compile_and_decode() -> None:
        for schema, instance in zip(_FREED_SCHEMAS, _FREED_INSTANCES):
            compiled = CompiledConstraint(schema_to_grammar(schema, JsonSchemaOptions()),
                                          byte_vocab, kind="json")
            matcher = compiled.matcher()
            for byte in json.dumps(instance).encode():
                matcher.fill_bitmask(np.zeros((1, compiled.mask_words), dtype=np.int32))
                assert matcher.advance(byte), (schema, instance)
            assert matcher.is_accepting()
        for schema in _FREED_REFUSED:
            with pytest.raises(UnsupportedSchemaError, match="uniqueItems"):
                schema_to_grammar(schema, JsonSchemaOptions())

    compile_and_decode()  # process-wide tables (shared leaves, the JSON library) made once
    gc.collect()
    was = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        compile_and_decode()
        gc.collect()
        ours = [o for o in gc.garbage
                if (getattr(type(o), "__module__", "") or "").startswith("constrain")
                or (getattr(o, "__module__", "") or "").startswith("constrain")]
    finally:
        gc.set_debug(was)
        gc.garbage.clear()
    assert ours == [], sorted({type(o).__qualname__ for o in ours})


def test_a_resource_in_another_dialect_is_read_in_its_own() -> None:
    """A 2020-12 document referring to the draft-04 metaschema reads that metaschema as
    draft 4 (boolean ``exclusiveMinimum``, array ``items``), as ``jsonschema`` does; it
    was read as 2020-12, and the boolean bound raised a bare ValueError."""
    schema = {"$ref": "http://json-schema.org/draft-04/schema#"}
    instances = [{"multipleOf": 0}, {"multipleOf": 1}, {"minimum": 1, "exclusiveMinimum": True},
                 {"exclusiveMinimum": 3}, {"type": "integer"}, {"type": "intger"},
                 {"items": [{}]}]
    assert [verdict(schema, i) for i in instances] == [False, True, True, False, True, False,
                                                       True]
    for instance in instances:
        assert accepts(schema, json.dumps(instance)) == verdict(schema, instance), instance


def test_a_draft_03_resource_is_refused_where_it_is_reached() -> None:
    with pytest.raises(UnsupportedSchemaError) as info:
        schema_to_grammar({"properties": {"a": {"$ref": "http://json-schema.org/draft-03/schema#"}}})
    assert info.value.keyword == "$schema"


def test_an_embedded_dialect_s_own_identifier_is_read_in_the_parent_s() -> None:
    """A 2020-12 document whose definition declares draft 4 and an ``id``: ``jsonschema``
    reads that ``id`` with the parent's dialect (where it is no identifier), so references
    inside still resolve against the document (MaskBench Github_medium/o44063; they were
    refused as unresolvable), while the keywords below are read as draft 4."""
    schema = {
        "definitions": {"lemon": {
            "$schema": "http://json-schema.org/draft-04/schema",
            "id": "schema/lemon",
            "definitions": {"ripe": {"type": "boolean"}},
            "properties": {"ripe": {"$ref": "#/definitions/lemon/definitions/ripe"},
                           "n": {"type": "integer"}},
            "dependentRequired": {"ripe": ["n"]},  # not a draft-4 keyword: ignored
        }},
        "properties": {"lemon": {"$ref": "#/definitions/lemon"}},
    }
    instances = [{"lemon": {"ripe": True}}, {"lemon": {"ripe": 1}}, {"lemon": {"n": 1}},
                 {"lemon": {"n": 1.0}}, {}]
    assert [verdict(schema, i) for i in instances] == [True, False, True, False, True]
    for instance in instances:
        assert accepts(schema, json.dumps(instance)) == verdict(schema, instance), instance


def test_a_remote_reference_is_refused_without_fetching(monkeypatch: pytest.MonkeyPatch) -> None:
    """jsonschema, given no registry, fetches a remote ``$ref`` over HTTP (no timeout) in
    the middle of a compile; the compiler's validators get the shipped metaschemas only."""
    import urllib.request

    fetched: list[Any] = []

    def offline(*args: Any, **kwargs: Any) -> Any:
        fetched.append(args)
        raise OSError("offline")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(SchemaError, match="cannot resolve") as info:
        schema_to_grammar({"properties": {"a": {"$ref": "http://example.com/remote.json"}}})
    assert info.value.pointer == "#/properties/a/$ref"
    assert fetched == []
    # The metaschemas jsonschema ships still resolve.
    assert accepts({"$ref": "http://json-schema.org/draft-04/schema#"}, '{"type": "string"}')


def test_a_referenced_schema_s_own_identifier_is_not_read() -> None:
    """``jsonschema`` evaluates a ``$ref`` target with the resolver the lookup left, never
    entering the target's own identifier: a non-string draft-4 ``id`` there is no error,
    and a relative ``$id`` there is not joined twice (the official suite's "base URI change
    - change folder": ``folder/`` then ``folderInteger.json`` inside it)."""
    odd_id = {"$schema": D4, "properties": {"a": {"$ref": "#/misc"}},
              "misc": {"id": {"type": "integer"}}}
    assert verdict(odd_id, {"a": {"id": 1}})
    assert accepts(odd_id, '{"a": {"id": 1}}')
    folder = {
        "$id": "http://localhost:1234/root.json",
        "properties": {"list": {"$ref": "folder/"}},
        "$defs": {"baz": {"$id": "folder/", "type": "array",
                          "items": {"$ref": "integer.json"}},
                  "int": {"$id": "folder/integer.json", "type": "integer"}},
    }
    for instance in ({"list": [1]}, {"list": ["a"]}):
        assert accepts(folder, json.dumps(instance)) == verdict(folder, instance), instance


ADDRESS = {"type": "object", "required": ["zip"],
           "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}}}
PERSON = {"$id": "https://example.com/person.json", "type": "object",
          "properties": {"home": {"$ref": "address.json"},
                         "tags": {"$ref": "https://example.com/tags.json"}}}
TAGS_DRAFT7 = {"$schema": "http://json-schema.org/draft-07/schema#",
               "type": "array", "items": [{"type": "string"}], "additionalItems": False}


def _with_resources(resources: dict[str, Any]) -> JsonSchemaOptions:
    return JsonSchemaOptions(resources=resources)


def test_resources_are_other_documents_a_reference_names() -> None:
    """Multi-file schemas: ``resources`` maps absolute URIs to documents, each read in
    its own dialect (draft 7's array ``items`` here), checked against ``jsonschema`` given
    the same documents."""
    import referencing
    import referencing.jsonschema

    resources = {"https://example.com/address.json": ADDRESS,
                 "https://example.com/tags.json": TAGS_DRAFT7}
    options = _with_resources(resources)
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(
        (uri, referencing.jsonschema.DRAFT202012.create_resource(doc) if "$schema" not in doc
         else referencing.Resource.from_contents(doc)) for uri, doc in resources.items())
    validator = Draft202012Validator(PERSON, registry=registry)
    automaton = Automaton(schema_to_grammar(PERSON, options))
    for instance in ({"home": {"zip": "12345"}}, {"home": {"zip": "1234"}}, {"home": {}},
                     {"tags": ["a"]}, {"tags": ["a", "b"]}, {"tags": [1]}, {}):
        valid = validator.is_valid(instance)
        assert automaton.matches(json.dumps(instance).encode()) == valid, instance
    # Read as draft 7 (array items, additionalItems), not as the referring document's 2020-12.
    assert not validator.is_valid({"tags": ["a", "b"]})
    assert not automaton.matches(b'{"tags": ["a", "b"]}')


def test_resources_options_stay_hashable_and_key_compiles_by_content(
        byte_vocab: Vocabulary) -> None:
    from constrain import compile_json_schema

    first = _with_resources({"https://example.com/address.json": ADDRESS})
    again = _with_resources({"https://example.com/address.json": dict(ADDRESS)})
    other = _with_resources({"https://example.com/address.json": {"type": "object"}})
    assert first == again and hash(first) == hash(again) and first != other
    assert first.resources == (("https://example.com/address.json", json.dumps(ADDRESS)),)
    schema = {"$ref": "https://example.com/address.json"}
    strict = compile_json_schema(schema, byte_vocab, **vars(first))
    assert compile_json_schema(schema, byte_vocab, **vars(again)) is strict
    loose = compile_json_schema(schema, byte_vocab, **vars(other))
    assert loose is not strict
    assert loose.automaton.matches(b"{}") and not strict.automaton.matches(b"{}")


def test_resources_errors_are_specific() -> None:
    with pytest.raises(ValueError, match="absolute URI"):
        _with_resources({"address.json": ADDRESS})
    with pytest.raises(TypeError, match="not a schema document"):
        _with_resources({"https://example.com/a.json": [ADDRESS]})
    with pytest.raises(ValueError, match="not JSON"):
        _with_resources({"https://example.com/a.json": {"const": float("nan")}})
    with pytest.raises(TypeError, match="mapping"):
        JsonSchemaOptions(resources=["https://example.com/a.json"])  # type: ignore[arg-type]
    # A document not given is not fetched: a SchemaError at the reference.
    with pytest.raises(SchemaError) as info:
        schema_to_grammar(PERSON, _with_resources({"https://example.com/address.json": ADDRESS}))
    assert info.value.pointer == "#/properties/tags/$ref"
    # A given document that fails its metaschema fails where a reference reaches it, with
    # its URI; one never reached fails nothing.
    broken = {"https://example.com/address.json": {"type": "strin"},
              "https://example.com/tags.json": TAGS_DRAFT7}
    with pytest.raises(SchemaError) as info:
        schema_to_grammar(PERSON, _with_resources(broken))
    assert info.value.pointer == "https://example.com/address.json#/type"
    schema_to_grammar({"properties": {"t": {"$ref": "https://example.com/tags.json"}}},
                      _with_resources(broken))
    # Except an identifier that is not a string: every lookup of an unknown name reads it.
    with pytest.raises(SchemaError) as info:
        schema_to_grammar(PERSON, _with_resources({**broken, "https://example.com/odd.json": {
            "$defs": {"x": {"$id": 3}}}}))
    assert info.value.pointer == "https://example.com/odd.json"


def test_string_enum_is_one_tree_over_its_characters() -> None:
    """A string ``enum`` is lowered as one tree over its values' characters (as an
    object's keys are), not a union of whole spellings, and means what each value's
    every JSON spelling means: escapes, surrogates, the empty string, a value that is a
    prefix of another."""
    values = ["", "a", "ab", "\ud800", "a\udfffb", "é", "\x00", "\n", '"', "\\", "\u2028",
              "😀", "IAB1", "IAB1-1", 3, None]
    schema = {"enum": values}
    accepted = ['""', '"a"', '"ab"', '"\\ud800"', '"\\uD800"', '"a\\udfffb"', '"é"', '"\\u00e9"',
                '"\\u0000"', '"\\n"', '"\\u000a"', '"\\""', '"\\u0022"', '"\\\\"', '"\u2028"',
                '"\\u2028"', '"😀"', '"\\ud83d\\ude00"', '"IAB1"', '"\\u0049AB1"', '"IAB1-1"',
                "3", "null"]
    refused = ['"abc"', '"b"', '"IAB"', '"IAB1-"', '"\\/"', '"\\ud83d"', "4", '"3"', '"null"']
    for text in accepted:
        assert accepts(schema, text.encode("utf-8")), text
    for text in refused:
        assert not accepts(schema, text.encode("utf-8")), text
    # The listed strings share one branch per common prefix: after '"IAB1' the union
    # holds the two ways on (end here, or "-1"), not one member per listed value.
    many = {"enum": [f"IAB{i}-{j}" for i in range(1, 27) for j in range(1, 16)]}
    automaton = Automaton(schema_to_grammar(many))
    state = automaton.step_bytes(automaton.start, b'"IAB1')
    assert state != Automaton.DEAD
    top = automaton._stack_frames[automaton._config_of(state)[0]][0]
    assert len(automaton.terms.alternatives(automaton.terms.head_tail(top)[0])) <= 12
