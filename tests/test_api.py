"""The agent-builder API: output types, generate_as, @generative, @tool and Toolbox.

Fast tests replace the model with a fake ``generate`` (``constrain.api._generate``);
``@pytest.mark.model`` tests run the embedded SmolLM2 on CPU with small token budgets.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Annotated, Any, Literal, Optional, Union

import jsonschema
import pytest
from typing_extensions import TypedDict  # pydantic needs it before Python 3.12

pydantic = pytest.importorskip("pydantic")

from model_support import _model_cache_folder, default_model  # noqa: F401

import constrain
from constrain import api
from constrain.api import Choice, Regex, generate_as, generative, output_spec
from constrain.errors import SchemaError, ValidationFailure
from constrain.tools import Tool, Toolbox, tool


class Address(pydantic.BaseModel):
    street: str
    city: str


class Person(pydantic.BaseModel):
    name: str
    age: int
    address: Address | None = None


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str
    year: int


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class FakeResult:
    text: str
    finished: bool = True
    token_ids: list[int] = dataclasses.field(default_factory=lambda: [1, 2, 3])
    model_calls: int = 3
    forced_tokens: int = 0
    seconds: float = 0.01


class FakeGenerate:
    """Records calls and answers with queued texts."""

    def __init__(self, *texts: str, finished: bool = True) -> None:
        self.texts = list(texts)
        self.finished = finished
        self.calls: list[tuple[Any, Any, dict[str, Any]]] = []

    def __call__(self, spec: Any, prompt: Any, **kwargs: Any) -> FakeResult:
        self.calls.append((spec, prompt, kwargs))
        return FakeResult(self.texts.pop(0), self.finished)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    def install(*texts: str, finished: bool = True) -> FakeGenerate:
        f = FakeGenerate(*texts, finished=finished)
        monkeypatch.setattr(api, "_generate", f)
        return f

    return install


# --------------------------------------------------------------------- type -> spec

@pytest.mark.parametrize(
    "output_type, kind, schema",
    [
        (int, "json", {"type": "integer"}),
        (float, "json", {"type": "number"}),
        (bool, "json", {"type": "boolean"}),
        (str, "json", {"type": "string"}),
        (list[int], "json", {"type": "array", "items": {"type": "integer"}}),
        (dict[str, int], "json", {"type": "object", "additionalProperties": {"type": "integer"}}),
        (Optional[int], "json", {"anyOf": [{"type": "integer"}, {"type": "null"}]}),  # noqa: UP045
        (Union[int, str], "json", {"anyOf": [{"type": "integer"}, {"type": "string"}]}),  # noqa: UP007
        (Literal[1, 2], "json", {"enum": [1, 2], "type": "integer"}),
    ],
    ids=lambda v: getattr(v, "__name__", None) if isinstance(v, type) else None,
)
def test_python_types_map_to_json_schemas(output_type: Any, kind: str, schema: Any) -> None:
    spec = output_spec(output_type)
    assert (spec.kind, spec.schema) == (kind, schema)
    assert spec.spec == schema


@pytest.mark.parametrize(
    "output_type, text, value",
    [
        (int, "42", 42),
        (float, "2.5", 2.5),
        (bool, "true", True),
        (str, '"hi"', "hi"),
        (list[int], "[1, 2]", [1, 2]),
        (dict[str, int], '{"a": 1}', {"a": 1}),
        (Optional[int], "null", None),  # noqa: UP045
        (Point, '{"x": 1, "y": 2}', Point(1, 2)),
        (Movie, '{"title": "Up", "year": 2009}', {"title": "Up", "year": 2009}),
        (Level, "2", Level.HIGH),
        (Literal["a", "b"], "b", "b"),
        (Color, "green", Color.GREEN),
        (Regex(r"[0-9]{3}-[0-9]{4}"), "555-0199", "555-0199"),
        (Choice(["yes", "no"]), "no", "no"),
        ({"regex": "a+"}, "aaa", "aaa"),
        ({"choice": ["x", "y"]}, "x", "x"),
        ({"type": "object", "required": ["n"]}, '{"n": 1}', {"n": 1}),
    ],
    ids=repr,
)
def test_parse_returns_typed_values(output_type: Any, text: str, value: Any) -> None:
    assert output_spec(output_type).parse(text) == value


def test_pydantic_model_schema_and_value() -> None:
    spec = output_spec(Person)
    assert spec.kind == "json"
    assert spec.schema == Person.model_json_schema()
    p = spec.parse('{"name": "Ann", "age": 31, "address": {"street": "Main", "city": "Oslo"}}')
    assert isinstance(p, Person) and isinstance(p.address, Address) and p.address.city == "Oslo"


def test_string_literals_and_enums_are_bare_choices() -> None:
    assert output_spec(Literal["pos", "neg"]).spec == {"choice": ["pos", "neg"]}
    assert output_spec(Color).spec == {"choice": ["red", "green"]}
    assert output_spec(Regex("[a-z]+")).spec == {"regex": "[a-z]+"}


@pytest.mark.parametrize(
    "output_type, text, path",
    [
        (int, '"x"', "$"),
        (Person, '{"name": "Ann", "age": "old"}', "$.age"),
        (list[int], "[1, true, 2.5]", "$[2]"),
        ({"type": "object", "properties": {"d": {"type": "string", "format": "date"}}},
         '{"d": "2024-13-45"}', "$.d"),
        ({"type": "array", "maxItems": 1}, "[1, 2]", "$"),
    ],
    ids=["int", "model-field", "list-item", "format-date", "maxItems"],
)
def test_invalid_outputs_raise_validation_failure_with_path(output_type: Any, text: str,
                                                            path: str) -> None:
    with pytest.raises(ValidationFailure) as info:
        output_spec(output_type).parse(text)
    assert info.value.path == path
    assert isinstance(info.value, ValueError)


def test_not_json_gives_byte_offset() -> None:
    with pytest.raises(ValidationFailure, match="not valid JSON") as info:
        output_spec(dict[str, int]).parse('{"é": 1,')
    assert info.value.position == len('{"é": 1,'.encode())


@pytest.mark.parametrize("output_type, text", [
    (Regex("[0-9]+"), "12a"), (Choice(["a", "b"]), "c"), (Literal["a", "b"], "A"),
])
def test_text_outputs_are_checked(output_type: Any, text: str) -> None:
    with pytest.raises(ValidationFailure):
        output_spec(output_type).parse(text)


def test_unfinished_generation_fails_even_if_text_parses() -> None:
    with pytest.raises(ValidationFailure, match="max_new_tokens"):
        output_spec(int).parse("12", finished=False)


def test_bad_output_types() -> None:
    with pytest.raises(SchemaError):
        Choice([])
    with pytest.raises(SchemaError, match="cannot derive a JSON Schema"):
        output_spec(object())
    with pytest.raises(SchemaError):
        output_spec({"type": "object", "properties": 3}).parse("{}")


# --------------------------------------------------------------------- generate_as

def test_generate_as_passes_spec_and_options(fake: Any) -> None:
    f = fake('{"name": "Ann", "age": 31}')
    person = generate_as(Person, "Ann is 31.", max_new_tokens=40, temperature=0.0)
    assert person == Person(name="Ann", age=31)
    spec, prompt, kwargs = f.calls[0]
    assert spec == Person.model_json_schema() and prompt == "Ann is 31."
    assert kwargs == {"model": None, "tokenizer": None, "max_new_tokens": 40, "temperature": 0.0,
                      "schema_options": dict(api.GENERATION_JSON_OPTIONS)}


def test_generate_as_choice_and_messages(fake: Any) -> None:
    f = fake("green")
    messages = [{"role": "system", "content": "Answer with a color."},
                {"role": "user", "content": "Grass?"}]
    assert generate_as(Color, messages) is Color.GREEN
    assert f.calls[0][0] == {"choice": ["red", "green"]} and f.calls[0][1] == messages
    assert "schema_options" not in f.calls[0][2]  # text outputs have no JSON options


def test_generate_as_reports_truncation(fake: Any) -> None:
    fake('{"name": "An', finished=False)
    with pytest.raises(ValidationFailure, match="raise max_new_tokens"):
        generate_as(Person, "Ann is 31.")


# --------------------------------------------------------------------- @generative

@generative(max_new_tokens=5)
def sentiment(review: str, aspect: str = "overall") -> Literal["positive", "negative"]:
    """Rate the {aspect} sentiment of this review: {review}"""


def test_generative_renders_docstring_and_generates(fake: Any) -> None:
    assert sentiment.render("Great!") == "Rate the overall sentiment of this review: Great!"
    f = fake("positive")
    assert sentiment("Great!", aspect="battery") == "positive"
    spec, prompt, kwargs = f.calls[0]
    assert spec == {"choice": ["positive", "negative"]}
    assert prompt == "Rate the battery sentiment of this review: Great!"
    assert kwargs["max_new_tokens"] == 5
    assert sentiment.__name__ == "sentiment" and sentiment.output_type.__args__ == (
        "positive", "negative")


def test_generative_body_may_return_the_prompt(fake: Any) -> None:
    @generative
    def add(a: int, b: int) -> int:
        return [{"role": "user", "content": f"{a}+{b}="}]

    f = fake("5")
    assert add(2, 3) == 5
    assert f.calls[0][1] == [{"role": "user", "content": "2+3="}]


def test_generative_shows_models_as_json() -> None:
    @generative
    def describe(person: Person) -> str:
        """Describe {person}."""

    assert describe.render(Person(name="A", age=1)) == (
        'Describe {"name":"A","age":1,"address":null}.')


def test_generative_errors() -> None:
    with pytest.raises(TypeError, match="return annotation"):
        @generative
        def no_type(x: str):  # type: ignore[no-untyped-def]
            """{x}"""

    @generative
    def bad_template(x: str) -> int:
        """{y}"""

    with pytest.raises(SchemaError, match="not an argument"):
        bad_template.render("a")
    with pytest.raises(TypeError):
        sentiment.render()  # missing argument, as for the plain function


# --------------------------------------------------------------------- @tool

@tool
def get_weather(city: str, unit: Literal["C", "F"] = "C") -> str:
    """Current weather for a city.

    Longer explanation that is not part of the description.

    Args:
        city: The city name, e.g. "Paris".
        unit (str): Temperature unit.
    """
    return f"20 {unit} in {city}"


@tool(name="ship")
def ship_to(person: Person, express: bool = False) -> str:
    """Ship a parcel to a person."""
    return f"{person.name}/{person.address.city if person.address else '?'}/{express}"


def test_tool_metadata_and_schema() -> None:
    assert isinstance(get_weather, Tool)
    assert get_weather.name == "get_weather"
    assert get_weather.description == "Current weather for a city."
    params = get_weather.parameters
    assert params["required"] == ["city"]
    assert params["additionalProperties"] is False
    assert params["properties"]["city"]["description"] == 'The city name, e.g. "Paris".'
    assert params["properties"]["unit"]["enum"] == ["C", "F"]
    assert params["properties"]["unit"]["description"] == "Temperature unit."
    jsonschema.Draft202012Validator.check_schema(params)
    assert get_weather("Oslo") == "20 C in Oslo"  # still a plain function
    openai = get_weather.to_openai()["function"]
    assert openai["name"] == "get_weather" and "title" not in openai["parameters"]


def test_tool_invoke_validates_and_converts() -> None:
    assert get_weather.invoke({"city": "Rome", "unit": "F"}) == "20 F in Rome"
    assert get_weather.invoke('{"city": "Rome"}') == "20 C in Rome"
    out = ship_to.invoke({"person": {"name": "Bo", "age": 3,
                                     "address": {"street": "x", "city": "Lund"}}})
    assert out == "Bo/Lund/False"  # nested argument arrives as a Person, not a dict


@pytest.mark.parametrize(
    "arguments, match",
    [
        ({"unit": "C"}, r"\$\.city: Field required"),
        ({"city": "Rome", "unit": "K"}, r"\$\.unit"),
        ({"city": "Rome", "extra": 1}, r"\$\.extra: Extra inputs"),
        ('{"city": ', "not valid JSON"),
        ("[1]", "must be a JSON object"),
    ],
    ids=["missing", "bad-literal", "extra", "not-json", "not-object"],
)
def test_tool_invoke_rejects_bad_arguments(arguments: Any, match: str) -> None:
    with pytest.raises(ValidationFailure, match=match):
        get_weather.invoke(arguments)


def test_tool_rejects_signatures_without_json_names() -> None:
    def star(*args: int) -> None: ...

    def kw(**kwargs: int) -> None: ...

    def pos(a: int, /) -> None: ...

    for fn in (star, kw, pos):
        with pytest.raises(TypeError):
            tool(fn)
    with pytest.raises(SchemaError):
        tool(name="has space")(get_weather.function)


# --------------------------------------------------------------------- Toolbox

class Item(pydantic.BaseModel):
    sku: str
    quantity: int = 1


class Order(pydantic.BaseModel):
    items: list[Item]
    address: Address


@tool
def place_order(order: Order) -> int:
    """Place an order."""
    return sum(i.quantity for i in order.items)


@tool
def relocate(address: Address, note: str = "") -> str:
    """Move to a new address (a different tool also using Address)."""
    return address.city


def test_toolbox_schema_is_one_anyof_of_disjoint_branches() -> None:
    box = Toolbox([get_weather, ship_to, place_order, relocate])
    branches = box.schema["anyOf"]
    assert [b["properties"]["tool"] for b in branches] == [
        {"const": n} for n in ["get_weather", "ship", "place_order", "relocate"]]
    assert all(b["required"] == ["tool", "arguments"] for b in branches)
    assert set(box.schema["$defs"]) == {"ship__Address", "ship__Person", "place_order__Address",
                                         "place_order__Item", "place_order__Order",
                                         "relocate__Address"}
    validator = jsonschema.Draft202012Validator(box.schema)
    validator.check_schema(box.schema)
    good = {"tool": "place_order", "arguments": {"order": {
        "items": [{"sku": "A1", "quantity": 2}], "address": {"street": "s", "city": "c"}}}}
    assert validator.is_valid(good)
    assert not validator.is_valid({"tool": "get_weather", "arguments": good["arguments"]})
    assert not validator.is_valid({"tool": "nope", "arguments": {}})
    valid_branches = [jsonschema.Draft202012Validator({**b, "$defs": box.schema["$defs"]})
                      .is_valid(good) for b in branches]
    assert valid_branches.count(True) == 1


def test_toolbox_parse_and_call() -> None:
    box = Toolbox([get_weather, place_order])
    call = box.parse('{"tool": "get_weather", "arguments": {"city": "Oslo"}}')
    assert (call.name, call.arguments) == ("get_weather", {"city": "Oslo", "unit": "C"})
    assert box.call({"tool": "place_order", "arguments": {"order": {
        "items": [{"sku": "a", "quantity": 4}, {"sku": "b"}],
        "address": {"street": "s", "city": "c"}}}}) == 5
    with pytest.raises(ValidationFailure, match="unknown tool 'fly'"):
        box.parse('{"tool": "fly", "arguments": {}}')
    with pytest.raises(ValidationFailure, match="a tool call is"):
        box.parse('{"tool": "get_weather"}')
    with pytest.raises(ValidationFailure, match=r"\$\.city"):
        box.parse('{"tool": "get_weather", "arguments": {}}')
    assert "get_weather" in box and len(box) == 2 and box["place_order"] is place_order


def test_toolbox_accepts_functions_and_rejects_duplicates() -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    box = Toolbox([ping])
    assert box.schema["properties"]["tool"] == {"const": "ping"}  # one tool: no anyOf
    assert box.call('{"tool": "ping", "arguments": {}}') == "pong"
    with pytest.raises(SchemaError, match="two tools"):
        Toolbox([get_weather, get_weather])
    with pytest.raises(SchemaError):
        Toolbox([])


def test_toolbox_choose_generates_then_invokes(fake: Any) -> None:
    box = Toolbox([get_weather, place_order])
    f = fake('{"tool": "get_weather", "arguments": {"city": "Lima", "unit": "F"}}')
    call = box.choose("Weather in Lima, in Fahrenheit?", max_new_tokens=64)
    assert (call.name, call.result, call.invoked) == ("get_weather", "20 F in Lima", True)
    spec, messages, kwargs = f.calls[0]
    assert spec == box.schema and kwargs["max_new_tokens"] == 64
    assert kwargs["schema_options"]["property_order"] == "schema"
    assert messages[0]["role"] == "system" and "get_weather: Current weather" in (
        messages[0]["content"])
    assert messages[1] == {"role": "user", "content": "Weather in Lima, in Fahrenheit?"}
    merged = box.messages([{"role": "system", "content": "Be brief."},
                           {"role": "user", "content": "hi"}])
    assert len(merged) == 2 and merged[0]["content"].endswith("Be brief.")
    fake('{"tool": "get_weather", "arg', finished=False)
    with pytest.raises(ValidationFailure, match="max_new_tokens"):
        box.choose("?")


def test_tool_and_toolbox_constraints_compile(byte_vocab: constrain.Vocabulary) -> None:
    pytest.importorskip("constrain.json_schema")
    m = get_weather.constraint(byte_vocab).matcher()
    text = json.dumps({"city": "Oslo"}, separators=(",", ":"))
    assert all(m.advance(b) for b in text.encode()) and m.is_accepting()
    box = Toolbox([get_weather, place_order])
    m = box.constraint(byte_vocab).matcher()
    call = json.dumps({"tool": "get_weather", "arguments": {"city": "Oslo"}},
                      separators=(",", ":"))
    assert all(m.advance(b) for b in call.encode()) and m.is_accepting()
    m = box.constraint(byte_vocab).matcher()
    wrong = '{"tool":"get_weather","arguments":{"order"'
    assert not all(m.advance(b) for b in wrong.encode())


# --------------------------------------------------------------------- real model

@pytest.mark.model
@pytest.mark.usefixtures("default_model")
def test_model_generate_as_types() -> None:
    pytest.importorskip("constrain.generation")
    answer = generate_as(Literal["yes", "no"], "Is the sky blue? Answer yes or no.",
                         max_new_tokens=4)
    assert answer in ("yes", "no")
    # Not `int`: since draft 6 "1.0" is an integer too, and greedy SmolLM2 likes to write
    # "1.000000..." until the budget runs out; a list of ints shows the JSON path instead.
    numbers = generate_as(Annotated[list[int], pydantic.Field(max_length=3)],
                          "List three small prime numbers as a JSON array.", max_new_tokens=16)
    assert isinstance(numbers, list) and all(isinstance(n, int) for n in numbers)
    code = generate_as(Regex(r"[A-Z]{3}"), "The airport code of Paris Charles de Gaulle.",
                       max_new_tokens=6)
    assert len(code) == 3 and code.isupper()


@pytest.mark.model
@pytest.mark.usefixtures("default_model")
def test_model_generate_as_pydantic_and_tools() -> None:
    pytest.importorskip("constrain.generation")
    pytest.importorskip("constrain.json_schema")

    class City(pydantic.BaseModel):
        name: str = pydantic.Field(max_length=20)
        country: str = pydantic.Field(max_length=20)

    city = generate_as(City, "Name a big city in Japan and its country, as JSON.",
                       max_new_tokens=48)
    assert isinstance(city, City)
    box = Toolbox([get_weather])
    call = box.choose("What's the weather in Paris?", max_new_tokens=48)
    assert call.name == "get_weather" and call.result.startswith("20 ")


def test_outputs_validate_against_the_resources_their_schema_names() -> None:
    """A schema whose ``$ref`` names another document: ``schema_options["resources"]``
    reaches parsing too (``generate_as``, ``extract`` and ``constrain check`` go through
    ``with_options``), and without it the reference is a typed error, never a fetch."""
    schema = {"type": "object", "properties": {"n": {"$ref": "https://example.com/n.json"}}}
    options = {"resources": {"https://example.com/n.json": {"type": "integer", "minimum": 0}}}
    spec = output_spec(schema).with_options(options)
    assert spec.parse('{"n": 3}') == {"n": 3}
    with pytest.raises(ValidationFailure, match=r"\$\.n"):
        spec.parse('{"n": -1}')
    assert output_spec(schema).with_options(None).resources == ()
    with pytest.raises(SchemaError, match="cannot resolve"):
        output_spec(schema).parse('{"n": 3}')
    with pytest.raises(SchemaError, match="cannot resolve"):
        api.validate_instance(schema, {"n": 3})
    api.validate_instance(schema, {"n": 3}, options["resources"])
