"""The trie walk compiled with numba, when numba is installed (``pip install 'constrain[fast]'``).

Same result as the pure-numpy level walk in :mod:`constrain.masks`, but as one depth-first
pass in machine code, so the cost is a few nanoseconds per live trie node instead of a
numpy call per trie level. The kernel cannot build automaton states (that is Python), so it
returns the ``(node, state)`` pairs it could not expand; the caller builds those states and
calls it again with them, until nothing is pending.

Compiled functions are cached on disk by numba (``cache=True``), so only the first process
on a machine pays the JIT time.

>>> available() in (True, False)
True
"""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

import numpy as np

from .utf8 import NON_ASCII_NONE, NON_ASCII_SPACES, UTF8_STEP

__all__ = ["NON_ASCII_UNCHECKED", "Exits", "TrieWalk", "available", "self_looping"]

# numba is optional (without it the numpy walk is used) and slow to import, so it is only
# looked up here and imported on the first compiled walk.
_HAVE_NUMBA = importlib.util.find_spec("numba") is not None


_local = threading.local()
_compiled: Any = None  # the module of numba functions, once imported


def kernels() -> Any:
    """:mod:`constrain._walk_numba`, imported on the first walk (numba is slow to
    import); kept here, since an import statement at every call cost ~10 µs of a small
    regex's compile right after a collection."""
    global _compiled
    if _compiled is None:
        from . import _walk_numba

        _compiled = _walk_numba
    return _compiled

# How much of the multi-byte characters a state's loop takes (the loop arrays'
# ``utf8`` entry): a level of constrain.utf8 (none, every one but NON_ASCII_SPACES as
# \S or ECMA's "." leave them out, all); or not all, and whether all but the spaces is
# not checked yet: that check builds the rows of ~20 states inside characters, which a
# state never walked into a multi-byte character does not need (checking every state
# as its loop was learnt made the steps of word-count schemas slower), so it waits
# until a walk meets a subtree that only it could accept whole. On 123 schemas whose
# patterns use \S or ".", stopping there only above subtrees of more than 256 strings,
# then 32, then 8, then any, read time between masks 0.965, 0.978 and 0.982 in turn.
NON_ASCII_UNCHECKED = 3
# NON_ASCII_SPACES by code point, for the loop plan's kernel (all below U+10000).
IS_SPACE = np.zeros(max(NON_ASCII_SPACES) + 1, dtype=np.bool_)
IS_SPACE[list(NON_ASCII_SPACES)] = True
IS_SPACE.flags.writeable = False

# Subtrees with at most this many strings are walked rather than summarized.
SMALL_SUBTREE = 32
# The loop budget of a state that loops on itself (no character limit).
UNBOUNDED = 1 << 30


class _OwnPlans(dict):  # type: ignore[type-arg]
    """A walk's own loop plans, with the interface of a shared cache."""

    def offer(self, key: Any, value: Any) -> None:
        self[key] = value


def available() -> bool:
    """Whether the compiled walk can be used."""
    return _HAVE_NUMBA


class TrieWalk:
    """The compiled walk over one trie: its argument tuples are built once, and each thread
    reuses two work-stack pairs that swap roles between rounds, so one round costs the
    kernel call and nothing else (the per-call Python set-up used to cost more than the
    walk of a small mask)."""

    def __init__(self, flat: Any, loop_plans: Any = None) -> None:
        """``loop_plans``: where :meth:`loop_plan` keeps its results, any object with
        ``get(key)`` and ``offer(key, value)`` (a
        :class:`~constrain.cache.RecurringCache` shared by every constraint on one
        vocabulary); by default a dictionary of this walk's own."""
        self.flat = flat
        self._loop_plans = loop_plans if loop_plans is not None else _OwnPlans()
        self._nodes = (
            flat.byte, flat.terminal, flat.child_lo, flat.child_hi, flat.start, flat.end,
            flat.utf8_state, flat.suffix_lo, flat.suffix_hi, flat.suffix_non_ascii,
            flat.suffix_chars, flat.suffix_space, flat.subtree_valid,
        )
        self._strings = (flat.string_token, flat.dup_ptr, flat.dup_token)
        # A walk from one state visits a trie node at most once, so a stack never holds
        # more than every node plus the resumed ones.
        self._size = 2 * flat.num_nodes + flat.num_roots + 1
        self._num_roots = flat.num_roots

    def _buffers(self) -> list[np.ndarray]:
        buffers = getattr(_local, "buffers", None)
        if buffers is None or len(buffers[0]) < self._size:
            # Two stack/pending pairs, then the exits of a head's plan.
            buffers = [np.empty(self._size, dtype=np.int64) for _ in range(5)]
            _local.buffers = buffers
        return buffers

    def start(self, rows: np.ndarray, loops: tuple[np.ndarray, ...], state: int,
              words: np.ndarray, exits: Exits | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Walk every token from ``state``, setting allowed tokens' bits in the uint32 mask
        ``words``; returns the ``(nodes, states)`` still pending (views, valid until the
        next call on this thread).

        When ``state`` loops on itself over a character class (``loops`` says so, and must
        be known for ``state``), the tokens made only of those characters come from a mask
        cached per class and the walk only visits the rest. With ``exits``, the nodes after
        which the walk's state accepts are recorded there (see :class:`Exits`).
        """
        # A state that may end would make every node of its loop an exit.
        if not self_looping(rows, loops, state) or (exits is not None
                                                     and exits.accepting[state]):
            return self._run(rows, loops, state, 0, words, 0, exits)
        lo, hi, utf8 = int(loops[0][state]), int(loops[1][state]), int(loops[2][state])
        allowed, loop_exits = self.loop_plan(lo, hi, utf8, len(words))
        words |= allowed
        return self.seeded(rows, loops, loop_exits, state, words, exits)

    def seeded(self, rows: np.ndarray, loops: tuple[np.ndarray, ...], nodes: np.ndarray,
               state: int, words: np.ndarray,
               exits: Exits | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Walk the subtrees of ``nodes`` only, each node's byte read from ``state``."""
        stack_nodes, stack_states = self._buffers()[:2]
        n = len(nodes)
        stack_nodes[:n] = nodes
        stack_states[:n] = state
        return self._run(rows, loops, -1, n, words, 0, exits)

    def resume(self, rows: np.ndarray, loops: tuple[np.ndarray, ...], count: int,
               words: np.ndarray, exits: Exits | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Continue from the ``count`` pairs the previous call returned as pending."""
        return self._run(rows, loops, -1, count, words, 1, exits)

    def whole(self, rows: np.ndarray, loops: tuple[np.ndarray, ...], states: list[int],
              masks: np.ndarray, accepting: np.ndarray, eos_columns: np.ndarray,
              eos_values: np.ndarray) -> int:
        """What :meth:`start` does for each of ``states``, into the matching uint32 row
        of ``masks``, in one kernel call (without exits), with the EOS bits (``eos_values``
        in the words ``eos_columns``, uint32) set in the rows of states that
        ``accepting`` (indexed by state) says may end; returns how many were walked to
        the end. The walk of the next one stopped at a row or a loop not known yet, and
        its row of ``masks`` is partial."""
        kernel = kernels()._walk_states
        # Lists, checked and packed in Python: each numpy call costs more than a small
        # regex's walk, ten times more right after a collection.
        if states and max(states) >= len(rows):
            raise IndexError("trie walk started from a state the row table does not hold")
        plan: list[int] = []
        # Distinct loop plans, by id of their exits: states looping on one class (the
        # common case) share its exits and its tokens.
        rows_of_plans: dict[int, int] = {}
        seeds: list[tuple[np.ndarray, np.ndarray]] = []
        offsets = [0]
        for state in states:
            if not self_looping(rows, loops, state):
                plan += (state, -1, -1, -1)
                continue
            allowed, loop_exits = self.loop_plan(
                loops[0].item(state), loops[1].item(state), loops[2].item(state),
                masks.shape[1],
            )
            row = rows_of_plans.setdefault(id(loop_exits), len(seeds))
            if row == len(seeds):
                seeds.append((allowed, loop_exits))
                offsets.append(offsets[-1] + len(loop_exits))
            plan += (state, offsets[row], offsets[row + 1], row)
        if not seeds:
            seed_nodes, seed_masks = _NO_SEEDS, _NO_SEED_MASKS
        elif len(seeds) == 1:
            seed_nodes, seed_masks = seeds[0][1], seeds[0][0].reshape(1, -1)
        else:
            seed_nodes = np.concatenate([s[1] for s in seeds])
            seed_masks = np.stack([s[0] for s in seeds])
        stack_nodes, stack_states, pending_nodes, pending_states, _ = self._buffers()
        return int(kernel(rows, *loops, *self._nodes, stack_nodes, stack_states,
                          self._num_roots, *self._strings, np.array(plan, dtype=np.int64),
                          seed_nodes, seed_masks, masks, pending_nodes, pending_states,
                          accepting, eos_columns, eos_values))

    def text(self, table: Any, items: np.ndarray, first: int, seeds: np.ndarray | None,
             words: np.ndarray) -> np.ndarray:
        """Read the trie through a text: the automata of ``items`` (ids in ``table``, an
        :class:`~constrain.literal_runs.ItemTable`) from ``items[first]`` on, at every
        root (``seeds`` ``None``) or at ``seeds``, setting in ``words`` every token read
        within the text; returns the nodes with children where the whole text is read
        (a new array)."""
        kernel = kernels()._text_walk
        stack_nodes, stack_states, stack_items, _, ends = self._buffers()
        flat = self.flat
        n = kernel(
            table.edge_ptr, table.edge_bits, table.edge_next, table.state_ends,
            table.item_start, items, first,
            flat.byte, flat.terminal, flat.child_lo, flat.child_hi, self._num_roots,
            *self._strings, _NO_SEEDS if seeds is None else seeds, seeds is None, words,
            stack_nodes, stack_states, stack_items, ends,
        )
        return ends[:n].copy()  # type: ignore[no-any-return]

    def loop_plan(self, ascii_lo: int, ascii_hi: int, non_ascii: int,
                  words: int) -> tuple[np.ndarray, np.ndarray]:
        """For states looping on a character class (ASCII bytes in bits 0-63 and 64-127 of
        ``ascii_lo``/``ascii_hi``; the multi-byte characters ``non_ascii`` says, a level
        of :mod:`constrain.utf8`, and ``NON_ASCII_UNCHECKED`` reads as none): the
        uint32 mask of tokens made only of such characters, and the trie nodes where a
        token leaves the loop. Both depend on the class alone, so they are computed once
        per vocabulary and class (a JSON string's content is one class in every schema)."""
        if non_ascii == NON_ASCII_UNCHECKED:
            non_ascii = NON_ASCII_NONE
        key = (ascii_lo, ascii_hi, non_ascii, words)
        found = self._loop_plans.get(key)
        if found is None:
            flat = self.flat
            allowed = np.zeros(words, dtype=np.uint32)
            exits = np.empty(flat.num_nodes, dtype=np.int64)
            n = kernels()._loop_plan(
                np.uint64(ascii_lo), np.uint64(ascii_hi), non_ascii, UTF8_STEP, IS_SPACE,
                flat.byte, flat.terminal, flat.child_lo, flat.child_hi, flat.start, flat.end,
                flat.utf8_state, flat.suffix_lo, flat.suffix_hi, flat.suffix_non_ascii,
                flat.suffix_space, flat.subtree_valid, flat.num_roots, *self._strings, allowed, exits,
            )
            exits = exits[:n].copy()
            allowed.flags.writeable = False
            exits.flags.writeable = False
            found = (allowed, exits)
            self._loop_plans.offer(key, found)
        return found

    def _run(self, rows: np.ndarray, loops: tuple[np.ndarray, ...], state: int, count: int,
             words: np.ndarray, flip: int,
             exits: Exits | None) -> tuple[np.ndarray, np.ndarray]:
        kernel = kernels()._walk
        buffers = self._buffers()
        if flip:  # the previous round's pending pairs become this round's stack
            buffers[0], buffers[1], buffers[2], buffers[3] = (
                buffers[2], buffers[3], buffers[0], buffers[1]
            )
        stack_nodes, stack_states, pending_nodes, pending_states, exit_nodes = buffers
        # The kernel does not check bounds: a stale row table would be read outside (a
        # crash, not an error), so the states it starts from are checked here. Resumed
        # pairs are the kernel's own, read from rows of a table that only grows.
        if state >= len(rows) or (count and not flip
                                  and int(stack_states[:count].max()) >= len(rows)):
            raise IndexError("trie walk started from a state the row table does not hold")
        if exits is None:
            accepting, n_exits = _NO_ACCEPTING, -1
        else:
            accepting, n_exits = exits.accepting, len(exits.nodes)
        n, n_exits = kernel(rows, *loops, *self._nodes, stack_nodes, stack_states, count, state,
                            self._num_roots, *self._strings, words, pending_nodes,
                            pending_states, accepting, exit_nodes, n_exits)
        if exits is not None and n_exits > len(exits.nodes):
            exits.nodes.extend(exit_nodes[len(exits.nodes):n_exits].tolist())
        return pending_nodes[:n], pending_states[:n]


def self_looping(rows: np.ndarray, loops: tuple[np.ndarray, ...], state: int) -> bool:
    """Whether what ``loops`` knows of ``state`` is a loop back to itself, not a counted
    run of a class (whose tokens the count limits, leading to other states)."""
    if not loops[4][state]:
        return False
    bits = int(loops[0][state]) | int(loops[1][state]) << 64
    return bits != 0 and int(rows[state, (bits & -bits).bit_length() - 1]) == state


class Exits:
    """What a walk records when asked to: the trie nodes with children after which the
    walk's state accepts (``accepting``, indexed by state, says which states do). The
    mask engine walks a state's head this way, then continues from these nodes in the
    state's tail."""

    __slots__ = ("accepting", "nodes")

    def __init__(self, accepting: np.ndarray) -> None:
        self.accepting = accepting
        self.nodes: list[int] = []


_NO_ACCEPTING = np.zeros(1, dtype=bool)
_NO_SEEDS = np.zeros(0, dtype=np.int64)
_NO_SEED_MASKS = np.zeros((0, 0), dtype=np.uint32)
