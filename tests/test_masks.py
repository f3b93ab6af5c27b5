"""Differential tests of the per-state token masks (constrain.masks).

For every automaton state reached along random byte walks, ``TokenMasks`` must allow exactly
the brute-force set ``{t : automaton.step_bytes(state, token_bytes[t]) != DEAD}``, plus EOS
iff the state is accepting. Both mask engines (numpy level walk and the compiled kernel)
are checked, on the tiny byte vocabulary, random 3,000-token slices of the real Qwen2 and
SmolLM2 vocabularies, and the full SmolLM2 vocabulary for a few states.
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest
from byte_vocab_layout import BYTE_VOCAB_EOS

from constrain import walk_kernel
from constrain.automaton import Automaton
from constrain.grammar import (
    Bytes,
    Grammar,
    alt,
    complement,
    intersect,
    literal,
    optional,
    ref,
    seq,
    star,
)
from constrain.masks import TokenMasks, mask_words
from constrain.regex import parse_regex
from constrain.utf8 import NON_ASCII_BUT_SPACES
from constrain.vocab import Vocabulary

DEAD = Automaton.DEAD

ENGINES = [
    pytest.param(False, id="numpy-walk"),
    pytest.param(
        True, id="compiled-walk",
        marks=pytest.mark.skipif(not walk_kernel.available(), reason="numba not installed"),
    ),
]

PATTERNS = {
    "json-string": r'"[^"\\\x00-\x1f]*"',
    "json-string-escapes": r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"',
    "lowercase-star": r"[a-z]*",
    "dot-star": r".*",
    "dotall-star": r"(?s).*",
    "not-a-star": r"[^a]*b",
    "non-ascii-only": r"[^\x00-\x7f]*",
    "not-e-acute": r"[^é]*x",
    "not-cjk-char": r"[^\u65e5]*",
    "counted-lower": r"[a-z]{0,5}",
    "counted-range": r"[a-z ]{3,8}\.",
    "counted-string": r'"[^"]{0,10}"',
    "counted-dot": r".{2,4}",
    "non-ascii-literals": r"café|日本語|😀+|[α-ω]{1,3}",
    "digits": r"-?(0|[1-9][0-9]{0,20})(\.[0-9]+)?",
    "email": r"[a-z0-9._%+-]{1,20}@[a-z0-9-]{1,15}\.(com|org|net)",
    "ab-suffix": r"(a|b)*a(a|b){5}",
    "key-value": r'\{"[a-z]{1,8}": ?[0-9]{1,3}\}',
    # Counts far above any token's length: states share their bounded twin's mask.
    "long-digit-run": r"[0-9]{2,1000}x?",
    "long-string": r'"[^"\\]{3,400}"',
}

DYCK = Grammar({"start": star(seq(literal("("), ref("start"), literal(")")))})
ARRAY = Grammar(
    {
        "value": alt(literal("x"), literal("é"), ref("array")),
        "array": seq(literal("["), optional(seq(ref("value"),
                                                 star(seq(literal(", "), ref("value"))))),
                     literal("]")),
    },
    start="value",
)
# Loops over raw bytes: tokens that are not valid UTF-8 stay allowed, so the walk must
# follow them out of a loop whose cached part only holds valid UTF-8.
RAW_BYTES_STAR = Grammar.single(seq(star(Bytes(((0x00, 0xFF),))), literal("!")))
ASCII_OR_LEAD_BYTE = Grammar.single(star(alt(Bytes(((0x20, 0x7E),)), Bytes(((0xC3, 0xC3),)))))
GRAMMARS = {"dyck": DYCK, "nested-arrays": ARRAY, "raw-bytes-star": RAW_BYTES_STAR,
            "ascii-or-lead-byte": ASCII_OR_LEAD_BYTE}


def automaton_for(spec: str | Grammar) -> Automaton:
    if isinstance(spec, Grammar):
        return Automaton(spec)
    return Automaton(Grammar.single(parse_regex(spec)))


def brute_allowed(automaton: Automaton, vocab: Vocabulary, state: int) -> np.ndarray:
    allowed = [
        t for t, data in enumerate(vocab.token_bytes)
        if data is not None and automaton.step_bytes(state, data) != DEAD
    ]
    if automaton.is_accepting(state):
        allowed.extend(vocab.eos_token_ids)
    return np.array(sorted(allowed), dtype=np.int64)


def walk_states(automaton: Automaton, seed: int, walks: int = 8, max_len: int = 14) -> list[int]:
    """Distinct states met on random byte walks from the start (stopping mid-character too)."""
    rng = np.random.default_rng(seed)
    seen = {automaton.start: None}
    for _ in range(walks):
        state = automaton.start
        for _ in range(int(rng.integers(1, max_len + 1))):
            live = np.flatnonzero(automaton.row(state) != DEAD)
            if not len(live):
                break
            state = int(automaton.row(state)[rng.choice(live)])
            seen.setdefault(state, None)
    return list(seen)


def mask_bits(mask: np.ndarray, size: int) -> np.ndarray:
    bits = np.unpackbits(mask.view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:size])


def assert_masks_match(automaton: Automaton, vocab: Vocabulary, states: list[int],
                       engine: bool) -> None:
    masks = TokenMasks(automaton, vocab, use_compiled=engine)
    for state in states:
        expected = brute_allowed(automaton, vocab, state)
        got = masks.allowed_token_ids(state)
        missing = np.setdiff1d(expected, got)
        extra = np.setdiff1d(got, expected)
        assert not len(missing) and not len(extra), (
            f"state {state}: missing {[vocab.token_bytes[t] for t in missing[:8]]}, "
            f"extra {[vocab.token_bytes[t] for t in extra[:8]]}"
        )
        mask = masks.mask(state)
        assert mask.dtype == np.int32 and mask.shape == (mask_words(vocab.size),)
        assert (mask_bits(mask, len(mask) * 32) < vocab.size).all()


def prebuilt(spec: str | Grammar) -> Automaton:
    """The automaton of ``spec`` with every reachable row built ahead, as compiling a small
    regular constraint does (so its masks come from one walk each, and what the kernel
    knows about loops was learnt for all states at once)."""
    automaton = automaton_for(spec)
    assert automaton.build_all(128), spec
    return automaton


# Small regular specs (no counter above 128, no doubling levels), built whole at compile.
PREBUILT_SPECS = {
    name: PATTERNS[name]
    for name in ("json-string-escapes", "lowercase-star", "dot-star", "not-e-acute",
                 "counted-range", "counted-dot", "non-ascii-literals", "digits", "email",
                 "key-value")
} | {"raw-bytes-star": RAW_BYTES_STAR, "ascii-or-lead-byte": ASCII_OR_LEAD_BYTE}


# ---------------------------------------------------------------------- byte vocabulary

ALL_SPECS = {**PATTERNS, **GRAMMARS}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("spec", ALL_SPECS.values(), ids=ALL_SPECS.keys())
def test_byte_vocab_masks_equal_brute_force(spec: Any, engine: bool,
                                            byte_vocab: Vocabulary) -> None:
    automaton = automaton_for(spec)
    states = walk_states(automaton, seed=len(str(spec)), walks=10, max_len=16)
    assert_masks_match(automaton, byte_vocab, states, engine)


def test_byte_vocab_partial_utf8_tokens(byte_vocab: Vocabulary) -> None:
    """b'\\xe6' (ids 230 and 261) and b'\\x97\\xa5' split 日 (E6 97 A5) across tokens."""
    automaton = automaton_for("日+")
    masks = TokenMasks(automaton, byte_vocab)
    assert masks.allowed_token_ids(automaton.start).tolist() == [230, 261]
    mid = automaton.step_bytes(automaton.start, b"\xe6")
    assert 262 in masks.allowed_token_ids(mid).tolist()  # b"\x97\xa5"
    assert masks.allowed_token_ids(mid).tolist() == [0x97, 262]
    end = automaton.step_bytes(mid, b"\x97\xa5")
    assert masks.allowed_token_ids(end).tolist() == [230, 261, BYTE_VOCAB_EOS]


def test_mask_memoized_and_read_only(byte_vocab: Vocabulary) -> None:
    automaton = automaton_for("[a-z]+")
    masks = TokenMasks(automaton, byte_vocab)
    first = masks.mask(automaton.start)
    assert masks.mask(automaton.start) is first
    with pytest.raises(ValueError):
        first[0] = 0


def test_bit_layout_including_sign_bit() -> None:
    """Token t is bit t % 32 of word t // 32; token 31 is the int32 sign bit."""
    table: list[bytes | None] = [b"x%d" % i for i in range(70)] + [None]
    table[31], table[32], table[69] = b"a", b"b", b"c"
    vocab = Vocabulary.from_token_bytes(table, eos_token_ids=[70])
    automaton = automaton_for("[abc]")
    mask = TokenMasks(automaton, vocab).mask(automaton.start)
    assert mask.tolist() == [-(2**31), 1, 1 << 5]
    end = automaton.step_bytes(automaton.start, b"a")
    assert TokenMasks(automaton, vocab).mask(end).tolist() == [0, 0, 1 << 6]


# ------------------------------------------------------------------ special / padding / EOS


def test_special_tokens_never_allowed_eos_only_when_accepting() -> None:
    table: list[bytes | None] = [bytes([b]) for b in range(128)] + [b"ab", None, None, None]
    vocab = Vocabulary.from_token_bytes(table, eos_token_ids=[130], special_token_ids=[129, 131])
    automaton = automaton_for(r"[a-z]{2,4}")
    masks = TokenMasks(automaton, vocab)
    saw_accepting = saw_not = False
    for state in walk_states(automaton, seed=3, walks=20, max_len=6):
        allowed = set(masks.allowed_token_ids(state).tolist())
        assert not allowed & {129, 131}
        assert (130 in allowed) == automaton.is_accepting(state)
        saw_accepting |= automaton.is_accepting(state)
        saw_not |= not automaton.is_accepting(state)
    assert saw_accepting and saw_not


@pytest.mark.parametrize("extra", [1, 31, 32, 33, 100], ids=lambda n: f"pad+{n}")
def test_padded_vocab_never_allows_padding(extra: int, byte_vocab: Vocabulary) -> None:
    padded = byte_vocab.with_size(byte_vocab.size + extra)
    automaton = automaton_for(r".*")
    plain = TokenMasks(automaton, byte_vocab)
    masks = TokenMasks(automaton, padded)
    assert masks.words == (padded.size + 31) // 32
    for state in walk_states(automaton, seed=extra, walks=5, max_len=6):
        mask = masks.mask(state)
        assert mask.shape == (masks.words,)
        every_bit = mask_bits(mask, masks.words * 32)
        assert (every_bit < byte_vocab.tokenizer_size).all()
        assert every_bit.tolist() == plain.allowed_token_ids(state).tolist()


def test_dead_state_allows_nothing(byte_vocab: Vocabulary) -> None:
    automaton = automaton_for("a")
    masks = TokenMasks(automaton, byte_vocab)
    assert not masks.mask(DEAD).any()


def test_vocab_without_eos_allowed_tokens() -> None:
    vocab = Vocabulary.from_token_bytes([b"a", b"aa", b"b"], eos_token_ids=[])
    automaton = automaton_for("a+")
    masks = TokenMasks(automaton, vocab)
    end = automaton.step_bytes(automaton.start, b"a")
    assert masks.allowed_token_ids(end).tolist() == [0, 1]


# -------------------------------------------------------------- real vocabulary slices


def _slice(vocab: Vocabulary, seed: int, n: int = 3000) -> Vocabulary:
    text_ids = [t for t, b in enumerate(vocab.token_bytes) if b is not None]
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(text_ids), size=n, replace=False).tolist())
    table: list[bytes | None] = [vocab.token_bytes[text_ids[i]] for i in chosen]
    table += [None, None]
    return Vocabulary.from_token_bytes(table, eos_token_ids=[n], special_token_ids=[n + 1])


@pytest.fixture(scope="module")
def qwen_slice(qwen_vocab: Vocabulary) -> Vocabulary:
    return _slice(qwen_vocab, seed=11)


@pytest.fixture(scope="module")
def smollm2_slice(smollm2_vocab: Vocabulary) -> Vocabulary:
    return _slice(smollm2_vocab, seed=12)


@pytest.fixture(params=["qwen_slice", "smollm2_slice"])
def real_slice(request: pytest.FixtureRequest) -> Vocabulary:
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("spec", ALL_SPECS.values(), ids=ALL_SPECS.keys())
def test_real_vocab_slice_masks_equal_brute_force(spec: Any, engine: bool,
                                                  real_slice: Vocabulary) -> None:
    automaton = automaton_for(spec)
    states = walk_states(automaton, seed=len(str(spec)) + 1, walks=6, max_len=12)
    assert_masks_match(automaton, real_slice, states, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("spec", PREBUILT_SPECS.values(), ids=PREBUILT_SPECS.keys())
def test_prebuilt_automaton_masks_equal_brute_force(spec: Any, engine: bool,
                                                    real_slice: Vocabulary) -> None:
    automaton = prebuilt(spec)
    states = list(range(1, automaton.num_states))  # every reachable state
    assert_masks_match(automaton, real_slice, states, engine)


@pytest.mark.parametrize("spec", PREBUILT_SPECS.values(), ids=PREBUILT_SPECS.keys())
def test_masks_made_ahead_in_batches_equal_brute_force(
        spec: Any, real_slice: Vocabulary, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiling a small regular constraint makes every state's mask ahead, most of them
    in one kernel call per batch: each is the mask brute force gives."""
    if not walk_kernel.available():
        pytest.skip("the batched walk needs the compiled kernel (numba not installed)")
    batched: list[int] = []
    whole = walk_kernel.TrieWalk.whole

    def counting(self: Any, rows: Any, loops: Any, states: list[int], *rest: Any) -> int:
        done = whole(self, rows, loops, states, *rest)
        batched.extend(states[:done])
        return done

    monkeypatch.setattr(walk_kernel.TrieWalk, "whole", counting)
    # Two EOS ids in different words, which a state that may end sets both of.
    table = [*real_slice.token_bytes, *[None] * 40]
    size = len(table)
    vocab = Vocabulary.from_token_bytes(table, eos_token_ids=[size - 41, size - 1],
                                        special_token_ids=range(size - 40, size - 1))
    masks = TokenMasks(automaton_for(spec), vocab, use_compiled=True)
    assert masks.build_all(128)
    states = masks.automaton.reachable_states()
    assert states is not None and set(states) <= set(range(1, masks.automaton.num_states))
    assert masks.precompute(60.0) == len(states)
    assert batched or all(walk_kernel.self_looping(masks.automaton.table, masks._loop_arrays(),
                                                   s) for s in states)
    made = dict(masks._masks)
    eos = masks._eos_words
    assert len(np.flatnonzero(eos)) == 2
    for state in states:
        expected = brute_allowed(masks.automaton, vocab, state)
        got = mask_bits(made[state], vocab.size)
        assert np.array_equal(np.sort(expected), got), (state, spec)
        ends = masks.automaton.is_accepting(state)
        assert np.array_equal(made[state] & eos, eos if ends else 0 * eos), (state, spec)


def test_masks_made_ahead_stop_at_the_deadline(qwen_slice: Vocabulary) -> None:
    """With no time left, no batch is walked; every mask is then made when asked, and is
    the one brute force gives."""
    masks = TokenMasks(automaton_for(PATTERNS["email"]), qwen_slice)
    assert masks.build_all(128)
    assert masks.precompute(0.0) == 0
    for state in range(1, masks.automaton.num_states):
        expected = brute_allowed(masks.automaton, qwen_slice, state)
        assert np.array_equal(np.sort(expected), masks.allowed_token_ids(state)), state


FULL_VOCAB_SPECS = {
    "json-string": PATTERNS["json-string"],
    "dot-star": PATTERNS["dot-star"],
    "counted-string": PATTERNS["counted-string"],
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("spec", FULL_VOCAB_SPECS.values(), ids=FULL_VOCAB_SPECS.keys())
def test_full_smollm2_vocab_masks_equal_brute_force(spec: str, engine: bool,
                                                    smollm2_vocab: Vocabulary) -> None:
    automaton = automaton_for(spec)
    states = walk_states(automaton, seed=5, walks=3, max_len=6)[:4]
    assert_masks_match(automaton, smollm2_vocab, states, engine)


def test_engines_agree_on_full_qwen_vocab(qwen_vocab: Vocabulary) -> None:
    """Both walks give the same masks on 151k tokens (cheap: no brute force)."""
    if not walk_kernel.available():
        pytest.skip("numba not installed")
    for spec in (PATTERNS["json-string-escapes"], PATTERNS["json-string"], PATTERNS["dot-star"],
                 PATTERNS["email"], PATTERNS["non-ascii-only"], RAW_BYTES_STAR):
        automaton = automaton_for(spec)
        a = TokenMasks(automaton, qwen_vocab, use_compiled=False)
        b = TokenMasks(automaton, qwen_vocab, use_compiled=True)
        for state in walk_states(automaton, seed=9, walks=3, max_len=8):
            assert np.array_equal(a.mask(state), b.mask(state)), (spec, state)


def test_counts_beyond_the_longest_token_share_one_mask(qwen_vocab: Vocabulary) -> None:
    """Along a long counted run, every state whose count exceeds the longest token gets
    the same mask (its bounded twin's), and that mask is right (checked by brute force on
    a slice of the vocabulary through the same states)."""
    automaton = automaton_for(r'"[^"\\]{0,600}"')
    masks = TokenMasks(automaton, qwen_vocab)
    longest = masks.trie.max_depth
    state = automaton.step_bytes(automaton.start, b'"')
    shared = masks.mask(state)
    seen = [state]
    for _ in range(600 - longest - 2):
        state = automaton.step_bytes(state, b"a")
        seen.append(state)
        assert masks.mask(state) is shared
    near_end = automaton.step_bytes(state, b"a" * 5)
    assert masks.mask(near_end) is not shared  # fewer characters left than a token may hold
    assert len(set(seen)) == len(seen)  # distinct states all the way
    sliced = _slice(qwen_vocab, seed=3)
    assert_masks_match(automaton, sliced, [seen[0], seen[-1], near_end], engine=False)
    assert_masks_match(automaton, sliced, [seen[0], seen[-1], near_end],
                       engine=walk_kernel.available())



# (schema, the string walked byte by byte to its last character, what a twin is per:
# at most this many distinct twins among the shared states)
_LONG_STRINGS = {
    # A word count under maxLength: one twin per word count, in a word or after it.
    "word-count": ({"type": "string", "minLength": 20, "maxLength": 90,
                    "pattern": "^(?:\\S+\\s+){0,7}\\S+$"},
                   b"xxxxxxxxxx " * 7 + b"x" * 13, 2 * 8),
    # A DNS name's own 253 characters then an optional dot, and a maxLength over it: two
    # bounds over one pattern; one twin per place in a label.
    "hostname": ({"type": "string", "format": "hostname", "maxLength": 100},
                 b"abcdefghi." * 9 + b"abcdefghij", 64),
}


@pytest.mark.parametrize("name", _LONG_STRINGS)
def test_a_long_string_under_a_pattern_shares_its_masks_until_near_its_end(name: str) -> None:
    """A length bound far above the longest token over a ``pattern`` or ``format``: the
    states inside the string share the mask of the pattern alone (no length bound) while
    no token can reach the bound, and every mask is exact (brute force) at each count,
    near the end too, where the bound decides (``TermStore.without_far_length_bound``)."""
    import constrain

    schema, text, most_twins = _LONG_STRINGS[name]
    words = [f"w{'x' * k} " * n for k in range(3) for n in range(1, 6)]
    tokens: list[bytes | None] = [
        *(w.encode() for w in words), b"a", b"ab", b" ", b"  ", b" " * 30, b"\\n", b"\\u0020",
        "é".encode(), b'"', b'a"', b' "', b"x" * 25, b"x" * 25 + b'"', b"a.", b".", b"-",
        b"abc.abc.abc.", b"a" * 29 + b".", b'."', None]
    vocab = Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])
    compiled = constrain.compile_json_schema(schema, vocab)
    automaton, masks = compiled.automaton, compiled._masks
    longest = masks.trie.max_depth
    state = automaton.step_bytes(automaton.start, b'"')
    shared, apart = [], []
    for byte in text:  # every count, up to the last
        state = automaton.step(state, byte)
        (shared if automaton.bounded_twin(state, longest) != state else apart).append(state)
    assert automaton.step(state, text[-1]) == DEAD
    for state in shared + apart:
        expected = brute_allowed(automaton, vocab, state)
        got = masks.allowed_token_ids(state)
        assert np.array_equal(expected, got), (
            state, [vocab.token_bytes[t] for t in np.setxor1d(expected, got)])
    assert len(shared) >= 20 and len(apart) >= 40  # below minLength, and near the end
    twins = {automaton.bounded_twin(s, longest) for s in shared}
    assert len(twins) <= most_twins  # not one per count


@pytest.mark.parametrize("pattern, min_length, shared", [
    ("^(?:\\S+\\s+){0,19}\\S+$", 1, True),  # needs a character: minLength 1 says nothing more
    ("^[a-z ]*$", 1, False),  # may be empty: minLength 1 still tells the first state apart
    ("^[a-z ]{2,64}$", 2, True),  # two characters at least, escaped or not
    ("^(?:\\S+\\s+){0,19}\\S+$", 2, False),  # one character may do
])
def test_min_length_under_a_pattern_that_needs_as_many_characters(
        pattern: str, min_length: int, shared: bool) -> None:
    """A ``minLength`` with a far ``maxLength`` over a pattern whose strings all have at
    least that many characters: the string's first state already shares the pattern's
    mask (a twin), as every later one does; where the pattern may be shorter it may not.
    Exact either way (brute force)."""
    import constrain

    schema = {"type": "string", "minLength": min_length, "maxLength": 200, "pattern": pattern}
    tokens: list[bytes | None] = [b"a", b"ab", b" ", b"a b", b'"', b'a"', b'" ', b"x" * 20,
                                  b"x" * 20 + b'"', "é".encode(), b"\\n", b"\\u00e9", None]
    vocab = Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])
    compiled = constrain.compile_json_schema(schema, vocab)
    automaton, masks = compiled.automaton, compiled._masks
    first = automaton.step_bytes(automaton.start, b'"')
    later = [automaton.step_bytes(first, text) for text in (b"ab", b"ab ", b"ab c")]
    longest = masks.trie.max_depth
    assert (automaton.bounded_twin(first, longest) != first) is shared
    assert all(automaton.bounded_twin(state, longest) != state for state in later)
    for state in [first, *later]:
        expected = brute_allowed(automaton, vocab, state)
        assert np.array_equal(expected, masks.allowed_token_ids(state)), state


_NEAR_BOUNDS = {
    **{name: (schema, text, {}) for name, (schema, text, _) in _LONG_STRINGS.items()},
    # A pattern that needs five more characters from its start, spelt raw (so five
    # bytes): a long token of letters fits the pattern but not the bound, which leaves no
    # room for the digits. Tokens of one to three bytes past the reach tell it apart.
    "required-suffix": ({"type": "string", "maxLength": 30, "pattern": "^[a-z]{0,40}[0-9]{5}$"},
                        b"a" * 25 + b"12345", {"escapes": "required"}),
}


@pytest.mark.parametrize("name", _NEAR_BOUNDS)
def test_a_string_near_its_length_bound_decides_only_its_longer_tokens(name: str) -> None:
    """Nearer its bound than the longest token (no twin), a string's mask is its
    pattern's for every token up to the bound's reach, and each longer token is decided
    by a step through its bytes (``TokenMasks._near_bound_mask``): exact at every count
    (brute force), with long tokens both kept and dropped along the way."""
    import constrain

    schema, text, options = _NEAR_BOUNDS[name]
    tokens: list[bytes | None] = [
        b"a", b"x", b" ", b"w ", b"ab", b".", b"a.", b'"', b'a"', b"\\n", b"x" * 12,
        b"x" * 12 + b'"', b"x " * 8, b"abc.abc.abc.", b"a" * 29 + b".", b"x" * 40,
        b"x" * 40 + b'"', b"abcdefghi." * 4, b" " * 30, b"1", b"12345", b'12345"',
        b"a" * 23, b"a" * 26, b"a" * 25 + b"1", None]
    vocab = Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])
    compiled = constrain.compile_json_schema(schema, vocab, **options)
    automaton, masks = compiled.automaton, compiled._masks
    longest = masks.trie.max_depth
    state = automaton.step_bytes(automaton.start, b'"')
    served, kept, dropped = 0, set(), set()
    for byte in text:
        state = automaton.step(state, byte)
        if automaton.bounded_twin(state, longest) != state:
            continue
        found = automaton.length_bound_reach(state)
        near = masks._near_bound_mask(state)
        if found is None or near is None:
            continue
        served += 1
        expected = brute_allowed(automaton, vocab, state)
        got = np.flatnonzero(np.unpackbits(near.view(np.uint8), bitorder="little"))
        assert np.array_equal(expected, got[got < vocab.size]), (
            state, [vocab.token_bytes[t] for t in np.setxor1d(expected, got)])
        for token in expected.tolist():
            if token != len(tokens) - 1 and len(tokens[token] or b"") > found[1]:
                kept.add(token)
        dropped |= {t for t, b in enumerate(tokens) if b and len(b) > found[1]} - set(
            expected.tolist())
    assert served >= 20
    assert kept and dropped  # the long tokens were decided, not all kept nor all dropped


def _strings_over(alphabet: str, longest: int) -> list[bytes]:
    words = [""]
    out: list[bytes] = []
    for _ in range(longest):
        words = [w + c for w in words for c in alphabet]
        out += [w.encode() for w in words]
    return out


# Determinized, their states double with every byte (2**n of them): masks come from the
# members of each state's union instead of a walk per state.
EXPONENTIAL_PATTERNS = {
    "loop-dominates": r"(a|b)*a(a|b){12}",
    "members-differ": r"(a|b)*a(a|b){10}c",
    "three-letters": r"[abc]*a[abc]{9}(c|ba)",
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("pattern", EXPONENTIAL_PATTERNS.values(),
                         ids=EXPONENTIAL_PATTERNS.keys())
def test_exponential_automaton_masks_from_members_equal_brute_force(pattern: str,
                                                                    engine: bool) -> None:
    tokens: list[bytes | None] = [*_strings_over("abc", 5), b"ax", b" a", None]
    vocab = Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])
    automaton = automaton_for(pattern)
    assert not automaton.build_all(128) and automaton.exponential
    states = walk_states(automaton, seed=5, walks=10, max_len=30)
    assert sum(automaton.members(s, 64) is not None for s in states) > len(states) // 2
    assert_masks_match(automaton, vocab, states, engine)


def test_exponential_automaton_states_share_their_loops_mask() -> None:
    """In ``(a|b)*a(a|b){12}`` the loop's mask holds every other member's: all states
    that cannot end share one mask array, and all that can end share another."""
    tokens: list[bytes | None] = [*_strings_over("ab", 6), None]
    vocab = Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])
    automaton = automaton_for(EXPONENTIAL_PATTERNS["loop-dominates"])
    automaton.build_all(128)
    masks = TokenMasks(automaton, vocab)
    states = walk_states(automaton, seed=8, walks=20, max_len=40)
    arrays = {automaton.is_accepting(s): set() for s in states}
    for state in states:
        arrays[automaton.is_accepting(state)].add(id(masks.mask(state)))
    assert len(states) > 100 and [len(a) for a in arrays.values()] == [1] * len(arrays)
    assert masks.allowed_token_ids(automaton.start).tolist() == list(range(len(tokens) - 1))


# ---------------------------------------------------------------- head plans (split masks)

NESTED_SCHEMAS = {
    "nested-objects": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "inner": {"type": "object", "properties": {"a": {"type": "integer"},
                                                       "b": {"type": "boolean"}}},
            "tags": {"type": "array", "items": {"enum": ["x", "yz"]}},
        },
        "required": ["name"],
    },
    "recursive": {
        "$defs": {"node": {"type": "object", "properties": {
            "v": {"type": "number"},
            "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
        "$ref": "#/$defs/node",
    },
}


@pytest.mark.parametrize("schema", NESTED_SCHEMAS.values(), ids=NESTED_SCHEMAS.keys())
def test_head_plans_give_the_walks_masks(schema: dict[str, Any], qwen_vocab: Vocabulary) -> None:
    """A state's mask made from its head's plan and a walk on from the head's exits into
    the tail, or from its members' plans, equals the plain level walk (which never
    splits), on 151k real tokens."""
    if not walk_kernel.available():
        pytest.skip("numba not installed")
    from constrain import compile_json_schema

    automaton = compile_json_schema(schema, qwen_vocab).automaton
    plain = TokenMasks(automaton, qwen_vocab, use_compiled=False)
    split = TokenMasks(automaton, qwen_vocab, use_compiled=True)
    states = walk_states(automaton, seed=3, walks=12, max_len=40)
    for state in states:
        assert np.array_equal(plain.mask(state), split.mask(state)), state
    # Plans of heads and members were made beyond the masks asked for, and some tokens
    # went on past a head's end into its tail.
    assert len(split._plans) > len(split._masks)
    assert any(seeds is not None and len(seeds) for _, _, seeds in split._plans.values())
    # Plans are kept for the constraint's life: as plain tuples of arrays, the collector
    # stops tracking them, so they do not add to every later full collection's walk.
    # Twice: one pass may reach a memo entry before the plan inside it.
    gc.collect()
    gc.collect()
    assert not any(gc.is_tracked(plan) for plan in split._plans.values())
    assert not any(gc.is_tracked(entry) for entry in split._seeded.values())



def test_memoized_masks_and_plans_stay_within_their_budget(qwen_vocab: Vocabulary) -> None:
    """Past ``max_memory`` bytes the memos are forgotten and masks made again: the same
    masks as with no budget to speak of, and what is held stays near the budget."""
    if not walk_kernel.available():
        pytest.skip("numba not installed")
    from constrain import compile_json_schema

    automaton = compile_json_schema(NESTED_SCHEMAS["nested-objects"], qwen_vocab).automaton
    free = TokenMasks(automaton, qwen_vocab)
    row = 4 * mask_words(qwen_vocab.size)
    tight = TokenMasks(automaton, qwen_vocab, max_memory=40 * row)
    forgotten: list[int] = []
    forget = tight.forget
    tight.forget = lambda: (forgotten.append(tight.memory_bytes()), forget())[1]  # type: ignore[method-assign]
    for state in walk_states(automaton, seed=5, walks=12, max_len=40):
        assert np.array_equal(free.mask(state), tight.mask(state)), state
        # One mask's plans (a few dozen rows at most here) beyond the budget, no more.
        assert tight.memory_bytes() <= tight.max_memory + 64 * row
    assert forgotten and min(forgotten) > tight.max_memory
    assert free.memory_bytes() > 2 * tight.max_memory  # the budget did bind
    assert tight.memory_estimate() >= tight.memory_bytes() * 0.5


def test_a_compiled_constraint_keeps_its_masks_within_max_mask_memory(
        qwen_vocab: Vocabulary) -> None:
    """``AutomatonOptions.max_mask_memory`` reaches the constraint's masks: matchers
    under a tight budget allow the same tokens at every step of a random walk."""
    from constrain import compile_json_schema
    from constrain.automaton import AutomatonOptions

    schema = NESTED_SCHEMAS["nested-objects"]
    row = 4 * mask_words(qwen_vocab.size)
    tight = compile_json_schema(schema, qwen_vocab,
                                options=AutomatonOptions(max_mask_memory=30 * row))
    free = compile_json_schema(schema, qwen_vocab)
    assert tight is not free
    rng = np.random.default_rng(11)
    # Walks enough for the free constraint to hold well over the tight budget and its
    # slack (~150 masks; six walks made 87 once any value's states were shared).
    for _ in range(10):
        a, b = tight.matcher(), free.matcher()
        for _ in range(60):
            allowed = a.allowed_token_ids()
            assert np.array_equal(allowed, b.allowed_token_ids())
            token = int(rng.choice(allowed))
            if token in qwen_vocab.eos_token_ids:
                break
            assert a.advance(token) and b.advance(token)
    assert tight._masks.memory_bytes() <= 30 * row + 64 * row < free._masks.memory_bytes()


def test_a_head_that_may_be_empty_splits_from_its_tail(qwen_vocab: Vocabulary) -> None:
    """After ``{"age": 3`` the number may go on or end: its rest is a head that may be
    empty, split from the object's tail; the mask adds the tail's own tokens (``,``,
    ``}``) to the number's and to those going from the number on into the tail (``0}``)."""
    if not walk_kernel.available():
        pytest.skip("numba not installed")
    from constrain import compile_json_schema

    schema = {"type": "object", "properties": {"age": {"type": "integer"}, "b": {}}}
    compiled = compile_json_schema(schema, qwen_vocab)
    automaton = compiled.automaton
    state = automaton.start
    for byte in b'{"age": 3':
        state = int(automaton.row(state)[byte])
    split = automaton.head_split(state)
    assert split is not None and split.head_can_be_empty
    plain = TokenMasks(automaton, qwen_vocab, use_compiled=False)
    planned = TokenMasks(automaton, qwen_vocab, use_compiled=True)
    assert np.array_equal(plain.mask(state), planned.mask(state))
    allowed = {qwen_vocab.token_bytes[t] for t in planned.allowed_token_ids(state)}
    assert {b"0", b".", b"e", b",", b"}", b" }", b",\n"} <= allowed and b'"' not in allowed


def test_recurring_heads_share_plans_across_constraints(qwen_vocab: Vocabulary) -> None:
    """A head met in a second constraint (here a string value after a key) is kept per
    vocabulary, and the constraints after it use that plan instead of walking it again;
    their masks stay those of the plain level walk."""
    if not walk_kernel.available():
        pytest.skip("numba not installed")
    from constrain.json_schema import schema_to_grammar

    vocab = _slice(qwen_vocab, seed=23)  # a vocabulary of its own: nothing shared yet
    made = []
    for keys in (["a"], ["bc", "d"], ["e"]):
        schema = {"type": "object", "properties": {k: {"type": "string"} for k in keys},
                  "required": keys, "additionalProperties": False}
        automaton = Automaton(schema_to_grammar(schema))
        shared = TokenMasks(automaton, vocab)
        plain = TokenMasks(automaton, vocab, use_compiled=False)
        after_key = automaton.step_bytes(automaton.start, f'{{"{keys[0]}": '.encode())
        for state in [after_key, *walk_states(automaton, seed=4, walks=12, max_len=30)]:
            assert np.array_equal(plain.mask(state), shared.mask(state)), state
        made.append(list(shared._plans.values()))  # alive, so their ids stay theirs
    ids = [{id(plan) for plan in plans} for plans in made]
    assert not ids[0] & ids[1]  # met once before: remembered, not kept
    assert ids[1] & ids[2]  # met twice: the third constraint uses the second's plans


def test_loop_plans_are_shared_by_constraints_on_one_vocabulary(
        qwen_vocab: Vocabulary) -> None:
    """The tokens made only of a loop's characters and the trie nodes where tokens leave
    it depend on the character class alone: a second constraint on the vocabulary gets
    the first one's plan, not a walk of its own, and its masks stay the level walk's."""
    if not walk_kernel.available():
        pytest.skip("numba not installed")
    from constrain.cache import token_trie

    vocab = _slice(qwen_vocab, seed=29)  # a vocabulary of its own: nothing shared yet
    lo, hi = 0, sum(1 << (b - 64) for b in range(ord("a"), ord("z") + 1))
    plans = []
    for pattern in ("[a-z]*!", "x[a-z]*", "[a-z]+[0-9]"):
        automaton = Automaton(Grammar.single(parse_regex(pattern)))
        shared = TokenMasks(automaton, vocab)
        plain = TokenMasks(automaton, vocab, use_compiled=False)
        for state in walk_states(automaton, seed=5, walks=8, max_len=12):
            assert np.array_equal(plain.mask(state), shared.mask(state)), (pattern, state)
        plans.append(shared._walk.loop_plan(lo, hi, False, shared.words))
    assert plans[0] is plans[1] is plans[2]
    # Given a trie (not taken from the vocabulary's cache), a walk keeps its plans to itself.
    own = TokenMasks(Automaton(Grammar.single(parse_regex("[a-z]*!"))), vocab, trie=token_trie(vocab))
    mine = own._walk.loop_plan(lo, hi, False, own.words)
    assert mine is not plans[0]
    assert np.array_equal(mine[0], plans[0][0]) and np.array_equal(mine[1], plans[0][1])


def test_tails_are_planned_from_their_heads_exits(qwen_vocab: Vocabulary) -> None:
    """A function-calling object (free-form extra keys allowed): past each value, what
    follows (the next key's head, the object's end) is planned from the value's exits
    through its own members and heads, and those plans recur across the sets of keys
    written; every mask on the way equals the plain level walk's."""
    if not walk_kernel.available():
        pytest.skip("numba not installed")
    from constrain.json_schema import schema_to_grammar

    schema = {"type": "object", "required": ["shape", "m"], "properties": {
        "shape": {"type": "string"},
        "m": {"type": "object", "required": ["base", "height", "side"], "properties": {
            k: {"type": "number"} for k in ("base", "height", "side")}}}}
    automaton = Automaton(schema_to_grammar(schema))
    planned = TokenMasks(automaton, qwen_vocab, use_compiled=True)
    plain = TokenMasks(automaton, qwen_vocab, use_compiled=False)
    document = b'{"m": {"base": 1, "height": 2, "side": 3}, "shape": "sq"}'
    state = automaton.start
    seeded_after: dict[bytes, int] = {}
    for i, byte in enumerate(document):
        state = automaton.step_bytes(state, bytes([byte]))
        assert np.array_equal(planned.mask(state), plain.mask(state)), document[:i + 1]
        seeded_after[document[:i + 1]] = len(planned._seeded)
    assert seeded_after[document] > 0
    # The first value's tail made its plans; the next values' tails reuse most of them.
    first = seeded_after[b'{"m": {"base": 1'] - seeded_after[b'{"m": {"base": ']
    later = seeded_after[b'{"m": {"base": 1, "height": 2'] - seeded_after[
        b'{"m": {"base": 1, "height": ']
    assert later < first


def test_seeded_plans_asked_without_exits_after_with_them(qwen_encoding: Any,
                                                         qwen_vocab: Vocabulary) -> None:
    """Regression: a tail planned from a head's exits is memoized with its exits when a
    larger plan needed them; a later mask that needs none must not take them (they were
    then joined with a plan that has none, and the mask failed). Replays a long
    free-form document from MaskBench (JME_27's first instance, read in place) token by
    token; every mask equals the plain level walk's."""
    if not walk_kernel.available():
        pytest.skip("numba not installed")
    import json
    from pathlib import Path

    from constrain import compile_json_schema

    path = (Path(__file__).resolve().parents[1].parent / "shared" / "data"
            / "jsonschemabench" / "JME" / "JME_27.json")
    if not path.is_file():
        pytest.skip(f"MaskBench data not found at {path}")
    instance = json.loads(path.read_text(encoding="utf-8"))["tests"][0]["data"]
    compiled = compile_json_schema({"title": "any JSON value"}, qwen_vocab)
    matcher = compiled.matcher()
    masks = []  # all made first: the plain walk builds rows, which changes what is composed
    for token in qwen_encoding.encode_ordinary(json.dumps(instance, ensure_ascii=False)):
        masks.append((matcher._state, compiled.masks_for_state(matcher._state)))
        assert matcher.advance(token)
    assert matcher.is_accepting()
    plain = TokenMasks(compiled.automaton, qwen_vocab, use_compiled=False)
    for state, mask in masks:
        assert np.array_equal(mask, plain.mask(state)), state


def test_kernel_refuses_a_state_outside_the_row_table() -> None:
    """The compiled walk indexes without bounds checks; started from a state its table
    does not hold (a table fetched before the state was built), it raises, not crashes."""
    if not walk_kernel.available():
        pytest.skip("numba not installed")
    vocab = Vocabulary.from_token_bytes([b"a", b"ab", b"b", None], eos_token_ids=[3])
    automaton = automaton_for("(ab)*")
    masks = TokenMasks(automaton, vocab, use_compiled=True)
    masks.mask(automaton.start)
    words = np.zeros(mask_words(vocab.size), dtype=np.uint32)
    beyond = len(automaton.table)
    with pytest.raises(IndexError):
        masks._walk.seeded(automaton.table, masks._loop_arrays(), np.array([0]), beyond, words)
    with pytest.raises(IndexError):
        masks._walk.start(automaton.table, masks._loop_arrays(), beyond, words)


def test_unlisted_key_masks_from_the_free_string_equal_brute_force(
        qwen_slice: Vocabulary, monkeypatch: pytest.MonkeyPatch) -> None:
    """The head of an unlisted key (any string but the listed keys, then its quote) takes
    its tokens from the free string's head less those that close a listed key: each mask
    is still the one brute force gives, keys sharing prefixes, escaped and non-ASCII
    spellings included."""
    from constrain.json_schema import schema_to_grammar

    if not walk_kernel.available():
        pytest.skip("plans are made with the compiled kernel (numba not installed)")
    composed: list[int] = []
    excluded = TokenMasks._excluded_plan

    def spying(self: TokenMasks, state: int, with_exits: bool) -> Any:
        found = excluded(self, state, with_exits)
        if found is not None:
            composed.append(state)
        return found

    monkeypatch.setattr(TokenMasks, "_excluded_plan", spying)
    pieces = [b'"', b'{"', b"n", b"na", b"name", b'name"', b'name":', b'name": "', b"names",
              b'names"', b"a", b"ab", b'ab"', b'abc"', b'abcd"', b'"}', b'":', b'": 1',
              "é".encode(), 'é"'.encode(), "éé".encode(), b"\\u00", b"\\u0061", b'\\u0061b"',
              b'x"', b'x":', b"\\", b'\\"', b'"a', b'"ab"', b' "', b'", "']
    table = [*(t for t in qwen_slice.token_bytes if t is not None), *pieces]
    table = list(dict.fromkeys(table))
    vocab = Vocabulary.from_token_bytes([*table, None], eos_token_ids=[len(table)])
    schema = {"type": "object", "additionalProperties": {"type": "integer"},
              "properties": {k: {"type": "string"} for k in ("name", "ab", "abc", "é")}}
    automaton = Automaton(schema_to_grammar(schema))
    states = [automaton.step_bytes(automaton.start, prefix.encode()) for prefix in (
        '{', '{"', '{"n', '{"na', '{"name', '{"a', '{"ab', '{"é', '{"x', '{"ab": "v", "',
        '{"ab": "v", "ab')]
    assert Automaton.DEAD not in states
    assert_masks_match(automaton, vocab, states, True)
    assert composed, "no unlisted key's head was made from the free string's"


# Tokens for loops that take every multi-byte character but the non-ASCII spaces:
# hundreds below "日", none of them with an ASCII character such loops leave, so that
# only a non-ASCII space (U+00A0, U+2028, U+3000, U+FEFF) after the prefix keeps a
# subtree from being accepted whole; and shorter ones with spaces, quotes and line
# breaks, and some cut inside a character.
_SPACED = ["\u00a0", "\u2028", "\u3000", "\ufeff"]
_WORD = ["語", "本", "é", "ω", "ж", "ü", "😀", "a", "Z", "1", "ß", "ñ", "中", "文", "ф", "я"]
_AFTER = [*_WORD[:8], " ", '"', "\n", *_SPACED]


def _spaced_vocab(qwen_slice: Vocabulary) -> Vocabulary:
    texts = [f"日{x}{y}" for x in _WORD for y in [*_WORD, *_SPACED]]
    texts += [f"{x}{y}" for x in _AFTER for y in _AFTER] + ["日本語 x", "a b"]
    pieces = [t.encode() for t in texts]
    pieces += ["日".encode() + "語".encode()[:2], "\u2028".encode()[:2], "\u3000".encode()[:1]]
    table = list(dict.fromkeys([*(t for t in qwen_slice.token_bytes if t is not None), *pieces]))
    return Vocabulary.from_token_bytes([*table, None], eos_token_ids=[len(table)])


@pytest.mark.parametrize("pattern, options", [
    (r'\S+"', {"unicode": True}),
    (r'(\S+\s+){0,3}\S+"', {"unicode": True}),
    (r'.*"', {"ecma": "within"}),
    (r'[^\s"]*"', {"unicode": True}),
    (r'\S{1,40}"', {"unicode": True}),
    (r'.{2,30}"', {"ecma": "within"}),
], ids=["not-space", "word-count", "ecma-dot", "negated-class", "counted-not-space",
        "counted-ecma-dot"])
@pytest.mark.parametrize("engine", ENGINES)
def test_loops_on_all_but_the_spaces_accept_subtrees_whole(
        pattern: str, options: dict[str, Any], engine: bool, qwen_slice: Vocabulary) -> None:
    """A loop that takes every multi-byte character but the non-ASCII spaces (\\S, ECMA's
    "."), or a counted run of such a class: each mask is the one brute force gives,
    subtrees with a space after the prefix walked and the others accepted whole, by the
    walk and by the loop's shared plan."""
    vocab = _spaced_vocab(qwen_slice)
    assert TokenMasks(automaton_for("a"), vocab).trie.suffix_space.any()
    automaton = Automaton(Grammar.single(parse_regex(pattern, **options)))
    prefixes = ["", "a", "日", "日本", "ab ", "a\u3000", "語" * 3, "a b c", "日" + "é" * 4]
    states = [automaton.step_bytes(automaton.start, p.encode()) for p in prefixes]
    states = [s for s in states if s != DEAD]
    masks = TokenMasks(automaton, vocab, use_compiled=engine)
    for state in states:
        expected = brute_allowed(automaton, vocab, state)
        got = masks.allowed_token_ids(state)
        assert np.array_equal(np.sort(got), expected), (
            f"state {state}: missing {[vocab.token_bytes[t] for t in np.setdiff1d(expected, got)[:8]]}, "
            f"extra {[vocab.token_bytes[t] for t in np.setdiff1d(got, expected)[:8]]}")
    levels = masks._loop_utf8[:automaton.num_states]
    assert (levels == NON_ASCII_BUT_SPACES).any(), "no loop took all but the spaces"


def test_the_tree_but_spaces_holds_every_other_multibyte_character() -> None:
    """UTF8_TREE_BUT_SPACES: every valid multi-byte character once, but the non-ASCII
    spaces, which are those of \\s as ECMA-262 or Python's re read it."""
    from constrain.charsets import category_bound
    from constrain.utf8 import NON_ASCII_SPACES, UTF8_TREE_BUT_SPACES

    def count(tree: tuple[Any, ...]) -> int:
        return sum((last - first + 1) * (count(children) if children else 1)
                   for first, last, children in tree)

    def holds(tree: tuple[Any, ...], data: bytes) -> bool:
        return any(
            first <= data[0] <= last
            and (holds(children, data[1:]) if children else len(data) == 1)
            for first, last, children in tree
        )

    widest = [c for lo, hi in category_bound("s", widest=True) for c in range(lo, hi + 1)]
    assert sorted(NON_ASCII_SPACES) == [c for c in widest if c >= 0x80]
    every = 0x110000 - 0x80 - 0x800  # the multi-byte code points, less the surrogates
    assert count(UTF8_TREE_BUT_SPACES) == every - len(NON_ASCII_SPACES)
    assert not any(holds(UTF8_TREE_BUT_SPACES, chr(c).encode()) for c in NON_ASCII_SPACES)
    assert all(holds(UTF8_TREE_BUT_SPACES, chr(c).encode())
               for c in (0x80, 0x84, 0x86, 0x9F, 0xA1, 0x7FF, 0x800, 0x1679, 0x1681, 0x1FFF,
                         0x200B, 0x2027, 0x202A, 0x202E, 0x2030, 0x205E, 0x2060, 0x2FFF,
                         0x3001, 0xD7FF, 0xE000, 0xFEFE, 0xFF00, 0xFFFF, 0x10000, 0x10FFFF))


def test_trie_marks_the_subtrees_holding_a_non_ascii_space() -> None:
    """``suffix_space``: whether a non-ASCII space starts after the node's prefix in some
    string below it (brute force over every node)."""
    from constrain.token_trie import TokenTrie
    from constrain.utf8 import NON_ASCII_SPACES

    texts = [f"{x}{y}" for x in _AFTER for y in _AFTER] + ["\u2028", "a\u00a0b", "日"]
    strings = sorted({t.encode() for t in texts})
    trie = TokenTrie.build(strings)
    spaces = [chr(c).encode() for c in NON_ASCII_SPACES]
    for node in range(trie.num_nodes):
        depth = int(np.searchsorted(trie.level_offsets, node, side="right"))
        below = [trie.string_bytes(i) for i in range(trie.start[node], trie.end[node])]
        holds = any(s.find(space, depth) >= 0 for s in below for space in spaces)
        assert bool(trie.suffix_space[node]) == holds, (below[:3], depth)


def test_excluded_words_need_copies_whose_ends_the_text_fixes() -> None:
    """``(x* & ~K)·tail`` takes its tokens from ``x*·tail`` less those that read ``K``
    then ``tail`` only where the text fixes where a copy of ``x`` ends. With ``x = a|ab``
    it does not: ``ab`` reads ``a`` (in ``K``) then the tail's ``b``, but it is also one
    copy, and ``abb`` is in the language. Masks stay those brute force gives."""
    vocab = Vocabulary.from_token_bytes([b"a", b"b", b"ab", b"abb", b"c", None],
                                        eos_token_ids=[5])
    copies = star(alt(literal("a"), literal("ab")))
    for excluded in (literal("a"), literal("ac")):  # ambiguous copies; a string outside x*
        automaton = Automaton(Grammar({
            "s": seq(intersect(copies, complement(excluded)), literal("b"), ref("r")),
            "r": literal("c")}, "s"))
        masks = TokenMasks(automaton, vocab)
        split = automaton.head_split(automaton.start)
        assert split is not None and automaton.excluded_words(split.head) is None
        assert_masks_match(automaton, vocab, [automaton.start], True)
        assert 2 in masks.allowed_token_ids(automaton.start).tolist()  # "ab"


# ------------------------------------------------------ text read through its items (keys)

_TEXT_KEYS = ["name", "a/b", 'q"t', "é", "日本", "😀x", "line\nbreak", "n", "na"]
_TEXT_PIECES = [
    b'{"', b'"', b"n", b"na", b"name", b'name"', b'name":', b'name": "', b'name": {"',
    b"\\", b"\\u", b"\\u00", b"\\u0061", b"\\u0061m", b'\\u0061me"', b"\\u006E", b'n\\u0061',
    b"a/", b"a\\/", b"\\/b", b'\\u002fb"', b"q\\", b'q\\"t', b'\\u0022t"', "é".encode(),
    'é"'.encode(), b"\\u00e9", b'\\u00E9":', b"\xc3", b"\xa9", "日".encode(), "日本".encode(),
    "日".encode()[:2], b"\\u65e5", b"\\u65E5\\u672c", b"\\ud83d", b"\\uD83D\\uDE00",
    "😀".encode(), "😀".encode()[:3], b"\\ude00x", b'x"', b'x": 1', b"line", b"\\n",
    b"\\u000a", b'break"', b'":', b'": ', b'": "', b'", "', b'"}', b"}", b" ", b"1", b"v",
]


def test_text_states_read_through_their_items_equal_brute_force(
        qwen_slice: Vocabulary, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys are read through their characters' small automata, not a state per byte of
    every spelling: masks at the start of, inside and at the end of keys (raw, escaped,
    short escapes, two- to four-byte characters, surrogate pairs, tokens cut inside a
    character or an escape, tokens running on past the key) are the ones brute force
    gives, and the text path is what made them."""
    from constrain.json_schema import schema_to_grammar

    if not walk_kernel.available():
        pytest.skip("plans are made with the compiled kernel (numba not installed)")
    read: list[int] = []
    text_plan = TokenMasks._text_plan

    def spying(self: TokenMasks, text: Any, source: Any, with_exits: bool) -> Any:
        read.append(text[1])
        return text_plan(self, text, source, with_exits)

    monkeypatch.setattr(TokenMasks, "_text_plan", spying)
    table = [*(t for t in qwen_slice.token_bytes if t is not None), *_TEXT_PIECES]
    table = list(dict.fromkeys(table))
    vocab = Vocabulary.from_token_bytes([*table, None], eos_token_ids=[len(table)])
    schema = {"type": "object", "additionalProperties": False,
              "properties": {k: {"type": "integer"} for k in _TEXT_KEYS}}
    automaton = Automaton(schema_to_grammar(schema))
    prefixes = ['{', '{"', '{"n', '{"na', '{"nam', '{"name', '{"name"', '{"a', '{"a/',
                '{"a\\/', '{"q', '{"q\\', '{"q\\"', '{"\\u00e9', '{"é', '{"日', '{"\\u65e5',
                '{"😀', '{"\\ud83d', '{"\\uD83D\\uDE00', '{"line\\n', '{"line\\u000A',
                '{"name": 1, "', '{"name": 1, "na', '{"é": 2, "日本']
    states = [automaton.step_bytes(automaton.start, p.encode()) for p in prefixes]
    states.append(automaton.step_bytes(automaton.start, b'{"\xc3'))  # inside "é"
    assert Automaton.DEAD not in states
    assert_masks_match(automaton, vocab, states, True)
    assert read and max(read) > 0, "no text was read from inside"


def test_text_chains_are_shared_by_the_positions_of_one_text() -> None:
    """Every position of a key is a state of its own, and all of them read one chain (the
    key's items), each from its own item; what follows the text is one state."""
    from constrain.grammar import literal as lit
    from constrain.literal_runs import LiteralRuns

    automaton = Automaton(Grammar.single(seq(lit("abc"), star(lit("x")))))
    runs = LiteralRuns(automaton)
    found = [runs.lookup(automaton.step_bytes(automaton.start, b"abc"[:i])) for i in range(2)]
    assert found[0] is not None and found[1] is not None
    assert found[0][0] is found[1][0] and [f[1] for f in found] == [0, 1]
    assert found[0][0][1] == automaton.step_bytes(automaton.start, b"abc")
    # One item left is no text: walked as usual.
    assert runs.lookup(automaton.step_bytes(automaton.start, b"ab")) is None
    # Kept for the automaton's life, the chains and the entries holding them leave the
    # collector (a young collection for each level).
    gc.collect(0)
    gc.collect(1)
    assert not any(gc.is_tracked(entry) for entry in runs._by_state.values())


def test_text_items_are_shared_by_every_automaton_until_the_table_is_full(
        qwen_slice: Vocabulary, monkeypatch: pytest.MonkeyPatch) -> None:
    """The items' automata are appended once per process: a second schema whose keys
    use the same characters finds them by structure (the table does not grow), and its
    masks are brute force's. Once the table is full, new automata start another one,
    while those holding the old one keep reading (and appending to) theirs."""
    from constrain import literal_runs
    from constrain.json_schema import schema_to_grammar

    if not walk_kernel.available():
        pytest.skip("plans are made with the compiled kernel (numba not installed)")
    table = [*(t for t in qwen_slice.token_bytes if t is not None), *_TEXT_PIECES]
    table = list(dict.fromkeys(table))
    vocab = Vocabulary.from_token_bytes([*table, None], eos_token_ids=[len(table)])

    def automaton_of(keys: list[str]) -> Automaton:
        schema = {"type": "object", "additionalProperties": False,
                  "properties": {k: {"type": "integer"} for k in keys}}
        return Automaton(schema_to_grammar(schema))

    def prefixes(keys: list[str]) -> list[bytes]:
        return [b'{"', *(b'{"' + k.encode()[:i] for k in keys for i in (1, 2)),
                b'{"' + keys[0].encode() + b'": 1, "']

    monkeypatch.setattr(literal_runs, "_table", literal_runs.ItemTable())
    first = automaton_of(["name", "date"])
    masks = TokenMasks(first, vocab)
    for p in prefixes(["name", "date"]):
        masks.mask(first.step_bytes(first.start, p))
    shared = masks._literals.table  # type: ignore[union-attr]
    held = shared.items
    assert held > 0

    again = automaton_of(["mean", "tend"])  # the same characters, other keys
    states = [again.step_bytes(again.start, p) for p in prefixes(["mean", "tend"])]
    assert_masks_match(again, vocab, states, True)
    assert shared.items == held, "items found by structure were appended again"

    monkeypatch.setattr(literal_runs, "_MAX_TABLE_STATES", 1)
    fresh = automaton_of(["éa", "日本"])
    fresh_masks = TokenMasks(fresh, vocab)
    assert fresh_masks._literals.table is not shared  # type: ignore[union-attr]
    states = [fresh.step_bytes(fresh.start, p) for p in prefixes(["éa", "日本"])]
    assert_masks_match(fresh, vocab, states, True)
    # The first automaton still appends to the table it holds, full or not.
    for p in (b'{"n', b'{"name": 1, "d'):
        masks.mask(first.step_bytes(first.start, p))
    late = [first.step_bytes(first.start, b'{"name": 1, "da')]
    assert_masks_match(first, vocab, late, True)


_GAP_TEXTS = {
    "gaps-between-items": r'[ \n]{0,3}:[ \n]{0,3}\{[ \n]{0,2}"ab"',
    "unbounded-gap": r'[ \n]*"x"[ \n]{0,2}:',
    "run-overlapping-next": r'a{0,3}ab[ ]{0,2}"',  # the run does not end where a byte says
    "run-at-the-end": r'"k"[ ]{0,4}',
}


@pytest.mark.parametrize("pattern", _GAP_TEXTS.values(), ids=_GAP_TEXTS.keys())
def test_text_with_gaps_equals_brute_force(pattern: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs that may end anywhere (whitespace) are read inside a text where the next
    item's first byte says where they end; masks before, inside and after every gap,
    tokens spanning several gaps included, are brute force's. Where a run's bytes start
    the next item too, the text stops before the run and masks are still brute force's."""
    if not walk_kernel.available():
        pytest.skip("plans are made with the compiled kernel (numba not installed)")
    read: list[int] = []
    text_plan = TokenMasks._text_plan

    def spying(self: TokenMasks, text: Any, source: Any, with_exits: bool) -> Any:
        read.append(len(text[0][0]))  # the chain's items
        return text_plan(self, text, source, with_exits)

    monkeypatch.setattr(TokenMasks, "_text_plan", spying)
    pieces = [b" ", b"  ", b"\n", b" \n ", b":", b": ", b" :", b"\n:\n", b"{", b" {", b'{"',
              b'{ "', b'"', b'"a', b'"ab"', b'ab"', b'b"', b"a", b"aa", b"aaa", b"aab", b"ab",
              b'b" ', b'"x', b'"x"', b'x" :', b'"k', b'"k"', b'k" ', b"z", b'" ', b'"z']
    vocab = Vocabulary.from_token_bytes([*pieces, None], eos_token_ids=[len(pieces)])
    # A reference after the text, so the state has structure and its mask is planned.
    automaton = Automaton(Grammar({"s": seq(parse_regex(pattern), ref("r")),
                                   "r": literal("z")}, "s"))
    states = walk_states(automaton, seed=7, walks=40, max_len=12)
    assert_masks_match(automaton, vocab, states, True)
    assert read and max(read) >= 2
