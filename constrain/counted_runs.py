"""Masks and steps inside a counted run, from the run's loop and counts made per token.

A state inside ``x{lo,hi}·tail`` (a JSON string with ``maxLength``, where ``x`` is one
character or escape; ``[a-z ]{1,30}`` in a regex) is a new state at almost every token:
each count is another one. Walking each one's mask builds rows for every count its tokens
pass through, 3-5 ms a step on a 151k vocabulary against ~0.2 ms in a plain string.

Such a state differs from the loop ``x*·tail`` only in how many copies of ``x`` a token
may write and after how many the run may end. When ``x`` is unambiguous about where each
copy ends (no copy is a prefix of a longer one) and no byte that starts a copy also starts
what follows the run, each token splits the same way from every count: some whole copies
of ``x``, then either its end (maybe inside one more copy), or the run's end and bytes of
what follows. With, per token, that number of copies and how it ends (one pass over the
vocabulary per ``x``, shared by every constraint on the vocabulary):

* ``mask(x{lo,hi}·tail) = mask(x*·tail)`` ∩ {tokens of at most ``hi`` copies} ∩ {tokens
  that stay in the run, or leave it after ``lo`` copies or more};
* after a token of ``n`` whole copies that stays in the run the state is
  ``x{lo-n,hi-n}·tail``, and after one that leaves it, the loop's own next state.

>>> from constrain.vocab import Vocabulary
>>> from constrain.grammar import Grammar, char_range, literal, repeat, seq
>>> from constrain.automaton import Automaton
>>> from constrain.token_trie import TokenTrie
>>> vocab = Vocabulary.from_token_bytes([b"ab", b"abc!", b"!", b"a", None], eos_token_ids=[4])
>>> a = Automaton(Grammar.single(seq(repeat(char_range("a", "z"), 3, 9), literal("!"))))
>>> runs = CountedRuns(a, vocab, TokenTrie.build(vocab.token_bytes), shared=False)
>>> served = runs.lookup(a.start)
>>> profile = served.profile
>>> profile.copies.tolist(), [int(e) for e in profile.ends]  # STAYS 0, LEAVES 2, BREAKS 3
([2, 3, 0, 1, 0], [0, 2, 2, 0, 3])
>>> def generic(state, token): return a.step_bytes(state, vocab.token_bytes[token])
>>> runs.step(a.start, served, 0, generic) == generic(a.start, 0)  # "ab": 2 copies, 1-7 left
True
>>> runs.step(a.start, served, 1, generic) == generic(a.start, 1)  # "abc!": 3 copies, the end
True
>>> runs.step(a.start, served, 2, generic)  # "!": the run ends too soon
0
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import NamedTuple, cast

import numpy as np

from . import walk_kernel
from .automaton import Automaton, CountedRun
from .cache import recurring
from .token_trie import TokenTrie
from .vocab import Vocabulary

__all__ = ["CountedRuns", "RunProfile", "Served", "run_profile"]

# How a token ends, read from the start of a copy of the run's item.
STAYS = 0  # inside the run, after whole copies
PARTIAL = 1  # inside the run, inside one more copy (counted)
LEAVES = 2  # the run ends after whole copies and the token goes on in what follows
BREAKS = 3  # a byte no copy allows, inside one (or not a token: special ids)

# Profiles kept per vocabulary (two arrays of the vocabulary's size each, ~0.75 MB on a
# 151k vocabulary, plus filters), and filters kept per profile (a mask row each, ~19 KB).
_RECURRING_PROFILES = 16
_FILTERS_PER_PROFILE = 64


class RunProfile:
    """How every token of a vocabulary reads from the start of a copy of one run's item:
    ``copies`` (whole copies, plus one started and not finished; int32 per token id) and
    ``ends`` (``STAYS``, ``PARTIAL``, ``LEAVES`` or ``BREAKS``, int8), with the packed
    token filters made from them on request (cached; read-only)."""

    def __init__(self, copies: np.ndarray, ends: np.ndarray, starts: np.ndarray, words: int):
        self.copies = copies
        self.ends = ends
        self.starts = starts  # bool [256]: the bytes a copy may start with
        self._words = words
        usable = ends != BREAKS
        self._most_copies = int(copies[usable].max()) if usable.any() else 0
        leaving = ends == LEAVES
        self._most_before_leaving = int(copies[leaving].max()) if leaving.any() else -1
        self._filters: dict[tuple[str, int], np.ndarray] = {}
        self._lock = threading.Lock()

    def filters(self, least: int, most: int | None) -> tuple[int, int]:
        """``(least, most)`` as the filters see them: counts that no token tells apart
        from each other are one (-1: no limit)."""
        return (min(max(least, 0), self._most_before_leaving + 1),
                -1 if most is None or most >= self._most_copies else most)

    def at_most(self, most: int) -> np.ndarray | None:
        """Packed int32 words of the tokens writing at most ``most`` copies (``-1``: every
        token, then ``None``)."""
        if most < 0:
            return None
        return self._filter("at most", most, lambda: self.copies <= most)

    def leaving_after(self, least: int) -> np.ndarray | None:
        """Packed int32 words of the tokens that do not leave the run before ``least``
        copies; ``None`` when no token does."""
        if least <= 0:
            return None
        return self._filter("leaving after", least,
                            lambda: (self.ends != LEAVES) | (self.copies >= least))

    def _filter(self, kind: str, count: int, allowed: Callable[[], np.ndarray]) -> np.ndarray:
        key = (kind, count)
        found = self._filters.get(key)
        if found is None:
            packed = np.zeros(self._words * 4, dtype=np.uint8)
            bits = np.packbits(allowed(), bitorder="little")
            packed[: len(bits)] = bits
            found = packed.view(np.int32)
            found.flags.writeable = False
            with self._lock:
                found = self._filters.setdefault(key, found)
                if len(self._filters) > _FILTERS_PER_PROFILE:  # the oldest out first
                    del self._filters[next(iter(self._filters))]
        return found


def run_profile(trie: TokenTrie, size: int, dfa: np.ndarray, words: int,
                compiled: bool | None = None) -> RunProfile:
    """Read every token of ``trie`` (``size`` ids, ``words`` int32 words per mask) with
    the copy automaton ``dfa`` (see :meth:`Automaton.copy_automaton`): ~2 ms compiled
    (``compiled``: numba, by default when installed) on a 151k vocabulary, ~25 ms with
    numpy."""
    token_copies = np.zeros(size, dtype=np.int32)
    token_ends = np.full(size, BREAKS, dtype=np.int8)
    if walk_kernel.available() if compiled is None else compiled:
        walk_kernel.kernels()._read_copies(
            dfa, trie.string_data, trie.string_offsets, trie.string_token,
            trie.dup_ptr, trie.dup_token, token_copies, token_ends)
    else:
        _read_copies_numpy(dfa, trie, token_copies, token_ends)
    token_copies.flags.writeable = False
    token_ends.flags.writeable = False
    return RunProfile(token_copies, token_ends, dfa[0] >= 0, words)


def _read_copies_numpy(dfa: np.ndarray, trie: TokenTrie, token_copies: np.ndarray,
                       token_ends: np.ndarray) -> None:
    """:func:`constrain._walk_numba._read_copies` in numpy: all strings at once, one byte
    position at a time."""
    data, offsets = trie.string_data, trie.string_offsets
    lengths = np.diff(offsets)
    n = trie.num_strings
    state = np.zeros(n, dtype=np.int16)
    copies = np.zeros(n, dtype=np.int32)
    ends = np.full(n, STAYS, dtype=np.int8)
    active = np.flatnonzero(lengths > 0)
    depth = 0
    while len(active):
        current = state[active]
        nxt = dfa[current, data[offsets[active] + depth]]
        at_start = current == 0
        refused = nxt < 0
        copies[active[at_start & ~refused]] += 1
        ends[active[at_start & refused]] = LEAVES
        ends[active[~at_start & refused]] = BREAKS
        state[active] = nxt
        depth += 1
        active = active[~refused & (lengths[active] > depth)]
    ends[(ends == STAYS) & (state != 0)] = PARTIAL
    duplicates = np.repeat(np.arange(n), np.diff(trie.dup_ptr))
    for ids, strings in ((trie.string_token, np.arange(n)), (trie.dup_token, duplicates)):
        token_copies[ids] = copies[strings]
        token_ends[ids] = ends[strings]


class Served(NamedTuple):
    """A state :class:`CountedRuns` serves: its run, the run item's profile, and the
    state looping on the item instead of counting."""

    run: CountedRun
    profile: RunProfile
    loop: int


class CountedRuns:
    """The counted runs of one automaton on one vocabulary: which states are in one that
    the shortcut serves, their masks from their loop's, and their steps. Thread-safe.

    ``shared``: keep profiles in the vocabulary's process-wide cache (for its own trie;
    a trie of another making keeps its profiles to itself). :attr:`min_count`: runs whose
    counts are all below it are walked as other states are (a few rows cost less than
    reading the vocabulary for a new item, ~3 ms on 151k tokens, and the walk meets as
    few states as the count is high).
    """

    min_count = 6

    def __init__(self, automaton: Automaton, vocab: Vocabulary, trie: TokenTrie,
                 shared: bool = True) -> None:
        self._automaton = automaton
        self._vocab = vocab
        self._trie = trie
        self._words = (vocab.size + 31) // 32
        self._shared = (recurring(vocab, "counted run profiles", _RECURRING_PROFILES,
                                  keep_first=True) if shared else None)
        self._profiles: dict[int, RunProfile | None] = {}  # by item term
        # The loop state of each run (item, stack below, tail), None where not served.
        self._loops: dict[tuple[int, int, int], int | None] = {}
        self._masks: dict[tuple[int, int, int, bool], np.ndarray] = {}
        self._eos_words: np.ndarray | None = None  # made when a run is first served

    def lookup(self, state: int) -> Served | None:
        """The run ``state`` is in, where the shortcut is exact for it and worth it
        (see :attr:`min_count`); ``None`` elsewhere (then it builds nothing)."""
        run = self._automaton.counted_run(state)
        if run is None or max(run.least, run.most or 0) < self.min_count:
            return None
        profile = self.profile(run.item)
        if profile is None:
            return None
        key = (run.item, run.below, run.tail)
        if key not in self._loops:
            loop = None
            states = self._automaton.run_states(run)
            if states is not None:
                # No byte may start both a copy and what follows the run, or a token's
                # copies would depend on the count it starts from.
                follows = self._automaton.row(states[1]) != Automaton.DEAD
                if not np.count_nonzero(follows & profile.starts):
                    loop = states[0]
            self._loops[key] = loop
        loop = self._loops[key]
        return None if loop is None else Served(run, profile, loop)

    def mask(self, state: int, served: Served, loop_mask: np.ndarray) -> np.ndarray:
        """``state``'s packed mask (EOS set iff it may end), from ``loop_mask``, the mask
        of ``served.loop``. States that no token tells apart share one array."""
        run, profile = served.run, served.profile
        least, most = profile.filters(run.least, run.most)
        accepting = self._automaton.is_accepting(state)
        key = (served.loop, least, most, accepting)
        found = self._masks.get(key)
        if found is None:
            if self._eos_words is None:
                eos = np.zeros(self._words * 32, dtype=bool)
                eos[sorted(self._vocab.eos_token_ids)] = True
                self._eos_words = np.packbits(eos, bitorder="little").view(np.int32)
            words = loop_mask & ~self._eos_words
            for allowed in (profile.at_most(most), profile.leaving_after(least)):
                if allowed is not None:
                    words &= allowed
            if accepting:
                words |= self._eos_words
            words.flags.writeable = False
            found = self._masks.setdefault(key, words)
        return found

    def memo_arrays(self) -> list[np.ndarray]:
        """The masks made so far (see :meth:`TokenMasks.memory_bytes
        <constrain.masks.TokenMasks.memory_bytes>`)."""
        return list(self._masks.values())

    def memo_entries(self) -> int:
        return len(self._masks)

    def forget(self) -> None:
        """Drop the masks made so far (made again when asked for)."""
        self._masks.clear()

    def step(self, state: int, served: Served, token: int,
             loop_step: Callable[[int, int], int]) -> int:
        """The state after ``token`` from ``state``, which :meth:`lookup` serves with
        ``served``; ``loop_step(state, token)`` steps the loop state."""
        run, profile = served.run, served.profile
        if not 0 <= token < len(profile.ends):
            return Automaton.DEAD
        ends, copies = int(profile.ends[token]), int(profile.copies[token])
        if ends == BREAKS or (run.most is not None and copies > run.most):
            return Automaton.DEAD
        if ends == STAYS:
            return self._automaton.after_copies(run, copies)
        if ends == LEAVES:
            return Automaton.DEAD if copies < run.least else loop_step(served.loop, token)
        data = self._vocab.token_bytes[token]
        return self._automaton.step_bytes(state, data) if data is not None else Automaton.DEAD

    def profile(self, item: int) -> RunProfile | None:
        """How every token reads as copies of ``item`` (see :func:`run_profile`), kept per
        vocabulary; ``None`` where ``item`` is ambiguous about where a copy ends."""
        if item in self._profiles:
            return self._profiles[item]
        key = self._automaton.terms.fingerprint(item)
        found = None
        if key is not None:
            if self._shared is not None:
                found = cast("RunProfile | None", self._shared.get(key))
            if found is None:
                dfa = self._automaton.copy_automaton(item)
                if dfa is not None:
                    found = run_profile(self._trie, self._vocab.size, dfa, self._words)
                    if self._shared is not None:
                        self._shared.offer(key, found)
        self._profiles[item] = found
        return found
