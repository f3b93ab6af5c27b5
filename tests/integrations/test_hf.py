"""Tests for constrain.integrations.hf, constrain.generation, constrain.fast_forward and
constrain.specs.

The processor tests use fake tensors and small vocabularies (fast); the ``model`` ones run
the embedded SmolLM2-135M-Instruct on CPU with short outputs.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from constrain.integrations.hf import (
    ConstrainLogitsProcessor,
    apply_token_bitmask,
    hf_vocabulary,
    logits_processor,
)

from constrain import CompiledConstraint, Vocabulary, compile_choice, compile_regex
from constrain.fast_forward import forced_tokens
from constrain.generation import GenerationResult, generate, generate_batch
from constrain.specs import compile_spec

PROMPT = [7, 7, 7]


def expected_allowed(constraint: CompiledConstraint, tokens: list[int], width: int) -> np.ndarray:
    """The allowed ids after ``tokens`` by replaying them on a fresh matcher (the reference)."""
    m = constraint.matcher()
    eos_only = False
    for t in tokens:
        if m.is_terminated():
            break
        if not m.advance(t):
            eos_only = True
            break
    out = np.zeros(width, dtype=bool)
    if eos_only:
        out[sorted(constraint.vocab.eos_token_ids)] = True
    else:
        ids = m.allowed_token_ids()
        out[ids[ids < width]] = True
    return out


def call(proc: ConstrainLogitsProcessor, rows: list[list[int]], width: int) -> np.ndarray:
    ids = torch.tensor([PROMPT + r for r in rows])
    out = proc(ids, torch.zeros(len(rows), width))
    finite: np.ndarray = torch.isfinite(out).numpy()
    return finite


# ---------------------------------------------------------------- apply_token_bitmask


@pytest.mark.parametrize("width", [49152, 49152 + 37, 49152 - 5], ids=["exact", "wider", "narrower"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"], ids=["cpu-path", "torch-path"])
@pytest.mark.parametrize("as_tensor", [False, True], ids=["numpy-mask", "tensor-mask"])
def test_apply_token_bitmask_matches_unpackbits(width: int, dtype: str, as_tensor: bool) -> None:
    rng = np.random.default_rng(0)
    words = 49152 // 32
    bitmask = rng.integers(-(2**31), 2**31, size=(3, words), dtype=np.int64).astype(np.int32)
    logits = torch.randn(3, width).to(getattr(torch, dtype))
    out = apply_token_bitmask(logits, torch.from_numpy(bitmask) if as_tensor else bitmask)
    assert out.dtype == logits.dtype
    bits = np.unpackbits(bitmask.view(np.uint8), axis=1, bitorder="little").astype(bool)
    allowed = np.zeros((3, width), dtype=bool)
    allowed[:, : min(width, bits.shape[1])] = bits[:, :width]
    assert np.array_equal(torch.isfinite(out).numpy(), allowed)
    assert torch.equal(out[torch.from_numpy(allowed)], logits[torch.from_numpy(allowed)])
    assert torch.isfinite(logits).all()  # not in place by default


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_apply_token_bitmask_inplace_and_1d(dtype: str) -> None:
    logits = torch.zeros(40, dtype=getattr(torch, dtype))
    mask = torch.tensor([1 << 3, 1], dtype=torch.int32)
    out = apply_token_bitmask(logits, mask, inplace=True)
    assert out.data_ptr() == logits.data_ptr() and out.shape == (40,)
    assert torch.isfinite(logits).nonzero().flatten().tolist() == [3, 32]
    bit31 = apply_token_bitmask(torch.zeros(1, 32), np.array([[-(2**31)]], dtype=np.int32))
    assert torch.isfinite(bit31).nonzero()[:, 1].tolist() == [31]


# ----------------------------------------------------------------- processor state


def test_processor_prefix_keyed_under_beam_reordering(byte_vocab: Vocabulary) -> None:
    """Rows are reordered, duplicated and dropped every step, as beam search does."""
    c = compile_regex(r"(ab|a[0-9]{1,3}|xyz)+!?", byte_vocab)
    width = byte_vocab.size + 24  # a padded logits width: the extra ids are never allowed
    proc = ConstrainLogitsProcessor([c])
    rng = random.Random(3)
    seqs: list[list[int]] = [[] for _ in range(4)]
    for _ in range(14):
        allowed = call(proc, seqs, width)
        for row, seq in enumerate(seqs):
            assert np.array_equal(allowed[row], expected_allowed(c, seq, width)), (row, seq)
            assert not allowed[row, byte_vocab.size:].any()
        children = []
        for row, seq in enumerate(seqs):
            ids = np.flatnonzero(allowed[row]).tolist()
            # Mostly an allowed token; sometimes a rejected one (a beam kept with score -inf).
            token = rng.choice(ids) if rng.random() < 0.9 else ord("q")
            children.append(seq + [token])
        seqs = [list(rng.choice(children)) for _ in seqs]
    assert proc.calls == 14 and proc.seconds > 0


def test_processor_assisted_decoding_prefix_lengths(byte_vocab: Vocabulary) -> None:
    """Candidate prefixes of growing length, then back to a shorter one with another token;
    a tiny window forces a rebuild from the start for prefixes that were pruned."""
    c = compile_regex(r"[0-9]{2,6}(px|em)", byte_vocab)
    width = byte_vocab.size
    proc = ConstrainLogitsProcessor([c], window=1)
    candidate = [ord(ch) for ch in "1234px"]
    for n in range(len(candidate) + 1):
        got = call(proc, [candidate[:n]], width)[0]
        assert np.array_equal(got, expected_allowed(c, candidate[:n], width)), n
    for prefix in ("12p", "1", "123e", "1234px"):
        seq = [ord(ch) for ch in prefix]
        assert np.array_equal(call(proc, [seq], width)[0], expected_allowed(c, seq, width))


def test_processor_rows_map_to_specs_by_prompt(byte_vocab: Vocabulary) -> None:
    """Two prompts x two return sequences: rows 0-1 follow spec 0, rows 2-3 spec 1."""
    digits = compile_regex("[0-9]+", byte_vocab)
    yes_no = compile_choice(["yes", "no"], byte_vocab)
    proc = ConstrainLogitsProcessor([digits, yes_no])
    width = byte_vocab.size
    allowed = call(proc, [[], [], [], []], width)
    for row, c in enumerate([digits, digits, yes_no, yes_no]):
        assert np.array_equal(allowed[row], expected_allowed(c, [], width))
    rows = [[ord("4")], [ord("2")], [ord("y")], [ord("n")]]
    allowed = call(proc, rows, width)
    for row, c in enumerate([digits, digits, yes_no, yes_no]):
        assert np.array_equal(allowed[row], expected_allowed(c, rows[row], width))
    with pytest.raises(ValueError, match="3 rows"):
        ConstrainLogitsProcessor([digits, yes_no])(torch.tensor([[1]] * 3), torch.zeros(3, width))


def test_processor_eos_only_where_accepting_and_after_eos(byte_vocab: Vocabulary) -> None:
    eos = next(iter(byte_vocab.eos_token_ids))
    c = compile_regex("ab", byte_vocab)
    proc = ConstrainLogitsProcessor([c])
    width = byte_vocab.size
    call(proc, [[]], width)  # the first call tells the prompt apart
    after_a = call(proc, [[ord("a")]], width)[0]
    after_ab = call(proc, [[ord("a"), ord("b")]], width)[0]
    assert not after_a[eos] and after_a[ord("b")]
    assert np.flatnonzero(after_ab).tolist() == [eos]
    # generate() pads finished rows with EOS/pad ids: they stay EOS-only, never an error.
    padded = call(proc, [[ord("a"), ord("b"), eos, eos]], width)
    assert np.flatnonzero(padded[0]).tolist() == [eos]


def test_processor_new_prompt_starts_a_new_generation(byte_vocab: Vocabulary) -> None:
    c = compile_regex("[a-z]{3}", byte_vocab)
    proc = ConstrainLogitsProcessor([c])
    width = byte_vocab.size
    call(proc, [[ord("a"), ord("b")]], width)  # first call: the whole row is the prompt
    out = torch.isfinite(proc(torch.tensor([[1, 2, 3, 4, 5]]), torch.zeros(1, width))).numpy()
    assert np.array_equal(out[0], expected_allowed(c, [], width))
    out = torch.isfinite(proc(torch.tensor([[1, 2, 3, 4, 5, 97]]), torch.zeros(1, width)))
    assert np.array_equal(out.numpy()[0], expected_allowed(c, [97], width))


def test_processor_keeps_state_bounded(byte_vocab: Vocabulary) -> None:
    c = compile_regex("[a-z]*", byte_vocab)
    proc = ConstrainLogitsProcessor([c], window=4)
    seq: list[int] = []
    for _ in range(60):
        call(proc, [seq, seq], byte_vocab.size)
        seq = seq + [ord("k")]
    assert len(proc._states) <= 6


# ------------------------------------------------------------ specs and tokenizers


def test_compile_spec_kinds(byte_vocab: Vocabulary) -> None:
    c = compile_regex("a+", byte_vocab)
    assert compile_spec(c, byte_vocab) is c
    assert compile_spec({"regex": "a+"}, byte_vocab) is c
    assert compile_spec({"choice": ["x", "y"]}, byte_vocab).kind == "choice"
    if importlib.util.find_spec("constrain.json_schema"):
        assert compile_spec({"json": {"type": "integer"}}, byte_vocab).kind == "json"
    with pytest.raises(TypeError, match="regex"):
        compile_spec("a+", byte_vocab)
    with pytest.raises(TypeError, match="pattern string"):
        compile_spec({"regex": 3}, byte_vocab)
    other = Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
    with pytest.raises(ValueError, match="compile it for this"):
        compile_spec(compile_regex("a+", other), byte_vocab)


def test_compile_spec_schema_and_pydantic(byte_vocab: Vocabulary) -> None:
    pytest.importorskip("constrain.json_schema")
    pytest.importorskip("pydantic")
    from pydantic import BaseModel

    class Point(BaseModel):
        x: int
        y: int

    for spec in ({"type": "integer"}, Point):
        m = compile_spec(spec, byte_vocab).matcher()
        assert m.advance(ord("{") if spec is Point else ord("7"))


def test_logits_processor_from_tokenizer_with_padded_width(smollm2_tokenizer: Any) -> None:
    proc = logits_processor([{"regex": "[0-9]+"}, {"choice": ["yes"]}], smollm2_tokenizer,
                            vocab_size=49152 + 64)
    assert hf_vocabulary(smollm2_tokenizer, size=49152 + 64).size == 49152 + 64
    scores = torch.randn(2, 49152 + 64)
    out = proc(torch.tensor([[1, 2], [1, 2]]), scores)
    finite = torch.isfinite(out)
    assert not finite[:, 49152:].any()
    digits = [i for i in finite[0].nonzero().flatten().tolist()]
    assert digits and all(smollm2_tokenizer.decode([i]).isdigit() for i in digits)
    yes = smollm2_tokenizer.encode("yes", add_special_tokens=False)
    assert finite[1, yes[0]]


def test_forced_tokens_stop_at_an_ambiguous_boundary(smollm2_vocab: Vocabulary) -> None:
    c = compile_regex(r'\{"customer_name": "[A-Z][a-z]*"\}', smollm2_vocab)
    m = c.matcher()
    forced = m.forced_bytes()
    tokens = forced_tokens(m)
    text = smollm2_vocab.decode(tokens)
    assert forced == b'{"customer_name": "' and forced.startswith(text) and len(tokens) >= 3
    # What is left is the model's choice: some allowed token crosses the boundary.
    rest = len(forced) - len(text)
    allowed = m.allowed_token_ids()
    assert rest == 0 or (smollm2_vocab.token_lengths[allowed] > rest).any()
    assert forced_tokens(c.matcher(), max_tokens=1) == tokens[:1]


def test_optional_dependencies_are_lazy_and_named() -> None:
    script = (
        "import sys\n"
        "import constrain.generation\n"
        "assert 'torch' not in sys.modules, 'constrain.generation imported torch'\n"
        "sys.modules['torch'] = None\n"
        "from constrain.errors import MissingDependencyError\n"
        "for attempt in ('import constrain.integrations.hf',\n"
        "                'constrain.generation.generate({\"regex\": \"a\"}, \"hi\")'):\n"
        "    try:\n"
        "        exec(attempt)\n"
        "    except MissingDependencyError as e:\n"
        "        assert e.extra == 'hf' and 'constrain[hf]' in str(e), e\n"
        "    else:\n"
        "        raise SystemExit(attempt + ' did not raise')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------- real model

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
COLOR_CHOICES = ["red", "green", "blue", "yellow"]
DATE_REGEX = r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
YEAR_REGEX = r"(19|20)[0-9]{2}"


def check(spec: Any, text: str) -> None:
    """Fail unless ``text`` is in the language of ``spec``."""
    if "regex" in spec:
        assert re.fullmatch(spec["regex"], text), text
    elif "choice" in spec:
        assert text in spec["choice"], text
    else:
        jsonschema = pytest.importorskip("jsonschema")
        jsonschema.validate(json.loads(text), spec,
                            format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def needs_json(spec: Any) -> None:
    if "regex" not in spec and "choice" not in spec:
        pytest.importorskip("constrain.json_schema")


CASES = [
    pytest.param({"choice": COLOR_CHOICES}, "What color is a banana?", id="choice"),
    pytest.param({"regex": DATE_REGEX}, "When did the Berlin Wall fall? Give the date.",
                 id="regex-date"),
    pytest.param(PERSON, "Describe a person called Ada, aged 36, as JSON.", id="json-person"),
]


@pytest.mark.model
@pytest.mark.parametrize("spec,prompt", CASES)
@pytest.mark.parametrize("temperature", [0.0, 0.9], ids=["greedy", "sampled"])
def test_generate_valid(smollm2_model: Any, smollm2_tokenizer: Any, spec: Any, prompt: str,
                        temperature: float) -> None:
    needs_json(spec)
    r = generate(spec, prompt, model=smollm2_model, tokenizer=smollm2_tokenizer,
                 max_new_tokens=40, temperature=temperature, seed=1)
    assert isinstance(r, GenerationResult) and r.finished, r
    check(spec, r.text)
    assert r.model_calls >= 1 and r.seconds > 0


def hf_inputs(tokenizer: Any, prompts: list[str]) -> Any:
    texts = [tokenizer.apply_chat_template([{"role": "user", "content": p}],
                                           add_generation_prompt=True, tokenize=False)
             for p in prompts]
    tokenizer.padding_side = "left"
    return tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)


def hf_texts(tokenizer: Any, inputs: Any, out: Any) -> list[str]:
    new = out[:, inputs["input_ids"].shape[1]:]
    return [tokenizer.decode(row, skip_special_tokens=True, clean_up_tokenization_spaces=False)
            for row in new]


@pytest.mark.model
def test_hf_generate_beam_search(smollm2_model: Any, smollm2_tokenizer: Any) -> None:
    spec = {"regex": YEAR_REGEX}
    proc = logits_processor(spec, smollm2_tokenizer)
    inputs = hf_inputs(smollm2_tokenizer, ["In which year did the Berlin Wall fall?"])
    out = smollm2_model.generate(**inputs, logits_processor=[proc], num_beams=3,
                                 num_return_sequences=2, do_sample=False, max_new_tokens=8)
    texts = hf_texts(smollm2_tokenizer, inputs, out)
    assert len(texts) == 2
    for text in texts:
        check(spec, text)


@pytest.mark.model
def test_hf_generate_sampling_two_sequences_per_prompt_two_specs(
        smollm2_model: Any, smollm2_tokenizer: Any) -> None:
    specs = [{"choice": COLOR_CHOICES}, {"regex": r"[0-9]{1,3}"}]
    proc = logits_processor(specs, smollm2_tokenizer)
    inputs = hf_inputs(smollm2_tokenizer, ["What color is grass?", "How many legs has a cat?"])
    torch.manual_seed(0)
    out = smollm2_model.generate(**inputs, logits_processor=[proc], do_sample=True,
                                 temperature=1.0, num_return_sequences=2, max_new_tokens=6)
    texts = hf_texts(smollm2_tokenizer, inputs, out)
    for row, text in enumerate(texts):
        check(specs[row // 2], text)


@pytest.mark.model
def test_hf_greedy_agrees_with_own_loop_and_assisted(smollm2_model: Any,
                                                     smollm2_tokenizer: Any) -> None:
    """model.generate() with the processor picks the same tokens as generate() without
    fast-forward, and assisted decoding (the model as its own assistant) stays valid."""
    spec = {"regex": r'\{"capital": "[A-Z][a-z]+"\}'}
    prompt = "What is the capital of France? Answer as JSON."
    ours = generate(spec, prompt, model=smollm2_model, tokenizer=smollm2_tokenizer,
                    max_new_tokens=20, fast_forward=False)
    inputs = hf_inputs(smollm2_tokenizer, [prompt])
    plain = smollm2_model.generate(**inputs, logits_processor=[logits_processor(
        spec, smollm2_tokenizer)], do_sample=False, max_new_tokens=20)
    new = plain[0, inputs["input_ids"].shape[1]:].tolist()
    assert new[: len(ours.token_ids)] == ours.token_ids
    check(spec, ours.text)
    assisted = smollm2_model.generate(**inputs, logits_processor=[logits_processor(
        spec, smollm2_tokenizer)], assistant_model=smollm2_model, do_sample=False,
        max_new_tokens=20)
    check(spec, hf_texts(smollm2_tokenizer, inputs, assisted)[0])


@pytest.mark.model
def test_generate_batch_a_spec_per_row(smollm2_model: Any, smollm2_tokenizer: Any) -> None:
    specs: list[Any] = [{"choice": COLOR_CHOICES}, {"regex": YEAR_REGEX}, None]
    prompts = ["What color is the sky?", "In which year did Apollo 11 land on the moon?",
               "Say hi."]
    try:
        import constrain.json_schema  # noqa: F401

        specs[2] = {"type": "object", "properties": {"ok": {"type": "boolean"}},
                    "required": ["ok"], "additionalProperties": False}
        prompts[2] = "Is water wet? Answer as JSON with a boolean field ok."
    except ImportError:
        specs[2] = {"regex": r"(yes|no)\."}
    results = generate_batch(specs, prompts, model=smollm2_model, tokenizer=smollm2_tokenizer,
                             max_new_tokens=16, schema_options={"whitespace": "compact"})
    for spec, r in zip(specs, results):
        assert r.finished, r
        check(spec, r.text)


@pytest.mark.model
def test_fast_forward_saves_model_calls_same_text(smollm2_model: Any,
                                                  smollm2_tokenizer: Any) -> None:
    pytest.importorskip("constrain.json_schema")
    schema = {
        "type": "object",
        "properties": {
            "customer_full_name": {"type": "string", "maxLength": 16},
            "customer_is_returning": {"type": "boolean"},
        },
        "required": ["customer_full_name", "customer_is_returning"],
        "additionalProperties": False,
    }
    prompt = "Customer Jane Doe ordered again today. Extract the customer as JSON."
    # Keys are forced only when their spelling is fixed: no escapes, no order, no whitespace.
    options = {"whitespace": "compact", "property_order": "schema", "escapes": "required"}
    kw: dict[str, Any] = {"model": smollm2_model, "tokenizer": smollm2_tokenizer,
                          "max_new_tokens": 40, "schema_options": options}
    fast = generate(schema, prompt, fast_forward=True, **kw)
    slow = generate(schema, prompt, fast_forward=False, **kw)
    check(schema, fast.text)
    assert fast.finished and slow.finished
    assert fast.text == slow.text
    assert fast.forced_tokens >= 8
    assert fast.model_calls * 2 < slow.model_calls, (fast.model_calls, slow.model_calls)


@pytest.mark.model
def test_generate_edge_budgets(smollm2_model: Any, smollm2_tokenizer: Any) -> None:
    """A one-option choice needs no model call; a budget that ends exactly where the
    constraint must end still counts as finished; a short budget does not."""
    kw: dict[str, Any] = {"model": smollm2_model, "tokenizer": smollm2_tokenizer}
    only = generate({"choice": ["forty-two"]}, "The answer?", **kw)
    assert (only.text, only.finished, only.model_calls) == ("forty-two", True, 0)
    exact = generate({"regex": "[0-9]{2}"}, "Pick a number.", max_new_tokens=2, **kw)
    assert exact.finished and len(exact.text) == 2
    short = generate({"regex": "[0-9]{6}"}, "Pick a number.", max_new_tokens=2, **kw)
    assert not short.finished and len(short.token_ids) == 2
    with pytest.raises(ValueError, match="both model"):
        generate({"regex": "a"}, "hi", model=smollm2_model)
