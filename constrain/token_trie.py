"""A vocabulary's tokens as a trie of numpy arrays, level by level.

Built once per vocabulary (and cached on disk by :mod:`constrain.cache`), it lets the mask
engine walk every token with an automaton state at once: at depth ``d`` the live trie nodes
and their states are two arrays, and one fancy-indexing step moves all of them by one byte.
A subtree is dropped at its first dead byte, so work is proportional to the live prefixes,
not to the vocabulary size.

Layout: the distinct token strings are sorted; a node at depth ``d`` (1-based) is the run of
sorted strings sharing their first ``d`` bytes, ``start[d]:end[d]`` in sorted order. For each
depth, ``byte[d]`` is the node's last byte, ``terminal[d]`` the index of the string that ends
there (or -1), and ``child_lo[d]:child_hi[d]`` its children among the depth ``d+1`` nodes.

Subtree summaries let the walk accept a whole subtree at once (llguidance calls this
slicing): ``utf8_state`` is the UTF-8 decoder state after the node's prefix (0 = at a
character boundary), ``suffix_lo``/``suffix_hi`` are the ASCII bytes (bits 0-63 / 64-127)
occurring after the prefix in any string of the subtree, ``suffix_non_ascii`` whether a byte
>= 0x80 occurs there, ``suffix_chars`` the most characters (a trailing partial one counts)
after the prefix in any string of the subtree, ``suffix_space`` whether one of the
non-ASCII spaces (:data:`~constrain.utf8.NON_ASCII_SPACES`, what ``\\S`` leaves out) starts
there, and ``subtree_valid`` whether every string of the subtree is valid
UTF-8 (possibly ending inside a character).

>>> trie = TokenTrie.build([b"a", b"ab", b"b", None, b"ab"])
>>> trie.num_strings, trie.max_depth, trie.string_bytes(1)
(3, 2, b'ab')
>>> sorted(trie.token_ids_of(np.array([1])).tolist())
[1, 4]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from .utf8 import NON_ASCII_SPACES, UTF8_INVALID, UTF8_STEP

__all__ = ["TokenTrie"]


@dataclass(frozen=True)
class TokenTrie:
    """See the module docstring for the layout; build with :meth:`TokenTrie.build`."""

    # One entry per node, all depths concatenated (depth 1 first); children are global ids.
    byte: np.ndarray  # int32: the node's last byte
    terminal: np.ndarray  # int32: the sorted string ending at this node, or -1
    child_lo: np.ndarray  # int64: first child node
    child_hi: np.ndarray  # int64: one past the last child node
    start: np.ndarray  # int64: first sorted string of the node
    end: np.ndarray  # int64: one past the node's last string
    utf8_state: np.ndarray  # uint8: decoder state after the prefix, see UTF8_STEP
    suffix_lo: np.ndarray  # uint64
    suffix_hi: np.ndarray  # uint64
    suffix_non_ascii: np.ndarray  # bool
    suffix_chars: np.ndarray  # int32
    suffix_space: np.ndarray  # bool
    subtree_valid: np.ndarray  # bool
    level_offsets: np.ndarray  # int64 [max_depth + 1]: depth d nodes are [off[d-1], off[d])
    string_token: np.ndarray  # int32 [num_strings]: the first token id with that string
    dup_ptr: np.ndarray  # int64 [num_strings + 1]: extra ids of string s are ...
    dup_token: np.ndarray  # int32: ... dup_token[dup_ptr[s]:dup_ptr[s+1]] (usually none)
    string_data: np.ndarray  # uint8: the sorted strings, concatenated
    string_offsets: np.ndarray  # int64 [num_strings + 1]

    @property
    def num_strings(self) -> int:
        return len(self.string_token)

    @property
    def num_nodes(self) -> int:
        return len(self.byte)

    @cached_property
    def num_roots(self) -> int:
        """The depth-1 nodes are ``0 .. num_roots - 1``."""
        return int(self.level_offsets[1]) if len(self.level_offsets) > 1 else 0

    @property
    def max_depth(self) -> int:
        return len(self.level_offsets) - 1

    def string_bytes(self, index: int) -> bytes:
        """The bytes of sorted string ``index``."""
        lo, hi = self.string_offsets[index], self.string_offsets[index + 1]
        return self.string_data[lo:hi].tobytes()

    def strings_longer_than(self, length: int) -> np.ndarray:
        """The sorted strings of more than ``length`` bytes, longest first.

        >>> TokenTrie.build([b"a", b"abc", b"ab", b"xyz"]).strings_longer_than(2).tolist()
        [2, 3]
        """
        order, lengths = self._longest_first
        return order[:int(np.searchsorted(-lengths, -length, side="left"))]

    @cached_property
    def _longest_first(self) -> tuple[np.ndarray, np.ndarray]:
        lengths = np.diff(self.string_offsets)
        order = np.argsort(-lengths, kind="stable")
        return order, lengths[order]

    def token_ids_of(self, strings: np.ndarray) -> np.ndarray:
        """Every token id whose bytes are one of the sorted strings ``strings``."""
        ids: np.ndarray = self.string_token[strings]
        if len(self.dup_token):
            extra = [self.dup_token[self.dup_ptr[s] : self.dup_ptr[s + 1]] for s in strings]
            ids = np.concatenate([ids, *extra])
        return ids

    @classmethod
    def build(cls, token_bytes: Sequence[bytes | None]) -> TokenTrie:
        """Build the trie of every token with non-empty bytes."""
        by_string: dict[bytes, list[int]] = {}
        for token_id, token in enumerate(token_bytes):
            if token:
                by_string.setdefault(token, []).append(token_id)
        strings = sorted(by_string)
        n = len(strings)
        lengths = np.fromiter((len(s) for s in strings), dtype=np.int64, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(strings), dtype=np.uint8)
        lcp = _common_prefix_with_previous(strings)
        first = np.fromiter((ids[0] for ids in (by_string[s] for s in strings)), np.int32, n)
        dup_counts = np.fromiter((len(by_string[s]) - 1 for s in strings), np.int64, n)
        dup_ptr = np.concatenate([[0], np.cumsum(dup_counts)]).astype(np.int64)
        dup_token = np.array([t for s in strings for t in by_string[s][1:]], dtype=np.int32)

        max_depth = int(lengths.max()) if n else 0
        index = np.arange(n, dtype=np.int64)
        starts_by_depth, ends_by_depth = [], []
        for d in range(1, max_depth + 1):
            starts = index[(lcp < d) & (lengths >= d)]
            boundaries = np.append(np.flatnonzero(lcp < d), n)
            starts_by_depth.append(starts)
            ends_by_depth.append(boundaries[np.searchsorted(boundaries, starts, side="right")])
        utf8_states, valid = _utf8_states(data, offsets, lengths, max_depth)
        invalid_prefix = np.concatenate([[0], np.cumsum(~valid)])
        suffix = _suffix_summaries(data, offsets, lengths, starts_by_depth,
                                   _space_starts(strings, offsets))
        byte: list[np.ndarray] = []
        terminal: list[np.ndarray] = []
        child_lo: list[np.ndarray] = []
        child_hi: list[np.ndarray] = []
        subtree_valid: list[np.ndarray] = []
        for d in range(1, max_depth + 1):
            starts, ends = starts_by_depth[d - 1], ends_by_depth[d - 1]
            byte.append(data[offsets[starts] + d - 1].astype(np.int32))
            terminal.append(np.where(lengths[starts] == d, starts, -1).astype(np.int32))
            subtree_valid.append(invalid_prefix[ends] == invalid_prefix[starts])
            if d < max_depth:
                nxt = starts_by_depth[d]
                child_lo.append(np.searchsorted(nxt, starts).astype(np.int32))
                child_hi.append(np.searchsorted(nxt, ends).astype(np.int32))
            else:
                empty = np.zeros(len(starts), dtype=np.int32)
                child_lo.append(empty)
                child_hi.append(empty)
        level_offsets = np.concatenate([[0], np.cumsum([len(x) for x in starts_by_depth])])
        child_lo = [c + level_offsets[d + 1] for d, c in enumerate(child_lo)]
        child_hi = [c + level_offsets[d + 1] for d, c in enumerate(child_hi)]
        return cls(
            _concat(byte, np.int32), _concat(terminal, np.int32),
            _concat(child_lo, np.int64), _concat(child_hi, np.int64),
            _concat(starts_by_depth, np.int64), _concat(ends_by_depth, np.int64),
            _concat([u[s] for u, s in zip(utf8_states, starts_by_depth)], np.uint8),
            _concat(suffix[0], np.uint64), _concat(suffix[1], np.uint64),
            _concat(suffix[2], np.bool_), _concat(suffix[3], np.int32),
            _concat(suffix[4], np.bool_), _concat(subtree_valid, np.bool_),
            level_offsets.astype(np.int64),
            first, dup_ptr, dup_token, data.copy(), offsets,
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays for ``np.savez`` (see :meth:`from_arrays`)."""
        return {name: getattr(self, name) for name in _ARRAY_FIELDS}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> TokenTrie:
        """Inverse of :meth:`to_arrays`."""
        return cls(**{name: arrays[name] for name in _ARRAY_FIELDS})


_ARRAY_FIELDS = (
    "byte", "terminal", "child_lo", "child_hi", "start", "end", "utf8_state",
    "suffix_lo", "suffix_hi", "suffix_non_ascii", "suffix_chars", "suffix_space", "subtree_valid",
    "level_offsets",
    "string_token", "dup_ptr", "dup_token", "string_data", "string_offsets",
)

def _utf8_states(
    data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, max_depth: int
) -> tuple[list[np.ndarray], np.ndarray]:
    """Per depth, every string's decoder state after that many bytes; and whole-string validity."""
    n = len(lengths)
    state = np.zeros(n, dtype=np.uint8)
    per_depth = []
    for d in range(1, max_depth + 1):
        active = np.flatnonzero(lengths >= d)
        state[active] = UTF8_STEP[state[active], data[offsets[active] + d - 1]]
        per_depth.append(state.copy())
    return per_depth, state != UTF8_INVALID


def _space_starts(strings: list[bytes], offsets: np.ndarray) -> np.ndarray:
    """``(sorted string, byte position)`` of every non-ASCII space in the strings, as an
    ``[n, 2]`` array. UTF-8 is self-synchronizing, so in a valid string an encoding found
    is that character; invalid strings are never accepted whole."""
    joined = b"".join(strings)
    found: list[tuple[int, int]] = []
    for code in NON_ASCII_SPACES:
        encoded = chr(code).encode("utf-8")
        at = joined.find(encoded)
        while at >= 0:
            string = int(np.searchsorted(offsets, at, side="right")) - 1
            if at + len(encoded) <= offsets[string + 1]:  # not across two strings
                found.append((string, at - int(offsets[string])))
            at = joined.find(encoded, at + 1)
    return np.array(found, dtype=np.int64).reshape(-1, 2)


def _suffix_summaries(
    data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, starts_by_depth: list[np.ndarray],
    space_starts: np.ndarray,
) -> tuple[tuple[np.ndarray, ...], ...]:
    """Per depth and node: which bytes, how many characters, and whether a non-ASCII
    space (one of ``space_starts``, see :func:`_space_starts`) follow the node's prefix."""
    n = len(lengths)
    lo = np.zeros(n, dtype=np.uint64)
    hi = np.zeros(n, dtype=np.uint64)
    non_ascii = np.zeros(n, dtype=bool)
    chars = np.zeros(n, dtype=np.int32)
    space = np.zeros(n, dtype=bool)
    out_lo, out_hi, out_na, out_chars, out_space = [], [], [], [], []
    one = np.uint64(1)
    for d in range(len(starts_by_depth), 0, -1):
        # After this update, lo/hi/non_ascii describe bytes at positions >= d of each string.
        active = np.flatnonzero(lengths > d)
        b = data[offsets[active] + d].astype(np.uint64)
        low = b < 64
        lo[active[low]] |= one << b[low]
        mid = (b >= 64) & (b < 128)
        hi[active[mid]] |= one << (b[mid] - np.uint64(64))
        non_ascii[active[b >= 128]] = True
        chars[active[(b < 0x80) | (b >= 0xC0)]] += 1  # a byte that starts a character
        space[space_starts[space_starts[:, 1] == d, 0]] = True
        starts = starts_by_depth[d - 1]
        if len(starts):
            out_lo.append(np.bitwise_or.reduceat(lo, starts))
            out_hi.append(np.bitwise_or.reduceat(hi, starts))
            out_na.append(np.logical_or.reduceat(non_ascii, starts))
            out_chars.append(np.maximum.reduceat(chars, starts))
            out_space.append(np.logical_or.reduceat(space, starts))
        else:
            out_lo.append(np.zeros(0, np.uint64))
            out_hi.append(np.zeros(0, np.uint64))
            out_na.append(np.zeros(0, bool))
            out_chars.append(np.zeros(0, np.int32))
            out_space.append(np.zeros(0, bool))
    return (
        tuple(out_lo[::-1]), tuple(out_hi[::-1]), tuple(out_na[::-1]), tuple(out_chars[::-1]),
        tuple(out_space[::-1]),
    )


def _concat(parts: list[np.ndarray] | tuple[np.ndarray, ...], dtype: Any) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if len(parts) else np.zeros(0, dtype=dtype)


def _common_prefix_with_previous(strings: list[bytes]) -> np.ndarray:
    out = np.zeros(len(strings), dtype=np.int64)
    prev = b""
    for i, s in enumerate(strings):
        limit = min(len(prev), len(s))
        k = 0
        # Most neighbours share short prefixes, so a linear scan beats bisection here.
        while k < limit and prev[k] == s[k]:
            k += 1
        out[i] = k
        prev = s
    return out
