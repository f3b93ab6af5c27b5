"""Literal text at the start of a state's term, read through the trie without a state
per byte.

A JSON key is fixed text whose every character has a few spellings: ``"name"`` is also
``"n\\u0061me"`` or ``"n\\u0041me"``. At each position of such text the automaton has a
state for the character and one for every byte of its escapes, and a trie walk from
there builds the row of each state it reaches (the raw character and the first bytes of
its escape, at every position a token reaches: ~50 µs a row, several per position).

Here the text is read as a chain of *items*: plain items whose bytes say where they end
(a JSON-encoded character, a quote), and runs between them that the next item's first
byte ends (bounded whitespace), see :meth:`~constrain.automaton.Automaton.literal_text`.
Each distinct item's small automaton (:meth:`~constrain.terms.TermStore.item_automaton`)
is made once per process and kept in one table that every automaton of the process
shares (:class:`ItemTable`); a text is the list of its items, and the compiled walk
(:meth:`~constrain.walk_kernel.TrieWalk.text`) reads the trie through them. What follows the text is one state, the same from every position of
the text, and the mask engine walks it as usual from the trie nodes where the text ends.

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar, literal, seq, star, char_range
>>> a = Automaton(Grammar.single(seq(literal("key"), star(char_range("a", "z")))))
>>> runs = LiteralRuns(a)
>>> chain, first = runs.lookup(a.start)
>>> items, after = chain
>>> len(items), first, after == a.step_bytes(a.start, b"key")
(3, 0, True)
>>> inside = a.step_bytes(a.start, b"k")
>>> runs.lookup(inside)[0] is chain, runs.lookup(inside)[1]  # the same text, from "e"
(True, 1)
"""

from __future__ import annotations

import threading

import numpy as np

from .automaton import Automaton, Code
from .terms import Fingerprint

__all__ = ["ItemTable", "LiteralRuns", "TextChain"]

# Items read in one chain at most: a token is never longer than the vocabulary's
# longest (128 bytes on Qwen), and each item takes a byte at least. What lies beyond is
# the chain's ``after`` state, itself text again.
_MAX_ITEMS = 128
_LOW64 = (1 << 64) - 1


TextChain = tuple[np.ndarray, "int | None"]
"""One text: the ids of its items in :class:`LiteralRuns`' table (int32), and the
automaton state once all are read (``None`` where nothing follows). A plain tuple, as the
memo entries holding it: the collector stops tracking those, never a named tuple (a
schema's first instance kept ~2,700 of them, Github_ultra/o53885)."""


class ItemTable:
    """The automata of text items, one after the other, shared by every automaton of the
    process: the same characters are in the keys of every schema, and appending an
    item's edges to a table of each automaton cost ~7 µs an item, ~10% of a function
    call schema's time to first mask.

    Item ``i`` starts at state ``item_start[i]``; state ``s``'s edges are
    ``edge_ptr[s]:edge_ptr[s+1]`` (a byte set as four uint64 words in ``edge_bits``, the
    next state in ``edge_next``, ``-1`` where the item ends); ``state_ends[s]`` says
    whether the item may end in ``s`` before another byte. Append-only: an array that
    grows is replaced by a longer copy, so a walk holding the old one still reads every
    item it was given the id of. Thread-safe.
    """

    def __init__(self) -> None:
        self.edge_ptr = np.zeros(65, dtype=np.int32)
        self.state_ends = np.zeros(65, dtype=np.bool_)
        self.edge_bits = np.zeros((64, 4), dtype=np.uint64)
        self.edge_next = np.zeros(64, dtype=np.int32)
        self.item_start = np.zeros(16, dtype=np.int32)
        self.items = 0
        self._states = 0
        self._edges = 0
        self._ids: dict[Fingerprint, int] = {}
        self._lock = threading.Lock()

    @property
    def full(self) -> bool:
        """Whether new automata should start a table of their own (see :func:`_shared_table`)."""
        return self._states >= _MAX_TABLE_STATES

    def find(self, key: Fingerprint) -> int | None:
        """The id of the item whose structure is ``key``, if it is in the table."""
        return self._ids.get(key)

    def add(self, code: Code, key: Fingerprint | None) -> int:
        """Append one item's automaton (or find it, by ``key``); returns its id."""
        with self._lock:
            if key is not None:
                found = self._ids.get(key)
                if found is not None:
                    return found
            ident = self.items
            moves_of, ends = code
            base, states = self._states, len(moves_of)
            edges = sum(len(moves) for moves in moves_of)
            self._reserve(base + states, self._edges + edges)
            if ident >= len(self.item_start):
                self.item_start = _grown(self.item_start, ident + 1)
            self.item_start[ident] = base
            e = self._edges
            ptr, bits, nxt = self.edge_ptr, self.edge_bits, self.edge_next
            self.state_ends[base:base + states] = ends
            for offset, moves in enumerate(moves_of):
                ptr[base + offset] = e
                for byte_set, target in moves:
                    bits[e] = (byte_set & _LOW64, byte_set >> 64 & _LOW64,
                               byte_set >> 128 & _LOW64, byte_set >> 192)
                    nxt[e] = -1 if target < 0 else base + target
                    e += 1
            self._states, self._edges = base + states, e
            ptr[self._states] = e
            # Published last: an id is handed out only once its edges are written.
            self.items = ident + 1
            if key is not None:
                self._ids[key] = ident
            return ident

    def _reserve(self, states: int, edges: int) -> None:
        if states + 1 > len(self.edge_ptr):
            self.edge_ptr = _grown(self.edge_ptr, states + 1)
            self.state_ends = _grown(self.state_ends, states + 1)
        if edges > len(self.edge_next):
            self.edge_next = _grown(self.edge_next, edges)
            self.edge_bits = _grown(self.edge_bits, edges)


# States one shared table holds before new automata start another (~40 bytes a state
# with its edges: ~10 MB). Items are few (the characters of keys with their escapes, ~7
# states each), but each generation of structure ids (see terms._StructureIds) appends
# them again under new keys, and an item without a fingerprint is appended for every
# automaton that meets it.
_MAX_TABLE_STATES = 1 << 18
_table = ItemTable()
_table_lock = threading.Lock()


def _shared_table() -> ItemTable:
    """The table new automata append to: the process's, or a fresh one once it is full
    (automata holding the old one keep it)."""
    global _table
    with _table_lock:
        if _table.full:
            _table = ItemTable()
        return _table


class LiteralRuns:
    """The texts of one automaton's states, with their items' automata in the process's
    :class:`ItemTable` (``table``). Not thread-safe on its own: the mask engine calls it
    under its lock.
    """

    def __init__(self, automaton: Automaton) -> None:
        self._automaton = automaton
        self._by_state: dict[int, tuple[TextChain, int] | None] = {}
        # (concatenation an item begins, stack below) -> the chain and where in it.
        self._by_start: dict[tuple[int, int], tuple[TextChain, int]] = {}
        self._item_ids: dict[int, int] = {}
        self.table = _shared_table()

    def lookup(self, state: int) -> tuple[TextChain, int] | None:
        """The chain of the text ``state`` starts with, and the position in it where
        ``state`` is; ``None`` when its term does not start with text (at least two
        items). Memoized; positions of one text share one chain."""
        found = self._by_state.get(state, False)
        if found is not False:
            return found  # type: ignore[return-value]
        text = self._automaton.literal_text(state, _MAX_ITEMS)
        if text is None:
            found = None
        else:
            found = self._by_start.get((text.top, text.below))
            if found is None:
                chain = (np.array([self._item_id(item) for item in text.items],
                                  dtype=np.int32), text.after)
                for position, start in enumerate(text.starts):
                    self._by_start.setdefault((start, text.below), (chain, position))
                found = (chain, 0)
        self._by_state[state] = found
        return found

    def _item_id(self, item: int) -> int:
        found = self._item_ids.get(item)
        if found is None:
            automaton = self._automaton
            key = automaton.terms.fingerprint(item)
            found = None if key is None else self.table.find(key)
            if found is None:
                code = automaton.code_of(item)
                if code is None:  # pragma: no cover - literal_text only keeps items with one
                    raise AssertionError("an item of a text has no code automaton")
                found = self.table.add(code, key)
            self._item_ids[item] = found
        return found


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` copied into one at least twice as long (rows past the old ones zero)."""
    bigger = np.zeros((max(size, 2 * len(array)), *array.shape[1:]), dtype=array.dtype)
    bigger[:len(array)] = array
    return bigger
