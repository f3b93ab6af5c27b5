"""Exponential regular automata stepped through bitsets of their unions' members
(constrain.member_sets): the states reached, the text accepted and the masks, against
Python's ``re`` and brute force."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from constrain.automaton import Automaton
from constrain.grammar import Grammar
from constrain.masks import TokenMasks
from constrain.member_sets import MemberSets
from constrain.regex import parse_regex
from constrain.vocab import Vocabulary

DEAD = Automaton.DEAD

# Patterns whose DFA doubles with every byte: (loop)·(marker)·(class){n}·(tail).
LOOPS = ["[ab]*", "(a|b)*", "[abc]*", "(ab|b|a)*"]
TAILS = ["", "c", "(c|ba)", "[ab]?c"]


def exponential(pattern: str) -> Automaton:
    automaton = Automaton(Grammar.single(parse_regex(pattern)))
    assert not automaton.build_all(128) and automaton.exponential, pattern
    return automaton


patterns = st.builds(
    lambda loop, n, tail: f"{loop}a[ab]{{{n}}}{tail}",
    st.sampled_from(LOOPS), st.integers(8, 12), st.sampled_from(TAILS),
)


@settings(max_examples=60, deadline=None)
@given(pattern=patterns, body=st.text("ab", max_size=40), end=st.sampled_from(["", "c", "ba", "bc"]),
       cuts=st.lists(st.integers(1, 5)))
def test_stepping_in_chunks_follows_re_fullmatch(pattern: str, body: str, end: str,
                                                 cuts: list[int]) -> None:
    """Every prefix, stepped in chunks of random sizes, ends in an accepting state
    exactly when ``re.fullmatch`` matches it, and in ``DEAD`` exactly when no string
    starting with it matches (the loop takes anything over its alphabet)."""
    automaton = exponential(pattern)
    compiled = re.compile(pattern)
    text = body + end
    state, done = automaton.start, 0
    for cut in [*cuts, len(text)]:
        chunk = text[done:done + cut]
        if not chunk:
            break
        state = automaton.step_bytes(state, chunk.encode())
        done += len(chunk)
        prefix = text[:done]
        extendable = any(compiled.fullmatch(prefix + rest) for rest in ("", *_SUFFIXES))
        assert (state != DEAD) == extendable, (pattern, prefix)
        if state == DEAD:
            break
        assert automaton.is_accepting(state) == bool(compiled.fullmatch(prefix)), (
            pattern, prefix)


# Enough to complete any live prefix of the patterns above: a marker, the counted class,
# each tail.
_SUFFIXES = tuple("a" + "b" * n + tail for n in range(8, 13)
                  for tail in ("", "c", "ba", "bc"))


def test_a_set_of_members_met_twice_is_one_state() -> None:
    """Different texts leading to the same members (only the last ``a`` within nine
    bytes counts) give the same state, and a byte no member takes is ``DEAD``."""
    automaton = exponential("[ab]*a[ab]{8}")
    one = automaton.step_bytes(automaton.start, b"ab" + b"b" * 10 + b"ab")
    two = automaton.step_bytes(automaton.start, b"b" * 20 + b"ab")
    other = automaton.step_bytes(automaton.start, b"b" * 20 + b"aab")
    assert one == two != other
    assert automaton.step_bytes(one, b"c") == DEAD


def test_uncovered_members_leave_the_tokens_unchanged() -> None:
    """A state's mask from the members no loop covers (or, where one loop is left and
    takes every byte, the tokens of its class) equals the brute-force mask, on states
    reached through chunks (the member bitsets) over a vocabulary of all short
    strings."""
    tokens: list[bytes | None] = [
        bytes(w) for n in (1, 2, 3) for w in np.ndindex(*(3,) * n)]
    tokens = [bytes(b"abc"[i] for i in t) for t in tokens]  # type: ignore[union-attr]
    tokens.append(None)
    vocab = Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])
    rng = np.random.default_rng(3)
    texts = [b"ab" * 5 + b"a" + b"b" * i for i in range(10)]  # each count before the tail
    texts += [bytes(rng.choice(list(b"aabbc"), 14)) for _ in range(30)]
    for pattern in ("[ab]*a[ab]{8}", "[ab]*a[ab]{8}(c|ba)", "[abc]*a[ab]{8}c",
                    "[ab]*(c|a[ab]{8})"):  # a loop whose tail reads a byte it does not
        automaton = exponential(pattern)
        masks = TokenMasks(automaton, vocab)
        for text in texts:
            state, done = automaton.start, 0
            while done < len(text):
                cut = int(rng.integers(1, 4))
                nxt = automaton.step_bytes(state, text[done:done + cut])
                done += cut
                if nxt == DEAD:
                    break
                state = nxt
                expected = [t for t, data in enumerate(vocab.token_bytes)
                            if data is not None and automaton.step_bytes(state, data) != DEAD]
                if automaton.is_accepting(state):
                    expected.append(len(tokens) - 1)
                assert masks.allowed_token_ids(state).tolist() == expected, (pattern, state)


def test_member_bitsets_step_byte_by_byte() -> None:
    """The bitset after a text is the one after each of its bytes in turn."""
    automaton = exponential("[ab]*a[ab]{6}c")
    sets = MemberSets(automaton.terms)
    start = sets.bitset_of(automaton.terms.alternatives(automaton.rule_terms[0]))
    for text in (b"abab", b"aaaaaaab", b"bbbbbbbbbbbbba", b"abc"):
        bits = start
        for byte in text:
            bits = sets.step(bits, bytes([byte]))
        assert sets.step(start, text) == bits
    assert sets.step(start, b"x") == 0
    assert sets.nullable(sets.step(start, b"abbbbbbc")) and not sets.nullable(start)


@pytest.mark.parametrize("pattern", ["([ab]*a[ab]{6}|x)&", "(?:[ab]*a[ab]{8})?y"])
def test_other_shapes_still_match(pattern: str) -> None:
    """Patterns around an exponential core (an alternative, an optional) step to the
    same verdicts as ``re``, exponential or not."""
    automaton = Automaton(Grammar.single(parse_regex(pattern)))
    automaton.build_all(32)
    for text in ("a" + "b" * 6 + "&", "x&", "y", "ab" * 5 + "a" + "b" * 8 + "y", "ab&"):
        state = automaton.step_bytes(automaton.start, text.encode())
        accepted = state != DEAD and automaton.is_accepting(state)
        assert accepted == bool(re.fullmatch(pattern, text)), (pattern, text)


def test_of_two_members_with_the_same_loop_one_stays() -> None:
    """``[ab]*a`` and ``[ab]*b`` each cover the other (every byte either may take, the
    other's loop takes): one of them is left, never neither."""
    from constrain.terms import TermStore

    store = TermStore()
    loop = store.repeat(store.byte_set(b"ab"), 0, None)
    first, second = (store.seq(loop, store.byte_set(c)) for c in (b"a", b"b"))
    tail = store.seq(store.byte_set(b"a"), store.byte_set(b"b"))  # covered by both
    sets = MemberSets(store)
    bits = sets.bitset_of([first, second, tail])
    assert sets.uncovered(bits) in (sets.bitset_of([first]), sets.bitset_of([second]))
    assert sets.uncovered(sets.bitset_of([tail])) == sets.bitset_of([tail])


def test_members_derived_ahead_step_as_members_derived_when_met() -> None:
    """``derive_reachable`` numbers and derives every member (the loop, the marker's
    tail and each count of the class: 8 for ``[ab]*a[ab]{6}c``); stepping then numbers
    nothing new, and lands on the same member terms as a set derived as it goes. Past
    its limit it stops and says so."""
    automaton = Automaton(Grammar.single(parse_regex("[ab]*a[ab]{6}c")))
    terms = automaton.terms
    first = terms.alternatives(automaton.rule_terms[0])
    ahead, lazy = MemberSets(terms), MemberSets(terms)
    assert ahead.derive_reachable(ahead.bitset_of(first), 64)
    numbered = ahead.size
    assert numbered == 9  # the start, the counts 6..0 of [ab] then c, and c's end
    for text in (b"ab" * 7 + b"c", b"aaaaaaaaa", b"bbbbab", b"abc", b"x"):
        got = ahead.step(ahead.bitset_of(first), text)
        assert sorted(ahead.members(got)) == sorted(
            lazy.members(lazy.step(lazy.bitset_of(first), text))), text
    assert ahead.size == numbered
    small = MemberSets(terms)
    assert not small.derive_reachable(small.bitset_of(first), 3)
    assert small.size < numbered
    # Found exponential while building ahead, an automaton derives them all then.
    assert exponential("[ab]*a[ab]{6}c")._member_sets.size == numbered


def test_states_made_from_members_make_no_term_until_asked() -> None:
    """A step of an exponential automaton makes its state from the members' bitset
    alone (no union term, no stack: half a step's time); asked for a row, the state
    makes its configuration, and the row's successors agree with ``re`` on every byte."""
    pattern = "[ab]*a[ab]{8}c"
    automaton = exponential(pattern)
    compiled = re.compile(pattern)
    texts = [b"ab" * 4 + b"a" + b"b" * i for i in range(9)] + [b"bbab" * 3, b"a" * 11]
    states = []
    for text in texts:
        terms = len(automaton.terms)
        state = automaton.step_bytes(automaton.start, text)
        assert state != DEAD and len(automaton.terms) == terms, text
        assert automaton.is_accepting(state) == bool(compiled.fullmatch(text.decode()))
        states.append((text, state))
    for text, state in states:
        row = automaton.row(state)
        for byte in b"abc":
            prefix = (text + bytes([byte])).decode()
            extendable = any(compiled.fullmatch(prefix + rest) for rest in ("", *_SUFFIXES))
            assert (row[byte] != DEAD) == extendable, prefix
            if row[byte] != DEAD:
                assert automaton.is_accepting(int(row[byte])) == bool(compiled.fullmatch(prefix))
