"""The numba-compiled parts of :mod:`constrain.walk_kernel` (imported on first use only,
so ``import constrain`` does not pay numba's import time)."""

from __future__ import annotations

import numba
import numpy as np

from .utf8 import NON_ASCII_ALL, NON_ASCII_BUT_SPACES, NON_ASCII_NONE
from .walk_kernel import NON_ASCII_UNCHECKED, SMALL_SUBTREE


@numba.njit(cache=True, nogil=True, inline="always")
def _allow(s, string_token, dup_ptr, dup_token, words):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    t = string_token[s]
    words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
    for k in range(dup_ptr[s], dup_ptr[s + 1]):
        t = dup_token[k]
        words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)


@numba.njit(cache=True, nogil=True, inline="always")
def _non_ascii_fits(level, space):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Whether a loop of this non-ASCII ``level`` (see constrain.utf8.NON_ASCII_ALL) takes
    every multi-byte character of a valid suffix, given whether a non-ASCII space is one."""
    return level == NON_ASCII_ALL or (level == NON_ASCII_BUT_SPACES and not space)


@numba.njit(cache=True, nogil=True)
def _walk(  # type: ignore[no-untyped-def]
    rows, loop_lo, loop_hi, loop_utf8, loop_budget, loop_known,
    byte, terminal, child_lo, child_hi, start, end, utf8_state,
    suffix_lo, suffix_hi, suffix_non_ascii, suffix_chars, suffix_space, subtree_valid,
    stack_nodes, stack_states, depth0, seed_state, num_roots,
    string_token, dup_ptr, dup_token, words, pending_nodes, pending_states,
    accepting, exits, n_exits,
):  # pragma: no cover - compiled
    """Returns ``(pending, exits)``: how many ``(node, state)`` pairs wait for Python, and
    how many nodes ``exits`` holds. When ``n_exits >= 0`` (a head's plan), every node
    with children after which the state accepts is appended to ``exits`` (from index
    ``n_exits``), and no subtree is accepted whole from an accepting state, since its
    nodes may be exits too."""
    record = n_exits >= 0
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
            elif not (record and accepting[nxt]) and (
                (suffix_lo[node] & ~loop_lo[nxt]) == 0
                and (suffix_hi[node] & ~loop_hi[nxt]) == 0
                and suffix_chars[node] <= loop_budget[nxt]
            ):
                if not suffix_non_ascii[node] or (
                    subtree_valid[node] and _non_ascii_fits(loop_utf8[nxt], suffix_space[node])
                ):
                    for s in range(start[node], end[node]):
                        _allow(s, string_token, dup_ptr, dup_token, words)
                    continue
                if loop_utf8[nxt] == NON_ASCII_UNCHECKED and subtree_valid[node]:
                    # Worth stopping to learn whether nxt loops on all but the spaces.
                    pending_nodes[n_pending] = node
                    pending_states[n_pending] = state
                    n_pending += 1
                    continue
        t = terminal[node]
        if t >= 0:
            _allow(t, string_token, dup_ptr, dup_token, words)
        if record and accepting[nxt] and child_hi[node] > child_lo[node]:
            exits[n_exits] = node
            n_exits += 1
        for child in range(child_lo[node], child_hi[node]):
            stack_nodes[sp] = child
            stack_states[sp] = nxt
            sp += 1
    return n_pending, n_exits


@numba.njit(cache=True, nogil=True)
def _text_walk(  # type: ignore[no-untyped-def]
    edge_ptr, edge_bits, edge_next, state_ends, item_start, items, first,
    byte, terminal, child_lo, child_hi, num_roots, string_token, dup_ptr, dup_token,
    seeds, from_roots, words, stack_nodes, stack_states, stack_items, ends,
):  # pragma: no cover - compiled
    """The walk of :mod:`constrain.literal_runs`: read the trie through a text, the
    automata of its ``items`` one after the other from ``items[first]``, at every root
    (``from_roots``) or at the nodes ``seeds``. A table state ``s`` has the edges
    ``edge_ptr[s]:edge_ptr[s+1]`` (a 256-bit byte set in four words of ``edge_bits``,
    the next state in ``edge_next``, -1 where the item ends); where ``state_ends[s]``
    the item may also end before the byte, which the next item then reads; item ``i``
    starts at state ``item_start[i]``. Every token read within the text is allowed in
    ``words``; the nodes with children where the whole text is read go to ``ends``,
    whose count is returned. The bytes say where each item ends, so a node is reached
    in one state only."""
    sp = 0
    start = item_start[items[first]]
    n_seeds = num_roots if from_roots else len(seeds)
    for k in range(n_seeds):
        stack_nodes[sp] = k if from_roots else seeds[k]
        stack_states[sp] = start
        stack_items[sp] = first
        sp += 1
    n_items = len(items)
    n_ends = 0
    while sp > 0:
        sp -= 1
        node = stack_nodes[sp]
        s = stack_states[sp]
        position = stack_items[sp]
        b = byte[node]
        word = b >> 6
        bit = np.uint64(1) << np.uint64(b & 63)
        nxt = -2
        while True:
            for e in range(edge_ptr[s], edge_ptr[s + 1]):
                if edge_bits[e, word] & bit:
                    nxt = edge_next[e]
                    break
            if nxt != -2 or not state_ends[s]:
                break
            position += 1  # the item ends before the byte: the next one reads it
            s = item_start[items[position]]
        if nxt == -2:
            continue
        t = terminal[node]
        if t >= 0:
            _allow(t, string_token, dup_ptr, dup_token, words)
        if nxt == -1:  # the item is read: the next one, or the end of the text
            position += 1
            if position == n_items:
                if child_hi[node] > child_lo[node]:
                    ends[n_ends] = node
                    n_ends += 1
                continue
            nxt = item_start[items[position]]
        for child in range(child_lo[node], child_hi[node]):
            stack_nodes[sp] = child
            stack_states[sp] = nxt
            stack_items[sp] = position
            sp += 1
    return n_ends


@numba.njit(cache=True, nogil=True)
def _loop_plan(  # type: ignore[no-untyped-def]
    ascii_lo, ascii_hi, non_ascii, utf8_step, is_space,
    byte, terminal, child_lo, child_hi, start, end, utf8_state,
    suffix_lo, suffix_hi, suffix_non_ascii, suffix_space, subtree_valid, num_roots,
    string_token, dup_ptr, dup_token, words, exits,
):  # pragma: no cover - compiled
    """For a state that loops on itself over a character class (ASCII bytes in
    ``ascii_lo``/``ascii_hi``, and the multi-byte characters ``non_ascii`` says, a level
    of constrain.utf8: none, all but the non-ASCII spaces, whose code points ``is_space``
    marks, or all): set in ``words`` the tokens made only of such characters (allowed
    from any such state, cut multi-byte characters included), and write to ``exits`` the
    trie nodes where a token leaves the loop. Walking only the exits from the state gives
    the rest of its mask.

    An exit is the first node whose byte is outside the class; when that byte breaks a
    multi-byte character, or ends a space the class leaves out, the exit is the node
    where that character began, so the walk resumes from a character boundary (where the
    state is the looping one). Returns the number of exits.
    """
    n_exits = 0
    size = len(byte)
    stack_nodes = np.empty(size + num_roots, dtype=np.int64)
    stack_lead = np.empty(size + num_roots, dtype=np.int64)
    stack_code = np.empty(size + num_roots, dtype=np.int64)
    sp = 0
    for root in range(num_roots):
        stack_nodes[sp] = root
        stack_lead[sp] = -1
        stack_code[sp] = 0
        sp += 1
    last_exit = -1
    but_spaces = non_ascii == NON_ASCII_BUT_SPACES
    while sp > 0:
        sp -= 1
        node = stack_nodes[sp]
        lead = stack_lead[sp]  # the node where the current multi-byte character began
        code = stack_code[sp]  # its code point's bits read so far
        b = byte[node]
        if lead >= 0:
            decoder = utf8_state[node]
            code = (code << 6) | (b & 0x3F)
            leaves = decoder == 8 or (
                decoder == 0 and but_spaces and code < len(is_space) and is_space[code]
            )
        elif b < 128:
            bits = ascii_lo if b < 64 else ascii_hi
            leaves = (bits >> np.uint64(b & 63)) & np.uint64(1) == 0
            decoder = 0
        else:
            decoder = utf8_step[0, b]
            leaves = non_ascii == NON_ASCII_NONE or decoder == 8
            code = b & (0x07 if b >= 0xF0 else 0x0F if b >= 0xE0 else 0x1F)
        if leaves:
            exit_node = node if lead < 0 else lead
            if exit_node != last_exit:  # siblings breaking one character share the exit
                exits[n_exits] = exit_node
                n_exits += 1
                last_exit = exit_node
            continue
        if decoder == 0:
            lead = -1
            if (
                (suffix_lo[node] & ~ascii_lo) == 0
                and (suffix_hi[node] & ~ascii_hi) == 0
                and (not suffix_non_ascii[node]
                     or (subtree_valid[node] and _non_ascii_fits(non_ascii, suffix_space[node])))
            ):
                for s in range(start[node], end[node]):
                    _allow(s, string_token, dup_ptr, dup_token, words)
                continue
        elif lead < 0:
            lead = node
        t = terminal[node]
        if t >= 0:
            _allow(t, string_token, dup_ptr, dup_token, words)
        for child in range(child_lo[node], child_hi[node]):
            stack_nodes[sp] = child
            stack_lead[sp] = lead
            stack_code[sp] = code
            sp += 1
    return n_exits


@numba.njit(cache=True, nogil=True)
def _walk_states(  # type: ignore[no-untyped-def]
    rows, loop_lo, loop_hi, loop_utf8, loop_budget, loop_known,
    byte, terminal, child_lo, child_hi, start, end, utf8_state,
    suffix_lo, suffix_hi, suffix_non_ascii, suffix_chars, suffix_space, subtree_valid,
    stack_nodes, stack_states, num_roots, string_token, dup_ptr, dup_token,
    plan, seed_nodes, seed_masks, masks, pending_nodes, pending_states, accepting,
    eos_columns, eos_values,
):  # pragma: no cover - compiled
    """One walk per state into the uint32 rows of ``masks``, in one call. ``plan`` holds
    four numbers per state: the state; the first and one past the last of its seeds in
    ``seed_nodes`` (a loop plan's exits), from whose subtrees alone it is walked, or -1
    to walk it from every root; and the row of ``seed_masks`` (the loop plan's tokens)
    its mask starts from, or -1. A state that ``accepting`` says may end gets the EOS
    bits (``eos_values`` in the words ``eos_columns``). Returns how many states were
    walked to the end: the walk of the next one stopped for something only Python can
    build (its row in ``masks`` is partial)."""
    for i in range(len(plan) // 4):
        state = plan[4 * i]
        seed_state = state
        depth0 = 0
        words = masks[i]
        if plan[4 * i + 1] >= 0:
            seed_state = -1
            for k in range(plan[4 * i + 1], plan[4 * i + 2]):
                stack_nodes[depth0] = seed_nodes[k]
                stack_states[depth0] = state
                depth0 += 1
            loop = seed_masks[plan[4 * i + 3]]
            for w in range(len(words)):
                words[w] |= loop[w]
        n_pending, _ = _walk(
            rows, loop_lo, loop_hi, loop_utf8, loop_budget, loop_known,
            byte, terminal, child_lo, child_hi, start, end, utf8_state,
            suffix_lo, suffix_hi, suffix_non_ascii, suffix_chars, suffix_space, subtree_valid,
            stack_nodes, stack_states, depth0, seed_state, num_roots,
            string_token, dup_ptr, dup_token, words, pending_nodes, pending_states,
            accepting, stack_nodes, -1,
        )
        if n_pending:
            return i
        if accepting[state]:
            for k in range(len(eos_columns)):
                words[eos_columns[k]] |= eos_values[k]
    return len(plan) // 4


@numba.njit(cache=True, nogil=True)
def _read_copies(dfa, data, offsets, string_token, dup_ptr, dup_token,  # type: ignore[no-untyped-def]
                 copies, ends):  # pragma: no cover - compiled
    """:func:`constrain.counted_runs.run_profile`'s reading of every string, one after
    the other, into the arrays of its token ids: whole copies (plus one started) and how
    the string ends (0 inside the run, 1 inside a copy, 2 leaving the run, 3 refused
    inside a copy)."""
    for s in range(len(offsets) - 1):
        state = 0
        n = 0
        end = 0
        for i in range(offsets[s], offsets[s + 1]):
            nxt = dfa[state, data[i]]
            if nxt < 0:
                end = 2 if state == 0 else 3
                break
            if state == 0:
                n += 1
            state = nxt
        if end == 0 and state != 0:
            end = 1
        t = string_token[s]
        copies[t] = n
        ends[t] = end
        for k in range(dup_ptr[s], dup_ptr[s + 1]):
            t = dup_token[k]
            copies[t] = n
            ends[t] = end
