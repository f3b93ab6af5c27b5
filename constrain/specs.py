"""What callers may pass where a constraint is expected, and how each becomes one.

Generation helpers and runtime adapters accept a *spec*, not only a compiled constraint, so
that application code can hand over whatever it has:

- a :class:`~constrain.CompiledConstraint` (used as is; it must be for the same tokenizer),
- a JSON Schema (a ``dict``, or ``True``/``False``),
- a Pydantic model class (its ``model_json_schema()``),
- ``{"regex": pattern}``, ``{"choice": [str, ...]}`` or ``{"json": schema}`` (exactly that
  one key; the names of vLLM's structured-output fields).

No runtime is imported here; this is the one place that maps specs to compile calls.

>>> from constrain import Vocabulary
>>> vocab = Vocabulary.from_token_bytes([b"yes", b"no", None], eos_token_ids=[2])
>>> compile_spec({"choice": ["yes", "no"]}, vocab).matcher().allowed_token_ids().tolist()
[0, 1]
>>> compile_spec({"regex": "no"}, vocab).kind
'regex'
"""

from __future__ import annotations

from typing import Any

from .compiler import CompiledConstraint, compile_choice, compile_json_schema, compile_regex
from .errors import TokenizerError
from .vocab import Vocabulary

__all__ = ["compile_spec", "is_spec_list"]


def _is_pydantic_model(spec: Any) -> bool:
    return isinstance(spec, type) and callable(getattr(spec, "model_json_schema", None))


GENERATION_SCHEMA_DEFAULTS: dict[str, Any] = {
    "escapes": "required",
    "whitespace_pattern": "[ ]?",
    "strict_additional_properties": True,
}


def compile_spec(spec: Any, vocab: Vocabulary, **schema_options: Any) -> CompiledConstraint:
    """Compile one spec (see the module docstring) for ``vocab``.

    ``schema_options`` go to :func:`~constrain.compile_json_schema` for schema specs. For
    generation, :data:`GENERATION_SCHEMA_DEFAULTS` apply unless overridden: only the escapes
    JSON requires (with every escape allowed, small models start spelling plain characters as
    ``\\u006c``), at most one space per gap, as ``json.dumps`` writes (with free
    whitespace they spend their token budget on newlines), and no keys the schema does not
    mention unless it sets ``additionalProperties`` (as xgrammar's strict mode: Pydantic
    schemas leave it out, and models then invent keys).

    >>> from constrain import Vocabulary
    >>> vocab = Vocabulary.from_token_bytes([b"1", b"2", None], eos_token_ids=[2])
    >>> m = compile_spec({"regex": "[12]+"}, vocab).matcher()
    >>> m.advance(0), m.advance(1), m.is_accepting()
    (True, True, True)
    """
    schema_options = {**GENERATION_SCHEMA_DEFAULTS, **schema_options}
    if isinstance(spec, CompiledConstraint):
        if spec.vocab.tokenizer_size != vocab.tokenizer_size:
            raise TokenizerError(
                f"the compiled constraint is for a vocabulary of {spec.vocab.tokenizer_size} "
                f"ids, but this tokenizer has {vocab.tokenizer_size}: compile it for this "
                "tokenizer's Vocabulary"
            )
        return spec
    if isinstance(spec, dict) and len(spec) == 1 and {"regex", "choice", "json"} & spec.keys():
        if "json" in spec:
            schema = spec["json"]
            if _is_pydantic_model(schema):
                schema = schema.model_json_schema()
            return compile_json_schema(schema, vocab, **schema_options)
        if "regex" in spec:
            pattern = spec["regex"]
            if not isinstance(pattern, str):
                raise TypeError(f'{{"regex": ...}} needs a pattern string, got {pattern!r}')
            return compile_regex(pattern, vocab)
        return compile_choice(spec["choice"], vocab)
    if isinstance(spec, (dict, bool)):
        return compile_json_schema(spec, vocab, **schema_options)
    if _is_pydantic_model(spec):
        return compile_json_schema(spec.model_json_schema(), vocab, **schema_options)
    hint = ' (for a regex pass {"regex": text})' if isinstance(spec, str) else ""
    raise TypeError(
        "a spec is a CompiledConstraint, a JSON Schema dict, a Pydantic model class, "
        f'{{"regex": ...}}, {{"choice": [...]}} or {{"json": ...}}; got {type(spec).__name__}{hint}'
    )


def is_spec_list(spec: Any) -> bool:
    """Whether ``spec`` is a list of specs (one per prompt) rather than one spec.

    >>> is_spec_list([{"regex": "a"}, {"type": "integer"}]), is_spec_list({"type": "array"})
    (True, False)
    """
    return isinstance(spec, (list, tuple))
