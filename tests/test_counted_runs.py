"""Counted runs (``constrain.counted_runs``): masks and steps of states inside
``x{lo,hi}·tail`` made from the loop's mask and per-token counts must be exactly what
walking each state gives, and the steps the very states the bytes lead to."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import constrain
from constrain.automaton import Automaton
from constrain.compiler import CompiledConstraint
from constrain.counted_runs import BREAKS, LEAVES, PARTIAL, STAYS, run_profile
from constrain.grammar import Grammar
from constrain.masks import TokenMasks
from constrain.matcher import TERMINATED
from constrain.regex import parse_regex
from constrain.vocab import Vocabulary

DEAD = Automaton.DEAD

# Items whose copies are unambiguous (none is a prefix of another), and tails; some
# tails start with a byte a copy starts with, where the shortcut must stand aside.
_ITEMS = ["[ab]", "a|\\\\n", "ab|b", "[ab]|\\\\[n\"]", "é|a", "\\\\u[0-9]{2}|x", "(ab)*c"]
_TAILS = ['"', 'n"', "", "b", "(ab)*c", '"a{0,3}']
# What tokens are made of: copies of the items, starts of the tails, stray bytes, and
# both halves of "é" alone (tokens that split a character); a token may also lose its
# last byte (tokens that stop inside a copy).
_PIECES = [b"a", b"b", b"ab", b"\\n", b'\\"', b"\\u07", b"x", "é".encode(), b"\xc3",
           b"\xa9", b'"', b'n"', b"c", b"\\", b"u", b"0"]


def _generic_mask(masks: TokenMasks, state: int) -> np.ndarray:
    """The mask of ``state`` by walking it, never through a counted run."""
    return masks._compute(state)


def _compiled(pattern: str, vocab: Vocabulary) -> CompiledConstraint:
    """``pattern`` compiled with every count served (by default small ones are walked)."""
    compiled = CompiledConstraint(Grammar.single(parse_regex(pattern)), vocab, kind="test")
    compiled._masks.runs.min_count = 1
    return compiled


def _vocab(tokens: list[bytes]) -> Vocabulary:
    return Vocabulary.from_token_bytes([*tokens, None], eos_token_ids=[len(tokens)])


def _tokens_to_step(compiled: CompiledConstraint, mask: np.ndarray, token: int) -> list[int]:
    """Every token of a small vocabulary; of a large one, ``token``, 300 allowed ones and
    300 others."""
    size = compiled.vocab.size
    if size <= 1000:
        return list(range(size))
    rng = np.random.default_rng(token)
    allowed = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")[:size])
    return [token, *rng.choice(allowed, min(300, len(allowed)), replace=False).tolist(),
            *rng.integers(0, size, 300).tolist()]


def _check_path_from(compiled: CompiledConstraint, state: int, token: int) -> int:
    return _check_path(compiled, [token], state)


def _check_path(compiled: CompiledConstraint, path: list[int], start: int | None = None) -> int:
    """Along ``path``, every state a counted run serves gets from it the mask walking the
    state gives and, for every token, the state the token's bytes lead to; returns how
    many states it served."""
    masks, automaton = compiled._masks, compiled.automaton
    runs = masks.runs
    served = 0
    state = automaton.start if start is None else start
    for token in path:
        found = runs.lookup(state)
        if found is not None:
            served += 1
            run = found.run
            got_mask = runs.mask(state, found, masks.mask(found.loop))
            assert np.array_equal(got_mask, _generic_mask(masks, state)), state
            for other in _tokens_to_step(compiled, got_mask, token):
                data = compiled.vocab.token_bytes[other]
                expected = automaton.step_bytes(state, data) if data is not None else DEAD
                assert runs.step(state, found, other, compiled.token_step) == expected, (
                    automaton.terms.show(run.item), run.least, run.most, data)
        state = compiled.token_step(state, token)
        if state in (DEAD, TERMINATED):
            break
    return served


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    item=st.sampled_from(_ITEMS),
    tail=st.sampled_from(_TAILS),
    least=st.integers(0, 4),
    extra=st.one_of(st.none(), st.integers(0, 6)),
    tokens=st.lists(st.tuples(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5),
                              st.booleans()), min_size=1, max_size=40),
    paths=st.lists(st.lists(st.integers(0, 1000), max_size=12), min_size=1, max_size=4),
)
def test_counted_masks_and_steps_match_walking(item: str, tail: str, least: int,
                                               extra: int | None,
                                               tokens: list[tuple[list[bytes], bool]],
                                               paths: list[list[int]]) -> None:
    most = None if extra is None else least + extra
    if least == 0 and most is None:
        most = 3
    pattern = f"({item}){{{least},{'' if most is None else most}}}{tail}"
    spelled = {b"".join(pieces) for pieces, _ in tokens}
    spelled |= {b"".join(pieces)[:-1] for pieces, cut in tokens if cut}
    vocab = _vocab(sorted(spelled - {b""}))
    compiled = _compiled(pattern, vocab)
    for path in paths:
        # Follow allowed tokens where there are some, so paths go deep into the run.
        state, chosen = compiled.automaton.start, []
        for pick in path:
            allowed = np.flatnonzero(np.unpackbits(
                compiled.masks_for_state(state).view(np.uint8), bitorder="little")[:vocab.size])
            allowed = allowed[allowed < vocab.size - 1]
            if not len(allowed):
                break
            chosen.append(int(allowed[pick % len(allowed)]))
            state = compiled.token_step(state, chosen[-1])
        _check_path(compiled, chosen + [pick % vocab.size for pick in path[:2]])


_BOUNDARY_TOKENS = [b"a", b"b", b"ab", b"aab", b"abab", b"ababa", b"ababab", b'"', b'a"',
                    b'ab"', b'aab"', b'abab"', b'ababa"', b'"x', b"\\n", b"a\\n", b"\\",
                    b'\\n"', b"x", b"ax"]


@pytest.mark.parametrize("pattern", ['[ab]{2,4}"', '[ab]{0,3}"', '[ab]{3,}"', '(a|b|\\\\n){1,5}"',
                                     '[ab]{2,4}', '[ab]{1,2}"x?', '[ab]{6,9}"'])
def test_every_reachable_counted_state_at_the_boundaries(pattern: str) -> None:
    """Tokens of every number of copies around the bounds, ending in the run, after it or
    inside a copy: every state reachable by tokens gets the walked mask and the bytes'
    steps from the counted run."""
    vocab = _vocab(_BOUNDARY_TOKENS)
    compiled = _compiled(pattern, vocab)
    todo, seen, served = [compiled.automaton.start], set(), 0
    while todo:
        state = todo.pop()
        if state in seen or state == DEAD:
            continue
        seen.add(state)
        for token in range(len(_BOUNDARY_TOKENS)):
            served += _check_path_from(compiled, state, token)
            todo.append(compiled.automaton.step_bytes(state, _BOUNDARY_TOKENS[token]))
    assert served > 0


def test_the_shortcut_serves_plain_runs_and_stands_aside_where_counts_would_be_ambiguous() -> None:
    vocab = _vocab([b"a", b"ab", b"b", b"abab", b'"', b'ab"', b"\\n", b'a\\n"'])

    def served(pattern: str) -> bool:
        automaton = Automaton(Grammar.single(parse_regex(pattern)))
        return TokenMasks(automaton, vocab).runs.lookup(automaton.start) is not None

    assert served('[ab]{2,6}"')
    assert served('(a|\\\\n){0,9}"')
    assert not served('[ab]{2,5}"')  # few counts: walked
    assert not served("[ab]{2,9}b")  # b may be one more copy or the tail
    assert not served("(a|ab){2,9}c")  # a copy is a prefix of another
    assert not served("[ab]*c")  # the loop itself: walked


def test_profile_counts_copies_and_how_each_token_ends() -> None:
    vocab = _vocab([b"ab", b'ab"x', b"\\", b"\\n", b"\\q", b'"'])
    automaton = Automaton(Grammar.single(parse_regex('(a|b|\\\\n){0,9}"x')))
    run, profile, _ = TokenMasks(automaton, vocab).runs.lookup(automaton.start)
    assert profile.copies.tolist() == [2, 2, 1, 1, 1, 0, 0]
    assert profile.ends.tolist() == [STAYS, LEAVES, PARTIAL, STAYS, BREAKS, LEAVES, BREAKS]
    assert (run.least, run.most) == (0, 9)


def test_a_copy_that_comes_back_to_its_start_is_one_copy() -> None:
    """In ``((ab)*c){0,8}``, ``ab`` leads a copy back to where it began without ending it:
    ``ababababababc`` is one copy, so six copies later it is still allowed (counting a
    copy at each ``ab`` refused it)."""
    tokens = [b"a", b"b", b"c", b"x", b"ababababababc", b"abababababababc"]
    vocab = _vocab(tokens)
    compiled = _compiled("((ab)*c){0,8}x", vocab)
    automaton = compiled.automaton
    state = automaton.step_bytes(automaton.start, b"cc")
    assert compiled._masks.runs.lookup(state) is not None
    allowed = set(np.flatnonzero(np.unpackbits(
        compiled.masks_for_state(state).view(np.uint8), bitorder="little")).tolist())
    assert {4, 5} <= allowed
    _check_path(compiled, [4, 3], state)


def test_compiled_and_numpy_profiles_agree_on_a_real_vocabulary(qwen_vocab: Vocabulary) -> None:
    compiled = constrain.compile_json_schema({"type": "string", "maxLength": 40}, qwen_vocab)
    state = compiled.automaton.step_bytes(compiled.automaton.start, b'"')
    dfa = compiled.automaton.copy_automaton(compiled._masks.runs.lookup(state).run.item)
    assert dfa is not None
    trie, words = compiled._masks.trie, compiled.mask_words
    fast = run_profile(trie, qwen_vocab.size, dfa, words, compiled=True)
    slow = run_profile(trie, qwen_vocab.size, dfa, words, compiled=False)
    assert np.array_equal(fast.copies, slow.copies)
    assert np.array_equal(fast.ends, slow.ends)
    # Every kind of ending occurs in a real vocabulary: quotes end strings, backslashes
    # start escapes, and some tokens stop inside one.
    assert set(np.unique(fast.ends).tolist()) == {STAYS, PARTIAL, LEAVES, BREAKS}


@pytest.mark.parametrize("schema", [
    {"type": "string", "maxLength": 60},
    {"type": "string", "minLength": 5, "maxLength": 12},
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30},
                                      "code": {"type": "string", "pattern": "^[A-Z]{2,4}$"}},
     "required": ["name", "code"]},
])
def test_json_strings_with_lengths_on_a_real_vocabulary(qwen_vocab: Vocabulary,
                                                        qwen_encoding: Any,
                                                        schema: dict[str, Any]) -> None:
    """A real tokenizer's path through strings with counted lengths: masks and steps equal
    walking's, the path is accepted to the end, and the counted runs served its steps."""
    if "properties" in schema:
        text = '{"name": "Ann \\"the\\" Smith \\u00e9t\\u00e9", "code": "ABC"}'
    elif schema.get("minLength"):
        text = '"caf\\u00e9 crème"'
    else:
        text = '"a line\\nand \\ttabs, quotes \\" and unicode: ∑ and \\ud83d\\ude00 emoji"'
    compiled = constrain.compile_json_schema(schema, qwen_vocab)
    path = qwen_encoding.encode_ordinary(text)
    assert _check_path(compiled, path) >= 3
    matcher = compiled.matcher()
    for token in path:
        assert matcher.advance(token)
    assert matcher.is_accepting()


def test_a_run_longer_than_allowed_is_refused_by_mask_and_step(qwen_vocab: Vocabulary,
                                                               qwen_encoding: Any) -> None:
    compiled = constrain.compile_json_schema({"type": "string", "maxLength": 8}, qwen_vocab)
    matcher = compiled.matcher()
    for token in qwen_encoding.encode_ordinary('"abcdefg'):
        assert matcher.advance(token)
    too_long = qwen_encoding.encode_ordinary("hi")
    assert len(too_long) == 1
    assert too_long[0] not in matcher.allowed_token_ids().tolist()
    assert not matcher.advance(too_long[0])
    closing = qwen_encoding.encode_ordinary('h"')
    assert all(t in matcher.allowed_token_ids().tolist() for t in closing[:1])
