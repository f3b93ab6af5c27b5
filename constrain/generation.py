"""Constrained generation with a Hugging Face model: one call from a spec and a prompt to text.

:func:`generate` and :func:`generate_batch` run their own decoding loop over the model's KV
cache instead of ``model.generate()``, so that they can *fast-forward*: when the constraint
forces the next bytes (the fixed keys of a JSON object), their tokens are appended without
asking the model, and the model then reads all of them in the same call as the token it
chose (see :mod:`constrain.fast_forward`). ``GenerationResult.model_calls`` counts the calls.
Where the constraint can only end, the loop stops without a last call for EOS.

By default they use the embedded SmolLM2-135M-Instruct (``constrain.assets``), on CPU, and
the disk cache set by :func:`constrain.set_cache_dir` for its converted weights. Importing
this module imports neither torch nor transformers.

>>> from constrain.generation import generate
>>> r = generate({"choice": ["red", "green", "blue"]}, "Name a color.")  # doctest: +SKIP
>>> r.text, r.finished  # doctest: +SKIP
('blue', True)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import MissingDependencyError
from .fast_forward import forced_tokens
from .matcher import Matcher
from .specs import compile_spec, is_spec_list

__all__ = ["GenerationResult", "generate", "generate_batch"]

Prompt = str | list[dict[str, str]]


@dataclass(frozen=True)
class GenerationResult:
    """What one constrained generation produced.

    ``text`` decodes ``token_ids`` (the generated ids, EOS excluded); ``model_calls`` is how
    many forward passes this row used (the prompt's included); ``forced_tokens`` how many of
    ``token_ids`` were fast-forwarded rather than chosen by the model; ``seconds`` the time
    from the first forward pass until this row was done; ``finished`` whether the constraint
    accepted the text and EOS ended it, or nothing but EOS could follow when the budget ran
    out (``False``: ``max_new_tokens`` ran out while the text was incomplete or could go on).

    >>> r = GenerationResult("ok", [1, 2], model_calls=2, forced_tokens=0, seconds=0.5,
    ...                      finished=True)
    >>> r.tokens_per_second
    4.0
    """

    text: str
    token_ids: list[int]
    model_calls: int
    forced_tokens: int
    seconds: float
    finished: bool
    prompt_tokens: int = 0

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens per second of decoding."""
        return len(self.token_ids) / self.seconds if self.seconds > 0 else 0.0


def generate(spec: Any, prompt: Prompt, *, model: Any = None, tokenizer: Any = None,
             max_new_tokens: int = 256, temperature: float = 0.0, top_p: float = 1.0,
             seed: int | None = None, fast_forward: bool = True, chat: bool = True,
             schema_options: dict[str, Any] | None = None) -> GenerationResult:
    """Generate text for ``prompt`` that satisfies ``spec``.

    ``spec`` is anything :func:`constrain.specs.compile_spec` takes (a compiled constraint,
    a JSON Schema dict, a Pydantic model class, ``{"regex": ...}``, ``{"choice": [...]}``),
    or ``None`` for unconstrained text. ``prompt`` is a user message, or a list of chat
    messages (``{"role": ..., "content": ...}``); with ``chat=True`` the tokenizer's chat
    template wraps it, with ``chat=False`` a string prompt is used as raw text.
    ``temperature=0`` is greedy; otherwise sampling with ``top_p``, reproducible with
    ``seed``. ``model``/``tokenizer`` default to the embedded SmolLM2-135M-Instruct.
    ``schema_options`` are :class:`~constrain.json_schema.JsonSchemaOptions` fields for
    JSON Schema specs (``{"whitespace": "compact", "property_order": "schema"}`` makes
    object keys forced, so fast-forward skips them).

    >>> r = generate({"regex": "[0-9]{3}"}, "Pick a number.", max_new_tokens=8)  # doctest: +SKIP
    >>> len(r.text), r.finished  # doctest: +SKIP
    (3, True)
    """
    return generate_batch(
        [spec], [prompt], model=model, tokenizer=tokenizer, max_new_tokens=max_new_tokens,
        temperature=temperature, top_p=top_p, seed=seed, fast_forward=fast_forward, chat=chat,
        schema_options=schema_options,
    )[0]


@dataclass
class _Row:
    matcher: Matcher | None
    prompt: list[int]
    tokens: list[int] = field(default_factory=list)
    forced: int = 0
    calls: int = 0
    done: bool = False
    finished: bool = False
    seconds: float | None = None


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise MissingDependencyError("torch", "hf") from e
    return torch


def _defaults(model: Any, tokenizer: Any) -> tuple[Any, Any]:
    if model is None and tokenizer is None:
        from .assets import load_smollm2_model, load_smollm2_tokenizer
        from .cache import cache_dir

        return load_smollm2_model(cache_dir()), load_smollm2_tokenizer(cache_dir())
    if model is None or tokenizer is None:
        raise ValueError("pass both model= and tokenizer=, or neither for the embedded model")
    return model, tokenizer


def _encode(tokenizer: Any, prompt: Prompt, chat: bool) -> list[int]:
    if isinstance(prompt, str) and not chat:
        return list(tokenizer(prompt, add_special_tokens=True)["input_ids"])
    if not chat:
        raise ValueError("a list of chat messages needs chat=True")
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _model_eos(model: Any) -> list[int]:
    config = getattr(model, "generation_config", None)
    eos = getattr(config, "eos_token_id", None)
    if eos is None:
        return []
    return [int(t) for t in eos] if isinstance(eos, (list, tuple)) else [int(eos)]


def _choose(torch: Any, logits: Any, temperature: float, top_p: float, generator: Any) -> Any:
    if temperature <= 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        ordered, order = probs.sort(dim=-1, descending=True)
        ordered[(ordered.cumsum(dim=-1) - ordered) > top_p] = 0.0
        probs = torch.zeros_like(probs).scatter_(-1, order, ordered)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


class _Forward:
    """One forward pass over new tokens, whatever this transformers version calls its
    arguments (``cache`` or ``past_key_values``; ``logits_to_keep`` or its older name)."""

    def __init__(self, model: Any) -> None:
        import inspect

        self.model = model
        params = inspect.signature(model.forward).parameters
        self.cache_arg = "cache" if "cache" in params else "past_key_values"
        # Only the last position's logits are needed: skip the LM head over the prompt.
        keep = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None)
        self.extra: dict[str, Any] = {} if keep is None else {keep: 1}
        self.cache: Any = None

    def __call__(self, torch: Any, ids: Any, attention: Any) -> Any:
        positions = (attention.cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1]:]
        out = self.model(
            input_ids=ids, attention_mask=attention, position_ids=positions,
            use_cache=True, **self.extra, **{self.cache_arg: self.cache},
        )
        cache = getattr(out, "cache", None)
        self.cache = out.past_key_values if cache is None else cache
        return out.logits[:, -1, :].float()


def _only_eos_left(matcher: Matcher) -> bool:
    compiled = matcher.compiled
    return matcher.is_accepting() and bool(
        np.array_equal(compiled.masks_for_state(matcher.state), compiled.masks_for_state(-1))
    )


def generate_batch(specs: Any, prompts: Sequence[Prompt], *, model: Any = None,
                   tokenizer: Any = None, max_new_tokens: int = 256, temperature: float = 0.0,
                   top_p: float = 1.0, seed: int | None = None, fast_forward: bool = True,
                   chat: bool = True,
                   schema_options: dict[str, Any] | None = None) -> list[GenerationResult]:
    """:func:`generate` for several prompts in one left-padded batch, one spec per prompt.

    ``specs`` is a list as long as ``prompts`` (a different constraint per row is fine), or
    one spec for all. Rows that finish early stop consuming tokens while the others go on;
    fast-forwarded tokens of different lengths are padded inside the batch and masked out.

    >>> rs = generate_batch([{"regex": "[0-9]+"}, {"choice": ["yes", "no"]}],
    ...                     ["Pick a number.", "Is water wet?"])  # doctest: +SKIP
    >>> [r.finished for r in rs]  # doctest: +SKIP
    [True, True]
    """
    torch = _torch()
    from constrain.integrations.hf import apply_token_bitmask, hf_vocabulary

    if isinstance(prompts, str):
        raise TypeError("generate_batch takes a list of prompts; use generate() for one")
    spec_list = list(specs) if is_spec_list(specs) else [specs] * len(prompts)
    if len(spec_list) != len(prompts) or not prompts:
        raise ValueError(f"{len(spec_list)} specs for {len(prompts)} prompts")
    if max_new_tokens < 1:
        raise ValueError("max_new_tokens must be at least 1")
    model, tokenizer = _defaults(model, tokenizer)
    vocab = hf_vocabulary(tokenizer, eos_token_ids=_model_eos(model))
    eos = vocab.eos_token_ids
    options = schema_options or {}
    compiled = [None if s is None else compile_spec(s, vocab, **options) for s in spec_list]
    rows = [_Row(None if c is None else c.matcher(), _encode(tokenizer, p, chat))
            for c, p in zip(compiled, prompts)]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos)
    device = next(model.parameters()).device
    generator = torch.Generator(device=device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)

    def advance_forced(row: _Row) -> list[int]:
        """Fast-forward ``row``; mark it done when it is full or can only end."""
        if row.matcher is None:
            return []
        ff = forced_tokens(row.matcher, max_new_tokens - len(row.tokens)) if fast_forward else []
        row.tokens.extend(ff)
        row.forced += len(ff)
        if len(row.tokens) >= max_new_tokens or (fast_forward and _only_eos_left(row.matcher)):
            stop(row)
        return ff

    def stop(row: _Row) -> None:
        """End ``row``; it is finished if its constraint can only end now (EOS is implied)."""
        row.done = True
        if row.matcher is not None and _only_eos_left(row.matcher):
            row.matcher.advance(min(eos))
            row.finished = True

    # Forced bytes at the very start ride along with the prompt in the first call.
    chunks = [row.prompt + advance_forced(row) for row in rows]
    for row in rows:
        if row.done:  # nothing to ask the model: e.g. a choice with a single option
            row.seconds = 0.0
    forward = _Forward(model)
    width = max(len(c) for c in chunks)
    ids = torch.tensor([[pad] * (width - len(c)) + c for c in chunks], device=device)
    attention = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in chunks],
                             device=device)
    bitmask: np.ndarray | None = None
    started = time.perf_counter()
    with torch.inference_mode():
        while not all(row.done for row in rows):
            logits = forward(torch, ids, attention)
            masked = [(i, row.matcher) for i, row in enumerate(rows)
                      if row.matcher is not None and not row.done]
            if masked:
                if bitmask is None:
                    words = max((logits.shape[-1] + 31) // 32,
                                *(c.mask_words for c in compiled if c is not None))
                    bitmask = np.zeros((len(rows), words), dtype=np.int32)
                for i, matcher in masked:
                    matcher.fill_bitmask(bitmask, i)
                if len(masked) == len(rows):
                    logits = apply_token_bitmask(logits, bitmask, inplace=True)
                else:
                    picked = [i for i, _ in masked]
                    index = torch.tensor(picked, device=device)
                    logits[index] = apply_token_bitmask(logits[index], bitmask[picked])
            chosen = _choose(torch, logits, temperature, top_p, generator).tolist()
            chunks = []
            for row, token in zip(rows, chosen):
                chunk: list[int] = []
                if row.done:
                    chunks.append(chunk)
                    continue
                row.calls += 1
                accepted = row.matcher is None or row.matcher.advance(token)
                if token in eos or not accepted:
                    # A rejected token cannot happen under the mask; it stops the row unfinished.
                    row.done = True
                    row.finished = token in eos and accepted
                else:
                    row.tokens.append(token)
                    if len(row.tokens) >= max_new_tokens:
                        stop(row)
                    else:
                        chunk = [token] + advance_forced(row)
                if row.done:
                    row.seconds = time.perf_counter() - started
                    chunk = []
                chunks.append(chunk)
            width = max(len(c) for c in chunks)
            if width == 0:
                break
            ids = torch.tensor([[pad] * (width - len(c)) + c for c in chunks], device=device)
            fresh = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in chunks],
                                 device=device)
            attention = torch.cat([attention, fresh], dim=1)
    now = time.perf_counter() - started
    return [
        GenerationResult(
            text=vocab.decode(row.tokens).decode("utf-8", errors="replace"),
            token_ids=list(row.tokens),
            model_calls=row.calls,
            forced_tokens=row.forced,
            seconds=now if row.seconds is None else row.seconds,
            finished=row.finished,
            prompt_tokens=len(row.prompt),
        )
        for row in rows
    ]
