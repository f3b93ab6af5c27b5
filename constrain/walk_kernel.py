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

__all__ = ["available", "TrieWalk"]

# numba is optional (without it the numpy walk is used) and slow to import, so it is only
# looked up here and imported on the first compiled walk.
_HAVE_NUMBA = importlib.util.find_spec("numba") is not None


_local = threading.local()
_kernel: Any = None  # the numba function, once imported

# Subtrees with at most this many strings are walked rather than summarized.
SMALL_SUBTREE = 32


def available() -> bool:
    """Whether the compiled walk can be used."""
    return _HAVE_NUMBA


class TrieWalk:
    """The compiled walk over one trie: its argument tuples are built once, and each thread
    reuses two work-stack pairs that swap roles between rounds, so one round costs the
    kernel call and nothing else (the per-call Python set-up used to cost more than the
    walk of a small mask)."""

    def __init__(self, flat: Any) -> None:
        self.flat = flat
        self._nodes = (
            flat.byte, flat.terminal, flat.child_lo, flat.child_hi, flat.start, flat.end,
            flat.utf8_state, flat.suffix_lo, flat.suffix_hi, flat.suffix_non_ascii,
            flat.suffix_chars, flat.subtree_valid,
        )
        self._strings = (flat.string_token, flat.dup_ptr, flat.dup_token)
        # A walk from one state visits a trie node at most once, so a stack never holds
        # more than every node plus the resumed ones.
        self._size = 2 * flat.num_nodes + flat.num_roots + 1
        self._num_roots = flat.num_roots

    def _buffers(self) -> list[np.ndarray]:
        buffers = getattr(_local, "buffers", None)
        if buffers is None or len(buffers[0]) < self._size:
            buffers = [np.empty(self._size, dtype=np.int64) for _ in range(4)]
            _local.buffers = buffers
        return buffers

    def start(self, rows: np.ndarray, loops: tuple[np.ndarray, ...], state: int,
              words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Walk every token from ``state``, setting allowed tokens' bits in the uint32 mask
        ``words``; returns the ``(nodes, states)`` still pending (views, valid until the
        next call on this thread)."""
        return self._run(rows, loops, state, 0, words, 0)

    def resume(self, rows: np.ndarray, loops: tuple[np.ndarray, ...], count: int,
               words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Continue from the ``count`` pairs the previous call returned as pending."""
        return self._run(rows, loops, -1, count, words, 1)

    def _run(self, rows: np.ndarray, loops: tuple[np.ndarray, ...], state: int, count: int,
             words: np.ndarray, flip: int) -> tuple[np.ndarray, np.ndarray]:
        global _kernel
        kernel = _kernel
        if kernel is None:
            from ._walk_numba import _walk  # imported on first use: numba is slow to import

            kernel = _kernel = _walk
        buffers = self._buffers()
        if flip:  # the previous round's pending pairs become this round's stack
            buffers[0], buffers[1], buffers[2], buffers[3] = (
                buffers[2], buffers[3], buffers[0], buffers[1]
            )
        stack_nodes, stack_states, pending_nodes, pending_states = buffers
        n = kernel(rows, *loops, *self._nodes, stack_nodes, stack_states, count, state,
                  self._num_roots, *self._strings, words, pending_nodes, pending_states)
        return pending_nodes[:n], pending_states[:n]
