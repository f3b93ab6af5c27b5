"""The numba-compiled parts of :mod:`constrain.walk_kernel` (imported on first use only,
so ``import constrain`` does not pay numba's import time)."""

from __future__ import annotations

import numba
import numpy as np

from .walk_kernel import SMALL_SUBTREE


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
    stack_nodes, stack_states, depth0, seed_state, num_roots,
    string_token, dup_ptr, dup_token, words, pending_nodes, pending_states,
):  # pragma: no cover - compiled
    sp = depth0
    if seed_state >= 0:  # a fresh walk: every root from one state
        for root in range(num_roots):
            stack_nodes[sp] = root
            stack_states[sp] = seed_state
            sp += 1
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
