"""Tools: typed Python functions a model can call, with constrained arguments.

:func:`tool` turns a typed function into a :class:`Tool`: its name, a description from the
docstring, the JSON Schema of its arguments (from the signature, via Pydantic), a
constraint for a call, and :meth:`Tool.invoke`, which validates arguments before calling.
A :class:`Toolbox` compiles a set of tools into ONE constraint, "pick a tool and its
arguments": ``{"tool": <name>, "arguments": {...}}``, an ``anyOf`` whose branches are told
apart by the ``tool`` constant, so the model commits to a tool before its arguments.

>>> @tool
... def add(a: int, b: int = 0) -> int:
...     '''Add two integers.'''
...     return a + b
>>> add.name, add.description, add.parameters["required"]
('add', 'Add two integers.', ['a'])
>>> add.invoke('{"a": 2, "b": 3}'), add(1, 1)
(5, 2)
>>> Toolbox([add]).call('{"tool": "add", "arguments": {"a": 40, "b": 2}}')
42
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import re
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from . import api
from .api import _json_loads, _pydantic, _pydantic_failure, output_spec
from .errors import SchemaError, ValidationFailure

__all__ = ["Tool", "ToolCall", "Toolbox", "tool"]

_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SECTIONS = ("args:", "arguments:", "parameters:", "params:")


def _split_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {param: description}) from a Google-style docstring.

    >>> _split_docstring('''Find a user.
    ...
    ...     Args:
    ...         name (str): Full name.
    ...         exact: Whether to match exactly.
    ...     ''')
    ('Find a user.', {'name': 'Full name.', 'exact': 'Whether to match exactly.'})
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in lines:
        stripped = line.strip()
        if stripped.lower() in _SECTIONS:
            in_args = True
            continue
        if in_args:
            if stripped and not line.startswith((" ", "\t")):
                in_args = False  # the next section ("Returns:", ...) starts unindented
            elif (m := _ARG_LINE.match(line)) is not None:
                current = m.group(1).lstrip("*")
                params[current] = m.group(2).strip()
                continue
            elif current is not None and stripped:
                params[current] = f"{params[current]} {stripped}".strip()
                continue
        if not in_args and not params:
            description.append(line)
    text = "\n".join(description).strip()
    return text.split("\n\n")[0].replace("\n", " ").strip(), params


def _arguments_model(fn: Callable[..., Any], name: str, param_docs: Mapping[str, str]) -> Any:
    pydantic = _pydantic()
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as e:
        raise TypeError(f"cannot resolve the annotations of {fn.__qualname__}: {e}") from e
    fields: dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args/**kwargs cannot be described by a JSON Schema")
        if p.kind is p.POSITIONAL_ONLY:
            raise TypeError(f"tool {name}: positional-only parameter {p.name} has no JSON name")
        annotation = hints.get(p.name, Any)
        default = ... if p.default is p.empty else p.default
        fields[p.name] = (annotation, pydantic.Field(default, description=param_docs.get(p.name)))
    return pydantic.create_model(
        f"{name}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )


def _without_titles(schema: Any) -> Any:
    """A copy without Pydantic's ``title`` annotations (noise in prompts)."""
    if isinstance(schema, dict):
        return {k: _without_titles(v) for k, v in schema.items()
                if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_without_titles(v) for v in schema]
    return schema


class Tool:
    """A typed function with the JSON Schema of its arguments (see :func:`tool`).

    Calling the tool calls the function unchanged; :meth:`invoke` validates first.
    """

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None,
                 description: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"a tool wraps a function, got {fn!r}")
        self.function = fn
        self.name: str = name or fn.__name__
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}", self.name):
            raise SchemaError(f"tool name {self.name!r} must be an identifier (max 64 chars)")
        doc_description, param_docs = _split_docstring(fn.__doc__)
        self.description: str = description if description is not None else doc_description
        self.arguments_model: Any = _arguments_model(fn, self.name, param_docs)
        self.parameters: dict[str, Any] = self.arguments_model.model_json_schema()
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def validate(self, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """Arguments (a dict or JSON text) checked and converted to the annotated types.

        >>> @tool
        ... def square(x: int) -> int:
        ...     return x * x
        >>> square.validate({"x": "three"})
        Traceback (most recent call last):
        ...
        constrain.errors.ValidationFailure: tool square: at $.x: Input should be a valid integer, unable to parse string as an integer (output: '{"x": "three"}')
        """
        pydantic = _pydantic()
        data = _json_loads(arguments) if isinstance(arguments, str) else arguments
        if not isinstance(data, Mapping):
            raise ValidationFailure(f"tool {self.name}: arguments must be a JSON object, "
                                    f"got {type(data).__name__}")
        try:
            model = self.arguments_model.model_validate(dict(data))
        except pydantic.ValidationError as e:
            failure = _pydantic_failure(e, json.dumps(data, default=str))
            raise ValidationFailure(f"tool {self.name}: {failure}", path=failure.path) from e
        # Attribute access keeps nested models as models (model_dump would flatten them).
        return {field: getattr(model, field) for field in type(model).model_fields}

    def invoke(self, arguments: Mapping[str, Any] | str) -> Any:
        """Validate ``arguments`` (dict or JSON text), then call the function with them.

        >>> @tool
        ... def greet(name: str, times: int = 1) -> str:
        ...     return " ".join(["hi " + name] * times)
        >>> greet.invoke({"name": "Ada", "times": "2"})  # "2" is converted, as Pydantic does
        'hi Ada hi Ada'
        """
        return self.function(**self.validate(arguments))

    def constraint(self, vocab: Any, **schema_options: Any) -> Any:
        """A compiled constraint for this tool's arguments object (JSON) on ``vocab``
        (options: :func:`constrain.api.json_options`)."""
        return output_spec(self.parameters).compile(vocab, **schema_options)

    def call_schema(self) -> dict[str, Any]:
        """The schema of one call, ``{"tool": <name>, "arguments": {...}}`` (``$defs`` kept
        at the root of the arguments; :class:`Toolbox` hoists them).

        >>> @tool
        ... def ping() -> str:
        ...     return "pong"
        >>> ping.call_schema()["properties"]["tool"]
        {'const': 'ping'}
        """
        params = {k: v for k, v in self.parameters.items() if k != "$defs"}
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"tool": {"const": self.name}, "arguments": params},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        if "$defs" in self.parameters:
            schema["$defs"] = self.parameters["$defs"]
        return schema

    def to_openai(self) -> dict[str, Any]:
        """The tool in the OpenAI/Hugging Face chat-template ``tools=`` format.

        >>> @tool
        ... def ping(host: str) -> bool:
        ...     return True
        >>> ping.to_openai()["function"]["parameters"]["properties"]
        {'host': {'type': 'string'}}
        """
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": _without_titles(self.parameters)}}

    def __repr__(self) -> str:
        return f"<Tool {self.name}{inspect.signature(self.function)}>"


@typing.overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@typing.overload
def tool(*, name: str | None = ..., description: str | None = ...) -> Callable[
    [Callable[..., Any]], Tool]: ...


def tool(fn: Callable[..., Any] | None = None, /, *, name: str | None = None,
         description: str | None = None) -> Any:
    """Decorator: make a typed function a :class:`Tool` (``@tool`` or ``@tool(name=...)``).

    The description is the docstring's first paragraph; Google-style ``Args:`` lines
    become the parameters' descriptions.

    >>> @tool(name="lookup")
    ... def find_user(email: str) -> dict:
    ...     '''Find a user by e-mail.'''
    ...     return {"email": email}
    >>> find_user.name, find_user.parameters["properties"]["email"]["type"]
    ('lookup', 'string')
    """
    if fn is not None:
        return Tool(fn, name=name, description=description)
    return lambda f: Tool(f, name=name, description=description)


@dataclasses.dataclass
class ToolCall:
    """A validated call: the tool's ``name``, its converted ``arguments``, the model's
    ``raw`` text, and ``result`` once invoked (``invoked`` tells a ``None`` result apart)."""

    name: str
    arguments: dict[str, Any]
    raw: str = ""
    result: Any = None
    invoked: bool = False


def _rename_refs(node: Any, names: Mapping[str, str]) -> Any:
    if isinstance(node, dict):
        out = {k: _rename_refs(v, names) for k, v in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = ref[len("#/$defs/"):]
            head, sep, rest = target.partition("/")
            if head in names:
                out["$ref"] = f"#/$defs/{names[head]}{sep}{rest}"
        return out
    if isinstance(node, list):
        return [_rename_refs(v, names) for v in node]
    return node


class Toolbox:
    """A set of tools compiled to one "pick a tool and its arguments" constraint.

    >>> @tool
    ... def stop() -> str:
    ...     '''Stop the robot.'''
    ...     return "stopped"
    >>> @tool
    ... def move(meters: float) -> str:
    ...     '''Move forward.'''
    ...     return f"moved {meters} m"
    >>> box = Toolbox([stop, move])
    >>> [b["properties"]["tool"]["const"] for b in box.schema["anyOf"]]
    ['stop', 'move']
    >>> call = box.parse('{"tool": "move", "arguments": {"meters": 2}}')
    >>> call.name, call.arguments
    ('move', {'meters': 2.0})
    """

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]]) -> None:
        self.tools: dict[str, Tool] = {}
        for t in tools:
            t = t if isinstance(t, Tool) else Tool(t)
            if t.name in self.tools:
                raise SchemaError(f"two tools are named {t.name!r}")
            self.tools[t.name] = t
        if not self.tools:
            raise SchemaError("a Toolbox needs at least one tool")
        self.schema: dict[str, Any] = self._build_schema()

    def _build_schema(self) -> dict[str, Any]:
        branches: list[dict[str, Any]] = []
        defs: dict[str, Any] = {}
        for t in self.tools.values():
            branch = t.call_schema()
            local = branch.pop("$defs", {})
            # Each tool's $defs come from its own Pydantic model: names may collide
            # ("Address" in two tools), so they are namespaced by tool.
            names = {d: f"{t.name}__{d}" for d in local}
            branch = _rename_refs(branch, names)
            for d, sub in local.items():
                defs[names[d]] = _rename_refs(sub, names)
            branches.append(branch)
        schema: dict[str, Any] = branches[0] if len(branches) == 1 else {"anyOf": branches}
        if defs:
            schema = {**schema, "$defs": defs}
        return schema

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools.values())

    def __len__(self) -> int:
        return len(self.tools)

    def __getitem__(self, name: str) -> Tool:
        return self.tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def constraint(self, vocab: Any, **schema_options: Any) -> Any:
        """The compiled "pick a tool and its arguments" constraint for ``vocab`` (options:
        :func:`constrain.api.json_options`)."""
        return output_spec(self.schema).compile(vocab, **schema_options)

    def parse(self, model_output: str | Mapping[str, Any]) -> ToolCall:
        """The validated :class:`ToolCall` in ``model_output`` (JSON text or a dict)."""
        raw = model_output if isinstance(model_output, str) else json.dumps(model_output)
        data = _json_loads(model_output) if isinstance(model_output, str) else model_output
        if not isinstance(data, Mapping) or set(data) != {"tool", "arguments"}:
            raise ValidationFailure(
                f'a tool call is {{"tool": ..., "arguments": {{...}}}}, got {raw!r}')
        name = data["tool"]
        if name not in self.tools:
            raise ValidationFailure(f"unknown tool {name!r}; tools: {sorted(self.tools)}",
                                    path="$.tool")
        return ToolCall(name, self.tools[name].validate(data["arguments"]), raw)

    def call(self, model_output: str | Mapping[str, Any]) -> Any:
        """Parse ``model_output``, then call the chosen tool; returns its result."""
        call = self.parse(model_output)
        return self.tools[call.name].function(**call.arguments)

    def system_prompt(self) -> str:
        """Instructions listing the tools, for the system message of :meth:`choose`.

        >>> def now() -> str:
        ...     return "12:00"
        >>> print(Toolbox([Tool(now, description="The time.")]).system_prompt().splitlines()[-1])
        - now: The time. Arguments: {}
        """
        lines = [("You can call exactly one of these tools. Reply with a JSON object "
                  '{"tool": <tool name>, "arguments": {<arguments>}}.'), "", "Tools:"]
        for t in self:
            args = json.dumps(_without_titles(t.parameters).get("properties", {}))
            lines.append(f"- {t.name}: {t.description or '(no description)'} "
                         f"Arguments: {args}")
        return "\n".join(lines)

    def messages(self, prompt: str | list[dict[str, str]]) -> list[dict[str, str]]:
        """``prompt`` as chat messages with the tool list as (or prepended to) the system one.

        >>> def now() -> str:
        ...     return "12:00"
        >>> [m["role"] for m in Toolbox([now]).messages("What time is it?")]
        ['system', 'user']
        """
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [
            dict(m) for m in prompt]
        if messages and messages[0].get("role") == "system":
            messages[0]["content"] = f"{self.system_prompt()}\n\n{messages[0]['content']}"
            return messages
        return [{"role": "system", "content": self.system_prompt()}, *messages]

    def choose(self, prompt: str | list[dict[str, str]], *, model: Any = None,
               tokenizer: Any = None, invoke: bool = True,
               schema_options: Mapping[str, Any] | None = None, **gen_kwargs: Any) -> ToolCall:
        """Let the model pick a tool and its arguments for ``prompt``, then call it.

        The tool list is added to the system message (see :meth:`messages`). The call is
        compiled with :func:`constrain.api.json_options` updated with ``schema_options``;
        other keyword arguments go to :func:`constrain.generation.generate`. Returns the
        :class:`ToolCall` with its ``result`` (not invoked when ``invoke=False``).
        """
        result = api._generate(self.schema, self.messages(prompt), model=model,
                               tokenizer=tokenizer,
                               schema_options=api.json_options(schema_options), **gen_kwargs)
        if not result.finished:
            raise ValidationFailure("generation stopped before the tool call was complete "
                                    f"(raise max_new_tokens): {result.text!r}")
        call = self.parse(result.text)
        if invoke:
            call.result = self.tools[call.name].function(**call.arguments)
            call.invoked = True
        return call

    def __repr__(self) -> str:
        return f"<Toolbox {list(self.tools)}>"
