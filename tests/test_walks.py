"""Soundness and completeness of whole decoding runs on the real SmolLM2 and Qwen2 vocabularies.

* Random constrained walks: pick random allowed tokens (fixed seeds) until EOS; the decoded
  bytes must fullmatch the regex (or be one of the choices) and no step may have an empty mask.
* Completeness: strings of each language, tokenized by the real tokenizer, byte by byte, and
  by random segmentations into vocabulary tokens, are accepted token by token, then EOS.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from constrain import compile_choice, compile_regex
from constrain.automaton import Automaton
from constrain.compiler import CompiledConstraint
from constrain.matcher import Matcher
from constrain.vocab import Vocabulary

REGEXES: dict[str, tuple[str, list[str]]] = {
    # id: (pattern, handwritten members)
    "email": (r"[a-z0-9._%+-]{1,20}@[a-z0-9-]{1,15}\.(com|org|net)",
              ["john.doe@example.com", "a@b.org", "x_y+z%1@host-name.net"]),
    "date": (r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])",
             ["2024-02-29", "1999-12-31", "2000-01-01"]),
    "digits-1000": (r"[0-9]{1,1000}", ["0", "1234567890", "9" * 150]),
    "non-ascii": (r"café|日本語|😀+", ["café", "日本語", "😀", "😀" * 7]),
    "json-string": (r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"',
                    ['""', '"hello world"', '"tab\\tquote\\"é日😀"', '"\\u00e9\\n"']),
    "number": (r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
               ["0", "-12.5e+10", "3.14159", "100E-3"]),
    "uuid": (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
             ["123e4567-e89b-12d3-a456-426614174000"]),
    "phone": (r"\(\d{3}\) \d{3}-\d{4}", ["(555) 123-4567"]),
    "names": (r"[A-Z][a-z]{1,10}( [A-Z][a-z]{1,10}){0,3}", ["Ada Lovelace", "Alan Mathison Turing"]),
    "greek-words": (r"[α-ω]{1,8}( [α-ω]{1,8}){0,4}", ["αβγ δεζ", "λογος"]),
    "clock": (r"([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?", ["23:59", "00:00:01"]),
}

SHARED_PREFIX_50 = sorted({
    f"{stem}{tail}"
    for stem in ("alpha", "alp", "alpine", "beta", "bet", "betamax", "日本", "café")
    for tail in ("", "-1", "-12", "x", "xy", " é", "日")
})[:50]
CHOICES: dict[str, list[str]] = {
    "yes-no-maybe": ["yes", "no", "maybe"],
    "shared-prefix-50": SHARED_PREFIX_50,
    "prefixes-of-each-other": ["a", "ab", "abc", "abcd", "b", " a"],
    "non-ascii": ["café", "cafe", "日本", "日本語", "😀", "😀😀", "naïve résumé"],
}
assert len(SHARED_PREFIX_50) == 50

SPECS: dict[str, tuple[str, Any]] = {
    **{f"re:{k}": ("regex", v[0]) for k, v in REGEXES.items()},
    **{f"choice:{k}": ("choice", v) for k, v in CHOICES.items()},
}


def compile_spec(kind: str, spec: Any, vocab: Vocabulary) -> CompiledConstraint:
    return compile_regex(spec, vocab) if kind == "regex" else compile_choice(spec, vocab)


def in_language(kind: str, spec: Any, text: bytes) -> bool:
    decoded = text.decode("utf-8")  # raises on invalid UTF-8: that is a failure too
    if kind == "regex":
        return re.fullmatch(spec, decoded, re.ASCII) is not None
    return decoded in spec


def members(kind: str, spec: Any) -> list[str]:
    if kind == "choice":
        return list(spec)
    return next(v[1] for v in REGEXES.values() if v[0] == spec)


# --------------------------------------------------------------------------- the walks


def random_walk(compiled: CompiledConstraint, seed: int, eos_after: int = 12,
                max_steps: int = 400) -> tuple[bytes, int]:
    """Random allowed tokens until EOS. After ``eos_after`` steps, take EOS when allowed,
    else a token that makes the text complete, else a single-byte one (to finish soon)."""
    rng = np.random.default_rng(seed)
    vocab = compiled.vocab
    eos = min(vocab.eos_token_ids)
    lengths = vocab.token_lengths
    m = compiled.matcher()
    tokens: list[int] = []
    for step in range(max_steps):
        allowed = m.allowed_token_ids()
        assert len(allowed), f"empty mask after {vocab.decode(tokens)!r}"
        eos_ok = m.is_accepting()
        assert eos_ok == (eos in allowed)
        text_tokens = allowed[allowed != eos]
        if eos_ok and (step >= eos_after or not len(text_tokens) or rng.random() < 0.1):
            assert m.advance(eos) and m.is_terminated()
            return vocab.decode(tokens), step
        if step < eos_after:
            token = int(rng.choice(text_tokens))
        else:
            sample = text_tokens if len(text_tokens) <= 2000 else rng.choice(text_tokens, 2000)
            state = m.state
            finishing = [int(t) for t in sample if compiled.automaton.is_accepting(
                compiled.token_step(state, int(t)))]
            short = sample[lengths[sample] == 1]
            pool = finishing or (short.tolist() if len(short) else sample.tolist())
            token = int(rng.choice(pool))
        assert m.is_allowed(token)
        assert m.advance(token), (vocab.decode(tokens), token)
        tokens.append(token)
    raise AssertionError(f"no EOS after {max_steps} steps: {vocab.decode(tokens)!r}")


VOCABS = ["smollm2_vocab", "qwen_vocab"]


@pytest.mark.parametrize("vocab_name", VOCABS)
@pytest.mark.parametrize("kind, spec", SPECS.values(), ids=SPECS.keys())
def test_random_walks_are_sound(kind: str, spec: Any, vocab_name: str,
                                request: pytest.FixtureRequest) -> None:
    vocab = request.getfixturevalue(vocab_name)
    compiled = compile_spec(kind, spec, vocab)
    for seed in range(3):
        text, _ = random_walk(compiled, seed)
        assert in_language(kind, spec, text), text


def test_digits_walk_is_capped_by_steps(smollm2_vocab: Vocabulary) -> None:
    compiled = compile_regex(r"[0-9]{1,1000}", smollm2_vocab)
    text, steps = random_walk(compiled, seed=1, eos_after=30)
    assert steps <= 31 and re.fullmatch(r"[0-9]{1,1000}", text.decode())


def test_digits_upper_bound_is_exact(byte_vocab: Vocabulary) -> None:
    """At 1,000 digits only EOS remains; the counted repeat is enforced to the last digit."""
    m = compile_regex(r"[0-9]{1,1000}", byte_vocab).matcher()
    eos = min(byte_vocab.eos_token_ids)
    digits = [ord(c) for c in "0123456789"]
    for i in range(1000):
        allowed = m.allowed_token_ids().tolist()
        assert allowed == (digits + [eos] if i else digits), i
        assert m.advance(digits[i % 10])
    assert m.allowed_token_ids().tolist() == [eos]
    assert not m.advance(ord("1")) and m.advance(eos)


# ------------------------------------------------------------------------ completeness


def generated_members(compiled: CompiledConstraint, seed: int, count: int,
                      max_len: int = 48) -> list[str]:
    """Strings of the language produced by random byte walks of the automaton."""
    automaton = compiled.automaton
    rng = np.random.default_rng(seed)
    out: list[str] = []
    for _ in range(count * 20):
        state, data = automaton.start, bytearray()
        while len(data) < max_len:
            if automaton.is_accepting(state) and rng.random() < 0.25:
                break
            live = np.flatnonzero(automaton.row(state) != Automaton.DEAD)
            if not len(live):
                break
            byte = int(rng.choice(live))
            data.append(byte)
            state = automaton.step(state, byte)
        if automaton.is_accepting(state):
            out.append(data.decode("utf-8"))
            if len(out) == count:
                break
    return out


def accept_tokens(compiled: CompiledConstraint, token_ids: list[int], text: str) -> None:
    m: Matcher = compiled.matcher()
    for i, token in enumerate(token_ids):
        assert m.is_allowed(token), (text, i, compiled.vocab.token_bytes[token])
        assert m.advance(token), (text, i)
    eos = min(compiled.vocab.eos_token_ids)
    assert m.is_allowed(eos) and m.advance(eos) and m.is_terminated(), text


@pytest.fixture(scope="module")
def smollm2_encode(smollm2_tokenizer: Any) -> Callable[[str], list[int]]:
    return lambda text: list(smollm2_tokenizer.encode(text, add_special_tokens=False))


@pytest.fixture(scope="module")
def qwen_encode(qwen_encoding: Any) -> Callable[[str], list[int]]:
    return lambda text: list(qwen_encoding.encode_ordinary(text))


def single_byte_ids(vocab: Vocabulary) -> dict[int, int]:
    out: dict[int, int] = {}
    for t, data in enumerate(vocab.token_bytes):
        if data is not None and len(data) == 1:
            out.setdefault(data[0], t)
    return out


def random_segmentation(text: bytes, by_bytes: dict[bytes, int], rng: np.random.Generator,
                        max_len: int = 16) -> list[int] | None:
    """Split ``text`` into random vocabulary tokens (not the tokenizer's choice)."""
    out: list[int] = []
    i = 0
    while i < len(text):
        options = [by_bytes[text[i:j]] for j in range(i + 1, min(len(text), i + max_len) + 1)
                   if text[i:j] in by_bytes]
        if not options:
            return None
        token = int(rng.choice(options))
        out.append(token)
        i += len(by_bytes_inverse(by_bytes)[token])
    return out


_INVERSE: dict[int, dict[int, bytes]] = {}


def by_bytes_inverse(by_bytes: dict[bytes, int]) -> dict[int, bytes]:
    found = _INVERSE.get(id(by_bytes))
    if found is None:
        found = {t: b for b, t in by_bytes.items()}
        _INVERSE[id(by_bytes)] = found
    return found


_TABLES: dict[str, dict[bytes, int]] = {}


def bytes_table(vocab: Vocabulary) -> dict[bytes, int]:
    found = _TABLES.get(vocab.fingerprint)
    if found is None:
        found = {}
        for t, data in enumerate(vocab.token_bytes):
            if data is not None:
                found.setdefault(data, t)
        _TABLES[vocab.fingerprint] = found
    return found


@pytest.mark.parametrize("kind, spec", SPECS.values(), ids=SPECS.keys())
@pytest.mark.parametrize("vocab_name", VOCABS)
def test_every_tokenization_is_accepted(kind: str, spec: Any, vocab_name: str,
                                        request: pytest.FixtureRequest) -> None:
    vocab: Vocabulary = request.getfixturevalue(vocab_name)
    encode = request.getfixturevalue(
        "smollm2_encode" if vocab_name == "smollm2_vocab" else "qwen_encode")
    compiled = compile_spec(kind, spec, vocab)
    texts = members(kind, spec) + generated_members(compiled, seed=len(str(spec)), count=6)
    singles = single_byte_ids(vocab)
    table = bytes_table(vocab)
    rng = np.random.default_rng(0)
    for text in texts:
        assert in_language(kind, spec, text.encode()), text
        data = text.encode()
        has_every_byte = all(b in singles for b in data)
        # 1. the tokenizer's own tokenization (SmolLM2 has no token for the bytes F1, F2 and
        # a few controls: its tokenizer drops them, so such texts cannot be tokenized at all)
        token_ids = encode(text)
        if has_every_byte:
            assert vocab.decode(token_ids) == data, text
        if vocab.decode(token_ids) == data:
            accept_tokens(compiled, token_ids, text)
        # 2. byte by byte, where the vocabulary has every byte as a token
        if has_every_byte:
            accept_tokens(compiled, [singles[b] for b in data], text)
        # 3. a random segmentation into vocabulary tokens
        segmented = random_segmentation(data, table, rng)
        if segmented is not None:
            assert vocab.decode(segmented) == data
            accept_tokens(compiled, segmented, text)


@pytest.mark.parametrize("vocab_name", VOCABS)
def test_single_byte_tokens_cover_utf8_text(vocab_name: str,
                                            request: pytest.FixtureRequest) -> None:
    """Byte-by-byte tokenization is possible for the texts above: every byte they use exists
    as a single-byte token in both vocabularies."""
    vocab: Vocabulary = request.getfixturevalue(vocab_name)
    singles = single_byte_ids(vocab)
    needed = set("".join(t for _, v in REGEXES.values() for t in v).encode())
    needed |= set("".join(t for v in CHOICES.values() for t in v).encode())
    assert needed <= set(singles), sorted(needed - set(singles))


# Strings whose length bound lies far above the longest token, over a pattern or format:
# while no token can reach the bound their masks are the pattern's alone (see
# TermStore.without_far_length_bound); long walks run into the bound, where it decides,
# the pattern's mask still standing in for the tokens short enough and the longer ones
# decided one by one (TokenMasks._near_bound_mask), as for a bound below the longest
# token from the start.
LONG_BOUNDED_STRINGS = {
    "word-count": {"type": "string", "minLength": 5, "maxLength": 160,
                   "pattern": "^(?:\\S+\\s+){0,9}\\S+$"},
    "near-word-count": {"type": "string", "maxLength": 60,
                        "pattern": "^(?:\\S+\\s+){0,9}\\S+$"},
    "hostname": {"type": "string", "format": "hostname", "maxLength": 180},
    "uri": {"type": "string", "format": "uri", "maxLength": 200},
}


@pytest.mark.parametrize("name", LONG_BOUNDED_STRINGS)
def test_random_walks_into_a_far_length_bound_are_sound(name: str,
                                                        qwen_vocab: Vocabulary) -> None:
    import json

    import jsonschema

    from constrain import compile_json_schema

    schema = LONG_BOUNDED_STRINGS[name]
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    compiled = compile_json_schema(schema, qwen_vocab)
    lengths = []
    for seed in range(4):
        text, _ = random_walk(compiled, seed, eos_after=40, max_steps=600)
        value = json.loads(text)
        assert validator.is_valid(value), (text, next(validator.iter_errors(value)).message)
        lengths.append(len(value))
    assert max(lengths) == schema["maxLength"]  # a walk wrote up to the bound
