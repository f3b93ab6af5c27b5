"""UTF-8 facts shared by the automaton and the token trie.

>>> utf8_byte_ranges(0x80, 0x7FF)
[[(194, 223), (128, 191)]]
>>> int(UTF8_STEP[0, 0xE2]), int(UTF8_STEP[2, 0x82]), int(UTF8_STEP[1, 0xAC])
(2, 1, 0)
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "NON_ASCII_ALL",
    "NON_ASCII_BUT_SPACES",
    "NON_ASCII_NONE",
    "NON_ASCII_SPACES",
    "UTF8_BOUNDARY",
    "UTF8_INVALID",
    "UTF8_MULTIBYTE_EDGES",
    "UTF8_STEP",
    "UTF8_TREE_BUT_SPACES",
    "utf8_byte_ranges",
]

# The UTF-8 decoder as a DFA: 0 = at a character boundary, 1-3 = that many continuation
# bytes still due, 4/5 = after E0/ED (restricted second byte), 6/7 = after F0/F4, 8 = invalid.
UTF8_BOUNDARY, UTF8_INVALID = 0, 8
UTF8_STEP = np.full((9, 256), UTF8_INVALID, dtype=np.uint8)
UTF8_STEP[0, 0x00:0x80] = 0
UTF8_STEP[0, 0xC2:0xE0] = 1
UTF8_STEP[0, 0xE0] = 4
UTF8_STEP[0, 0xE1:0xF0] = 2
UTF8_STEP[0, 0xED] = 5
UTF8_STEP[0, 0xF0] = 6
UTF8_STEP[0, 0xF1:0xF4] = 3
UTF8_STEP[0, 0xF4] = 7
UTF8_STEP[1, 0x80:0xC0] = 0
UTF8_STEP[2, 0x80:0xC0] = 1
UTF8_STEP[3, 0x80:0xC0] = 2
UTF8_STEP[4, 0xA0:0xC0] = 1
UTF8_STEP[5, 0x80:0xA0] = 1
UTF8_STEP[6, 0x90:0xC0] = 2
UTF8_STEP[7, 0x80:0x90] = 2
# (state, first byte, last byte, next state) for walking an automaton alongside the decoder.
UTF8_MULTIBYTE_EDGES: tuple[tuple[int, int, int, int], ...] = (
    (0, 0xC2, 0xDF, 1), (0, 0xE0, 0xE0, 4), (0, 0xE1, 0xEC, 2), (0, 0xED, 0xED, 5),
    (0, 0xEE, 0xEF, 2), (0, 0xF0, 0xF0, 6), (0, 0xF1, 0xF3, 3), (0, 0xF4, 0xF4, 7),
    (1, 0x80, 0xBF, 0), (2, 0x80, 0xBF, 1), (3, 0x80, 0xBF, 2), (4, 0xA0, 0xBF, 1),
    (5, 0x80, 0x9F, 1), (6, 0x90, 0xBF, 2), (7, 0x80, 0x8F, 2),
)


def utf8_byte_ranges(lo: int, hi: int) -> list[list[tuple[int, int]]]:
    """Split code points lo..hi (one UTF-8 length) into sequences of byte ranges."""
    n = len(chr(lo).encode("utf-8"))
    if n > 1:
        for i in range(1, n):
            m = (1 << (6 * i)) - 1
            if lo & ~m != hi & ~m:
                if lo & m:
                    return utf8_byte_ranges(lo, lo | m) + utf8_byte_ranges((lo | m) + 1, hi)
                if hi & m != m:
                    return utf8_byte_ranges(lo, (hi & ~m) - 1) + utf8_byte_ranges(hi & ~m, hi)
    a, b = chr(lo).encode("utf-8"), chr(hi).encode("utf-8")
    return [[(a[i], b[i]) for i in range(n)]]


# The non-ASCII characters of \s as ECMA-262 or Python's re read it (ECMA's line
# terminators U+2028/9, where "." stops, among them): what \S, [^\s] and "." leave out of
# the non-ASCII characters. A state looping on all other multi-byte characters accepts
# every token subtree that holds none of these (see TokenTrie.suffix_space).
NON_ASCII_SPACES: tuple[int, ...] = (
    0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF,
)
# How much of the multi-byte characters a class or a loop takes: none, every one but
# NON_ASCII_SPACES, or all.
NON_ASCII_NONE, NON_ASCII_BUT_SPACES, NON_ASCII_ALL = 0, 1, 2


def _tree_of(paths: list[list[tuple[int, int]]]) -> tuple[tuple[int, int, tuple[object, ...]], ...]:
    """Byte-range sequences as a tree: ``(first, last, children)`` per range, children
    empty where a character ends; sequences sharing a leading range share its node."""
    grouped: dict[tuple[int, int], list[list[tuple[int, int]]]] = {}
    for path in paths:
        grouped.setdefault(path[0], []).append(path[1:])
    return tuple(
        (first, last, _tree_of([rest for rest in rests if rest]) if rests[0] else ())
        for (first, last), rests in sorted(grouped.items())
    )


def _multibyte_but_spaces() -> list[list[tuple[int, int]]]:
    cuts = sorted(NON_ASCII_SPACES)
    kept, lo = [], 0x80
    for code in cuts:
        if code > lo:
            kept.append((lo, code - 1))
        lo = code + 1
    kept.append((lo, 0x10FFFF))
    paths = []
    for a, b in kept:
        # One UTF-8 length at a time, without the surrogates.
        for lo_len, hi_len in ((0x80, 0x7FF), (0x800, 0xD7FF), (0xE000, 0xFFFF), (0x10000, 0x10FFFF)):
            lo_, hi_ = max(a, lo_len), min(b, hi_len)
            if lo_ <= hi_:
                paths.extend(utf8_byte_ranges(lo_, hi_))
    return paths


# Every valid multi-byte character but NON_ASCII_SPACES, as a tree of byte ranges
# (``(first, last, children)``; no children where a character ends) cut wherever one of
# those spaces splits a range, so that reading it alongside an automaton asks one
# successor per range.
UTF8_TREE_BUT_SPACES = _tree_of(_multibyte_but_spaces())
