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

__all__ = ["available", "walk"]

# numba is optional (without it the numpy walk is used) and slow to import, so it is only
# looked up here and imported on the first compiled walk.
_HAVE_NUMBA = importlib.util.find_spec("numba") is not None


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
    from ._walk_numba import _walk  # imported on first use: numba is slow to import

    n = _walk(
        rows, *loops,
        flat.byte, flat.terminal, flat.child_lo, flat.child_hi, flat.start, flat.end,
        flat.utf8_state, flat.suffix_lo, flat.suffix_hi, flat.suffix_non_ascii,
        flat.suffix_chars, flat.subtree_valid, stack_nodes, stack_states, k,
        flat.string_token, flat.dup_ptr, flat.dup_token, packed.view(np.uint32),
        pending_nodes, pending_states,
    )
    return pending_nodes[:n].copy(), pending_states[:n].copy()

