"""llama.cpp integration: a ``llama-cpp-python`` logits processor, for machines without a GPU.

>>> from llama_cpp import Llama, LogitsProcessorList                   # doctest: +SKIP
>>> llm = Llama(model_path=str(smollm2_gguf_path()))                   # doctest: +SKIP
>>> proc = logits_processor({"json": schema}, llm)                     # doctest: +SKIP
>>> llm.create_completion(prompt, max_tokens=200,
...                       logits_processor=LogitsProcessorList([proc]))  # doctest: +SKIP

llama-cpp-python calls a logits processor with ``(input_ids, scores)``: every token so far
(prompt and generated, int32) and the next token's logits (float32, ``n_vocab`` wide). The
processor remembers the prompt length from its first call, follows the generated ids with
a matcher, and sets the logits of disallowed tokens to ``-inf`` in place. Use one processor
per generation (or :meth:`ConstrainLogitsProcessor.reset` it).

The vocabulary is read from the model itself (``Llama.detokenize`` of every id; control
tokens have no text), so neither torch nor transformers is needed. Specs are the same as
for vLLM (:mod:`constrain.integrations._shared`), or a compiled constraint. Supported
llama-cpp-python: :data:`LLAMACPP_SUPPORTED`, checked on import.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from constrain.compiler import CompiledConstraint
from constrain.vocab import Vocabulary

from ._shared import TrackedMatcher, compile_spec, parse_spec, require_version

#: The llama-cpp-python releases whose logits-processor interface this module implements.
LLAMACPP_SUPPORTED = ("0.3", "0.4")
LLAMACPP_VERSION = require_version(["llama-cpp-python", "llama_cpp_python"], *LLAMACPP_SUPPORTED,
                                   extra="llamacpp")

__all__ = [
    "LLAMACPP_SUPPORTED",
    "ConstrainLogitsProcessor",
    "llama_vocabulary",
    "logits_processor",
]

_lock = threading.Lock()
_vocabs: dict[int, tuple[Any, Vocabulary]] = {}


def llama_vocabulary(llama: Any) -> Vocabulary:
    """The vocabulary of a ``llama_cpp.Llama`` (memoized per model object): each id's bytes
    as llama.cpp detokenizes it without special tokens; EOS and end-of-turn ids end."""
    with _lock:
        hit = _vocabs.get(id(llama))
    if hit is not None and hit[0] is llama:
        return hit[1]
    n = int(llama.n_vocab())
    table: list[bytes | None] = [llama.detokenize([i], special=False) or None for i in range(n)]
    eos = {int(llama.token_eos())}
    eot = getattr(getattr(llama, "_model", None), "token_eot", None)
    if callable(eot):
        eos.add(int(eot()))
    eos = {t for t in eos if 0 <= t < n}
    for t in eos:
        table[t] = None
    vocab = Vocabulary.from_token_bytes(table, eos_token_ids=eos)
    with _lock:
        _vocabs[id(llama)] = (llama, vocab)
    return vocab


class ConstrainLogitsProcessor:
    """A ``llama_cpp.LogitsProcessor``: ``(input_ids, scores) -> scores``."""

    def __init__(self, compiled: CompiledConstraint) -> None:
        self.compiled = compiled
        self._prompt_len: int | None = None
        self._tracked = TrackedMatcher(compiled, "llama.cpp")
        self._bitmask = np.empty((1, compiled.mask_words), dtype=np.int32)

    def reset(self) -> None:
        """Forget the prompt and the generated tokens (to reuse the processor)."""
        self._prompt_len = None
        self._tracked = TrackedMatcher(self.compiled, "llama.cpp")

    @property
    def matcher(self) -> Any:
        """The matcher following this generation."""
        return self._tracked.matcher

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self._prompt_len is None:
            self._prompt_len = len(input_ids)
        self._tracked.sync(input_ids[self._prompt_len:])
        self._tracked.fill(self._bitmask, 0)
        bits = np.unpackbits(self._bitmask.view(np.uint8), bitorder="little")
        width = scores.shape[-1]
        allowed = bits[:width].astype(bool)
        if len(allowed) < width:
            allowed = np.concatenate([allowed, np.zeros(width - len(allowed), dtype=bool)])
        scores[~allowed] = -np.inf
        return scores


def logits_processor(spec: Any, llama: Any) -> ConstrainLogitsProcessor:
    """A processor enforcing ``spec`` (a spec dict/JSON text, or a CompiledConstraint) with
    ``llama``'s vocabulary; compiling goes through the shared cache."""
    if isinstance(spec, CompiledConstraint):
        return ConstrainLogitsProcessor(spec)
    return ConstrainLogitsProcessor(compile_spec(parse_spec(spec), llama_vocabulary(llama)))
