"""A vocabulary's tokens as a trie of numpy arrays, level by level.

Built once per vocabulary (and cached on disk by :mod:`constrain.cache`), it lets the mask
engine walk every token with an automaton state at once: at depth ``d`` the live trie nodes
and their states are two arrays, and one fancy-indexing step moves all of them by one byte.
A subtree is dropped at its first dead byte, so work is proportional to the live prefixes,
not to the vocabulary size.

Layout: the distinct token strings are sorted; a node at depth ``d`` (1-based) is the run of
sorted strings sharing their first ``d`` bytes, named by the index of its first string. For
each depth, ``byte[d]`` is the node's last byte, ``terminal[d]`` the index of the string that
ends there (or -1), and ``child_lo[d]:child_hi[d]`` its children among the depth ``d+1`` nodes.

>>> trie = TokenTrie.build([b"a", b"ab", b"b", None, b"ab"])
>>> trie.num_strings, trie.max_depth, trie.string_bytes(1)
(3, 2, b'ab')
>>> sorted(trie.token_ids_of(np.array([1])).tolist())
[1, 4]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["TokenTrie"]


@dataclass(frozen=True)
class TokenTrie:
    """See the module docstring for the layout; build with :meth:`TokenTrie.build`."""

    byte: tuple[np.ndarray, ...]  # per depth (index 0 = depth 1): int32 last byte
    terminal: tuple[np.ndarray, ...]  # per depth: int32 string index ending here, or -1
    child_lo: tuple[np.ndarray, ...]  # per depth: int32 first child in the next depth
    child_hi: tuple[np.ndarray, ...]
    string_token: np.ndarray  # int32 [num_strings]: the first token id with that string
    dup_string: np.ndarray  # int32: strings held by more than one token id ...
    dup_token: np.ndarray  # int32: ... and those extra ids
    string_data: np.ndarray  # uint8: the sorted strings, concatenated
    string_offsets: np.ndarray  # int64 [num_strings + 1]

    @property
    def num_strings(self) -> int:
        return len(self.string_token)

    @property
    def max_depth(self) -> int:
        return len(self.byte)

    def string_bytes(self, index: int) -> bytes:
        """The bytes of sorted string ``index``."""
        lo, hi = self.string_offsets[index], self.string_offsets[index + 1]
        return self.string_data[lo:hi].tobytes()

    def token_ids_of(self, strings: np.ndarray) -> np.ndarray:
        """Every token id whose bytes are one of the sorted strings ``strings``."""
        ids = self.string_token[strings]
        if len(self.dup_string):
            extra = self.dup_token[np.isin(self.dup_string, strings)]
            if len(extra):
                ids = np.concatenate([ids, extra])
        return ids

    @classmethod
    def build(cls, token_bytes: Sequence[bytes | None]) -> TokenTrie:
        """Build the trie of every token with non-empty bytes."""
        by_string: dict[bytes, list[int]] = {}
        for token_id, data in enumerate(token_bytes):
            if data:
                by_string.setdefault(data, []).append(token_id)
        strings = sorted(by_string)
        n = len(strings)
        lengths = np.fromiter((len(s) for s in strings), dtype=np.int64, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(strings), dtype=np.uint8)
        lcp = _common_prefix_with_previous(strings)
        first = np.fromiter((ids[0] for ids in (by_string[s] for s in strings)), np.int32, n)
        dup_pairs = [(i, t) for i, s in enumerate(strings) for t in by_string[s][1:]]
        dup = np.array(dup_pairs, dtype=np.int32).reshape(-1, 2)

        max_depth = int(lengths.max()) if n else 0
        index = np.arange(n, dtype=np.int64)
        starts_by_depth = []
        for d in range(1, max_depth + 1):
            starts_by_depth.append(index[(lcp < d) & (lengths >= d)])
        byte, terminal, child_lo, child_hi = [], [], [], []
        for d in range(1, max_depth + 1):
            starts = starts_by_depth[d - 1]
            byte.append(data[offsets[starts] + d - 1].astype(np.int32))
            terminal.append(np.where(lengths[starts] == d, starts, -1).astype(np.int32))
            if d < max_depth:
                nxt = starts_by_depth[d]
                ends = np.append(starts[1:], n)
                child_lo.append(np.searchsorted(nxt, starts).astype(np.int32))
                child_hi.append(np.searchsorted(nxt, ends).astype(np.int32))
            else:
                empty = np.zeros(len(starts), dtype=np.int32)
                child_lo.append(empty)
                child_hi.append(empty)
        return cls(
            tuple(byte), tuple(terminal), tuple(child_lo), tuple(child_hi),
            first, dup[:, 0].copy(), dup[:, 1].copy(), data.copy(), offsets,
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat arrays for ``np.savez`` (see :meth:`from_arrays`)."""
        sizes = np.array([len(b) for b in self.byte], dtype=np.int64)
        return {
            "level_sizes": sizes,
            "byte": _concat(self.byte),
            "terminal": _concat(self.terminal),
            "child_lo": _concat(self.child_lo),
            "child_hi": _concat(self.child_hi),
            "string_token": self.string_token,
            "dup_string": self.dup_string,
            "dup_token": self.dup_token,
            "string_data": self.string_data,
            "string_offsets": self.string_offsets,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> TokenTrie:
        """Inverse of :meth:`to_arrays`."""
        bounds = np.concatenate([[0], np.cumsum(arrays["level_sizes"])]).astype(np.int64)

        def split(flat: np.ndarray) -> tuple[np.ndarray, ...]:
            return tuple(flat[bounds[i] : bounds[i + 1]] for i in range(len(bounds) - 1))

        return cls(
            split(arrays["byte"]), split(arrays["terminal"]), split(arrays["child_lo"]),
            split(arrays["child_hi"]), arrays["string_token"], arrays["dup_string"],
            arrays["dup_token"], arrays["string_data"], arrays["string_offsets"],
        )


def _concat(parts: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


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
