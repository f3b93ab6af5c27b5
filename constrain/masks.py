"""Per-state token masks: which tokens an automaton state allows, as packed int32 bits.

The layout is the one vLLM, SGLang and xgrammar use: token ``t`` is allowed iff bit
``t % 32`` of word ``t // 32`` is set. A mask is computed once per automaton state by
walking the vocabulary's :class:`~constrain.token_trie.TokenTrie` level by level with numpy
(no Python loop over tokens), then memoized, so the per-token cost of a state seen before is
one dictionary lookup and a row copy.

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar, literal, alt
>>> from constrain.vocab import Vocabulary
>>> vocab = Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
>>> masks = TokenMasks(Automaton(Grammar.single(alt(literal("ab"), literal("a")))), vocab)
>>> masks.allowed_token_ids(masks.automaton.start).tolist()
[0, 2]
"""

from __future__ import annotations

import threading

import numpy as np

from .automaton import Automaton
from .cache import token_trie
from .token_trie import TokenTrie
from .vocab import Vocabulary

__all__ = ["TokenMasks", "mask_words"]


def mask_words(size: int) -> int:
    """Number of int32 words holding ``size`` bits."""
    return (size + 31) // 32


class TokenMasks:
    """Memoized masks of one automaton over one vocabulary (thread-safe)."""

    def __init__(self, automaton: Automaton, vocab: Vocabulary, trie: TokenTrie | None = None):
        self.automaton = automaton
        self.vocab = vocab
        self.trie = trie if trie is not None else token_trie(vocab)
        self.words = mask_words(vocab.size)
        self._eos = np.array(sorted(vocab.eos_token_ids), dtype=np.int64)
        self._masks: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def mask(self, state: int) -> np.ndarray:
        """The packed int32 mask of ``state`` (read-only; EOS set iff the state may end)."""
        found = self._masks.get(state)
        if found is None:
            with self._lock:
                found = self._masks.get(state)
                if found is None:
                    found = self._compute(state)
                    self._masks[state] = found
        return found

    def allowed_token_ids(self, state: int) -> np.ndarray:
        """Token ids allowed in ``state``, ascending."""
        bits = np.unpackbits(self.mask(state).view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self.vocab.size])

    def _compute(self, state: int) -> np.ndarray:
        allowed = np.zeros(self.words * 32, dtype=bool)
        if state != Automaton.DEAD:
            strings = self._walk(state)
            if len(strings):
                allowed[self.trie.token_ids_of(strings)] = True
            if self.automaton.is_accepting(state):
                allowed[self._eos] = True
        packed = np.packbits(allowed, bitorder="little").view("<i4").astype(np.int32)
        packed.flags.writeable = False
        return packed

    def _walk(self, state: int) -> np.ndarray:
        """Sorted-string indices of every token that can be consumed from ``state``."""
        trie, automaton = self.trie, self.automaton
        found: list[np.ndarray] = []
        if trie.max_depth == 0:
            return np.zeros(0, dtype=np.int32)
        nodes = np.arange(len(trie.byte[0]), dtype=np.int64)
        states = np.full(len(nodes), state, dtype=np.int32)
        for depth in range(trie.max_depth):
            table = automaton.rows_for(states)
            nxt = table[states, trie.byte[depth][nodes]]
            alive = nxt != Automaton.DEAD
            if not alive.all():
                nodes, nxt = nodes[alive], nxt[alive]
            if not len(nodes):
                break
            terminal = trie.terminal[depth][nodes]
            found.append(terminal[terminal >= 0])
            if depth + 1 == trie.max_depth:
                break
            lo = trie.child_lo[depth][nodes]
            counts = trie.child_hi[depth][nodes] - lo
            total = int(counts.sum())
            if not total:
                break
            # The children of every live node, as one index array (a vectorized "ranges").
            starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
            nodes = starts + np.arange(total)
            states = np.repeat(nxt, counts)
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int32)
