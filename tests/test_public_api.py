"""The public surface of ``constrain``: what importing it loads, what it exports, and that
malformed or unsupported input fails fast with a typed error."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

import constrain
from constrain import (
    ConstrainError,
    GrammarError,
    RegexSyntaxError,
    ResourceLimitError,
    UnsupportedRegexError,
    Vocabulary,
    compile_choice,
    compile_grammar,
    compile_regex,
)
from constrain.grammar import Grammar, alt, complement, intersect, literal, ref, seq, star

HEAVY = ("torch", "transformers", "vllm", "sglang")

PUBLIC_API = [
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


def test_import_loads_no_heavy_runtime() -> None:
    code = (
        "import json, sys, constrain\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_compiling_and_masking_loads_no_heavy_runtime() -> None:
    """The core path (compile, mask, advance with numpy) must not pull torch in either."""
    code = (
        "import json, sys, numpy as np, constrain\n"
        "v = constrain.Vocabulary.from_token_bytes([b'a', b'b', None], eos_token_ids=[2])\n"
        "m = constrain.compile_regex('a+b', v).matcher()\n"
        "bm = np.zeros((1, 1), dtype=np.int32); m.fill_bitmask(bm, 0); m.advance(0)\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_all_is_pinned() -> None:
    assert list(constrain.__all__) == PUBLIC_API
    assert len(set(constrain.__all__)) == len(constrain.__all__)


@pytest.mark.parametrize("name", PUBLIC_API)
def test_each_public_name_is_importable(name: str) -> None:
    module = __import__("constrain", fromlist=[name])  # what `from constrain import name` does
    assert getattr(module, name) is getattr(constrain, name)
    assert getattr(module, name) is not None


def test_version_is_a_string() -> None:
    assert isinstance(constrain.__version__, str) and constrain.__version__.count(".") >= 1


# ------------------------------------------------------------- typed errors, fast


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None],
                                       eos_token_ids=[256])


_LEFT = Grammar({"s": alt(seq(ref("s"), literal("a")), literal("b"))}, start="s")
_A_STAR = star(literal("a"))

BAD_INPUTS: dict[str, tuple[Callable[[Vocabulary], Any], type[ConstrainError]]] = {
    "regex-unterminated-group": (lambda v: compile_regex("(ab", v), RegexSyntaxError),
    "regex-bad-range": (lambda v: compile_regex("[z-a]", v), RegexSyntaxError),
    "regex-reversed-bounds": (lambda v: compile_regex("a{3,1}", v), RegexSyntaxError),
    "regex-nothing-to-repeat": (lambda v: compile_regex("*a", v), RegexSyntaxError),
    "regex-bad-escape": (lambda v: compile_regex(r"\p{L}", v), RegexSyntaxError),
    "regex-backreference": (lambda v: compile_regex(r"(a)\1", v), UnsupportedRegexError),
    "regex-named-backreference": (lambda v: compile_regex(r"(?P<x>a)(?P=x)", v),
                                  UnsupportedRegexError),
    "regex-lookbehind-in-open-repeat": (lambda v: compile_regex("(?:(?<!a).)*b", v),
                                        UnsupportedRegexError),
    "regex-long-lookbehind": (lambda v: compile_regex("(?<=ab)c", v), UnsupportedRegexError),
    "regex-lookbehind-at-start": (lambda v: compile_regex("(?<=a)b", v), GrammarError),
    "regex-repeat-too-large": (lambda v: compile_regex("a{100001}", v), ResourceLimitError),
    "regex-empty-language": (lambda v: compile_regex(r"[^\x00-\U0010ffff]", v), GrammarError),
    "choice-empty": (lambda v: compile_choice([], v), GrammarError),
    "choice-a-string": (lambda v: compile_choice("yes", v), GrammarError),
    "choice-not-text": (lambda v: compile_choice(["a", 1], v), GrammarError),  # type: ignore
    "grammar-left-recursion": (lambda v: compile_grammar(_LEFT, v), GrammarError),
    "grammar-empty-language": (
        lambda v: compile_grammar(Grammar.single(intersect(_A_STAR, complement(_A_STAR))), v),
        GrammarError,
    ),
    "grammar-ref-in-not": (
        lambda v: compile_grammar(Grammar({"s": complement(ref("t")), "t": literal("a")},
                                          start="s"), v),
        GrammarError,
    ),
}


@pytest.mark.parametrize("make, error", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_raises_typed_error_fast(make: Callable[[Vocabulary], Any],
                                           error: type[ConstrainError],
                                           vocab: Vocabulary) -> None:
    start = time.perf_counter()
    with pytest.raises(error) as info:
        make(vocab)
    assert time.perf_counter() - start < 1.0
    assert isinstance(info.value, ConstrainError)
    assert str(info.value)


@pytest.mark.parametrize(
    "pattern, position",
    [("(ab", 0), ("ab[z-a]", 3), (r"xy(a)\1", 5), ("ab(?:(?<=c).)+d", 13)],
    ids=["group", "range", "backreference", "lookahead"],
)
def test_regex_errors_carry_position(pattern: str, position: int, vocab: Vocabulary) -> None:
    with pytest.raises((RegexSyntaxError, UnsupportedRegexError)) as info:
        compile_regex(pattern, vocab)
    assert info.value.position == position  # type: ignore[union-attr]
    assert info.value.pattern == pattern  # type: ignore[union-attr]


def test_huge_but_lazy_constraints_compile_fast(vocab: Vocabulary) -> None:
    """Valid, enormous languages are built lazily: compiling is instant."""
    compile_regex("warm-up", vocab).matcher().allowed_token_ids()  # JIT load, if any
    start = time.perf_counter()
    for pattern in (r"(a|b)*a(a|b){20}", r"[0-9]{1,1000}", r"(x{1000}){100}",
                    r"[\u0100-\U0010ffff]{50,60000}"):
        m = compile_regex(pattern, vocab).matcher()
        assert len(m.allowed_token_ids())
    assert time.perf_counter() - start < 5.0
