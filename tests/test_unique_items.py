"""uniqueItems beyond finite domains, enforced while decoding (constrain.unique_items).

The reference is ``jsonschema``: every document a random walk completes must validate, no
step a walk reaches may have an empty mask (a mask that allows a token leading nowhere
shows up as a later empty one), valid instances are accepted token by token and
instances repeating an element are refused.
"""

from __future__ import annotations

import json
import random
import warnings
from typing import Any

import jsonschema
import numpy as np
import pytest

from constrain import Vocabulary, compile_json_schema
from constrain.errors import GrammarError, ResourceLimitError, UnsupportedSchemaError
from constrain.json_schema import ApproximationWarning
from constrain.unique_items import UniqueItemsMatcher, has_enough_values

# Multi-byte tokens that cross element boundaries the way BPE tokens do.
_EXTRA = [b'","', b'", "', b'", "a', b'", "a"', b'","a","', b'"]', b'"],', b'["', b'["a',
          b'["a","b', b'", "b', b'ab', b'\\u0061', b'null', b', null', b'true', b'"a"',
          b'", "ba', b'{"', b'": ["', b'"], "',
          # Escapes and UTF-8 split across tokens: the same value spelt other ways.
          b'\\', b'\\u00', b'\\u00e', b'e9"', b'E9"', b'\xa9"', b'\xc3\xa9', b'\\ud83d',
          b'\\ude00"', b'\\"', b'\xf0\x9f', b'\x98\x80',
          # Numbers: digits that end an element, cross into the next, or spell 1 again.
          b'1, ', b', 1', b'1,', b'0]', b'.0', b'-0', b'12', b' 1', b'1.0', b'e+16',
          # Objects and arrays: tokens that end an element, cross into the next, or open one.
          b'}, {"', b'"}', b'}]', b'{}', b'[]', b'"},', b'}, {', b' {"', b'], [', b'"a": ',
          b'1}', b'2}', b'}}', b']]', b', "b": "']
_EOS = 256 + len(_EXTRA)


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    table: list[bytes | None] = [bytes([b]) for b in range(256)] + _EXTRA + [None]
    return Vocabulary.from_token_bytes(table, eos_token_ids=[_EOS])


def _tokens(vocab: Vocabulary, text: str) -> list[int]:
    """Greedy longest-match tokenization over the test vocabulary (crossing tokens used)."""
    data = text.encode()
    by_bytes = {b: t for t, b in enumerate(vocab.token_bytes) if b is not None}
    out, i = [], 0
    while i < len(data):
        for n in range(min(8, len(data) - i), 0, -1):
            if data[i:i + n] in by_bytes:
                out.append(by_bytes[data[i:i + n]])
                i += n
                break
    return out


def _accepts(compiled: Any, vocab: Vocabulary, text: str) -> bool:
    m = compiled.matcher()
    for t in _tokens(vocab, text):
        if not m.is_allowed(t) or not m.advance(t):
            return False
    return m.is_accepting() and m.advance(_EOS)


# Random walks favour short elements, closing brackets and the crossing tokens, so that
# arrays fill with elements that are often repeated attempts.
_PREFERRED = [ord(c) for c in 'ab"],'] + list(range(256, _EOS))


def _walk(compiled: Any, rng: random.Random, max_steps: int = 80,
          lookahead: bool = False, preferred_tokens: list[int] = _PREFERRED) -> str | None:
    """A random document (``None`` if unfinished); with ``lookahead``, each allowed token
    of each step is taken on a copy, which must leave a non-empty mask (exact masks)."""
    m = compiled.matcher()
    out = bytearray()
    for _ in range(max_steps):
        allowed = m.allowed_token_ids().tolist()
        assert allowed, f"empty mask after {bytes(out)!r}"
        for token in allowed if lookahead else ():
            twin = m.copy()
            assert twin.advance(token), (bytes(out), token)
            assert token == _EOS or twin.allowed_token_ids().size, (bytes(out), token)
        if _EOS in allowed and (rng.random() < 0.3 or len(out) > 40):
            return out.decode()
        preferred = [t for t in allowed if t in preferred_tokens]
        token = rng.choice(preferred if preferred and rng.random() < 0.9 else allowed)
        assert m.advance(token), (bytes(out), token)
        if token == _EOS:
            return out.decode()
        out += compiled.vocab.token_bytes[token]
    return None


SCHEMAS = {
    "strings": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    "short-or-b": {"type": "array", "uniqueItems": True,
                   "items": {"type": "string", "pattern": "^(a|b[a-z]*)$"}},
    "nullable": {"type": "array", "uniqueItems": True, "maxItems": 6,
                 "items": {"type": ["string", "null", "boolean"], "maxLength": 8}},
    "tuple": {"type": "array", "uniqueItems": True, "minItems": 2,
              "prefixItems": [{"const": "a"}, {"type": "string", "pattern": "^[ab]+$"}],
              "items": {"type": "string"}},
    "nested": {"type": "object", "required": ["tags"], "additionalProperties": False,
               "properties": {"tags": {"$ref": "#/$defs/tags"},
                              "groups": {"type": "array", "items": {"$ref": "#/$defs/tags"}}},
               "$defs": {"tags": {"type": "array", "uniqueItems": True,
                                  "items": {"type": "string", "maxLength": 20}}}},
    "string-or-list": {"oneOf": [{"type": "string"},
                                 {"type": "array", "items": {"type": "string"},
                                  "uniqueItems": True}]},
    # The same array schema directly under one key and as a branch under another: the
    # branch's arrays are that place's, guarded both ways.
    "shared-branch": {"type": "object", "additionalProperties": False,
                      "properties": {"a": {"$ref": "#/$defs/u"},
                                     "b": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/u"}]}},
                      "$defs": {"u": {"type": "array", "uniqueItems": True,
                                      "items": {"type": "string", "minLength": 1}}}},
    # Fewer values than a run could use up, but more than the array may hold.
    "big-enum": {"type": "array", "uniqueItems": True, "maxItems": 4,
                 "items": {"enum": [f"v{i}" for i in range(40)] + [None]}},
    # More values than the grammar keeps apart (max_unique_values) and no maxItems: at
    # most 40 distinct elements, which the grammar is told, so a new one is always left.
    "enum-unbounded": {"type": "array", "uniqueItems": True,
                       "items": {"enum": [f"v{i}" for i in range(40)]}},
    "enum-escapes": {"type": "array", "uniqueItems": True, "items": {"enum": [
        "é", "è", 'a"', "a", "\n", "😀", *(f"w{i}" for i in range(30))]}},
    "short-bounded": {"type": "array", "uniqueItems": True, "maxItems": 3,
                      "items": {"type": "string", "maxLength": 1}},
    "map": {"type": "object",
            "properties": {"fixed": {"type": "array", "items": {"type": "string"}}},
            "additionalProperties": {"type": "array", "uniqueItems": True,
                                     "items": {"type": "string", "maxLength": 5}}},
    "first-present": {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
                      "additionalProperties": False,
                      "properties": {"a": {"type": "string"}, "b": {"type": "string"},
                                     "tags": {"type": "array", "items": {"type": "string"},
                                              "uniqueItems": True}}},
    # A discriminated oneOf whose branches agree on "tags": one place in either.
    "discriminated": {"type": "object", "required": ["kind"], "additionalProperties": False,
                      "oneOf": [{"properties": {"kind": {"const": "a"}}},
                                {"properties": {"kind": {"const": "b"}}}],
                      "properties": {"kind": {"type": "string"}, "a": {"type": "string"},
                                     "tags": {"type": "array", "items": {"type": "string"},
                                              "uniqueItems": True}}},
    # Branches disagreeing on one key ("n") leave the others ("tags") followed.
    "branches-disagree": {"type": "object", "additionalProperties": False,
                          "anyOf": [{"properties": {"n": {"minItems": 1}}},
                                    {"properties": {"n": {"maxItems": 0}}}],
                          "properties": {"n": {"type": "array", "items": {"type": "string"}},
                                         "tags": {"type": "array", "uniqueItems": True,
                                                  "items": {"type": "string"}}}},
    # Unlisted keys split by patterns are not followed; listed keys still are.
    "regions": {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True,
                                                          "items": {"type": "string"}}},
                "patternProperties": {"^x": {"type": "array"}, "^y": {"type": "string"}},
                "additionalProperties": {"type": "null"}},
    # Integers: 3 and 3.0 (draft 6 on), 0 and -0 are one value; booleans are not 1 and 0.
    "integers": {"type": "array", "uniqueItems": True, "items": {"type": "integer"}},
    "small-integers": {"type": "array", "uniqueItems": True, "maxItems": 4,
                       "items": {"type": ["integer", "boolean"], "minimum": -1, "maximum": 1}},
    "integer-or-string": {"type": "array", "uniqueItems": True,
                          "items": {"anyOf": [{"type": "integer", "minimum": 0},
                                              {"type": "string", "maxLength": 2}]}},
    # Numbers with fractions: 1.5 and 15e-1, 0.1 and 0.10 are one value.
    "numbers": {"type": "array", "uniqueItems": True, "items": {"type": "number"}},
    "draft4-integers": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "array",
                        "uniqueItems": True, "items": {"type": "integer", "maximum": 99}},
    # Unlisted keys split by patterns: each key's region read from its text, escapes too.
    "pattern-keys": {"type": "object", "maxProperties": 3, "patternProperties": {
        "^x": {"type": "array", "uniqueItems": True, "items": {"type": "string"}},
        "^y": {"type": "array", "items": {"type": "string"}}},
        "additionalProperties": {"type": "array", "uniqueItems": True, "maxItems": 3,
                                 "items": {"type": "string", "maxLength": 1}}},
    # Conditions that say nothing of "tags" (which keys are present, other keys' values)
    # leave its value any JSON value for them: its place is still followed, and the
    # complemented copies of the array (under not, the ¬if of if/then/else, a oneOf's
    # other branches) drop the keyword, which the guard at that place makes exact.
    "conditions": {"type": "object", "additionalProperties": False,
                   "properties": {"e": {"type": "string"}, "a": {"type": "string"},
                                  "tags": {"type": "array", "uniqueItems": True,
                                           "items": {"type": "string", "maxLength": 3}}},
                   "if": {"properties": {"e": {"const": "x"}}, "required": ["e"]},
                   "then": {"required": ["tags"]}, "else": {"maxProperties": 2},
                   "not": {"required": ["a", "e"]},
                   "dependentRequired": {"a": ["tags"]},
                   "dependentSchemas": {"e": {"properties": {"a": {"minLength": 2}}}}},
    "dependencies-draft7": {"$schema": "http://json-schema.org/draft-07/schema#",
                            "type": "object", "additionalProperties": False,
                            "properties": {"a": {"type": "string", "maxLength": 3},
                                           "tags": {"type": "array", "uniqueItems": True,
                                                    "items": {"type": "string"}}},
                            "dependencies": {"a": ["tags"],
                                             "tags": {"properties": {"a": {"minLength": 2}}}}},
    "oneOf-of-required": {"type": "object", "additionalProperties": False,
                          "properties": {"k": {"type": "string"},
                                         "tags": {"type": "array", "uniqueItems": True,
                                                  "items": {"type": "string"}}},
                          "oneOf": [{"required": ["k"]}, {"required": ["tags"]}]},
    # Objects and arrays as elements: equal with members in any order, 1 and 1.0 equal.
    "objects": {"type": "array", "uniqueItems": True, "items": {
        "type": "object", "required": ["a"], "additionalProperties": False,
        "properties": {"a": {"enum": [1, 2]}, "b": {"type": "string"}}}},
    "any-objects": {"type": "array", "uniqueItems": True, "maxItems": 4,
                    "items": {"type": "object"}},
    "arrays": {"type": "array", "uniqueItems": True,
               "items": {"type": "array", "maxItems": 3, "items": {"type": "integer"}}},
    "nested-objects": {"type": "array", "uniqueItems": True, "items": {
        "type": "object", "additionalProperties": False,
        "properties": {"p": {"type": "object", "additionalProperties": False,
                             "properties": {"x": {"enum": [1, 2]}}},
                       "n": {"type": "string"}}}},
    "string-or-object": {"type": "array", "uniqueItems": True, "items": {"anyOf": [
        {"type": "string", "maxLength": 3},
        {"type": "object", "additionalProperties": False, "required": ["a"],
         "properties": {"a": {"type": "integer", "minimum": 0}}}]}},
    # Elements whose language refers to the schema's own rules (a recursive object).
    "recursive-objects": {"type": "array", "uniqueItems": True, "items": {"$ref": "#/$defs/node"},
                          "$defs": {"node": {"type": "object", "additionalProperties": False,
                                             "properties": {"a": {"type": "integer"},
                                                            "kids": {"type": "array",
                                                                     "items": {"$ref": "#/$defs/node"}}}}}},
    # Guarded arrays inside a guarded array's elements, and one as an element itself.
    "nested-guards": {"type": "array", "uniqueItems": True, "items": {
        "type": "object", "additionalProperties": False,
        "properties": {"t": {"type": "array", "uniqueItems": True, "items": {"type": "string"}},
                       "k": {"enum": [1, 2]}}}},
    # Infinitely many values only by their length (a loop through an array's comma).
    "lists-of-enums": {"type": "array", "uniqueItems": True, "minItems": 3, "items": {
        "type": "object", "additionalProperties": False,
        "properties": {"t": {"type": "array", "items": {"enum": [1, 2]}}}}},
    "sets-of-sets": {"type": "array", "uniqueItems": True, "items": {
        "type": "array", "uniqueItems": True, "items": {"type": "integer"}}},
    "tree": {"type": "object", "additionalProperties": False,
             "properties": {"tags": {"type": "array", "items": {"type": "string"},
                                     "uniqueItems": True},
                            "kids": {"type": "array", "items": {"$ref": "#"}}}},
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_walks_end_valid_and_never_stall(name: str, vocab: Vocabulary) -> None:
    schema = SCHEMAS[name]
    compiled = compile_json_schema(schema, vocab)
    assert isinstance(compiled.matcher(), UniqueItemsMatcher)
    rng = random.Random(name)
    finished = 0
    for i in range(150):
        text = _walk(compiled, rng, lookahead=i < 10)
        if text is None:
            continue
        finished += 1
        jsonschema.validate(json.loads(text), schema)
    assert finished >= 10


# Objects and arrays: few short values, so that elements are often repeated attempts, and
# no closing bracket of the array (the walk ends at its step budget or at EOS otherwise).
_CONTAINER_PARTS = [b'{"', b'"a": ', b'1}', b'2}', b'}, {"', b'{}', b'[]', b'], [', b'1',
                    b'2', b'a', b'"}', b'"},', b'}}', b'", "', b', "b": "', b':', b'[',
                    b'{', b'"', b',', b'}', b'p', b'x', b'n', b'}]', b']]', b'"]', b't']


@pytest.mark.parametrize("name", ["objects", "any-objects", "arrays", "nested-objects",
                                  "string-or-object", "recursive-objects", "nested-guards",
                                  "sets-of-sets", "lists-of-enums"])
def test_walks_through_repeated_objects_and_arrays(name: str, vocab: Vocabulary) -> None:
    """Walks that keep writing the same few short objects or arrays: every step's mask
    leads somewhere (lookahead), every document validates, and most hold several elements,
    so that the guard has refused repeats on the way."""
    schema = SCHEMAS[name]
    compiled = compile_json_schema(schema, vocab)
    by_bytes = {b: t for t, b in enumerate(vocab.token_bytes) if b is not None}
    preferred = [by_bytes[b] for b in _CONTAINER_PARTS]
    rng = random.Random(name)
    several = 0
    for i in range(60):
        text = _walk(compiled, rng, max_steps=80, lookahead=i < 8, preferred_tokens=preferred)
        if text is None:
            continue
        value = json.loads(text)
        jsonschema.validate(value, schema)
        several += len(value) >= 3
    assert several >= 5


def _allowed_after(compiled: Any, vocab: Vocabulary, prefix: str, *texts: bytes
                   ) -> list[bool]:
    m = compiled.matcher()
    for t in _tokens(vocab, prefix):
        assert m.advance(t), prefix
    by_bytes = {b: t for t, b in enumerate(vocab.token_bytes) if b is not None}
    return [m.is_allowed(by_bytes[text]) for text in texts]


def test_objects_that_can_only_repeat_are_cut_where_they_would_begin(
        vocab: Vocabulary) -> None:
    """Not only the closing brace of a repeated object is refused, but every token after
    which each completion repeats one (members in any order, whitespace and escapes
    included)."""
    compiled = compile_json_schema(SCHEMAS["objects"], vocab)
    used = '[{"a": 1, "b": "x"}, {"a": 2}, '
    assert _allowed_after(compiled, vocab, used + '{"a": 1', b"}", b",", b"}]") == [
        True, True, True]
    assert _allowed_after(compiled, vocab, used + '{"a": 2', b"}", b"2}", b",") == [
        False, False, True]
    # "b" then "a": 1 repeats the first; "a": 2 is new only with a "b".
    assert _allowed_after(compiled, vocab, used + '{"b": "x", "a": ', b"1", b"2", b"2}") == [
        False, True, True]
    both = '[{"a": 1, "b": "x"}, {"a": 2, "b": "x"}, {"b": "x'
    assert _allowed_after(compiled, vocab, both, b'"', b'"}', b"y", b'", "') == [
        False, False, True, False]
    assert _allowed_after(compiled, vocab, both.replace('"x', '"\u0078'), b'"') == [False]
    # Inside a guarded array inside an object element: closing it would leave the object
    # only its closing brace, repeating the first element; with two elements at most, so
    # would ending the second.
    compiled = compile_json_schema({"type": "array", "uniqueItems": True, "items": {
        "type": "object", "additionalProperties": False, "properties": {
            "t": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}}}}, vocab)
    assert _allowed_after(compiled, vocab, '[{"t": ["a"]}, {"t": ["a"', b"]", b",", b'"]') == [
        False, True, False]
    compiled = compile_json_schema({"type": "array", "uniqueItems": True, "items": {
        "type": "object", "additionalProperties": False, "properties": {
            "t": {"type": "array", "uniqueItems": True, "maxItems": 2,
                  "items": {"type": "string"}}}}}, vocab)
    assert _allowed_after(compiled, vocab, '[{"t": ["a", "b"]}, {"t": ["a", "b', b'"', b'"]',
                          b"c") == [False, False, True]
    # Arrays: [1, 2] used, [1, 2 may only go on with a digit (12) or a third integer.
    compiled = compile_json_schema(SCHEMAS["arrays"], vocab)
    assert _allowed_after(compiled, vocab, "[[1, 2], [1, 2", b"]", b"]]", b",", b"2") == [
        False, False, True, True]


@pytest.mark.parametrize(("name", "valid", "invalid"), [
    ("strings", ['[]', '["a"]', '["a", "b", "ab"]', '["a","b"]', '["a", "\\u0062"]',
                 '["é", "e", "\\u00e8"]', '["a\\"", "a"]'],
     ['["a", "a"]', '["a","b","a"]', '["a", "\\u0061"]', '["ab", "a", "ab"]',
      '["é", "\\u00e9"]', '["\\u00E9", "é"]', '["a\\"", "a\\u0022"]',
      '["😀", "\\ud83d\\ude00"]', '["\\ud83d\\uDE00", "😀"]']),
    ("short-or-b", ['["a", "b"]', '["b", "a", "bb"]'], ['["a", "a"]', '["bb", "a", "bb"]']),
    ("nullable", ['[null, "null", true, "true", false]'],
     ['[null, null]', '[true, "a", true]', '["x", "x"]']),
    ("tuple", ['["a", "b"]', '["a", "ab", "b"]'], ['["a", "a"]', '["a", "b", "b"]']),
    ("nested", ['{"tags": ["a", "b"], "groups": [["a"], ["a", "b"]]}'],
     ['{"tags": ["a", "a"]}', '{"tags": [], "groups": [["a"], ["b", "b"]]}']),
    ("string-or-list", ['"a"', '["a", "b"]'], ['["a", "a"]']),
    ("shared-branch", ['{"a": ["x"], "b": ["x", "y"]}', '{"b": "x"}'],
     ['{"b": ["x", "x"]}', '{"a": ["y", "y"], "b": []}']),
    ("big-enum", ['["v1", "v10", null, "v0"]'], ['["v1", "v1"]', '[null, "v3", null]']),
    ("enum-unbounded", ['["v1", "v10", "v0"]', json.dumps([f"v{i}" for i in range(40)])],
     ['["v1", "v1"]', '["v3", "v2", "v3"]', json.dumps([f"v{i}" for i in range(40)] + ["v0"])]),
    ("enum-escapes", ['["é", "\\u00e8", "a\\"", "a", "\\n", "😀"]', '["\\u00E9", "w1"]'],
     ['["é", "\\u00e9"]', '["\\u00E9", "é"]', '["a\\"", "a\\u0022"]', '["a", "\\u0061"]',
      '["😀", "\\ud83d\\ude00"]', '["\\n", "\\u000a"]']),
    ("short-bounded", ['["a", "b", ""]', '["é", "\\u00e8"]'], ['["a", "a"]', '["", "b", ""]']),
    ("map", ['{"fixed": ["a", "a"], "x": ["a", "b"], "y": []}'],
     ['{"x": ["a", "a"]}', '{"fixed": [], "\\u0078": ["b", "b"]}']),
    ("first-present", ['{"b": "", "tags": ["a", "b"]}', '{"tags": ["a"], "a": "x"}'],
     ['{"a": "", "tags": ["a", "a"]}', '{"tags": ["b", "b"], "b": ""}']),
    ("discriminated", ['{"kind": "a", "tags": ["x", "y"]}', '{"tags": [], "kind": "b"}'],
     ['{"kind": "a", "tags": ["x", "x"]}', '{"kind": "c", "tags": ["x"]}',
      '{"tags": ["b", "a", "b"], "kind": "b"}']),
    ("branches-disagree", ['{"n": ["a", "a"], "tags": ["a", "b"]}', '{"tags": ["a"]}'],
     ['{"tags": ["a", "a"]}', '{"n": [], "tags": ["b", "b"]}']),
    ("regions", ['{"x1": ["a", "a"], "tags": ["a", "b"], "y": "s", "z": null}'],
     ['{"tags": ["a", "a"], "y": "s"}', '{"x": [], "tags": ["b", "a", "b"]}']),
    ("integers", ['[1, 2, 12, 21, -1, 0]', '[0, 3.0, 1e+16, 10]', '[10000000000000000, 1]'],
     ['[1, 1]', '[12, 2, 12]', '[0, -0]', '[-0, 0]', '[3, 3.0]', '[3.00, 4, 3]',
      '[0.0, 1, -0]', '[1e+16, 10000000000000000]']),
    ("small-integers", ['[1, true, 0, false]', '[-1, 0, 1, true]'],
     ['[1, 1]', '[true, 1, true]', '[0, false, -0]', '[1.0, 0, 1]']),
    ("integer-or-string", ['[1, "1", 0, ""]', '["12", 12]'], ['[1, "1", 1]', '["a", 3, "a"]']),
    ("numbers", ['[1.5, 2, 2.5, 0.1, 1e400, -1.5]', '[0.5, 5e-2, 0.55]'],
     ['[1.5, 15e-1]', '[0.1, 0.10]', '[2.50, 2.5]', '[1, 1.0]', '[1e400, 2e400]',
      '[0.1, 0.1000000000000000055511151231257827]', '[-0.0, 0]', '[12.5, 1, 1.25e1]']),
    ("draft4-integers", ['[1, 2, 12, 21, -1, 0]'], ['[1, 1]', '[0, -0]', '[99, 98, 99]']),
    ("pattern-keys", ['{"x": ["a", "b"], "ya": ["a", "a"], "z": ["a", ""]}',
                      '{"\\u0079": ["b", "b"], "xy": []}'],
     ['{"xa": ["a", "a"]}', '{"y": [], "\\u0078": ["b", "b"]}', '{"zz": ["a", "a"]}',
      '{"ya": ["a"], "a": ["", "b", ""]}']),
    ("conditions", ['{"e": "x", "tags": ["a", "b"]}', '{"tags": ["a"], "a": "q"}',
                    '{"e": "y", "tags": []}', '{"tags": ["b", "a", "ab"]}'],
     ['{"e": "x", "tags": ["a", "a"]}', '{"e": "x"}', '{"a": "q", "tags": ["b", "b"]}',
      '{"tags": ["a", "b", "a"]}', '{"a": "q", "e": "y", "tags": []}',
      '{"e": "y", "tags": ["a", "a"]}']),
    ("dependencies-draft7", ['{"a": "qq", "tags": ["a", "b"]}', '{"tags": []}', '{}'],
     ['{"a": "qq", "tags": ["a", "a"]}', '{"a": "qq"}', '{"a": "q", "tags": ["a"]}']),
    ("oneOf-of-required", ['{"k": "s"}', '{"tags": ["a", "b"]}'],
     ['{"tags": ["a", "a"]}', '{"k": "s", "tags": ["a"]}', '{}']),
    ("objects", ['[{"a": 1}, {"a": 2}, {"a": 1, "b": "x"}, {"b": "", "a": 1}]', '[]'],
     ['[{"a": 1}, {"a": 1}]', '[{"a": 1, "b": "x"}, {"b": "x", "a": 1}]',
      '[{"a": 1}, {"a": 1.0}]', '[{"a": 2}, {"a": 1}, {"a": 2.00}]',
      '[{"a": 1, "b": "\u0061"}, {"b": "a", "a": 1}]']),
    ("any-objects", ['[{}, {"a": 1}, {"a": [1, 2]}, {"a": [2, 1]}]', '[{"a": {"b": null}}, {"a": {}}]'],
     ['[{}, {}]', '[{"a": [1, 2]}, {"a": [1, 2.0]}]', '[{"a": 1, "b": 2}, {"b": 2, "a": 1}]',
      '[{"a": {"b": true, "c": 1}}, {"a": {"c": 1, "b": true}}]', '[{"a": 1}, {"\u0061": 1}]']),
    ("arrays", ['[[], [1], [1, 2], [2, 1], [0]]'],
     ['[[], []]', '[[1, 2], [1, 2]]', '[[1], [1.0]]', '[[0], [-0]]', '[[1], [2], [1]]']),
    ("nested-objects", ['[{"p": {"x": 1}}, {"p": {"x": 2}}, {"p": {}}, {}]'],
     ['[{"p": {"x": 1}}, {"p": {"x": 1}}]', '[{}, {}]', '[{"p": {}, "n": "a"}, {"n": "a", "p": {}}]']),
    ("string-or-object", ['["a", {"a": 1}, "b", {"a": 2}]', '["{}", {"a": 0}]'],
     ['["a", "a"]', '[{"a": 1}, "x", {"a": 1}]', '[{"a": 3}, {"a": 3.0}]']),
    ("recursive-objects", ['[{}, {"kids": []}, {"kids": [{}]}, {"kids": [{"a": 1}]}]'],
     ['[{"kids": [{}]}, {"kids": [{}]}]', '[{"a": 1, "kids": []}, {"kids": [], "a": 1.0}]']),
    ("nested-guards", ['[{"t": []}, {"t": ["a"]}, {"t": ["a", "b"]}, {"t": ["b", "a"], "k": 1}]'],
     ['[{"t": ["a", "a"]}]', '[{"t": ["a"]}, {"t": ["a"]}]', '[{"t": [], "k": 1}, {"k": 1, "t": []}]',
      '[{"t": ["b"]}, {"t": ["a", "\u0061"]}]']),
    ("lists-of-enums", ['[{}, {"t": []}, {"t": [1]}, {"t": [1, 1]}, {"t": [1, 1, 1]}]'],
     ['[{}, {"t": [1]}, {"t": [1.0]}]', '[{}, {"t": [2]}, {}]',
      '[{"t": [2, 1]}, {}, {"t": [2, 1]}]']),
    ("sets-of-sets", ['[[], [1], [1, 2], [2, 1]]'],
     ['[[1, 1]]', '[[1], [1]]', '[[1, 2], [2], [1, 2.0]]', '[[], [3, 4, 3]]']),
    ("tree", ['{"tags": ["a"], "kids": [{"tags": ["a", "b"]}]}'],
     ['{"kids": [{"kids": [{"tags": ["x", "x"]}]}]}']),
])
def test_instances(name: str, valid: list[str], invalid: list[str], vocab: Vocabulary) -> None:
    schema = SCHEMAS[name]
    compiled = compile_json_schema(schema, vocab)
    for text in valid:
        jsonschema.validate(json.loads(text), schema)
        assert _accepts(compiled, vocab, text), text
    for text in invalid:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(json.loads(text), schema)
        assert not _accepts(compiled, vocab, text), text


def test_tokens_crossing_into_the_next_element_are_checked(vocab: Vocabulary) -> None:
    """After "a" is used, ``", "a`` would start an element that can only end as "a"
    again; ``", "ba`` starts one that can end anew."""
    compiled = compile_json_schema(SCHEMAS["short-or-b"], vocab)
    m = compiled.matcher()
    for t in _tokens(vocab, '["a'):
        assert m.advance(t)
    by_bytes = {b: t for t, b in enumerate(vocab.token_bytes)}
    assert not m.is_allowed(by_bytes[b'", "a']) and not m.advance(by_bytes[b'", "a'])
    assert not m.is_allowed(by_bytes[b'", "a"'])
    assert m.is_allowed(by_bytes[b'", "ba']) and m.is_allowed(by_bytes[b'", "'])
    assert m.advance(by_bytes[b'", "ba'])
    # Now "a" and the element being read ("ba...") are taken: a closing quote is fine.
    assert m.is_allowed(ord('"'))


def test_an_enum_used_up_ends_the_array(vocab: Vocabulary) -> None:
    """Forty values and no maxItems: after all forty, no comma, the closing bracket."""
    compiled = compile_json_schema(SCHEMAS["enum-unbounded"], vocab)
    m = compiled.matcher()
    assert m.advance_bytes(json.dumps([f"v{i}" for i in range(40)])[:-3].encode())
    # Reading "v3 with v30..v38 used: only v39 is left.
    assert m.is_allowed(ord("9")) and not m.is_allowed(ord("0")) and not m.is_allowed(ord('"'))
    assert m.advance(ord("9")) and m.advance(ord('"'))
    allowed = [vocab.token_bytes[t] for t in m.allowed_token_ids().tolist()]
    assert b"]" in allowed and all(b"," not in t for t in allowed), allowed


def test_an_unfinished_escape_may_spell_only_values_left(vocab: Vocabulary) -> None:
    r"""With "é" used, ``"\u00e`` may still become "è" (``8"``) but not "é" (``9"``)."""
    compiled = compile_json_schema(SCHEMAS["enum-escapes"], vocab)
    m = compiled.matcher()
    by_bytes = {b: t for t, b in enumerate(vocab.token_bytes)}
    assert m.advance_bytes('["é", "'.encode()) and m.advance(by_bytes[b"\\u00"])
    assert not m.is_allowed(by_bytes[b'e9"']) and not m.is_allowed(by_bytes[b'E9"'])
    assert m.is_allowed(ord("e")) and m.advance(ord("e"))
    assert not m.is_allowed(ord("9")) and m.is_allowed(ord("8"))


def test_an_enum_too_small_for_min_items_is_empty(vocab: Vocabulary) -> None:
    schema = {"type": "array", "uniqueItems": True, "minItems": 41,
              "items": {"enum": [f"v{i}" for i in range(40)]}}
    with pytest.raises(GrammarError, match="empty"):
        compile_json_schema(schema, vocab)


def test_bitmask_rollback_copy_and_reset(vocab: Vocabulary) -> None:
    compiled = compile_json_schema(SCHEMAS["strings"], vocab)
    m = compiled.matcher()
    for t in _tokens(vocab, '["ab", "ab'):
        assert m.advance(t)
    bitmask = np.zeros((2, compiled.mask_words), dtype=np.int32)
    m.fill_bitmask(bitmask, 1)
    quote = ord('"')
    assert not (bitmask[1, quote >> 5] >> (quote & 31)) & 1
    assert quote not in m.allowed_token_ids().tolist()
    twin = m.copy()
    m.rollback(1)  # back inside "a...": closing it is a new value
    assert m.is_allowed(quote) and not twin.is_allowed(quote)
    assert m.advance(ord("c")) and m.advance(quote)
    m.reset()
    assert m.num_advances == 0 and m.allowed_token_ids().tolist() == m.copy().allowed_token_ids().tolist()
    assert m.advance_bytes(b'["x", "x') and not m.is_allowed(quote)
    assert not m.advance_bytes(b'"')


def test_memory_estimate_counts_what_guards_hold(vocab: Vocabulary) -> None:
    compiled = compile_json_schema(SCHEMAS["short-or-b"], vocab)
    m = compiled.matcher()
    for t in _tokens(vocab, '["a", "b", "ba'):
        assert m.advance(t)
        m.allowed_token_ids()
    guards = compiled._unique
    assert guards is not None
    rows, states = guards.held()
    assert rows > 0 and states > 0
    compiled._unique = None  # the same constraint's estimate without them
    try:
        without = compiled.memory_estimate()
    finally:
        compiled._unique = guards
    assert compiled.memory_estimate() - without >= rows + states


def test_torch_bitmask(vocab: Vocabulary) -> None:
    torch = pytest.importorskip("torch")
    compiled = compile_json_schema(SCHEMAS["strings"], vocab)
    m = compiled.matcher()
    assert m.advance_bytes(b'["q", "q')
    expected = np.zeros((1, compiled.mask_words + 1), dtype=np.int32)
    m.fill_bitmask(expected, 0)
    bitmask = torch.full((1, compiled.mask_words + 1), -1, dtype=torch.int32)
    m.fill_bitmask(bitmask, 0)
    assert np.array_equal(bitmask.numpy(), expected) and expected[0, -1] == 0


@pytest.mark.parametrize(("schema", "reason"), [
    ({"anyOf": [{"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                {"type": "array", "maxItems": 1}]}, "not fixed"),
    ({"oneOf": [{"type": "object", "properties": {"a": {"$ref": "#/$defs/u"}}},
                {"type": "object", "required": ["b"]}],
      "$defs": {"u": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}}},
     "not fixed"),
    # A branch that takes the key as an unlisted one: its value may repeat elements there.
    ({"anyOf": [{"type": "object", "required": ["a"], "properties": {"k": {"$ref": "#/$defs/u"}}},
                {"type": "object", "required": ["b"], "properties": {"b": {"type": "integer"}}}],
      "$defs": {"u": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}}},
     "not fixed"),
    ({"type": "object", "anyOf": [{"properties": {"k": {"$ref": "#/$defs/u"}}},
                                  {"properties": {"k": {"type": "array", "maxItems": 3}}}],
      "$defs": {"u": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}}},
     "not fixed"),
    # Keys split by patterns, in two branches: which branch holds is not in the text.
    ({"anyOf": [{"type": "object", "patternProperties": {"^x": {"$ref": "#/$defs/u"}}},
                {"type": "object", "required": ["y"]}],
      "$defs": {"u": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}}},
     "not fixed"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/u"}},
      "$defs": {"u": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}},
      "not": {"properties": {"a": {"$ref": "#/$defs/u"}}, "required": ["a"]}}, "not fixed"),
    # Conditions that say something of the key on the array's path.
    ({"type": "object", "properties": {"tags": {"$ref": "#/$defs/u"}},
      "$defs": {"u": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}},
      "if": {"required": ["tags"]}, "then": {"properties": {"tags": {"minItems": 1}}}},
     "not fixed"),
    ({"type": "object", "properties": {"tags": {"$ref": "#/$defs/u"}},
      "$defs": {"u": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}},
      "dependentSchemas": {"a": {"additionalProperties": {"type": "array", "maxItems": 2}}}},
     "not fixed"),
    # The array only in a complemented condition, where no guard follows its place: the
    # keyword dropped there would refuse {"a": ["x", "x"]}, which is valid.
    ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}},
      "$defs": {"u": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}},
      "not": {"properties": {"a": {"$ref": "#/$defs/u"}}, "required": ["a"]}},
     "complemented language"),
    ({"type": "array", "uniqueItems": True, "contains": {"const": "a"},
      "items": {"type": "string"}}, "not fixed"),
    # Three objects in all; 15 arrays in all; objects that are infinitely many spellings
    # only by repeating a key (a loop through an object's comma spells no new value).
    ({"type": "array", "uniqueItems": True, "items": {
        "type": "object", "properties": {"a": {"type": "boolean"}}, "additionalProperties": False}},
     "too few values"),
    ({"type": "array", "uniqueItems": True, "items": {"type": "array", "maxItems": 3,
                                                      "items": {"enum": [1, 2]}}},
     "too few values"),
    ({"type": "array", "uniqueItems": True, "items": {
        "type": "object", "patternProperties": {"^a$": {"type": "boolean"}},
        "additionalProperties": False}}, "too few values"),
    # Too few values found only once the recursive rule is made.
    ({"type": "array", "uniqueItems": True, "items": {"$ref": "#/$defs/n"},
      "$defs": {"n": {"type": "object", "additionalProperties": False,
                      "properties": {"k": {"type": "array", "maxItems": 1,
                                           "items": {"$ref": "#/$defs/n"}}}}}},
     "too few values"),
    # Numbers of at most 2**24 values: counted by the spellings that read apart.
    ({"type": "array", "uniqueItems": True, "items": {"type": "number", "minimum": 0,
                                                      "maximum": 9, "multipleOf": 0.000001}},
     "too few values"),
    ({"type": "array", "uniqueItems": True, "items": {"type": "string", "format": "date"}},
     "too few values"),
    ({"type": "array", "uniqueItems": True, "items": {"type": "string", "pattern": "^[ab]$"}},
     "too few values"),
    # Values enough for a later element but not for the tuple's second one.
    ({"type": "array", "uniqueItems": True, "prefixItems": [{"enum": ["a", "b"]}, {"const": "a"}],
      "items": {"enum": [f"v{i}" for i in range(40)]}}, "too few values"),
])
def test_arrays_no_guard_can_take_stay_refused(schema: Any, reason: str,
                                               vocab: Vocabulary) -> None:
    with pytest.raises(UnsupportedSchemaError, match=reason) as raised:
        compile_json_schema(schema, vocab)
    assert raised.value.keyword == "uniqueItems"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximationWarning)
        compile_json_schema(schema, vocab, lenient=True)  # dropped, as before


def test_a_schema_guarded_in_one_place_and_conditional_in_another_is_refused(
        vocab: Vocabulary) -> None:
    """The same sub-schema, clean under one key and under an ``anyOf`` under another:
    the automaton would hold it unguarded there."""
    schema = {"type": "object",
              "properties": {"a": {"$ref": "#/$defs/u"},
                             "b": {"anyOf": [{"$ref": "#/$defs/u"},
                                             {"type": "array", "maxItems": 1}]}},
              "$defs": {"u": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}}}
    with pytest.raises(UnsupportedSchemaError, match="not fixed"):
        compile_json_schema(schema, vocab)


@pytest.mark.parametrize(("element", "enough"), [
    ({"type": "string"}, True),
    ({"type": "string", "maxLength": 4}, True),
    ({"type": "string", "maxLength": 1}, False),  # ~1.1M code points
    ({"type": "string", "maxLength": 2}, True),
    ({"type": "string", "pattern": "^a+$"}, True),  # infinite: one value per length
    ({"type": "string", "pattern": "^[0-9]{8}$"}, True),
    ({"type": "string", "pattern": "^[0-9]{7}$"}, False),
    ({"type": ["string", "null"], "maxLength": 5}, True),
])
def test_element_languages_must_hold_enough_values(element: Any, enough: bool) -> None:
    from constrain.json_compiler import Compiler
    from constrain.json_schema import JsonSchemaOptions

    compiler = Compiler(element, JsonSchemaOptions())
    typed = compiler.value([compiler.root])
    assert has_enough_values(typed.expr(), compiler.syn.library) is enough


def test_lenient_and_strict_agree_where_guarded(vocab: Vocabulary) -> None:
    schema = SCHEMAS["strings"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing dropped: no warning
        compiled = compile_json_schema(schema, vocab, lenient=True)
    assert not _accepts(compiled, vocab, '["a", "a"]')


def test_real_vocabulary_tags(qwen_vocab: Vocabulary, qwen_encoding: Any) -> None:
    """Qwen's 151k tokens: its own tokenization of valid documents passes step by step,
    a repeated tag is refused at the token that repeats it, and random walks end valid."""
    schema = {"type": "object", "required": ["name", "tags"], "additionalProperties": False,
              "properties": {"name": {"type": "string"},
                             "tags": {"type": "array", "uniqueItems": True, "maxItems": 6,
                                      "items": {"type": "string", "minLength": 1,
                                                "maxLength": 40}}}}
    compiled = compile_json_schema(schema, qwen_vocab)
    eos = min(qwen_vocab.eos_token_ids)

    def run(text: str) -> tuple[bool, str]:
        m = compiled.matcher()
        done = ""
        for t in qwen_encoding.encode(text):
            if not m.is_allowed(t) or not m.advance(t):
                return False, done
            done += qwen_encoding.decode([t])
        return m.is_allowed(eos), done

    for data in ({"name": "x", "tags": ["json", "schema", "JSON", "json schema"]},
                 {"name": "é", "tags": ["café", "cafe", "caf"]}, {"name": "", "tags": []}):
        assert run(json.dumps(data, ensure_ascii=False)) == (
            True, json.dumps(data, ensure_ascii=False))
    ok, done = run('{"name": "x", "tags": ["json", "schema", "json"]}')
    assert not ok and done.startswith('{"name": "x", "tags": ["json", "schema", "')
    assert not run('{"name": "x", "tags": ["json", "\\u006Ason"]}')[0]
    rng = random.Random(7)
    for _ in range(6):
        m = compiled.matcher()
        out = bytearray()
        for _ in range(60):
            allowed = m.allowed_token_ids()
            assert allowed.size
            # Short tokens and the tag list's punctuation, so arrays fill and close.
            short = [t for t in allowed.tolist() if len(qwen_vocab.token_bytes[t] or b"") <= 2]
            token = rng.choice(short or allowed.tolist())
            assert m.advance(token)
            if token == eos:
                jsonschema.validate(json.loads(out.decode()), schema)
                break
            out += qwen_vocab.token_bytes[token]


def test_real_vocabulary_pydantic_sets(qwen_vocab: Vocabulary, qwen_encoding: Any) -> None:
    """``set[int]`` and ``frozenset[str]`` fields (Pydantic writes ``uniqueItems``) on
    Qwen's tokens, which spell digits one by one: repeats are refused at the token that
    ends the repeated element, however it is spelt."""
    pydantic = pytest.importorskip("pydantic")

    class Labels(pydantic.BaseModel):
        ids: set[int]
        tags: frozenset[str]

    compiled = compile_json_schema(Labels, qwen_vocab)
    assert isinstance(compiled.matcher(), UniqueItemsMatcher)
    eos = min(qwen_vocab.eos_token_ids)

    def accepts(text: str) -> bool:
        m = compiled.matcher()
        for t in qwen_encoding.encode(text):
            if not m.is_allowed(t) or not m.advance(t):
                return False
        return m.is_allowed(eos)

    assert accepts('{"ids": [7, 70, 707, 0, 1e+16], "tags": ["7", "70"]}')
    schema = Labels.model_json_schema()
    for text in ('{"ids": [7, 70, 7], "tags": []}', '{"ids": [7, 7.0], "tags": []}',
                 '{"ids": [0, -0], "tags": []}', '{"ids": [], "tags": ["a", "b", "a"]}'):
        assert not accepts(text), text
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(json.loads(text), schema)
    rng = random.Random(11)
    for _ in range(6):
        m = compiled.matcher()
        out = bytearray()
        for _ in range(60):
            allowed = m.allowed_token_ids().tolist()
            assert allowed
            short = [t for t in allowed if len(qwen_vocab.token_bytes[t] or b"") <= 2]
            token = rng.choice(short or allowed)
            assert m.advance(token)
            if token == eos:
                jsonschema.validate(json.loads(out.decode()), schema)
                break
            out += qwen_vocab.token_bytes[token]


def _random_value(rng: random.Random, depth: int) -> Any:
    """A random schema holding arrays (often unique) in varied places: keys, unlisted keys
    of one or two regions, branches of anyOf/oneOf, not, if, and a shared definition."""
    r = rng.random()
    if depth <= 0 or r < 0.25:
        return rng.choice([{"type": "string", "maxLength": 2}, {"type": "null"},
                           {"$ref": "#/$defs/u"}, {"enum": ["a", "b", 1]}])
    if r < 0.45:
        element = rng.choice([{"type": "string"}, {"type": "string", "maxLength": 3},
                              {"type": ["string", "null"]}, {"enum": ["a", "b"]},
                              {"type": "string", "pattern": "^(a|b.*)$"}])
        array: dict[str, Any] = {"type": "array", "maxItems": rng.choice([3, 4, 6]),
                                 "items": (_random_value(rng, depth - 1)
                                           if rng.random() < 0.3 else element)}
        if rng.random() < 0.7:
            array["uniqueItems"] = True
        return array
    if r < 0.75:
        keys = rng.sample(["a", "b", "c"], rng.randint(1, 2))
        obj: dict[str, Any] = {"type": "object", "maxProperties": 2,
                               "properties": {k: _random_value(rng, depth - 1) for k in keys}}
        x = rng.random()
        if x < 0.3:
            obj["additionalProperties"] = False
        elif x < 0.5:
            obj["additionalProperties"] = _random_value(rng, depth - 1)
        elif x < 0.75:
            obj["additionalProperties"] = False
            obj["patternProperties"] = {"^x": _random_value(rng, depth - 1)}
            if x >= 0.65:
                obj["patternProperties"]["^y"] = {"type": "null"}
        return obj
    keyword = rng.choice(["anyOf", "oneOf", "anyOf", "not", "if"])
    if keyword == "not":
        return {"not": _random_value(rng, depth - 1)}
    if keyword == "if":
        return {"if": {"type": "array"}, "then": _random_value(rng, depth - 1),
                "else": {"type": "string"}}
    return {keyword: [_random_value(rng, depth - 1) for _ in range(rng.randint(2, 3))]}


@pytest.mark.slow
def test_random_schemas_guarded_or_refused(vocab: Vocabulary) -> None:
    """Whatever compiles ends its walks valid and never stalls; the guards take a fair
    share of the schemas (a throwaway run of 600 seeds: 92 guarded, 0 bad walks)."""
    guarded = 0
    for seed in range(60):
        rng = random.Random(seed)
        schema = {**_random_value(rng, 3), "$defs": {"u": {
            "type": "array", "uniqueItems": True, "maxItems": 4,
            "items": {"type": "string", "maxLength": 3}}}}
        try:
            compiled = compile_json_schema(schema, vocab)
        except UnsupportedSchemaError:
            continue
        guarded += isinstance(compiled.matcher(), UniqueItemsMatcher)
        walks = random.Random(seed)
        for i in range(6):
            text = _walk(compiled, walks, max_steps=60, lookahead=i == 0)
            if text is not None:
                jsonschema.validate(json.loads(text), schema)
    assert guarded >= 5


def _random_element_schema(rng: random.Random, depth: int = 2) -> dict[str, Any]:
    """An element schema of objects, arrays or numbers (or a mix with strings), small
    enough that random arrays repeat its values often, large enough to be guarded."""
    kind = rng.choice(["object", "object", "array", "number", "mixed"])
    if kind == "number" or depth <= 0:
        return rng.choice([{"type": "number"}, {"type": "number", "minimum": 0},
                           {"type": "integer"}])
    if kind == "array":
        out: dict[str, Any] = {"type": "array", "items": _random_element_schema(rng, depth - 1)}
        if rng.random() < 0.5:
            out["maxItems"] = rng.randint(1, 3)
        if rng.random() < 0.4:
            out["uniqueItems"] = True
        return out
    if kind == "mixed":
        return {"anyOf": [{"type": "string", "maxLength": 2},
                          _random_element_schema(rng, depth - 1)]}
    properties = {"k": {"enum": [1, 2, "x"]}, "s": {"type": "string"},
                  "n": _random_element_schema(rng, depth - 1)}
    keys = rng.sample(sorted(properties), rng.randint(1, 3))
    obj: dict[str, Any] = {"type": "object", "properties": {k: properties[k] for k in keys}}
    if rng.random() < 0.6:
        obj["additionalProperties"] = False
    if rng.random() < 0.5:
        obj["required"] = [rng.choice(keys)]
    return obj


def _spell(value: Any, rng: random.Random) -> str:
    """A JSON text of ``value`` in one of its many spellings: members in any order,
    integers as ``1.0`` or ``1e0``, escapes, whitespace."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return "{" + ", ".join(f"{json.dumps(k)}: {_spell(v, rng)}" for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + rng.choice([",", ", "]).join(_spell(v, rng) for v in value) + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return rng.choice([str(value), f"{value}.0", f"{value}e0", str(value)])
    if isinstance(value, float):
        return rng.choice([repr(value), f"{value}0", f"{value * 10}e-1"])
    if rng.random() < 0.3:
        return '"' + "".join(f"\\u{ord(c):04x}" for c in value) + '"'
    return json.dumps(value, ensure_ascii=False)


_POOL = [{}, {"k": 1}, {"k": 2}, {"k": "x"}, {"s": "a"}, {"k": 1, "s": "a"}, {"n": 1},
         {"n": 1.5}, {"n": [1]}, {"n": [1, 2]}, {"n": {"k": 1}}, [], [1], [1, 2], [2, 1],
         [[1]], 1, 2, 1.5, 0.25, -1, "a", "b", [1.5]]


def test_objects_arrays_and_numbers_accept_exactly_what_jsonschema_does(
        vocab: Vocabulary) -> None:
    """Random element schemas of objects, arrays and numbers, and random arrays of a few
    values spelt many ways (members reordered, 1 as 1.0, escapes): every compiled schema
    accepts a text iff jsonschema validates it, and its walks end valid."""
    guarded = checked = 0
    for seed in range(120):
        rng = random.Random(seed)
        schema = {"type": "array", "uniqueItems": True, "items": _random_element_schema(rng)}
        try:
            compiled = compile_json_schema(schema, vocab)
        except UnsupportedSchemaError:
            continue
        guarded += isinstance(compiled.matcher(), UniqueItemsMatcher)
        for _ in range(12):
            values = [rng.choice(_POOL) for _ in range(rng.randint(0, 4))]
            text = "[" + ", ".join(_spell(v, rng) for v in values) + "]"
            valid = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
            assert _accepts(compiled, vocab, text) == valid, (schema, text)
            checked += 1
        walks = random.Random(seed)
        for i in range(3):
            text = _walk(compiled, walks, max_steps=60, lookahead=i == 0)
            if text is not None:
                jsonschema.validate(json.loads(text), schema)
    assert guarded >= 40 and checked >= 480


_U = {"$ref": "#/$defs/u"}


def _random_member(rng: random.Random) -> Any:
    return rng.choice([_U, _U, {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                       {"type": "string", "maxLength": 2}, {"type": "null"}, True])


def _random_object(rng: random.Random, depth: int) -> dict[str, Any]:
    keys = rng.sample(["a", "b", "c"], rng.randint(0, 2))
    obj: dict[str, Any] = {"type": "object", "maxProperties": 3, "properties": {
        k: _random_branches(rng, depth - 1) if depth > 0 and rng.random() < 0.25
        else _random_member(rng) for k in keys}}
    x = rng.random()
    if x < 0.3:
        obj["additionalProperties"] = False
    elif x < 0.5:
        obj["additionalProperties"] = _random_member(rng)
    elif x < 0.7:
        obj["patternProperties"] = {"^x": _random_member(rng)}
        if rng.random() < 0.5:
            obj["additionalProperties"] = rng.choice([False, _random_member(rng)])
    if keys and rng.random() < 0.3:
        obj["required"] = [rng.choice(keys)]
    return obj


def _random_branches(rng: random.Random, depth: int) -> dict[str, Any]:
    """anyOf/oneOf over objects that list different keys, take them as unlisted ones or
    forbid them, sometimes discriminated by a const, sometimes with shared siblings."""
    keyword = rng.choice(["anyOf", "oneOf", "anyOf"])
    branches = [_random_object(rng, depth) for _ in range(rng.randint(2, 3))]
    if keyword == "oneOf" and rng.random() < 0.6:
        for i, branch in enumerate(branches):
            branch["properties"]["kind"] = {"const": i}
            branch.setdefault("required", []).append("kind")
    out: dict[str, Any] = {keyword: branches}
    if rng.random() < 0.4:
        out.update(_random_object(rng, depth))
    return out


def _random_instance(rng: random.Random, depth: int) -> Any:
    r = rng.random()
    if depth <= 0 or r < 0.35:
        return rng.choice(["a", "", None, ["a", "a"], ["a", "b"], [], ["b"], 0, 1])
    if r < 0.55:
        return [rng.choice(["a", "b", ""]) for _ in range(rng.randint(0, 3))]
    keys = rng.sample(["a", "b", "c", "x", "xa", "y", "kind"], rng.randint(0, 3))
    return {k: rng.choice([0, 1, 2]) if k == "kind" else _random_instance(rng, depth - 1)
            for k in keys}


def test_branches_over_objects_accept_exactly_what_jsonschema_does(vocab: Vocabulary) -> None:
    """Random anyOf/oneOf over objects holding unique arrays under listed, unlisted and
    pattern keys: every compiled schema accepts an instance iff jsonschema validates it
    (a branch taking a guarded key as an unlisted one once made valid documents refused)."""
    guarded = checked = 0
    for seed in range(160):
        rng = random.Random(seed)
        schema = {**_random_branches(rng, 2), "$defs": {"u": {
            "type": "array", "uniqueItems": True, "maxItems": 4,
            "items": {"type": "string", "maxLength": 3}}}}
        validator = jsonschema.Draft202012Validator(schema)
        instances = random.Random(seed * 7919)
        try:
            compiled = compile_json_schema(schema, vocab)
        except (UnsupportedSchemaError, ResourceLimitError):  # oneOf products can be big
            continue
        except GrammarError:  # no instance is valid (checked on the random ones)
            assert not any(validator.is_valid(_random_instance(instances, 3))
                           for _ in range(60)), schema
            continue
        guarded += isinstance(compiled.matcher(), UniqueItemsMatcher)
        for _ in range(60):
            value = _random_instance(instances, 3)
            text = json.dumps(value)
            assert _accepts(compiled, vocab, text) == validator.is_valid(value), (text, schema)
            checked += 1
    assert guarded >= 5 and checked >= 2000


def _random_condition(rng: random.Random) -> dict[str, Any]:
    """A sub-schema of a condition: which keys are present, how many, or what one key's
    value is (the guarded key too, sometimes)."""
    keys = ["a", "b", "c", "x"]
    r = rng.random()
    if r < 0.4:
        return {"required": rng.sample(keys, rng.randint(1, 2))}
    if r < 0.55:
        return {"maxProperties": rng.randint(0, 2)}
    if r < 0.9:
        return {"properties": {rng.choice(keys): rng.choice(
            [{"type": "null"}, {"type": "string"}, {"maxItems": 1}, _U])},
                "required": rng.sample(keys, rng.randint(0, 1))}
    return {"additionalProperties": {"type": "string"}}


def _random_conditions(rng: random.Random) -> dict[str, Any]:
    """An object whose keys may hold unique arrays, under not, if/then/else and
    dependencies that say something of its keys or only of which keys it has."""
    obj = _random_object(rng, 0)
    for keyword in rng.sample(["not", "if", "dependentRequired", "dependentSchemas"],
                              rng.randint(1, 2)):
        if keyword == "not":
            obj["not"] = _random_condition(rng)
        elif keyword == "if":
            obj.update({"if": _random_condition(rng), "then": _random_condition(rng)})
            if rng.random() < 0.5:
                obj["else"] = _random_condition(rng)
        elif keyword == "dependentRequired":
            obj["dependentRequired"] = {rng.choice("abc"): [rng.choice("abcx")]}
        else:
            obj["dependentSchemas"] = {rng.choice("abc"): _random_condition(rng)}
    return obj


def test_conditions_accept_exactly_what_jsonschema_does(vocab: Vocabulary) -> None:
    """Random conditions over objects holding unique arrays: every compiled schema accepts
    an instance iff jsonschema validates it, whether the conditions let the arrays be
    guarded (they say nothing of their key) or not (then the keyword is refused)."""
    guarded = checked = 0
    for seed in range(160):
        rng = random.Random(seed)
        schema = {**_random_conditions(rng), "$defs": {"u": {
            "type": "array", "uniqueItems": True, "maxItems": 4,
            "items": {"type": "string", "maxLength": 3}}}}
        validator = jsonschema.Draft202012Validator(schema)
        instances = random.Random(seed * 7919)
        try:
            compiled = compile_json_schema(schema, vocab)
        except (UnsupportedSchemaError, ResourceLimitError):
            continue
        except GrammarError:  # no instance is valid (checked on the random ones)
            assert not any(validator.is_valid(_random_instance(instances, 2))
                           for _ in range(60)), schema
            continue
        guarded += isinstance(compiled.matcher(), UniqueItemsMatcher)
        for _ in range(60):
            value = _random_instance(instances, 2)
            text = json.dumps(value)
            assert _accepts(compiled, vocab, text) == validator.is_valid(value), (text, schema)
            checked += 1
    assert guarded >= 20 and checked >= 2000, (guarded, checked)
