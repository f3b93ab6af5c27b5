"""SGLang integration: ``constrain`` as a grammar backend (``--grammar-backend constrain``).

SGLang keeps a registry of grammar backends (``register_grammar_backend``); this module
provides one, :class:`ConstrainGrammarBackend`, whose grammar objects
(:class:`ConstrainGrammar`) implement SGLang's ``BaseGrammarObject``. Masks use the
packed int32 layout SGLang batches for xgrammar (token ``t`` is bit ``t % 32`` of word
``t // 32``, ``-1`` = all allowed), so SGLang's own bitmask kernels apply them.

Start a server with it::

    python -m constrain.integrations.sglang_launch --model-path MODEL --grammar-backend constrain

(or plain ``sglang serve ... --grammar-backend constrain``: installing ``constrain``
registers :func:`register` as an SGLang plugin, which SGLang runs in every process).
Requests then use SGLang's usual fields: ``json_schema``, ``regex``; ``ebnf`` is refused
with a clear error until grammar files arrive in a later release. Supported SGLang:
:data:`SGLANG_SUPPORTED`, checked on import.
"""

from __future__ import annotations

import logging
from typing import Any

from constrain.compiler import CompiledConstraint
from constrain.errors import ConstrainError, MissingDependencyError
from constrain.matcher import Matcher

from ._shared import Spec, compile_spec, parse_spec, require_version

#: The SGLang releases whose grammar-backend interface this module implements, ``[low, high)``.
SGLANG_SUPPORTED = ("0.5.23", "0.6")
SGLANG_VERSION = require_version(["sglang"], *SGLANG_SUPPORTED, extra="sglang")

try:
    import torch
    from sglang.srt.constrained.base_grammar_backend import (
        BaseGrammarBackend,
        BaseGrammarObject,
        GrammarStats,
        InvalidGrammarObject,
        register_grammar_backend,
    )
except ImportError as e:  # pragma: no cover - a broken install of a supported version
    raise MissingDependencyError(f"sglang (import failed: {e})", "sglang") from e

# After the version check: a clear message beats an import error from inside the runtime.
from .hf import apply_token_bitmask, hf_vocabulary

__all__ = [
    "BACKEND_NAME",
    "SGLANG_SUPPORTED",
    "ConstrainGrammar",
    "ConstrainGrammarBackend",
    "register",
]

logger = logging.getLogger("constrain.integrations.sglang")

#: The ``--grammar-backend`` name.
BACKEND_NAME = "constrain"


def _pin_memory() -> bool:
    try:
        from sglang.srt.utils.common import is_pin_memory_available

        return bool(is_pin_memory_available())
    except ImportError:  # pragma: no cover - moved in another release
        return torch.cuda.is_available()


def _sglang_kernel() -> Any:
    """SGLang's Triton bitmask kernel (the one its xgrammar backend uses), if present."""
    try:
        from sglang.kernels.ops.grammar.bitmask_ops import apply_token_bitmask_inplace_triton

        return apply_token_bitmask_inplace_triton
    except (ImportError, AttributeError, RuntimeError):  # no Triton, or another layout: use torch
        return None


def _utf8_prefix(data: bytes) -> str:
    # Forced bytes may stop inside a multi-byte character: keep the complete ones.
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            return data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return ""


class ConstrainGrammar(BaseGrammarObject):  # type: ignore[misc]
    """One request's grammar state: a :class:`~constrain.Matcher` behind SGLang's interface."""

    def __init__(self, compiled: CompiledConstraint, key_string: str,
                 matcher: Matcher | None = None, grammar_stats: Any = None) -> None:
        super().__init__()
        self.compiled = compiled
        self.matcher = matcher if matcher is not None else compiled.matcher()
        self.key_string = key_string
        self.grammar_stats = grammar_stats

    def accept_token(self, token: int) -> None:
        """Advance over ``token``; SGLang aborts the request on the ``ValueError`` raised
        for a token the constraint does not allow."""
        if self.matcher.is_terminated():
            return
        self.current_token = token
        if not self.matcher.advance(int(token)):
            raise ValueError(f"token {token} is not allowed by constrain grammar "
                             f"{self.key_string[:80]!r}")

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any) -> torch.Tensor:
        """``[batch_size, ceil(vocab_size / 32)]`` int32 on the host, all bits set: rows
        SGLang does not fill (unconstrained requests) stay unconstrained."""
        return torch.full((batch_size, (vocab_size + 31) // 32), -1, dtype=torch.int32,
                          pin_memory=_pin_memory())

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        self.matcher.fill_bitmask(vocab_mask, idx)

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device: Any) -> torch.Tensor:
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        """Mask ``logits`` in place: SGLang's Triton kernel on GPUs, torch elsewhere."""
        kernel = _sglang_kernel() if logits.device.type in ("cuda", "xpu", "musa") else None
        if kernel is not None:
            kernel(logits, vocab_mask)
        else:
            apply_token_bitmask(logits, vocab_mask, inplace=True)

    def copy(self) -> ConstrainGrammar:
        """A fresh grammar at the start (SGLang copies cached grammars for new requests)."""
        return ConstrainGrammar(self.compiled, self.key_string, grammar_stats=self.grammar_stats)

    def try_jump_forward(self, tokenizer: Any) -> tuple[list[int], str] | None:
        """The text every valid continuation starts with, if any."""
        text = _utf8_prefix(self.matcher.forced_bytes())
        return ([], text) if text else None

    def jump_forward_str_state(self, helper: tuple[list[int], str]) -> tuple[str, int]:
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: list[int], new_output_ids: list[int],
                            next_state: int) -> None:
        """Follow SGLang's re-tokenization of the output after a jump: roll back to the
        common prefix, then advance over the new ids."""
        k = 0
        for old, new in zip(old_output_ids, new_output_ids):
            if old != new:
                break
            k += 1
        if k < len(old_output_ids):
            self.matcher.rollback(len(old_output_ids) - k)
        for token in new_output_ids[k:]:
            if not self.matcher.advance(int(token)):
                raise ValueError(f"token {token} not accepted after jump-forward re-tokenization")

    def __repr__(self) -> str:
        return f"ConstrainGrammar({self.key_string[:60]!r}, {self.matcher!r})"


class ConstrainGrammarBackend(BaseGrammarBackend):  # type: ignore[misc]
    """Compiles SGLang's ``(key_type, key_string)`` requests with constrain's shared cache."""

    def __init__(self, tokenizer: Any, vocab_size: int, eos_token_ids: Any = None) -> None:
        super().__init__()
        self.vocab = hf_vocabulary(tokenizer, size=vocab_size, eos_token_ids=eos_token_ids)

    def _compile(self, key_type: str, key_string: str, spec: Any) -> BaseGrammarObject:
        try:
            compiled = compile_spec(parse_spec(spec), self.vocab)
        except (ConstrainError, ValueError) as e:
            logger.warning("constrain: cannot compile %s %r: %s", key_type, key_string[:200], e)
            return InvalidGrammarObject(f"{type(e).__name__}: {e}")
        return ConstrainGrammar(compiled, key_string,
                                grammar_stats=GrammarStats(dispatch_type=key_type))

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        if key_string == "$$ANY$$":  # response_format json_object: any JSON value
            return self._compile("json", key_string, Spec("json", {}))
        return self._compile("json", key_string, {"json": key_string})

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._compile("regex", key_string, {"regex": key_string})

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        return self._compile("ebnf", key_string, {"grammar": key_string})


def _make_backend(server_args: Any, tokenizer: Any, vocab_size: int,
                  eos_token_ids: Any = None) -> ConstrainGrammarBackend:
    return ConstrainGrammarBackend(tokenizer, vocab_size, eos_token_ids)


def register() -> None:
    """Register the ``constrain`` grammar backend with SGLang and add it to the
    ``--grammar-backend`` choices; idempotent. Runs as an SGLang plugin in every process."""
    register_grammar_backend(BACKEND_NAME, _make_backend)
    try:
        from sglang.srt.server_args import GRAMMAR_BACKEND_CHOICES, add_grammar_backend_choices
    except ImportError:  # releases without the helper accept any registered name
        return
    if BACKEND_NAME not in GRAMMAR_BACKEND_CHOICES:
        add_grammar_backend_choices([BACKEND_NAME])
