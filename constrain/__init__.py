"""constrain: structured output for language models.

Compile a JSON Schema, a regular expression, a choice set or a grammar for a tokenizer's
vocabulary, then let a :class:`Matcher` mask the logits at every decoding step.

>>> import constrain
>>> vocab = constrain.Vocabulary.from_token_bytes([b"yes", b"no", None], eos_token_ids=[2])
>>> m = constrain.compile_choice(["yes", "no"], vocab).matcher()
>>> m.allowed_token_ids().tolist(), m.advance(1), m.is_accepting()
([0, 1], True, True)
"""

from .api import Choice, Regex, generate_as, generative, output_spec
from .automaton import AutomatonOptions
from .cache import set_cache_dir
from .compiler import (
    CompiledConstraint,
    compile_choice,
    compile_grammar,
    compile_json_schema,
    compile_regex,
)
from .errors import (
    ConstrainError,
    GrammarError,
    RegexSyntaxError,
    ResourceLimitError,
    SchemaError,
    TokenizerError,
    UnsupportedRegexError,
    UnsupportedSchemaError,
    ValidationFailure,
)
from .grammar import Grammar
from .matcher import Matcher
from .tools import Tool, Toolbox, ToolCall, tool
from .vocab import Vocabulary

__version__ = "0.1.0"

__all__ = [
    "AutomatonOptions",
    "Choice",
    "CompiledConstraint",
    "ConstrainError",
    "Grammar",
    "GrammarError",
    "Matcher",
    "Regex",
    "RegexSyntaxError",
    "ResourceLimitError",
    "SchemaError",
    "TokenizerError",
    "Tool",
    "ToolCall",
    "Toolbox",
    "UnsupportedRegexError",
    "UnsupportedSchemaError",
    "ValidationFailure",
    "Vocabulary",
    "compile_choice",
    "compile_grammar",
    "compile_json_schema",
    "compile_regex",
    "generate_as",
    "generative",
    "output_spec",
    "set_cache_dir",
    "tool",
]
