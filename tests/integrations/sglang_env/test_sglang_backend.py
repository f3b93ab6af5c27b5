"""constrain's SGLang grammar backend against SGLang's real base classes, on CPU.

SGLang cannot serve on CPU here, but its grammar-backend layer imports without a GPU, so
these tests drive the backend the way SGLang's scheduler does: the registry, the cached /
future dispatch, the batched mask fill (``fill_vocab_mask_batched`` into the buffer from
``allocate_vocab_mask``, rows of other requests untouched), ``GrammarMask.apply``, and the
speculative-decoding accept/rollback walk. Runs in the venv from
``scripts/setup_sglang_env.sh``; ``tests/integrations/test_sglang.py`` starts it there.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("sglang", reason="needs the sglang venv (scripts/setup_sglang_env.sh)")

import torch
from constrain.integrations import sglang as csgl
from sglang.srt.constrained import base_grammar_backend as sgl


@pytest.fixture(scope="module")
def backend(smollm2_tokenizer: Any) -> csgl.ConstrainGrammarBackend:
    csgl.register()
    init = sgl.GRAMMAR_BACKEND_REGISTRY[csgl.BACKEND_NAME]
    return init(None, smollm2_tokenizer, 49152, {2})


def dispatch(backend: Any, key_type: str, key: str) -> Any:
    value, hit = backend.get_cached_or_future_value((key_type, key), False)
    assert not hit
    grammar = value.result()  # SGLang compiles in its executor and waits on the future
    backend.set_cache((key_type, key), grammar.copy())
    return grammar


def allowed(mask_row: torch.Tensor, size: int) -> list[int]:
    bits = [(int(w) >> b) & 1 for w in mask_row.tolist() for b in range(32)]
    return [t for t in range(size) if bits[t]]


def encode(tok: Any, text: str) -> list[int]:
    return tok.encode(text, add_special_tokens=False)


def test_registered_and_selectable() -> None:
    from sglang.srt.server_args import GRAMMAR_BACKEND_CHOICES, prepare_server_args

    csgl.register()
    csgl.register()
    assert GRAMMAR_BACKEND_CHOICES.count("constrain") == 1
    import constrain.integrations.sglang_launch  # noqa: F401  (registers on import)

    args = prepare_server_args(["--model-path", "unused", "--grammar-backend", "constrain"])
    assert args.grammar_backend == "constrain"


def test_plugin_entry_point_is_installed() -> None:
    from importlib.metadata import entry_points

    values = {ep.value for ep in entry_points(group="sglang.srt.plugins")}
    assert "constrain.integrations.sglang:register" in values


def test_batched_masks_match_sglang_layout(backend: Any, smollm2_tokenizer: Any) -> None:
    tok = smollm2_tokenizer
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
              "additionalProperties": False}
    g_json = dispatch(backend, "json", json.dumps(schema))
    g_re = dispatch(backend, "regex", "[0-9]{3}")
    assert isinstance(g_json, csgl.ConstrainGrammar) and isinstance(g_re, csgl.ConstrainGrammar)
    grammars = [g_json, None, g_re]  # row 1: a request without a grammar
    mask = g_json.allocate_vocab_mask(vocab_size=49152, batch_size=3, device="cpu")
    assert mask.dtype == torch.int32 and tuple(mask.shape) == (3, 49152 // 32)
    entries = [sgl.GrammarRow(row=i, grammar=g) for i, g in enumerate(grammars) if g]
    g_json.fill_vocab_mask_batched(entries, mask)
    assert bool((mask[1] == -1).all())  # untouched: unconstrained
    mask = g_json.move_vocab_mask(mask, "cpu")
    logits = torch.zeros(3, 49152)
    sgl.GrammarMask(g_json, mask).apply(logits)
    assert torch.isfinite(logits[1]).all()
    digits = set(allowed(mask[2], 49152))
    assert digits and all(tok.decode([t]).isdigit() for t in digits)
    assert set(torch.nonzero(torch.isfinite(logits[2])).flatten().tolist()) == digits
    first = [t for t in allowed(mask[0], 49152)]
    assert all(tok.decode([t]).lstrip().startswith("{") for t in first)


def test_same_bits_as_sglang_xgrammar_backend(backend: Any, smollm2_tokenizer: Any) -> None:
    xgb = pytest.importorskip("sglang.srt.constrained.xgrammar_backend",
                              reason="xgrammar is not installed in this venv")
    ref = xgb.XGrammarGrammarBackend(smollm2_tokenizer, vocab_size=49152, model_eos_token_ids=[2])
    ours = dispatch(backend, "regex", "(yes|no)[0-9]")
    theirs = ref._init_value_dispatch(("regex", "(yes|no)[0-9]"), False)
    for token in [None, *encode(smollm2_tokenizer, "yes")]:
        if token is not None:
            ours.accept_token(token)
            theirs.accept_token(token)
        a = ours.allocate_vocab_mask(49152, 1, "cpu")
        b = theirs.allocate_vocab_mask(49152, 1, "cpu")
        ours.fill_vocab_mask(a, 0)
        theirs.fill_vocab_mask(b, 0)
        assert torch.equal(a, b), token


def test_accept_rollback_terminate_copy(backend: Any, smollm2_tokenizer: Any) -> None:
    g = dispatch(backend, "regex", "ok")
    eos = 2
    (tid,) = encode(smollm2_tokenizer, "ok")
    with pytest.raises(ValueError):
        g.accept_token(encode(smollm2_tokenizer, "x")[0])
    g.accept_token(tid)
    g.accept_token(eos)
    assert g.is_terminated()
    g.rollback(2)
    assert not g.is_terminated()
    g.accept_token(tid)
    fresh = g.copy()
    assert fresh.matcher.num_advances == 0 and g.matcher.num_advances == 1


def test_speculative_accept_fill_rollback(backend: Any, smollm2_tokenizer: Any) -> None:
    # The calls SGLang's speculative tree walk (spec_utils.traverse_tree) makes for a draft
    # path "1" -> "2": accept, fill the node's row, recurse, roll back. (spec_utils itself
    # imports torchvision through the multimodal package, which this CPU venv lacks.)
    g = dispatch(backend, "regex", "[0-9]{2}")
    one, two, x = (encode(smollm2_tokenizer, s)[0] for s in ("1", "2", "x"))
    mask = g.allocate_vocab_mask(49152, 3, "cpu")
    g.fill_vocab_mask(mask, 0)
    assert one in allowed(mask[0], 49152) and x not in allowed(mask[0], 49152)
    g.accept_token(one)
    g.fill_vocab_mask(mask, 1)
    g.accept_token(two)
    g.fill_vocab_mask(mask, 2)
    g.rollback(1)
    g.rollback(1)
    assert g.matcher.num_advances == 0
    assert two in allowed(mask[1], 49152)
    assert allowed(mask[2], 49152) == [2]  # after "12": only EOS


def test_invalid_and_unsupported_specs(backend: Any) -> None:
    bad = dispatch(backend, "regex", "(unclosed")
    assert isinstance(bad, sgl.InvalidGrammarObject) and "regex" in bad.error_message.lower()
    ebnf = dispatch(backend, "ebnf", 'root ::= "a"')
    assert isinstance(ebnf, sgl.InvalidGrammarObject) and "later release" in ebnf.error_message
    assert isinstance(dispatch(backend, "json", "{not json"), sgl.InvalidGrammarObject)
    assert isinstance(dispatch(backend, "json", "$$ANY$$"), csgl.ConstrainGrammar)


def test_jump_forward(backend: Any, smollm2_tokenizer: Any) -> None:
    g = dispatch(backend, "regex", 'abc[0-9]')
    helper = g.try_jump_forward(smollm2_tokenizer)
    assert helper == ([], "abc")
    text, state = g.jump_forward_str_state(helper)
    assert text == "abc"
    g.jump_and_retokenize([], encode(smollm2_tokenizer, text), state)
    assert g.try_jump_forward(smollm2_tokenizer) is None
    assert g.matcher.forced_bytes() == b""
