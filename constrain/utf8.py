"""UTF-8 facts shared by the automaton and the token trie.

>>> utf8_byte_ranges(0x80, 0x7FF)
[[(194, 223), (128, 191)]]
>>> int(UTF8_STEP[0, 0xE2]), int(UTF8_STEP[2, 0x82]), int(UTF8_STEP[1, 0xAC])
(2, 1, 0)
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "UTF8_BOUNDARY",
    "UTF8_INVALID",
    "UTF8_MULTIBYTE_EDGES",
    "UTF8_STEP",
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
