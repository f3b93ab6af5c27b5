"""``$dynamicRef`` (draft 2020-12) and ``$recursiveRef`` (draft 2019-09): references resolved
in the dynamic scope, as ``jsonschema`` resolves them (:meth:`constrain.json_nodes.Node.resolve`).

Every instance is checked twice: against the verdict written in the table, and against
``jsonschema``'s. The schemas hold their resources inline (``$defs`` with an ``$id``): no
remote retrieval.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from jsonschema import Draft201909Validator, Draft202012Validator, FormatChecker

from constrain.automaton import Automaton
from constrain.json_nodes import Dialect
from constrain.json_schema import schema_to_grammar

D2019 = "https://json-schema.org/draft/2019-09/schema"

# A tree whose nodes are the resource that refers to it: the extension below closes the
# nodes' properties at every depth, through the base's $dynamicRef.
TREE = {
    "$id": "https://example.com/tree",
    "$dynamicAnchor": "node",
    "type": "object",
    "properties": {"data": True,
                   "children": {"type": "array", "items": {"$dynamicRef": "#node"}}},
}
STRICT_TREE = {
    "$id": "https://example.com/strict-tree",
    "$dynamicAnchor": "node",
    "$ref": "tree",
    "unevaluatedProperties": False,
    "$defs": {"tree": TREE},
}

# A list whose items are whatever the outermost resource says they are.
LIST = {
    "$id": "https://example.com/list",
    "type": "array",
    "items": {"$dynamicRef": "#items"},
    "$defs": {"items": {"$dynamicAnchor": "items"}},
}
INTS = {
    "$id": "https://example.com/ints",
    "$ref": "list",
    "$defs": {"items": {"$dynamicAnchor": "items", "type": "integer"}},
}

# Draft 2019-09: a tree of objects whose leaves are integers, extended to allow strings
# at every depth.
RECURSIVE_BASE = {
    "$id": "https://example.com/base",
    "$recursiveAnchor": True,
    "anyOf": [{"type": "integer"},
              {"type": "object", "additionalProperties": {"$recursiveRef": "#"}}],
}

# (id, schema, [(instance, valid)]).
TABLE: list[tuple[str, Any, list[tuple[Any, bool]]]] = [
    ("strict tree", STRICT_TREE, [
        ({"children": [{"data": 1}]}, True),
        ({"children": [{"daat": 1}]}, False),
        ({"children": [{"children": [{"children": [{"data": [], "x": 0}]}]}]}, False),
        ({"children": [{"children": [{"children": [{"data": []}]}]}]}, True),
        ({"daat": 1}, False),
    ]),
    ("the base tree alone", {"$defs": {"tree": TREE}, "$ref": "https://example.com/tree"}, [
        ({"children": [{"daat": 1}]}, True),
        ({"children": [{"children": 1}]}, False),
    ]),
    ("items from the outermost resource", {"$defs": {"list": LIST, "ints": INTS},
                                          "$ref": "https://example.com/ints"}, [
        ([1, 2], True),
        ([1, "x"], False),
        ([], True),
    ]),
    ("one sub-schema under two scopes", {
        "$id": "https://example.com/root",
        "$defs": {"list": LIST, "ints": INTS},
        "properties": {"a": {"$ref": "ints"}, "b": {"$ref": "list"}},
    }, [
        ({"a": [1], "b": ["x", None]}, True),
        ({"a": ["x"]}, False),
        ({"b": ["x"], "a": [2, 3.5]}, False),
    ]),
    ("a dynamic anchor nobody overrides is a plain anchor", {
        "$id": "https://example.com/plain",
        "$defs": {"s": {"$dynamicAnchor": "s", "type": "string"}},
        "type": "array", "items": {"$dynamicRef": "#s"},
    }, [(["a"], True), ([1], False)]),
    ("a $dynamicRef to a pointer is a $ref", {
        "$defs": {"n": {"type": "number"}},
        "properties": {"x": {"$dynamicRef": "#/$defs/n"}},
    }, [({"x": 1.5}, True), ({"x": "1.5"}, False)]),
    ("$recursiveRef with nesting", {
        "$schema": D2019,
        "$id": "https://example.com/extended",
        "$recursiveAnchor": True,
        "$defs": {"base": RECURSIVE_BASE},
        "anyOf": [{"type": "string"}, {"$ref": "base"}],
    }, [
        ({"a": {"b": "text"}}, True),
        ({"a": {"b": 1}}, True),
        ({"a": {"b": None}}, False),
        ("top", True),
    ]),
    ("one recursive sub-schema under two scopes", {
        "$schema": D2019,
        "$id": "https://example.com/both",
        "$defs": {"base": RECURSIVE_BASE, "extended": {
            "$id": "https://example.com/extended3", "$recursiveAnchor": True,
            "anyOf": [{"type": "string"}, {"$ref": "base"}]}},
        "properties": {"a": {"$ref": "extended3"}, "b": {"$ref": "base"}},
    }, [
        ({"a": {"x": "s"}, "b": {"y": 1}}, True),
        ({"a": {"x": {"y": "s"}}}, True),
        ({"b": {"y": "s"}}, False),
        ({"b": {"y": {"z": "s"}}}, False),
    ]),
    ("$recursiveRef without an outer anchor is a $ref", {
        "$schema": D2019,
        "$id": "https://example.com/extended2",
        "$defs": {"base": RECURSIVE_BASE},
        "anyOf": [{"type": "string"}, {"$ref": "base"}],
    }, [
        ({"a": {"b": 1}}, True),
        ({"a": {"b": "text"}}, False),
        ("top", True),
    ]),
]


def _verdict(schema: Any, instance: Any) -> bool:
    cls = Draft201909Validator if isinstance(schema, dict) and schema.get(
        "$schema") == D2019 else Draft202012Validator
    return bool(cls(schema, format_checker=FormatChecker()).is_valid(instance))


@pytest.mark.parametrize(("name", "schema", "cases"), TABLE, ids=[t[0] for t in TABLE])
def test_table(name: str, schema: Any, cases: list[tuple[Any, bool]]) -> None:
    automaton = Automaton(schema_to_grammar(schema))
    for instance, valid in cases:
        assert _verdict(schema, instance) == valid, ("table disagrees with jsonschema",
                                                     instance)
        text = json.dumps(instance).encode()
        assert automaton.matches(text) == valid, instance


def test_scopes_stay_empty_where_no_anchor_can_read_them() -> None:
    """Documents without dynamic or recursive anchors key their nodes as before: the same
    definition reached by two references is one node, whatever the references passed."""
    schema = {"$id": "https://example.com/doc", "$defs": {"a": {"type": "string"}},
              "properties": {"x": {"$ref": "#/$defs/a"}, "y": {"$ref": "#/$defs/a"}}}
    root = Dialect.for_schema(schema).root(schema)
    x = root.child(schema["properties"]["x"], "properties", "x").resolve("#/$defs/a")
    y = root.child(schema["properties"]["y"], "properties", "y").resolve("#/$defs/a")
    again = x.resolve("https://example.com/doc#/$defs/a")
    assert x.scope == y.scope == again.scope == ()
    assert x.key == y.key == again.key


def test_a_scope_names_what_later_resolutions_read() -> None:
    schema = {"$defs": {"list": LIST, "ints": INTS}, "$ref": "https://example.com/ints"}
    root = Dialect.for_schema(schema).root(schema)
    ints = root.resolve("https://example.com/ints")
    listed = ints.resolve("list")
    # The list is reached from ints, whose $dynamicAnchor later resolutions read.
    assert listed.scope == ("https://example.com/ints",)
    items = listed.child(LIST["items"], "items").resolve("#items", "$dynamicRef")
    assert items.schema == INTS["$defs"]["items"]
    # Alone, the list's own anchor is the answer, and its scope is another.
    alone = root.resolve("https://example.com/list")
    assert alone.child(LIST["items"], "items").resolve(
        "#items", "$dynamicRef").schema == LIST["$defs"]["items"]
    assert alone.scope != listed.scope


def test_a_recursion_through_alternating_resources_is_finite() -> None:
    """Each level of the strict tree passes through both resources again, so the
    dynamic scope grows without end; the nodes' scopes do not."""
    automaton = Automaton(schema_to_grammar(STRICT_TREE))
    deep: Any = {"data": 0}
    for _ in range(30):
        deep = {"children": [deep]}
    assert automaton.matches(json.dumps(deep).encode())
    assert not automaton.matches(json.dumps({"children": [deep, {"x": 1}]}).encode())


_LEAVES: list[dict[str, Any]] = [{"type": "integer"}, {"type": "string"}, {"type": "boolean"},
                                 {}, {"enum": [1, "a"]}, {"not": {"type": "integer"}}]
_SCALARS: list[Any] = [1, "a", True, 2.5, None, "b"]


def _random_document(rng: random.Random) -> dict[str, Any]:
    """Resources r0..r{n-1}, each but r0 perhaps with a dynamic anchor ``a`` of some leaf type,
    an array of ``$dynamicRef: "#a"`` where it has one, and ``$ref``s to other resources
    (later or earlier: recursions through several resources, one resource reached by
    several paths)."""
    n = rng.randint(2, 5)
    resources: dict[str, Any] = {}
    for i in range(n):
        resource: dict[str, Any] = {"$id": f"https://example.com/r{i}", "type": "object"}
        properties: dict[str, Any] = {}
        # r0, where every path starts, without one: which resource answers then depends
        # on the path.
        if i > 0 and rng.random() < 0.8:
            resource["$defs"] = {"a": {"$dynamicAnchor": "a", **rng.choice(_LEAVES)}}
            if rng.random() < 0.8:
                properties["v"] = {"type": "array", "items": {"$dynamicRef": "#a"}}
        for key in ("next", "other"):
            if n > 1 and rng.random() < 0.8:
                properties[key] = {"$ref": f"r{rng.randrange(n)}"}
        resource["properties"] = properties
        resources[f"r{i}"] = resource
    return {"$defs": resources, "$ref": "https://example.com/r0"}


def _random_instance(rng: random.Random, depth: int = 0) -> Any:
    value: dict[str, Any] = {}
    if rng.random() < 0.8:
        value["v"] = [rng.choice(_SCALARS) for _ in range(rng.randint(0, 2))]
    for key in ("next", "other"):
        if depth < 4 and rng.random() < 0.5:
            value[key] = _random_instance(rng, depth + 1)
    return value


def test_random_dynamic_scopes_against_jsonschema() -> None:
    """Documents of several resources that override one dynamic anchor and refer to each
    other in cycles: every instance's verdict is ``jsonschema``'s."""
    rng = random.Random(7)
    compared = rejected = 0
    for _ in range(60):
        document = _random_document(rng)
        automaton = Automaton(schema_to_grammar(document))
        validator = Draft202012Validator(document)
        for _ in range(15):
            instance = _random_instance(rng)
            valid = validator.is_valid(instance)
            assert automaton.matches(json.dumps(instance).encode()) == valid, (document,
                                                                                instance)
            compared += 1
            rejected += not valid
    assert compared == 900 and 100 < rejected < 800  # both verdicts were asked for


def _random_recursive_document(rng: random.Random) -> dict[str, Any]:
    """Draft 2019-09 resources r0..r{n-1}: each a leaf type or an object whose ``rec``
    is ``$recursiveRef: "#"`` and whose ``next``/``other`` refer to other resources; some
    declare ``$recursiveAnchor``."""
    n = rng.randint(2, 4)
    resources: dict[str, Any] = {}
    for i in range(n):
        properties: dict[str, Any] = {"rec": {"$recursiveRef": "#"}}
        for key in ("next", "other"):
            if i == 0:  # every path starts at r0: two ways on from it
                properties[key] = {"$ref": f"r{rng.randrange(1, n)}"}
            elif rng.random() < 0.7:
                properties[key] = {"$ref": f"r{rng.randrange(n)}"}
        resource: dict[str, Any] = {
            "$id": f"https://example.com/q{i}",
            "anyOf": [rng.choice(_LEAVES[:3]), {"type": "object", "properties": properties}]}
        if i > 0 and rng.random() < 0.7:  # not r0, where every path starts
            resource["$recursiveAnchor"] = True
        resources[f"r{i}"] = resource
    # The $ids are q<i> and the references r<i>: the references go through the $defs.
    for resource in resources.values():
        for key in ("next", "other"):
            ref = resource["anyOf"][1]["properties"].get(key)
            if ref is not None:
                ref["$ref"] = "q" + ref["$ref"][1:]
    return {"$schema": D2019, "$defs": resources, "$ref": "https://example.com/q0"}


def _random_recursive_instance(rng: random.Random, depth: int = 0) -> Any:
    if depth >= 4 or (depth > 1 and rng.random() < 0.4):
        return rng.choice(_SCALARS)
    return {key: _random_recursive_instance(rng, depth + 1)
            for key in ("rec", "next", "other") if rng.random() < 0.5}


def test_random_recursive_scopes_against_jsonschema() -> None:
    rng = random.Random(11)
    compared = rejected = 0
    for _ in range(60):
        document = _random_recursive_document(rng)
        automaton = Automaton(schema_to_grammar(document))
        validator = Draft201909Validator(document)
        for _ in range(15):
            instance = _random_recursive_instance(rng)
            valid = validator.is_valid(instance)
            assert automaton.matches(json.dumps(instance).encode()) == valid, (document,
                                                                                instance)
            compared += 1
            rejected += not valid
    assert compared == 900 and 100 < rejected < 800  # both verdicts were asked for
