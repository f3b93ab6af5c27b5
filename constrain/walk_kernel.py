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

import threading
from typing import Any

import numpy as np

__all__ = ["available", "walk"]

try:  # numba is optional: without it the numpy walk is used.
    import numba

    _HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised where numba is absent
    _HAVE_NUMBA = False


_local = threading.local()

# Subtrees with at most this many strings are walked rather than summarized.
SMALL_SUBTREE = 32


def _scratch(size: int) -> tuple[np.ndarray, ...]:
    """Per-thread work stacks, reused across walks (allocating them per mask costs ms)."""
    arrays = getattr(_local, "arrays", None)
    if arrays is None or len(arrays[0]) < size:
        arrays = tuple(np.empty(size, dtype=np.int64) for _ in range(4))
        _local.arrays = arrays
    return arrays


def available() -> bool:
    """Whether the compiled walk can be used."""
    return _HAVE_NUMBA


if _HAVE_NUMBA:

    @numba.njit(cache=True, nogil=True, inline="always")
    def _allow(s, string_token, dup_ptr, dup_token, words):  # pragma: no cover - compiled
        t = string_token[s]
        words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
        for k in range(dup_ptr[s], dup_ptr[s + 1]):
            t = dup_token[k]
            words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)

    @numba.njit(cache=True, nogil=True)
    def _walk(
        rows, loop_lo, loop_hi, loop_utf8, loop_budget, loop_known,
        byte, terminal, child_lo, child_hi, start, end, utf8_state,
        suffix_lo, suffix_hi, suffix_non_ascii, suffix_chars, subtree_valid,
        stack_nodes, stack_states, depth0,
        string_token, dup_ptr, dup_token, words, pending_nodes, pending_states,
    ):  # pragma: no cover - compiled
        sp = depth0
        n_pending = 0
        while sp > 0:
            sp -= 1
            node = stack_nodes[sp]
            state = stack_states[sp]
            if rows[state, 0] < 0:
                pending_nodes[n_pending] = node
                pending_states[n_pending] = state
                n_pending += 1
                continue
            nxt = rows[state, byte[node]]
            if nxt == 0:
                continue
            if utf8_state[node] == 0:
                if not loop_known[nxt]:
                    # Worth stopping to learn whether nxt loops only for a big subtree.
                    if end[node] - start[node] > SMALL_SUBTREE:
                        pending_nodes[n_pending] = node
                        pending_states[n_pending] = state
                        n_pending += 1
                        continue
                elif (
                    (suffix_lo[node] & ~loop_lo[nxt]) == 0
                    and (suffix_hi[node] & ~loop_hi[nxt]) == 0
                    and (not suffix_non_ascii[node] or (loop_utf8[nxt] and subtree_valid[node]))
                    and suffix_chars[node] <= loop_budget[nxt]
                ):
                    for s in range(start[node], end[node]):
                        _allow(s, string_token, dup_ptr, dup_token, words)
                    continue
            t = terminal[node]
            if t >= 0:
                _allow(t, string_token, dup_ptr, dup_token, words)
            for child in range(child_lo[node], child_hi[node]):
                stack_nodes[sp] = child
                stack_states[sp] = nxt
                sp += 1
        return n_pending

    def walk(flat: Any, rows: np.ndarray, loops: tuple[np.ndarray, ...],
             nodes: np.ndarray, states: np.ndarray, packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Walk from ``(nodes, states)``, setting allowed tokens' bits in the int32 mask
        ``packed``; return the ``(nodes, states)`` still pending."""
        stack_nodes, stack_states, pending_nodes, pending_states = _scratch(
            flat.num_nodes + len(nodes) + 1
        )
        k = len(nodes)
        stack_nodes[:k] = nodes
        stack_states[:k] = states
        n = _walk(
            rows, *loops,
            flat.byte, flat.terminal, flat.child_lo, flat.child_hi, flat.start, flat.end,
            flat.utf8_state, flat.suffix_lo, flat.suffix_hi, flat.suffix_non_ascii,
            flat.suffix_chars, flat.subtree_valid, stack_nodes, stack_states, k,
            flat.string_token, flat.dup_ptr, flat.dup_token, packed.view(np.uint32),
            pending_nodes, pending_states,
        )
        return pending_nodes[:n].copy(), pending_states[:n].copy()

else:  # pragma: no cover

    def walk(*args: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        raise RuntimeError("numba is not installed")


