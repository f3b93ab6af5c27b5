"""``unevaluatedProperties`` and ``unevaluatedItems`` (:mod:`constrain.json_unevaluated`).

Every instance is checked twice: against the verdict written in the table, and against
``jsonschema``'s. A random differential test then compares the compiled language with
``jsonschema`` on schemas that mix the in-place applicators the keywords look through.
"""

from __future__ import annotations

import json
import random
import warnings
from typing import Any

import pytest
from jsonschema import Draft201909Validator, Draft202012Validator

from benchmarks.maskbench_bytes import CpuTimeout, arm_cpu_alarm, stop_cpu_alarm
from constrain.automaton import Automaton
from constrain.errors import ResourceLimitError, UnsupportedSchemaError
from constrain.json_schema import ApproximationWarning, JsonSchemaOptions, schema_to_grammar
from constrain.json_unevaluated import MAX_CASES

D2019 = "https://json-schema.org/draft/2019-09/schema"

_NAMED = {"properties": {"name": {"type": "string"}}}

# (id, schema, [(instance, valid)]).
TABLE: list[tuple[str, dict[str, Any], list[tuple[Any, bool]]]] = [
    ("allOf and $ref", {
        "$defs": {"named": _NAMED},
        "allOf": [{"$ref": "#/$defs/named"}, {"properties": {"age": {"type": "integer"}}}],
        "properties": {"id": {}},
        "unevaluatedProperties": False,
    }, [({"name": "x", "age": 3, "id": None}, True), ({"name": "x", "other": 1}, False),
        ({}, True), ({"age": "old"}, False), (3, True)]),
    ("a sibling $ref (2020-12 applies it in place)", {
        "$defs": {"named": _NAMED}, "$ref": "#/$defs/named", "unevaluatedProperties": False,
    }, [({"name": "x"}, True), ({"name": "x", "age": 1}, False)]),
    ("a schema for the rest", {
        "properties": {"name": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "string"}},
        "unevaluatedProperties": {"type": "integer"},
    }, [({"name": "n", "x-a": "s", "n": 1}, True), ({"n": "s"}, False),
        ({"x-a": 1}, False), ({"x-b": "s", "m": 2, "k": 3}, True)]),
    ("additionalProperties evaluates every member", {
        "allOf": [{"additionalProperties": {"type": "integer"}}],
        "unevaluatedProperties": False,
    }, [({"a": 1, "b": 2}, True), ({"a": "x"}, False)]),
    ("a nested unevaluatedProperties evaluates every member", {
        "allOf": [{"properties": {"a": {}}, "unevaluatedProperties": {"type": "string"}}],
        "unevaluatedProperties": False,
    }, [({"a": 1, "b": "s"}, True), ({"b": 2}, False)]),
    ("an allOf member does not see its siblings", {
        "properties": {"a": {}},
        "allOf": [{"unevaluatedProperties": False}],
    }, [({}, True), ({"a": 1}, False)]),
    ("oneOf: what the branch that holds evaluates", {
        "oneOf": [{"properties": {"kind": {"const": "a"}, "x": {}}, "required": ["kind"]},
                  {"properties": {"kind": {"const": "b"}, "y": {}}, "required": ["kind"]}],
        "unevaluatedProperties": False,
    }, [({"kind": "a", "x": 1}, True), ({"kind": "b", "y": 1}, True),
        ({"kind": "a", "y": 1}, False), ({"kind": "b", "x": 1}, False)]),
    ("anyOf: every branch that holds evaluates", {
        "anyOf": [{"properties": {"a": {"type": "integer"}}},
                  {"properties": {"b": {"type": "integer"}}}],
        "unevaluatedProperties": False,
    }, [({"a": 1, "b": 2}, True), ({"a": 1, "b": "x"}, False), ({"a": "x", "b": 2}, False),
        ({"a": 1}, True), ({"c": 1}, False)]),
    ("if/then/else: else evaluates only where if fails", {
        "if": {"properties": {"t": {"const": 1}}, "required": ["t"]},
        "then": {"properties": {"p": {}}},
        "else": {"properties": {"q": {}}},
        "unevaluatedProperties": False,
    }, [({"t": 1, "p": 0}, True), ({"t": 1, "q": 0}, False), ({"q": 0}, True),
        ({"t": 2, "q": 0}, False), ({"p": 0}, False)]),
    ("if without then or else: if evaluates where it holds", {
        "if": {"properties": {"a": {"type": "integer"}}},
        "unevaluatedProperties": False,
    }, [({"a": 1}, True), ({"a": "x"}, False)]),
    ("dependentSchemas: the entry evaluates where its key is present", {
        "properties": {"card": {}},
        "dependentSchemas": {"card": {"properties": {"billing": {"type": "string"}}}},
        "unevaluatedProperties": False,
    }, [({"card": 1, "billing": "b"}, True), ({"billing": "b"}, False), ({"card": 1}, True)]),
    ("not evaluates nothing", {
        "not": {"properties": {"a": {"type": "string"}}, "required": ["a"]},
        "unevaluatedProperties": False,
    }, [({}, True), ({"a": 1}, False)]),
    ("a recursive $ref", {
        "$defs": {"node": {"properties": {"next": {"$ref": "#/$defs/node"}, "v": {}},
                           "unevaluatedProperties": False}},
        "$ref": "#/$defs/node",
    }, [({"v": 1, "next": {"v": 2, "next": {}}}, True), ({"next": {"w": 1}}, False)]),
    ("true asserts nothing", {"unevaluatedProperties": True}, [({"a": 1}, True)]),
    ("prefixItems from allOf", {
        "allOf": [{"prefixItems": [{"type": "integer"}]}], "prefixItems": [{}, {}],
        "unevaluatedItems": False,
    }, [([1, "x"], True), ([1, 2, 3], False), ([], True), (["x"], False)]),
    ("items evaluates every item", {
        "allOf": [{"items": {"type": "integer"}}], "unevaluatedItems": False,
    }, [([1, 2, 3], True), ([1, "x"], False)]),
    ("contains evaluates the items it matches", {
        "contains": {"type": "string"}, "unevaluatedItems": {"type": "integer"},
    }, [(["a", 1, "b"], True), (["a", None], False), (["a", 2.5], False)]),
    ("unevaluatedItems in oneOf branches", {
        "oneOf": [{"prefixItems": [{"const": 1}, {}]}, {"prefixItems": [{"const": 2}]}],
        "unevaluatedItems": False,
    }, [([1, 5], True), ([2], True), ([2, 5], False), ([1, 5, 6], False)]),
]


def _validator(schema: dict[str, Any]) -> Any:
    return (Draft201909Validator if schema.get("$schema") == D2019 else Draft202012Validator)(
        schema)


def _matches(automaton: Automaton, instance: Any) -> bool:
    return automaton.matches(json.dumps(instance).encode())


@pytest.mark.parametrize("schema,instances", [pytest.param(s, i, id=n) for n, s, i in TABLE])
def test_instances(schema: dict[str, Any], instances: list[tuple[Any, bool]]) -> None:
    automaton = Automaton(schema_to_grammar(schema))
    validator = _validator(schema)
    for instance, valid in instances:
        assert validator.is_valid(instance) == valid, ("the table is wrong", instance)
        assert _matches(automaton, instance) == valid, instance


def test_draft_2019_09_items_array() -> None:
    schema = {"$schema": D2019, "allOf": [{"items": [{"type": "integer"}, {}]}],
              "unevaluatedItems": {"type": "string"}}
    automaton = Automaton(schema_to_grammar(schema))
    validator = _validator(schema)
    for instance, valid in [([1, None, "s"], True), ([1, None, 2], False), (["x"], False)]:
        assert validator.is_valid(instance) == valid
        assert _matches(automaton, instance) == valid, instance


def test_draft_07_ignores_the_keywords() -> None:
    """Before 2019-09 they are unknown words, as jsonschema treats them."""
    schema = {"$schema": "http://json-schema.org/draft-07/schema#",
              "unevaluatedProperties": False}
    assert Automaton(schema_to_grammar(schema)).matches(b'{"a": 1}')


def _many_branches(count: int) -> dict[str, Any]:
    return {"anyOf": [{"properties": {f"k{i}": {}}} for i in range(count)],
            "unevaluatedProperties": False}


def test_too_many_cases_are_refused_with_the_pointer() -> None:
    schema = {"properties": {"inner": _many_branches(6)}}  # 2**6 sets of branches
    assert 2 ** 6 > MAX_CASES
    with pytest.raises(UnsupportedSchemaError) as caught:
        schema_to_grammar(schema)
    assert caught.value.keyword == "unevaluatedProperties"
    assert caught.value.pointer == "#/properties/inner/unevaluatedProperties"


def test_lenient_drops_what_it_cannot_lower_with_a_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grammar = schema_to_grammar(_many_branches(6), JsonSchemaOptions(lenient=True))
    assert any(issubclass(w.category, ApproximationWarning)
               and "unevaluatedProperties" in str(w.message) for w in caught)
    assert Automaton(grammar).matches(b'{"other": 1}')  # the keyword is not enforced


def test_five_branches_are_within_the_cases() -> None:
    automaton = Automaton(schema_to_grammar(_many_branches(5)))
    assert _matches(automaton, {"k0": 1, "k4": 2})
    assert not _matches(automaton, {"k0": 1, "k5": 2})


# -- random schemas against jsonschema ---------------------------------------------------

_KEYS = ["a", "b", "c", "x1"]


def _leaf(r: random.Random) -> Any:
    return r.choice([{"type": "integer"}, {"type": "string"}, {}, True])


def _object_schema(r: random.Random, depth: int, defs: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    if r.random() < 0.7:
        schema["properties"] = {k: _leaf(r) for k in r.sample(_KEYS[:3], r.randint(1, 2))}
    if r.random() < 0.15:
        schema["patternProperties"] = {"^x": _leaf(r)}
    if r.random() < 0.06:
        schema["additionalProperties"] = _leaf(r)
    if r.random() < 0.3:
        schema["required"] = r.sample(_KEYS[:3], 1)
    if depth:
        roll = r.random()
        if roll < 0.25:
            schema["allOf"] = [_object_schema(r, depth - 1, defs) for _ in range(r.randint(1, 2))]
        elif roll < 0.4:
            schema["anyOf"] = [_object_schema(r, depth - 1, defs) for _ in range(2)]
        elif roll < 0.5:
            schema["oneOf"] = [_object_schema(r, depth - 1, defs) for _ in range(2)]
        elif roll < 0.62:
            schema["if"] = _object_schema(r, 0, defs)
            schema["then"] = _object_schema(r, depth - 1, defs)
            if r.random() < 0.5:
                schema["else"] = _object_schema(r, depth - 1, defs)
        elif roll < 0.7:
            schema["dependentSchemas"] = {r.choice(_KEYS[:3]): _object_schema(r, depth - 1,
                                                                               defs)}
        elif roll < 0.8 and defs:
            schema["$ref"] = "#/$defs/" + r.choice(defs)
        if r.random() < 0.15:
            schema["unevaluatedProperties"] = r.choice([False, {"type": "integer"}])
    return schema


def _random_object_case(r: random.Random) -> tuple[dict[str, Any], list[Any]]:
    defs = {f"d{i}": _object_schema(r, 1, []) for i in range(r.randint(0, 2))}
    schema = _object_schema(r, 2, list(defs))
    schema["unevaluatedProperties"] = r.choice([False, {"type": "integer"}])
    if defs:
        schema["$defs"] = defs
    instances = [{k: r.choice([1, "s"]) for k in r.sample([*_KEYS, "y"], r.randint(0, 4))}
                 for _ in range(12)]
    return schema, instances


def _array_schema(r: random.Random, depth: int, contains: bool) -> dict[str, Any]:
    """``contains``: with ``contains`` keywords and then no ``oneOf`` or ``if``, whose
    complements of arrays holding an item somewhere are correct but slow to search
    (seconds a schema, with or without these keywords)."""
    schema: dict[str, Any] = {}
    roll = r.random()
    if roll < 0.5:
        schema["prefixItems"] = [_leaf(r) for _ in range(r.randint(1, 2))]
    elif roll < 0.6:
        schema["items"] = _leaf(r)
    elif roll < 0.8 and contains:
        schema["contains"] = {"type": r.choice(["integer", "string"])}
    if depth:
        roll = r.random()
        if roll < 0.3:
            schema["allOf"] = [_array_schema(r, depth - 1, contains)]
        elif roll < 0.5:
            schema["anyOf"] = [_array_schema(r, depth - 1, contains) for _ in range(2)]
        elif roll < 0.65 and not contains:
            schema["oneOf"] = [_array_schema(r, depth - 1, contains) for _ in range(2)]
        elif roll < 0.75 and not contains:
            schema["if"] = _array_schema(r, 0, contains)
            schema["then"] = _array_schema(r, 0, contains)
    return schema


def _random_array_case(r: random.Random) -> tuple[dict[str, Any], list[Any]]:
    schema = _array_schema(r, 2, contains=r.random() < 0.4)
    schema["unevaluatedItems"] = r.choice([False, {"type": "integer"}, {"type": "string"}])
    instances = [[r.choice([1, "s", None]) for _ in range(r.randint(0, 4))] for _ in range(12)]
    return schema, instances


def _agree(make: Any, seed: int, count: int) -> tuple[int, int]:
    """Compiled schemas and instances compared; fails at the first disagreement."""
    r = random.Random(seed)
    compiled = compared = 0
    for _ in range(count):
        schema, instances = make(r)
        validator = Draft202012Validator(schema)
        arm_cpu_alarm(_SCHEMA_BUDGET_S)
        try:
            automaton = Automaton(schema_to_grammar(schema))
            compiled += 1
            for instance in instances:
                assert _matches(automaton, instance) == validator.is_valid(instance), (
                    json.dumps(schema), json.dumps(instance))
                compared += 1
        except (CpuTimeout, ResourceLimitError, UnsupportedSchemaError):
            # Overlapping oneOf over objects can exhaust the emptiness search's budget;
            # such a schema is skipped, and the counts below keep the test meaningful.
            continue
        finally:
            stop_cpu_alarm()
    return compiled, compared


_SCHEMA_BUDGET_S = 10.0


def test_random_objects_agree_with_jsonschema() -> None:
    compiled, compared = _agree(_random_object_case, seed=1, count=40)
    assert compiled >= 30 and compared >= 300, (compiled, compared)


def test_random_arrays_agree_with_jsonschema() -> None:
    compiled, compared = _agree(_random_array_case, seed=2, count=60)
    assert compiled >= 50 and compared >= 500, (compiled, compared)
