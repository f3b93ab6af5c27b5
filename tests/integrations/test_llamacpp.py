"""llama.cpp integration, end to end with the embedded SmolLM2 GGUF when llama-cpp-python
is installed (it builds from source: ``pip install 'constrain[llamacpp]'``)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from constrain.errors import MissingDependencyError


def test_missing_llama_cpp_names_the_extra() -> None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("llama-cpp-python is installed here")
    with pytest.raises(MissingDependencyError, match=r"constrain\[llamacpp\]"):
        import constrain.integrations.llamacpp  # noqa: F401


@pytest.fixture(scope="module")
def llama() -> Any:
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from constrain.assets import smollm2_gguf_path

    try:
        path = smollm2_gguf_path()
    except MissingDependencyError as e:
        pytest.skip(str(e))
    return llama_cpp.Llama(model_path=str(path), n_ctx=512, n_threads=1, verbose=False, seed=0)


def chat(prompt: str) -> str:
    return f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.model
@pytest.mark.parametrize("spec, check", [
    ({"regex": r"(19|20)\d\d-\d\d-\d\d"},
     lambda t: re.fullmatch(r"(19|20)\d\d-\d\d-\d\d", t) is not None),
    ({"choice": ["yes", "no"]}, lambda t: t in ("yes", "no")),
    ({"json": {"type": "object", "properties": {"age": {"type": "integer"}},
               "required": ["age"], "additionalProperties": False}},
     lambda t: isinstance(json.loads(t).get("age"), int)),
], ids=["regex", "choice", "json"])
def test_generation_follows_the_constraint(llama: Any, spec: Any, check: Any) -> None:
    from constrain.integrations.llamacpp import logits_processor
    from llama_cpp import LogitsProcessorList

    proc = logits_processor(spec, llama)
    out = llama.create_completion(chat("Answer the question: when and how old?"),
                                  max_tokens=64, temperature=0.0,
                                  logits_processor=LogitsProcessorList([proc]))
    text = out["choices"][0]["text"]
    assert check(text), text
    assert out["choices"][0]["finish_reason"] == "stop", text
    assert proc.matcher.is_accepting()


@pytest.mark.model
def test_vocabulary_matches_the_tokenizer(llama: Any, smollm2_vocab: Any) -> None:
    from constrain.integrations.llamacpp import llama_vocabulary

    ours = llama_vocabulary(llama)
    text_ids = [i for i in range(ours.size) if ours.token_bytes[i] is not None]
    same = sum(ours.token_bytes[i] == smollm2_vocab.token_bytes[i] for i in text_ids)
    assert same == len(text_ids) and 2 in ours.eos_token_ids
