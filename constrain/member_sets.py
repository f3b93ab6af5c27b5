"""Sets of union members as bitsets: the states of an exponential regular automaton.

Where a regular automaton's states double with every byte (``(a|b)*a(a|b){20}``: 2**21
states), each state is a union whose members recur: the derivative of a union is the union
of its members' derivatives. :class:`MemberSets` numbers the members it meets (the nodes of
a nondeterministic automaton) and represents a state by the bitset of its members, so a
decoding step is a few table lookups per byte instead of a new union term per byte, and a
state's mask key (the members no loop of another one covers, see
:meth:`~constrain.automaton.Automaton.members`) is a few bit operations.

A byte's successor of a bitset is the OR of its members' successors, one table per byte
indexed by member, filled when a member is first met with any byte (from its derivative,
for every byte it takes). Tables per
group of members were tried: the groups' values vary from step to step, so most lookups
missed and derived anyway (ab_suffix: 10.5 against 7.4 µs a step).

>>> from constrain.regex import parse_regex
>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar
>>> a = Automaton(Grammar.single(parse_regex("[ab]*a[ab]{3}")))
>>> sets = MemberSets(a.terms)
>>> s = sets.bitset_of(a.terms.alternatives(a.rule_terms[0]))
>>> s = sets.step(s, b"ab")
>>> len(sets.members(s)), sets.nullable(s), sets.nullable(sets.step(s, b"ab"))
(2, False, True)
"""

from __future__ import annotations

from collections.abc import Iterable

from .terms import EMPTYSET, TermStore

__all__ = ["MemberSets"]

class MemberSets:
    """Members of unions numbered as nodes, and their successors by byte, as bitsets.

    For plain terms only (no intersection, complement or rule reference: every member is
    live and its successors are its derivative's alternatives). Not thread-safe: the
    automaton that owns it serialises access.
    """

    def __init__(self, terms: TermStore) -> None:
        self._terms = terms
        self._node_of: dict[int, int] = {}
        self._term_of: list[int] = []
        self._nullable = 0  # nodes whose term matches the empty string
        self._loops = 0  # nodes starting with a loop over a byte class (x*·tail)
        self._loop_bits: list[int] = []  # per node: that class (0: none)
        self._alphabets: list[int] = []  # per node: every byte its term may consume
        self._covers: dict[int, int] = {}  # loop node -> nodes its loop covers
        self._derived = 0  # nodes whose successors are filled in
        # Per byte, per node: the bitset of its successors (-1: not derived yet).
        self._by_byte: list[list[int]] = [[] for _ in range(256)]

    def bitset_of(self, members: Iterable[int]) -> int:
        """The bitset of these member terms (numbered on first sight)."""
        bits = 0
        for term in members:
            node = self._node_of.get(term)
            if node is None:
                node = self._add(term)
            bits |= 1 << node
        return bits

    def _add(self, term: int) -> int:
        node = len(self._term_of)
        self._node_of[term] = node
        self._term_of.append(term)
        t = self._terms
        if t.nullable(term):
            self._nullable |= 1 << node
        loop = t.free_prefix(term)
        self._loop_bits.append(loop)
        if loop:
            self._loops |= 1 << node
        self._alphabets.append(t.alphabet(term))
        self._covers.clear()  # a cover holds the nodes numbered before it was made
        return node

    def members(self, bits: int) -> list[int]:
        """The member terms of ``bits``, by node."""
        out = []
        terms = self._term_of
        while bits:
            low = bits & -bits
            out.append(terms[low.bit_length() - 1])
            bits ^= low
        return out

    def nullable(self, bits: int) -> bool:
        """Whether the union of ``bits`` matches the empty string."""
        return bool(bits & self._nullable)

    def step(self, bits: int, data: bytes) -> int:
        """The bitset after ``data`` (0 when no member takes it)."""
        tables = self._by_byte
        for byte in data:
            table = tables[byte]
            following = 0
            rest = bits
            while rest:
                low = rest & -rest
                node = low.bit_length() - 1
                try:
                    found = table[node]
                except IndexError:
                    found = -1
                if found < 0:
                    found = self._successor(node, byte)
                following |= found
                rest ^= low
            if not following:
                return 0
            bits = following
        return bits

    def derive_reachable(self, bits: int, limit: int) -> bool:
        """Derive every member reachable from ``bits``, so that stepping through them
        only reads tables; ``False`` (keeping what was derived) once more than ``limit``
        members are numbered. An exponential automaton's members are few (the positions
        of a regex: 22 in ``(a|b)*a(a|b){20}``), and decoding meets them all within a
        few steps: derived at compile, they cost a step nothing (ab_suffix: a third of
        the time between masks was each new compile's first derivatives)."""
        todo = bits & ~self._derived
        while todo:
            if len(self._term_of) > limit:
                return False
            low = todo & -todo
            todo ^= low
            for successor in self._derive(low.bit_length() - 1):
                todo |= successor & ~self._derived
        return True

    def _successor(self, node: int, byte: int) -> int:
        if not self._derived >> node & 1:
            self._derive(node)
        table = self._by_byte[byte]
        found = table[node] if node < len(table) else -1
        if found < 0:  # a byte the member does not take
            self._set(byte, node, 0)
            return 0
        return found

    def _derive(self, node: int) -> list[int]:
        """Fill in ``node``'s successors for every byte it takes (one derivative gives
        them all: a class of 26 letters is one piece); returns them."""
        t = self._terms
        self._derived |= 1 << node
        successors = []
        for bits, nxt in t.derivative(self._term_of[node])[0]:
            successor = 0 if nxt == EMPTYSET else self.bitset_of(t.alternatives(nxt))
            successors.append(successor)
            while bits:
                low = bits & -bits
                self._set(low.bit_length() - 1, node, successor)
                bits ^= low
        return successors

    def _set(self, byte: int, node: int, successor: int) -> None:
        table = self._by_byte[byte]
        if len(table) <= node:
            table.extend([-1] * (len(self._term_of) - len(table)))
        table[node] = successor

    def uncovered(self, bits: int) -> int:
        """``bits`` without the members whose every byte the loop at the start of another
        member takes (any string of such bytes starts a match of that other member, so
        their tokens are allowed there already); of members with equal loops, the one
        with the lowest node stays."""
        # A loop skipped here is covered by one met before, which stays unless a later
        # one covers it, and then that one covers whatever it covered (covering is
        # transitive): some member of every chain stays.
        loops = bits & self._loops
        covered = 0
        while loops:
            low = loops & -loops
            loops ^= low
            if not covered & low:
                node = low.bit_length() - 1
                cover = self._covers.get(node)
                if cover is None:
                    cover = self._covers[node] = self._cover(node)
                covered |= cover
        return bits & ~covered

    def lone_loop(self, bits: int) -> int:
        """The byte class ``x`` where the members ``bits`` leaves uncovered are one
        ``x*·tail`` whose every byte ``x`` takes (``[ab]*a[ab]{20}``), else 0: then the
        tokens allowed are exactly those made only of bytes of ``x`` (each starts a
        match of it, and no other byte can be read)."""
        left = self.uncovered(bits)
        if not left or left & (left - 1) or not left & self._loops:
            return 0
        node = left.bit_length() - 1
        loop = self._loop_bits[node]
        return loop if not self._alphabets[node] & ~loop else 0

    def _cover(self, node: int) -> int:
        loop = self._loop_bits[node]
        cover = 0
        for other, alphabet in enumerate(self._alphabets):
            if other != node and not alphabet & ~loop:
                cover |= 1 << other
        return cover

    @property
    def size(self) -> int:
        """How many members have been numbered."""
        return len(self._term_of)
