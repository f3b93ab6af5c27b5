"""Python types in, validated objects out: the agent-builder API.

:func:`output_spec` maps an *output type* to what the decoder is constrained by and to the
parser/validator of the text it produced. Output types are:

- Pydantic models, dataclasses, ``TypedDict``, ``int``/``float``/``bool``/``str``,
  ``list[...]``, ``dict[str, ...]``, ``Optional``/``Union``, non-string ``Literal``/``Enum``:
  JSON, constrained by the type's JSON Schema (Pydantic's ``TypeAdapter``) and validated by
  Pydantic;
- ``Literal["a", "b"]`` and ``Enum`` classes whose values are all strings: the bare text of
  one choice (no JSON quotes), returned as the string or the Enum member;
- :class:`Regex` ``(pattern)``: text fully matching the pattern, returned as ``str``;
- :class:`Choice` ``([...])``: one of the strings, returned as ``str``;
- a JSON Schema ``dict``: JSON validated by ``jsonschema`` (formats checked);
- a :class:`~constrain.CompiledConstraint`: its text (parsed JSON for JSON Schema ones).

:func:`generate_as` generates one value of an output type; :func:`generative` turns a
function whose docstring is a prompt template into one that does. Tools live in
:mod:`constrain.tools`.

>>> from typing import Literal
>>> spec = output_spec(Literal["positive", "negative"])
>>> spec.kind, spec.spec
('choice', {'choice': ['positive', 'negative']})
>>> spec.parse("negative")
'negative'
>>> output_spec(list[int]).parse("[1, 2]")
[1, 2]
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar, overload

from .errors import MissingDependencyError, SchemaError, ValidationFailure

__all__ = [
    "GENERATION_JSON_OPTIONS",
    "Choice",
    "GenerativeFunction",
    "OutputSpec",
    "Regex",
    "generate_as",
    "generative",
    "json_options",
    "output_spec",
]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Regex:
    """Output type: text that fully matches ``pattern`` (Python ``re`` syntax, ``\\d \\w \\s``
    ASCII as in JSON Schema), as ``str``.

    >>> output_spec(Regex(r"[0-9]{3}")).parse("042")
    '042'
    """

    pattern: str


@dataclasses.dataclass(frozen=True, init=False)
class Choice:
    """Output type: exactly one of ``options``, as ``str``.

    >>> Choice(["red", "green"]).options
    ('red', 'green')
    """

    options: tuple[str, ...]

    def __init__(self, options: Iterable[str]) -> None:
        items = (options,) if isinstance(options, str) else tuple(options)
        if not items or not all(isinstance(o, str) for o in items):
            raise spec_error("Choice needs a non-empty list of strings")
        object.__setattr__(self, "options", items)


def spec_error(message: str) -> SchemaError:
    """A :class:`SchemaError` about a whole spec or file (no JSON pointer to show)."""
    return SchemaError(message, None)  # type: ignore[arg-type]


def _pydantic() -> Any:
    try:
        import pydantic
    except ImportError as e:  # pydantic is an optional dependency (extra "hf")
        raise MissingDependencyError("pydantic", "hf") from e
    return pydantic


@functools.lru_cache(maxsize=256)
def _type_adapter(tp: Any) -> Any:
    return _pydantic().TypeAdapter(tp)


def _adapter(tp: Any) -> Any:
    try:
        return _type_adapter(tp)
    except TypeError:  # unhashable annotation (rare): build it uncached
        return _pydantic().TypeAdapter(tp)


def _byte_offset(text: str, char_pos: int) -> int:
    return len(text[:char_pos].encode("utf-8"))


def _json_loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValidationFailure(
            f"output is not valid JSON ({e.msg} at byte {_byte_offset(text, e.pos)}): {text!r}",
            position=_byte_offset(text, e.pos),
        ) from e


def validate_instance(schema: Mapping[str, Any] | bool, instance: Any,
                      resources: Mapping[str, Any] | tuple[tuple[str, str], ...] = ()) -> None:
    """Raise :class:`ValidationFailure` (with the JSON path) if ``instance`` breaks ``schema``.

    Formats are checked; the draft follows the schema's ``$schema`` (2020-12 by default).
    ``$ref`` may name the documents of ``resources`` (as
    :class:`~constrain.json_schema.JsonSchemaOptions` takes them), nothing fetched.

    >>> validate_instance({"type": "integer", "minimum": 1}, 0)
    Traceback (most recent call last):
    ...
    constrain.errors.ValidationFailure: at $: 0 is less than the minimum of 1
    """
    import jsonschema
    import referencing.exceptions

    from .json_nodes import resource_registry
    from .json_schema import resource_texts

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        raise SchemaError(f"invalid JSON Schema: {e.message}",
                          "/" + "/".join(map(str, e.path))) from e
    registry = resource_registry(resource_texts(resources), jsonschema.Draft202012Validator)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER, registry=registry)
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    except referencing.exceptions.Unresolvable as e:
        raise SchemaError(f"cannot resolve a $ref of the schema: {e} (other documents are "
                          "given as resources; nothing is fetched)") from e
    if error is not None:
        raise ValidationFailure(f"at {error.json_path}: {error.message}", path=error.json_path)


def _pydantic_failure(e: Any, text: str) -> ValidationFailure:
    first = e.errors()[0] if e.errors() else {"loc": (), "msg": str(e)}
    path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
    return ValidationFailure(f"at {path}: {first['msg']} (output: {text!r})", path=path)


#: :class:`~constrain.json_schema.JsonSchemaOptions` fields that :func:`generate_as`,
#: :meth:`OutputSpec.compile`, tools and ``constrain extract`` add to the generation
#: defaults of :data:`constrain.specs.GENERATION_SCHEMA_DEFAULTS` (required escapes only, no
#: unlisted keys). The output is parsed, so neither whitespace nor member order can matter
#: to the caller: compact JSON in schema order makes every listed key forced bytes, which
#: generation fast-forwards instead of sampling.
GENERATION_JSON_OPTIONS: Mapping[str, Any] = types.MappingProxyType({
    "whitespace_pattern": "",
    "property_order": "schema",
})


def json_options(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """:data:`GENERATION_JSON_OPTIONS` updated with ``overrides``.

    >>> json_options({"property_order": "any"})
    {'whitespace_pattern': '', 'property_order': 'any'}
    """
    return {**GENERATION_JSON_OPTIONS, **(overrides or {})}


@dataclasses.dataclass(frozen=True)
class OutputSpec:
    """How one output type constrains decoding and turns the decoded text into a value.

    ``spec`` is what :func:`constrain.generation.generate` accepts (a JSON Schema dict,
    ``{"regex": ...}``, ``{"choice": [...]}`` or a compiled constraint); ``schema`` is the
    JSON Schema when ``kind == "json"``.

    >>> output_spec(int).schema
    {'type': 'integer'}
    """

    kind: str
    spec: Any
    output_type: Any
    schema: dict[str, Any] | None = None
    resources: tuple[tuple[str, str], ...] = ()
    """Other schema documents a ``$ref`` may name, as
    :class:`~constrain.json_schema.JsonSchemaOptions` keeps them (see :meth:`with_options`)."""

    def with_options(self, schema_options: Mapping[str, Any] | None) -> OutputSpec:
        """This output where ``schema_options`` give ``resources``: its compiles get them
        anyway; parsing validates against them too.

        >>> spec = output_spec({"$ref": "https://example.com/n.json"}).with_options(
        ...     {"resources": {"https://example.com/n.json": {"type": "integer"}}})
        >>> spec.parse("3")
        3
        """
        given = (schema_options or {}).get("resources")
        if not given or not self.is_json:
            return self
        from .json_schema import resource_texts

        return dataclasses.replace(self, resources=resource_texts(given))

    @property
    def is_json(self) -> bool:
        """Whether the output is JSON under a JSON Schema (``json_options`` apply)."""
        return self.kind in ("json", "schema")

    def compile(self, vocab: Any, **schema_options: Any) -> Any:
        """The :class:`~constrain.CompiledConstraint` of this output for ``vocab``; JSON
        outputs use :func:`json_options` updated with ``schema_options``.

        >>> from constrain import Vocabulary
        >>> vocab = Vocabulary.from_token_bytes([b"yes", b"no", None], eos_token_ids=[2])
        >>> output_spec(Choice(["yes", "no"])).compile(vocab).matcher().allowed_token_ids()
        array([0, 1])
        """
        from .specs import compile_spec

        if not self.is_json:
            return compile_spec(self.spec, vocab)
        return compile_spec(self.spec, vocab, **json_options(schema_options))

    def generation_kwargs(self, schema_options: Mapping[str, Any] | None = None
                          ) -> dict[str, Any]:
        """The ``schema_options=`` argument of :func:`constrain.generation.generate` for
        this output (nothing for text outputs)."""
        return {"schema_options": json_options(schema_options)} if self.is_json else {}

    def parse(self, text: str, *, finished: bool = True) -> Any:
        """The validated value of ``text``; :class:`ValidationFailure` if it is not one.

        ``finished=False`` (the token budget ran out before the constraint could end) fails
        with a message saying so, whatever the text.

        >>> output_spec(Choice(["a", "b"])).parse("c")
        Traceback (most recent call last):
        ...
        constrain.errors.ValidationFailure: output 'c' is not one of ['a', 'b']
        """
        if not finished:
            raise ValidationFailure(
                "generation stopped before the output was complete (raise max_new_tokens): "
                f"{text!r}", position=len(text.encode("utf-8")))
        tp = self.output_type
        if self.kind == "regex":
            if re.fullmatch(tp.pattern, text, re.ASCII) is None:
                raise ValidationFailure(f"output {text!r} does not match /{tp.pattern}/")
            return text
        if self.kind == "choice":
            options = list(self.spec["choice"])
            if text not in options:
                raise ValidationFailure(f"output {text!r} is not one of {options}")
            return tp(text) if isinstance(tp, type) and issubclass(tp, enum.Enum) else text
        if self.kind == "constraint":
            return _json_loads(text) if getattr(tp, "kind", "") == "json" else text
        if self.kind == "schema":
            value = _json_loads(text)
            validate_instance(self.spec, value, self.resources)
            return value
        pydantic = _pydantic()
        _json_loads(text)  # syntax errors get the same message (and byte offset) everywhere
        try:
            return _adapter(tp).validate_json(text)
        except pydantic.ValidationError as e:
            raise _pydantic_failure(e, text) from e


def _is_compiled(obj: Any) -> bool:
    from .compiler import CompiledConstraint

    return isinstance(obj, CompiledConstraint)


def _string_options(tp: Any) -> list[str] | None:
    """The choices of a ``Literal``/``Enum`` whose values are all strings, else None."""
    if typing.get_origin(tp) is typing.Literal:
        args = list(typing.get_args(tp))
        return args if args and all(isinstance(a, str) for a in args) else None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        return values if values and all(isinstance(v, str) for v in values) else None
    return None


def output_spec(output_type: Any) -> OutputSpec:
    """Map an output type (see the module docstring) to its :class:`OutputSpec`.

    >>> output_spec({"type": "object", "properties": {"n": {"type": "integer"}}}).kind
    'schema'
    >>> output_spec({"regex": "[a-z]+"}).parse("abc")
    'abc'
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Point:
    ...     x: int
    ...     y: int
    >>> output_spec(Point).parse('{"x": 1, "y": 2}')
    Point(x=1, y=2)
    """
    if isinstance(output_type, OutputSpec):
        return output_type
    if isinstance(output_type, Regex):
        return OutputSpec("regex", {"regex": output_type.pattern}, output_type)
    if isinstance(output_type, Choice):
        return OutputSpec("choice", {"choice": list(output_type.options)}, output_type)
    if isinstance(output_type, Mapping):
        keys = set(output_type)
        if keys == {"regex"}:
            return output_spec(Regex(output_type["regex"]))
        if keys == {"choice"}:
            return output_spec(Choice(output_type["choice"]))
        schema = dict(output_type)
        return OutputSpec("schema", schema, output_type, schema)
    if _is_compiled(output_type):
        return OutputSpec("constraint", output_type, output_type)
    options = _string_options(output_type)
    if options is not None:
        return OutputSpec("choice", {"choice": options}, output_type)
    try:
        schema = _adapter(output_type).json_schema()
    except MissingDependencyError:
        raise
    except Exception as e:  # pydantic raises several types for types it cannot map
        raise spec_error(f"cannot derive a JSON Schema from {output_type!r}: {e}") from e
    return OutputSpec("json", schema, output_type, schema)


def _generate(spec: Any, prompt: Any, **kwargs: Any) -> Any:
    """Indirection over :func:`constrain.generation.generate` (tests replace it)."""
    from .generation import generate

    return generate(spec, prompt, **kwargs)


def _generate_batch(specs: Any, prompts: Any, **kwargs: Any) -> Any:
    """Indirection over :func:`constrain.generation.generate_batch` (tests replace it)."""
    from .generation import generate_batch

    return generate_batch(specs, prompts, **kwargs)


@overload
def generate_as(output_type: type[T], prompt: str | list[dict[str, str]], *,
                model: Any = ..., tokenizer: Any = ...,
                schema_options: Mapping[str, Any] | None = ..., **gen_kwargs: Any) -> T: ...
@overload
def generate_as(output_type: Any, prompt: str | list[dict[str, str]], *,
                model: Any = ..., tokenizer: Any = ...,
                schema_options: Mapping[str, Any] | None = ..., **gen_kwargs: Any) -> Any: ...


def generate_as(output_type: Any, prompt: str | list[dict[str, str]], *, model: Any = None,
                tokenizer: Any = None, schema_options: Mapping[str, Any] | None = None,
                **gen_kwargs: Any) -> Any:
    """Generate a value of ``output_type`` for ``prompt`` and return it parsed and validated.

    ``prompt`` is a user message (or a list of chat messages); ``model``/``tokenizer``
    default to the embedded SmolLM2-135M-Instruct. Other keyword arguments go to
    :func:`constrain.generation.generate` (``max_new_tokens``, ``temperature``, ``top_p``,
    ``seed``, ...). JSON outputs are compiled with :func:`json_options` updated with
    ``schema_options`` (compact, in schema order, no unlisted keys). Raises
    :class:`~constrain.errors.ValidationFailure` when the output does not validate, e.g.
    when ``max_new_tokens`` ran out first.

    >>> from typing import Literal
    >>> generate_as(Literal["yes", "no"], "Is water wet?")  # doctest: +SKIP
    'yes'
    """
    spec = output_spec(output_type).with_options(schema_options)
    result = _generate(spec.spec, prompt, model=model, tokenizer=tokenizer,
                       **spec.generation_kwargs(schema_options), **gen_kwargs)
    return spec.parse(result.text, finished=result.finished)


def _render_template(template: str, arguments: Mapping[str, Any]) -> str:
    """``str.format`` with the arguments; pydantic models/dataclasses are shown as JSON."""
    shown: dict[str, Any] = {}
    for name, value in arguments.items():
        if hasattr(value, "model_dump_json"):
            shown[name] = value.model_dump_json()
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            shown[name] = json.dumps(dataclasses.asdict(value), default=str)
        else:
            shown[name] = value
    try:
        return template.format(**shown)
    except (KeyError, IndexError) as e:
        raise spec_error(f"prompt template refers to {e} which is not an argument") from e


class GenerativeFunction(Generic[T]):
    """A function whose result is generated (see :func:`generative`)."""

    def __init__(self, fn: Callable[..., Any], options: Mapping[str, Any]) -> None:
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except (NameError, TypeError):  # forward references that cannot be resolved yet
            hints = dict(getattr(fn, "__annotations__", {}))
        if "return" not in hints or hints["return"] is None:
            raise TypeError(f"@generative function {fn.__qualname__} needs a return annotation "
                            "(the output type)")
        self.fn = fn
        self.output_type: Any = hints["return"]
        self.template = inspect.cleandoc(fn.__doc__) if fn.__doc__ else None
        self.options = dict(options)
        self.signature = inspect.signature(fn)
        functools.update_wrapper(self, fn)

    def render(self, *args: Any, **kwargs: Any) -> str | list[dict[str, str]]:
        """The prompt a call with these arguments sends to the model.

        The function body may return the prompt (a string or chat messages); when it
        returns ``None`` the docstring is the template, formatted with the arguments.
        """
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        body = self.fn(*bound.args, **bound.kwargs)
        if body is not None:
            return typing.cast("str | list[dict[str, str]]", body)
        if self.template is None:
            raise TypeError(f"{self.fn.__qualname__} has no docstring and returned no prompt")
        return _render_template(self.template, bound.arguments)

    def __call__(self, *args: Any, **kwargs: Any) -> T:
        return typing.cast(T, generate_as(self.output_type, self.render(*args, **kwargs),
                                          **self.options))

    def __repr__(self) -> str:
        return f"<generative {self.fn.__qualname__} -> {self.output_type!r}>"


@overload
def generative(fn: Callable[..., T], /) -> GenerativeFunction[T]: ...
@overload
def generative(*, model: Any = ..., tokenizer: Any = ...,
               **gen_kwargs: Any) -> Callable[[Callable[..., T]], GenerativeFunction[T]]: ...


def generative(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Decorator: the docstring is the prompt template, the return annotation the output type.

    Calling the decorated function formats the docstring with the arguments
    (``str.format``; write ``{{``/``}}`` for literal braces), generates with
    :func:`generate_as` and returns the validated value. Options (``model``, ``tokenizer``,
    ``max_new_tokens``, ``temperature``, ...) go in the decorator's parentheses.

    >>> from typing import Literal
    >>> @generative(max_new_tokens=8)
    ... def sentiment(review: str) -> Literal["positive", "negative"]:
    ...     '''Is this review positive or negative? Review: {review}'''
    >>> sentiment.render("Great phone.")
    'Is this review positive or negative? Review: Great phone.'
    >>> sentiment("Great phone.")  # doctest: +SKIP
    'positive'
    """
    if fn is not None:
        if not callable(fn):
            raise TypeError("use @generative or @generative(option=...), not @generative(value)")
        return GenerativeFunction(fn, options)
    return lambda f: GenerativeFunction(f, options)
