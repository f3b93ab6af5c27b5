"""Hash-consed byte-level regular terms and their symbolic derivatives.

The automaton's states are built from these terms. A term is an integer id into a
:class:`TermStore`; structurally equal terms get the same id, so equal derivatives are
recognised as the same automaton state for free. The derivative of a term is computed
*symbolically*, once per term: a short list of ``(byte set, successor)`` pairs with disjoint
byte sets (a byte set is a 256-bit Python int), plus successors for rule references, which
the stack machine in :mod:`constrain.automaton` interprets.

Derivatives handle bounded repetition with counters (``x{3,1000}`` derives to ``x'·x{2,999}``)
instead of unrolling, and intersection and complement directly, so ``(a|b)*a(a|b){20}`` or
``[0-9]{1,1000}`` stay small: only the states that decoding reaches are ever built.

>>> store = TermStore()
>>> digit = store.byte_set(range(0x30, 0x3A))
>>> t = store.repeat(digit, 1, 3)
>>> [(bin(bits).count("1"), store.show(nxt)) for bits, nxt in store.derivative(t)[0]]
[(10, '[30-39]{0,2}')]
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import deque
from collections.abc import Iterable
from typing import Any, Literal, Protocol, cast

from .errors import ResourceLimitError
from .utf8 import (
    NON_ASCII_ALL,
    NON_ASCII_BUT_SPACES,
    NON_ASCII_NONE,
    UTF8_MULTIBYTE_EDGES,
    UTF8_TREE_BUT_SPACES,
)

__all__ = ["ALL_BYTES", "EMPTYSET", "EPS", "LazySource", "TermStore"]

# Term kinds. A LAZY term stands for a term not built yet (see grammar.Lazy): its flags
# are given when it is made, and it is built the first time a derivative or a liveness
# check needs its inside.
_EMPTYSET, _EPS, _BYTES, _SEQ, _ALT, _REP, _AND, _NOT, _REF, _LAZY = range(10)

EMPTYSET = 0
EPS = 1
ALL_BYTES = (1 << 256) - 1
# The emptiness search's cost of a step (see TermStore._search_live): 1 on a byte set
# holding printable ASCII other than a backslash, this on any other.
_PRINTABLE_ASCII = sum(1 << b for b in range(0x20, 0x7F) if b != 0x5C)
_OTHER_BYTE_COST = 4
# How much each byte the estimate says is left weighs against a byte taken (see
# TermStore._search_live). Above 1 the search is greedy: where the estimate falls short
# (a member count bound inside an object, the keys a complement still forbids) it keeps
# heading for the end instead of first trying every other way of getting as far (every
# subset of members: exponential). 2 left Github_medium/o25692's searches 6x slower than
# 8; 8 to 64 measured alike.
_ESTIMATE_WEIGHT = 8
# Terms a search first explores by a dive (see TermStore._dive): most witnesses are found
# in a few dozen; a dive that fails (an empty language, or a witness off the estimate's
# path) costs no more than this before the full search.
_DIVE_BUDGET = 300
# Pairs of positions TermStore._fewest_units may visit before leaving the question to the
# emptiness search (a pattern's automaton times a character's few positions).
_FEWEST_UNITS_BUDGET = 20_000
Pieces = list[tuple[int, int]] | tuple[tuple[int, int], ...]
# For each rule reference that may come first: (rule, successor after the rule's text).
Refs = tuple[tuple[int, int], ...]
Derivative = tuple[Pieces, Refs]
# (generation of the structure table, structure id): see TermStore.fingerprint.
Fingerprint = tuple[int, int]


class LazySource(Protocol):
    """What builds a store's lazy terms (see :meth:`TermStore.lazy`) from the payload given
    with each."""

    def build(self, payload: object) -> int:
        """The term the lazy term stands for."""

    def live(self, payload: object) -> bool:
        """Whether its language is non-empty (asked without building it)."""

    def shortest(self, payload: object) -> int:
        """An estimate of the length of its shortest string."""


class TermStore:
    """Owns every term of one automaton; not shared across automata.

    ``max_terms`` bounds memory: creating more raises :class:`ResourceLimitError`.
    """

    def __init__(self, max_terms: int = 2_000_000, rule_nullable: Iterable[bool] = ()) -> None:
        self.max_terms = max_terms
        # Per term, by id: its kind and flags, in bytearrays (0 or 1 for a flag). Lists
        # were containers the collector followed item by item at every collection they
        # were young in: a fork's copies were half the references each young collection
        # of a median compile followed, and a heavy schema's lists hold 100,000 terms.
        self._kind = bytearray((_EMPTYSET, _EPS))
        self._args: list[tuple[object, ...]] = [(), ()]
        self._nullable = bytearray((False, True))
        # Whether an intersection or complement occurs inside (only those can be empty
        # without being EMPTYSET, see is_live).
        self._boolean_flag = bytearray(2)
        self._ref_flag = bytearray(2)  # whether a rule reference occurs inside
        # Whether a rule reference or a lazy term occurs inside: such a term is a piece of
        # structure (an object's members, a recursive value); one without is lexical.
        self._open_flag = bytearray(2)
        self._ids: dict[tuple[object, ...], int] = {}
        # Concatenations made, by ``a << 32 | b`` (numbers: see _byte_derivatives; no
        # store reaches 2**32 terms).
        self._seqs: dict[int, int] = {}
        # Each term's derivative is kept as two flat tuples of pairs in two tables (see
        # derivative): the pieces, and the refs where there are any.
        self._derivatives: dict[int, tuple[tuple[int, int], ...]] = {}
        self._derivative_refs: dict[int, Refs] = {}
        # By ``term << 8 | byte``: the successor alone where there are no refs, else
        # (successor, refs). Numbers, not tuples, where they can be: each tuple a memo
        # keeps counts towards the collector's next young collection.
        self._byte_derivatives: dict[int, int | tuple[int, Refs]] = {}
        self._live: dict[int, bool] = {EMPTYSET: False, EPS: True}
        self._single_chars: dict[int, tuple[int, int]] = {}
        self._exact_multibyte: dict[int, bool] = {}
        # Whether a repeat with no upper count occurs inside (see _unbounded).
        self._unbounded_flag = bytearray(2)
        self._copy_dfas: dict[int, list[list[tuple[int, int]]] | None] = {}
        self._whole_copies: dict[tuple[int, int], bool] = {}  # (term, item) -> see _copies_hold
        self._fewest_copies: dict[tuple[int, int], int] = {}  # (term, item) -> see _least_copies
        self._fingerprints: dict[int, int] = {}  # term -> structure id
        self._fingerprint_generation = -1
        self._alphabets: dict[int, int] = {}
        self._first_bytes: dict[int, int] = {}  # term -> see first_bytes
        # Lazy terms: what their source was given for each (see lazy), and what each
        # stands for once built.
        self._lazy_source: LazySource | None = None
        self._lazy_payloads: dict[int, object] = {}
        self._forced: dict[int, int] = {}
        self._shortest_known: dict[int, int] = {}
        self._fewest_known: dict[tuple[int, int, int], float | None] = {}
        self._farthest_end: dict[int, int | None] = {}  # term -> see _bytes_to_end
        self.max_liveness_search = 200_000
        self.rule_nullable: list[bool] = list(rule_nullable)
        # The largest count of a counted repeat made so far (x{lo,hi}: hi, or lo when
        # unbounded): each count below it can be a state of its own; and whether an
        # unbounded one was made (else the language is finite).
        self.largest_count = 1
        self.has_loop = False

    def __len__(self) -> int:
        return len(self._kind)

    def fork(self, max_terms: int, rule_nullable: Iterable[bool]) -> TermStore:
        """A new store holding this one's terms and everything learnt about them.

        For a store of shared rules (see :class:`~constrain.grammar.RuleLibrary`): each
        grammar that includes them starts from a fork instead of converting them again.
        ``rule_nullable`` must agree with this store's on the rules it has references to;
        lazy terms cannot be forked (their builders belong to one automaton).
        """
        if self._lazy_payloads:
            raise ValueError("a store with lazy terms cannot be forked")
        new = TermStore.__new__(TermStore)
        for name, value in vars(self).items():
            if isinstance(value, (list, dict, bytearray)):
                value = value.copy()
            setattr(new, name, value)
        new.max_terms = max_terms
        new.rule_nullable = list(rule_nullable)
        return new

    # -- construction ------------------------------------------------------------------

    def _make_seq(self, head: int, tail: int) -> int:
        """The concatenation term ``head·tail`` for a ``head`` that is no concatenation,
        registered in ``_seqs`` by number only (see :meth:`seq`): half the terms a
        decoding makes are concatenations, and a tuple key each in ``_ids`` counted
        towards the collector's young collections."""
        key = head << 32 | tail
        found = self._seqs.get(key)
        if found is not None:
            return found
        flags, unbounded = self._boolean_flag, self._unbounded_flag
        found = self._seqs[key] = self._append(
            _SEQ, (head, tail), self._nullable[head] and self._nullable[tail],
            flags[head] or flags[tail], self._ref_flag[head] or self._ref_flag[tail],
            self._open_flag[head] or self._open_flag[tail],
            unbounded[head] or unbounded[tail])
        return found

    def _make(self, kind: int, args: tuple[object, ...], nullable: bool) -> int:
        key = (kind, *args)
        found = self._ids.get(key)
        if found is not None:
            return found
        flags, refs, opens = self._boolean_flag, self._ref_flag, self._open_flag
        unbounded = self._unbounded_flag
        if kind in (_AND, _NOT, _ALT):
            # map, not generator expressions: unions of dozens of members are common.
            boolean = kind != _ALT or any(map(flags.__getitem__, args))  # type: ignore[arg-type]
            has_ref = any(map(refs.__getitem__, args))  # type: ignore[arg-type]
            is_open = any(map(opens.__getitem__, args))  # type: ignore[arg-type]
            loops = any(map(unbounded.__getitem__, args))  # type: ignore[arg-type]
        elif kind == _REP:
            boolean = flags[args[0]]  # type: ignore[call-overload]
            has_ref = refs[args[0]]  # type: ignore[call-overload]
            is_open = opens[args[0]]  # type: ignore[call-overload]
            loops = args[2] is None or unbounded[args[0]]  # type: ignore[call-overload]
        else:
            boolean = loops = False
            has_ref = is_open = kind == _REF
        found = self._ids[key] = self._append(kind, args, nullable, boolean, has_ref,
                                              is_open, loops)
        return found

    def _append(self, kind: int, args: tuple[object, ...], nullable: int, boolean: int,
                has_ref: int, is_open: int, loops: int = False) -> int:
        ident = len(self._kind)
        if ident >= self.max_terms:
            raise ResourceLimitError(
                "max_terms", self.max_terms, "the constraint is too large to build; simplify it"
            )
        self._kind.append(kind)
        self._args.append(args)
        self._nullable.append(nullable)
        self._boolean_flag.append(boolean)
        self._ref_flag.append(has_ref)
        self._open_flag.append(is_open)
        self._unbounded_flag.append(loops)
        return ident

    def bytes_term(self, bits: int) -> int:
        """One byte whose value is in the 256-bit set ``bits``."""
        if bits == 0:
            return EMPTYSET
        return self._make(_BYTES, (bits,), False)

    def byte_set(self, values: Iterable[int]) -> int:
        """One byte from ``values``."""
        bits = 0
        for v in values:
            bits |= 1 << v
        return self.bytes_term(bits)

    def seq(self, a: int, b: int) -> int:
        """Concatenation ``a·b`` (kept right-nested so derivatives only look at the head)."""
        if a == EMPTYSET or b == EMPTYSET:
            return EMPTYSET
        if a == EPS:
            return b
        if b == EPS:
            return a
        # Derivatives rebuild the same concatenations over and over; re-nesting a long
        # left operand is the costly part, so the result is remembered per pair.
        seqs = self._seqs
        found = seqs.get(a << 32 | b)
        if found is not None:
            return found
        if self._kind[a] != _SEQ:
            return self._make_seq(a, b)
        # Down a's right spine to the first suffix already joined to b (or its last item),
        # then back up: a loop, since concatenations are as deep as they are long.
        kind, args = self._kind, self._args
        suffixes = []
        while kind[a] == _SEQ:
            suffixes.append(a)
            a = args[a][1]  # type: ignore[assignment]
            found = seqs.get(a << 32 | b)
            if found is not None:
                result = found
                break
        else:
            result = self._make_seq(a, b)
        for suffix in reversed(suffixes):
            result = self._make_seq(args[suffix][0], result)  # type: ignore[arg-type]
            seqs[suffix << 32 | b] = result
        return result

    def seq_all(self, items: Iterable[int]) -> int:
        result = EPS
        for item in reversed(list(items)):
            result = self.seq(item, result)
        return result

    def alt(self, items: Iterable[int]) -> int:
        """Union; flattened, deduplicated and sorted so equal unions are one term."""
        flat: set[int] = set()
        for item in items:
            if item == EMPTYSET:
                continue
            if self._kind[item] == _ALT:
                flat.update(self._args[item])  # type: ignore[arg-type]
            else:
                flat.add(item)
        if not flat:
            return EMPTYSET
        if len(flat) == 1:
            return next(iter(flat))
        merged = self._merge_byte_alternatives(flat)
        if len(merged) == 1:
            return merged[0]
        factored = self._factor_heads(merged)
        if factored is not None:
            return factored
        return self._make(_ALT, tuple(merged), any(map(self._nullable.__getitem__, merged)))

    def union_of(self, members: Iterable[int]) -> int:
        """The union of ``members``, none of them a union or ``EMPTYSET`` (the
        alternatives of other unions), as one term per set of members: unlike
        :meth:`alt`, byte sets are not merged nor heads factored, so the same language may
        also have another term, and making it costs a sort and a lookup."""
        ordered = tuple(sorted(members))
        if len(ordered) == 1:
            return ordered[0]
        if not ordered:
            return EMPTYSET
        key = (_ALT, *ordered)
        found = self._ids.get(key)
        if found is None:  # made here, not by _make: one key and one lookup a step
            found = self._ids[key] = self._append(
                _ALT, ordered, any(map(self._nullable.__getitem__, ordered)),
                any(map(self._boolean_flag.__getitem__, ordered)),
                any(map(self._ref_flag.__getitem__, ordered)),
                any(map(self._open_flag.__getitem__, ordered)),
                any(map(self._unbounded_flag.__getitem__, ordered)))
        return found

    def _factor_heads(self, members: list[int]) -> int | None:
        """``a·p | a·q | r`` as ``a·(p|q) | r`` where ``a`` is a run of a byte class
        (None when no two concatenations start with the same run). Derivatives of a union whose members start alike (bounded whitespace
        before each of an object's ``,`` and ``}``) keep starting alike, count after count;
        factored, each such state is one run then one union, whose rows are cheap, instead
        of a union deriving every member at every count."""
        kind, args = self._kind, self._args
        heads: dict[int, list[tuple[int, int]]] = {}  # run -> (member, what follows it)
        others = []
        for member in members:
            if kind[member] == _SEQ:
                head, rest = cast("tuple[int, int]", args[member])
                # Only runs of a byte class: grouping every union by its heads costs more
                # than it saves where unions are big (a multipleOf's residues).
                if kind[head] == _REP and kind[cast("tuple[int, int, Any]", args[head])[0]] == _BYTES:
                    heads.setdefault(head, []).append((member, rest))
                    continue
            others.append(member)
        if len(heads) == len(members) - len(others):
            return None
        out = others
        for head, group in heads.items():
            if len(group) == 1:
                out.append(group[0][0])
            else:
                out.append(self.seq(head, self.alt(rest for _, rest in group)))
        return self.alt(out)

    def _merge_byte_alternatives(self, items: set[int]) -> list[int]:
        # [a]|[b] is the byte set [ab]: fewer terms, and equal languages meet as one term.
        bits = 0
        rest = []
        for item in items:
            if self._kind[item] == _BYTES:
                bits |= self._args[item][0]  # type: ignore[operator]
            else:
                rest.append(item)
        if bits:
            rest.append(self.bytes_term(bits))
        return sorted(rest)

    def repeat(self, item: int, lo: int, hi: int | None) -> int:
        """``item{lo,hi}``; ``hi=None`` is unbounded."""
        if hi is not None and hi < lo:
            return EMPTYSET
        if hi == 0 or item == EPS:
            return EPS
        if item == EMPTYSET:
            return EPS if lo == 0 else EMPTYSET
        if self._nullable[item]:
            lo = 0  # x contains the empty string, so fewer copies are always possible
        if lo == 1 and hi == 1:
            return item
        if self._kind[item] == _REP and hi is None and lo <= 1:
            ilo: int
            inner, ilo, ihi = self._args[item]  # type: ignore[assignment]
            if ihi is None and ilo <= 1:  # (x*)* = x*, (x+)* = x*, (x*)+ = x*
                return self._make(_REP, (inner, min(lo, ilo), None), lo == 0 or ilo == 0)
        self.largest_count = max(self.largest_count, lo if hi is None else hi)
        self.has_loop = self.has_loop or hi is None
        return self._make(_REP, (item, lo, hi), lo == 0)

    def intersect(self, items: Iterable[int]) -> int:
        """Intersection; flattened and sorted."""
        flat: set[int] = set()
        for item in items:
            if item == EMPTYSET:
                return EMPTYSET
            if self._kind[item] == _AND:
                flat.update(self._args[item])  # type: ignore[arg-type]
            elif not (self._kind[item] == _NOT and self._args[item][0] == EMPTYSET):
                flat.add(item)
        if not flat:
            return self.complement(EMPTYSET)
        if len(flat) == 1:
            return next(iter(flat))
        ordered = tuple(sorted(flat))
        key = (_AND, *ordered)
        found = self._ids.get(key)
        if found is not None:  # decided below when first met
            return found
        kinds, args = self._kind, self._args
        for item in ordered:
            if kinds[item] == _NOT:
                removed = cast(int, args[item][0])
                for other in ordered:
                    if kinds[other] != _NOT and self._surely_contains(removed, other):
                        self._ids[key] = EMPTYSET
                        return EMPTYSET
        return self._make(_AND, ordered, all(map(self._nullable.__getitem__, ordered)))

    def _surely_contains(self, term: int, part: int, depth: int = 8) -> bool:
        """Whether ``term`` contains ``part`` by its shape alone: ``part`` is ``term``, an
        alternative of it, or what follows a head that may match nothing (``W{0,15}·X``
        holds ``X``). ``A & ~B`` is then empty without a search: the string of a key that
        matches no unanchored ``patternProperties`` pattern (``~(C*·\\w{1,16}·C* |
        \\w{0,15}·C*)`` after a word character, ``C*`` any string) took a search through
        every escape of the string language to find empty, 1.2 s (Github_hard/o12613)."""
        kinds, args, nullable = self._kind, self._args, self._nullable
        while depth:
            if term == part:
                return True
            kind = kinds[term]
            if kind == _ALT:
                alternatives = cast(tuple[int, ...], args[term])
                return len(alternatives) <= 64 and any(
                    self._surely_contains(a, part, depth - 1) for a in alternatives)
            if kind != _SEQ:
                return False
            head, term = cast(tuple[int, int], args[term])
            if not nullable[head]:
                return False
            depth -= 1
        return False

    def complement(self, item: int) -> int:
        """All byte strings not in ``item`` (callers intersect with valid UTF-8 themselves)."""
        if self._kind[item] == _NOT:
            return self._args[item][0]  # type: ignore[return-value]
        return self._make(_NOT, (item,), not self._nullable[item])

    def lazy(self, key: object, payload: object, source: LazySource, *, nullable: bool,
             boolean: bool, has_ref: bool) -> int:
        """A term that ``source.build(payload)`` builds only when its inside is first needed.

        ``key`` names the content (equal keys are one term). ``nullable`` and ``has_ref``
        are those of the term the build returns (whether it matches the empty string,
        whether a rule reference occurs inside). Its language must not be empty unless
        ``boolean`` is set; then ``source.live(payload)`` says whether it is, without
        building it. ``source.shortest(payload)`` estimates the length of its shortest
        string, for the emptiness search's order (see ``_search_live``), asked only if a
        search meets the term. A store's lazy terms all come from one source: one
        object, not a closure per term, since a large schema makes thousands of them and
        every object that lives through a compile is walked by each full collection of
        the garbage collector.
        """
        full_key = (_LAZY, key)
        found = self._ids.get(full_key)
        if found is not None:
            return found
        if self._lazy_source is None:
            self._lazy_source = source
        elif source is not self._lazy_source:
            raise ValueError("a store's lazy terms must all come from one source")
        ident = self._ids[full_key] = self._append(_LAZY, (key,), nullable, boolean,
                                                   has_ref, True)
        self._lazy_payloads[ident] = payload
        return ident

    def force(self, term: int) -> int:
        """``term``, or what it stands for if it is lazy (built once)."""
        while self._kind[term] == _LAZY:
            found = self._forced.get(term)
            if found is None:
                found = self._source().build(self._lazy_payloads[term])
                self._forced[term] = found
            term = found
        return term

    def _source(self) -> LazySource:
        source = self._lazy_source
        assert source is not None  # set with the first lazy term
        return source

    def ref(self, rule: int) -> int:
        """A reference to rule number ``rule`` (resolved by the stack machine)."""
        return self._make(_REF, (rule,), self.rule_nullable[rule])

    # -- queries -----------------------------------------------------------------------

    def nullable(self, term: int) -> bool:
        """Whether ``term`` matches the empty string."""
        return bool(self._nullable[term])

    def has_ref(self, term: int) -> bool:
        """Whether a rule reference occurs anywhere inside ``term``."""
        return bool(self._ref_flag[term])

    def is_live(self, term: int) -> bool:
        """Whether ``term``'s language is non-empty.

        Only intersections and complements can hide an empty language behind a term that is
        not ``EMPTYSET``; for them this searches the derivatives for an accepting term, so an
        automaton never offers a step into a dead end.
        """
        known = self._live.get(term)
        if known is not None:
            return known
        if not self._boolean_flag[term]:
            self._live[term] = True
            return True
        kind = self._kind[term]
        if kind == _LAZY:
            result = self._source().live(self._lazy_payloads[term])
            self._live[term] = result
            return result
        if kind in (_SEQ, _ALT, _REP):
            # Decided by the parts: the searches then run on the intersections and
            # complements alone, which recur in many places (a key pattern inside every
            # position of an object), and are remembered there, instead of on every new
            # "intersection, then the rest of the document" term a derivative makes.
            if kind == _SEQ:
                return self._sequence_is_live(term)
            if kind == _ALT:
                result = any(self.is_live(i) for i in self._args[term])  # type: ignore[arg-type]
            else:
                item, lo, _ = self._args[term]
                result = lo == 0 or self.is_live(item)  # type: ignore[arg-type]
            self._live[term] = result
            return result
        if kind == _AND:
            known = True if self._infinite_minus_finite(term) else self._counted_live(term)
            if known is not None:
                self._live[term] = known
                return known
        return self._search_live(term)

    def _infinite_minus_finite(self, term: int) -> bool:
        """Whether the intersection ``term`` is an infinite language less finitely many
        strings (``x*·tail & ~(k1|k2|...)``: the string of an unlisted key), hence live
        without a search. Only plain regular parts count: no intersection, complement,
        reference or lazy term inside them."""
        kinds, args = self._kind, self._args
        positive = 0
        for item in args[term]:
            inner = args[item][0] if kinds[item] == _NOT else item  # type: ignore[call-overload]
            if self._boolean_flag[inner] or self._open_flag[inner]:  # type: ignore[index]
                return False
            if kinds[item] != _NOT:  # type: ignore[call-overload]
                positive += 1
                if positive > 1 or not self._unbounded(item):  # type: ignore[arg-type]
                    return False
            elif self._unbounded(inner):  # type: ignore[arg-type]
                return False
        return positive == 1

    def _counted_live(self, term: int) -> bool | None:
        """Whether the intersection ``term`` of a plain language ``A`` with ``x·C{lo,hi}``
        (a string's length bound: the rest ``x`` of a character, then ``lo`` to ``hi``
        characters) is live, from the fewest units ``C`` a string of ``A`` in that form
        needs, which does not depend on ``lo`` and ``hi`` and so is found once for all
        the counts a string's states go through (searched per count, a pattern with a
        ``maxLength`` cost a search at every character, 0.4 ms each); ``None`` where the
        term is of no such form, or the fewest is below ``lo`` (then a longer string
        may still fit: the caller searches)."""
        items = self._args[term]
        # Both sides plain (O(1) flags) before walking either's spine: an intersection of
        # pieces of structure (an overlapping oneOf's objects) is never of this form.
        if len(items) != 2 or not all(self.is_plain(i) for i in items):  # type: ignore[arg-type]
            return None
        forms = []
        for side, other in ((items[0], items[1]), (items[1], items[0])):
            counted = self._counted_tail(side)  # type: ignore[arg-type]
            if counted is not None and self.is_plain(other):  # type: ignore[arg-type]
                forms.append((counted, other))
        # Both sides may be counted (a pattern's own x{2}): the larger bound first.
        for (prefix, unit, lo, hi), other in sorted(forms, key=lambda f: -f[0][3]):
            fewest = self._fewest_units(other, prefix, unit)  # type: ignore[arg-type]
            if fewest is not None and fewest >= lo:
                return fewest <= hi
        return None

    def _counted_tail(self, term: int) -> tuple[int, int, int, int] | None:
        """``(x, C, lo, hi)`` where ``term`` is ``x·C{lo,hi}``, all plain, ``hi`` finite and
        at least 2, and ``C`` never empty (``x`` is ``EPS`` where nothing precedes the repeat)."""
        kinds, args = self._kind, self._args
        heads: list[int] = []
        while kinds[term] == _SEQ:
            head, term = cast(tuple[int, int], args[term])
            heads.append(head)
        if kinds[term] != _REP:
            return None
        unit, lo, hi = cast(tuple[int, int, "int | None"], args[term])
        # An optional piece (``.{0,1}``, a hostname's trailing dot) is no length bound:
        # its search pairs every position of the other side with a few units, where the
        # emptiness search stops at the first string (format hostname: 20x slower).
        if hi is None or hi < 2 or self._nullable[unit] or not self.is_plain(term):
            return None
        if not all(self.is_plain(h) for h in heads):
            return None
        return self.seq_all(heads), unit, lo, hi

    def _fewest_units(self, plain: int, prefix: int, unit: int) -> float | None:
        """The fewest ``unit`` strings after a string of ``prefix`` that make a string of
        ``plain`` (``inf`` where none does); ``None`` past a budget (memoized).

        A shortest path over pairs of ``plain``'s and the units' derivatives, where
        finishing a unit costs 1 and a byte nothing (0-1 breadth first: a deque whose
        free moves go in front).
        """
        key = (plain, prefix, unit)
        if key in self._fewest_known:
            return self._fewest_known[key]
        boundary = -1  # between units: the next one starts, or the string may end
        best: dict[tuple[int, int, bool], int] = {}
        todo: deque[tuple[int, int, int, bool]] = deque()

        def reach(cost: int, at: int, inside: int, in_prefix: bool) -> None:
            node = (at, inside, in_prefix)
            if best.get(node, cost + 1) > cost:
                best[node] = cost
                if cost == todo_cost[0]:
                    todo.appendleft((cost, at, inside, in_prefix))
                else:
                    todo.append((cost, at, inside, in_prefix))

        todo_cost = [0]
        if self._nullable[prefix]:
            reach(0, plain, boundary, False)
        if prefix != EPS:
            reach(0, plain, prefix, True)
        fewest: float | None = math.inf
        while todo:
            cost, at, inside, in_prefix = todo.popleft()
            if best[(at, inside, in_prefix)] < cost:
                continue
            todo_cost[0] = cost
            if inside == boundary:
                if self._nullable[at]:
                    fewest = cost
                    break
                inside = unit
            if len(best) > _FEWEST_UNITS_BUDGET:
                fewest = None
                break
            at_pieces = self.derivative(at)[0]
            for bits, inner in self.derivative(inside)[0]:
                for at_bits, after in at_pieces:
                    if not bits & at_bits:
                        continue
                    if self._nullable[inner]:  # the unit (or the prefix) is finished
                        reach(cost + (not in_prefix), after, boundary, False)
                    if self.derivative(inner)[0]:
                        reach(cost, after, inner, in_prefix)
        self._fewest_known[key] = fewest
        return fewest

    def excluded_words(self, term: int) -> tuple[int, int, int] | None:
        """For ``(x* & ~K)·tail``, with ``K`` finite, plain and free of the bytes ``tail``
        starts with, and those bytes outside what ``x`` starts with (an unlisted key's
        string, then its quote): ``(x*·tail, K, tail)``; else ``None``.

        A string of ``term`` leaves ``x*`` at the first byte ``tail`` starts with, so a
        text read from ``term`` is one read from ``x*·tail`` whose part before that
        byte is not in ``K``: a token allowed from ``x*·tail`` is refused from ``term``
        exactly when it reads a string of ``K`` and goes on in ``tail`` (see
        :meth:`~constrain.masks.TokenMasks._excluded_plan`).
        """
        if self._kind[term] != _SEQ:
            return None
        head: int
        tail: int
        head, tail = self._args[term]  # type: ignore[assignment]
        if self._kind[head] != _AND or len(self._args[head]) != 2 or self._nullable[tail]:
            return None
        loop: int
        other: int
        loop, other = self._args[head]  # type: ignore[assignment]
        if self._kind[loop] == _NOT:
            loop, other = other, loop
        if self._kind[other] != _NOT or not self.unbounded_loop(loop):
            return None
        excluded: int = self._args[other][0]  # type: ignore[assignment]
        if self._args[loop][1] or any(self._boolean_flag[t] or self._open_flag[t]
                                      for t in (loop, excluded, tail)):
            return None
        if self._unbounded(excluded):
            return None
        pieces, refs = self.derivative(tail)
        starts = 0
        for bits, _ in pieces:
            starts |= bits
        loop_starts = 0
        for bits, _ in self.derivative(loop)[0]:
            loop_starts |= bits
        if refs or starts & (loop_starts | self.alphabet(excluded)):
            return None
        if not self._copies_hold(excluded, self._args[loop][0]):  # type: ignore[arg-type]
            return None
        return self.seq(loop, tail), excluded, tail

    def _copies_hold(self, strings: int, item: int, limit: int = 4096) -> bool:
        """Whether every string of the finite plain term ``strings`` is whole copies of
        ``item``, and ``item`` is a prefix code (no copy goes on past another's end), so
        that where a copy ends in a text is fixed by the text: then a token read from
        ``item*`` crosses into what follows exactly where it would from ``strings``
        (see :meth:`excluded_words`).

        Whole copies of a prefix code are closed under concatenation, union and repeats,
        so a concatenation, union or repeat holds when its parts do (memoized per part:
        the keys of one pattern at every count share them); any other part, and a
        concatenation or union whose parts are not whole alone (a character's bytes), is
        read through the DFA of ``item*``, at most ``limit`` pairs of a term and a DFA
        state. Read whole, every count of a key pattern's ``[/.\\w-]{0,254}`` took 0.5 s,
        again at each new count, one per token of a key (Github_medium/o65507)."""
        copies: list[list[tuple[int, int]]] | None | Literal[False] = self._copy_dfas.get(item, False)
        if copies is False:
            copies = self._copy_dfas[item] = self.copy_automaton(item)
        if copies is None:
            return False
        return self._whole_copies_of(strings, item, copies, limit)

    def _whole_copies_of(self, term: int, item: int, copies: list[list[tuple[int, int]]],
                         limit: int) -> bool:
        key = (term, item)
        found = self._whole_copies.get(key)
        if found is not None:
            return found
        kind, args = self._kind[term], self._args[term]
        if term == EPS or term == EMPTYSET:
            found = True
        elif kind == _SEQ or kind == _ALT:
            # Parts that are not whole copies alone may be together (a character's bytes).
            found = all(self._whole_copies_of(cast(int, part), item, copies, limit)
                        for part in args) or self._read_as_copies(term, copies, limit)
        elif kind == _REP:
            found = self._whole_copies_of(cast(int, args[0]), item, copies, limit)
        else:
            found = self._read_as_copies(term, copies, limit)
        self._whole_copies[key] = found
        return found

    def _read_as_copies(self, strings: int, copies: list[list[tuple[int, int]]],
                        limit: int) -> bool:
        """:meth:`_copies_hold` for one part, read through the DFA of ``item*``."""
        todo = [(strings, 0)]
        seen = set(todo)
        while todo:
            term, state = todo.pop()
            if self._nullable[term] and state != 0:
                return False  # it ends inside a copy
            pieces, refs = self.derivative(term)
            if refs:
                return False
            for bits, nxt in pieces:
                for copy_bits, copy_next in copies[state]:
                    if bits & copy_bits:
                        pair = (nxt, copy_next)
                        if pair not in seen:
                            seen.add(pair)
                            todo.append(pair)
                        bits &= ~copy_bits
                if bits:
                    return False  # a byte no copy takes here
            if len(seen) > limit:
                return False
        return True

    def _unbounded(self, term: int) -> bool:
        """Whether a repeat with no upper count occurs in ``term`` (a flag kept per term;
        rule references and lazy terms count as bounded). In a term with no intersection
        or complement every part matches something, so such a term matches infinitely
        many strings, and one without finitely many."""
        return bool(self._unbounded_flag[term])

    def _sequence_is_live(self, term: int) -> bool:
        # Along the right spine in a loop, not by recursion: a long literal next to an
        # intersection would otherwise nest one call per element.
        spine = []
        t = term
        result: bool | None = None
        while self._boolean_flag[t] and t not in self._live:
            kind = self._kind[t]
            if kind == _SEQ:
                spine.append(t)
                head, t = self._args[t]  # type: ignore[assignment]
                if not self.is_live(head):  # type: ignore[arg-type]
                    result = False
                    break
            else:
                break
        if result is None:
            result = self.is_live(t)
        for s in spine:  # each holds the dead part, or all of them are live
            self._live[s] = result
        return result

    def _search_live(self, term: int) -> bool:
        # Depth first and best first in turn. Depth first alone follows one branch of a
        # recursion down forever (an object inside an object..., each level a new term)
        # and exhausts the budget where a witness a few bytes long closes everything
        # (four Github_ultra schemas, minecraft-recipe); breadth first writes every
        # optional member of an object before the required ones (task.json). Best first
        # ranks by the cost so far plus a weighed estimate of the bytes still needed (see
        # _shortest), deeper first among equals, so it heads for the end; a step costs
        # more on a byte set with no printable ASCII (inside a multi-byte character, an
        # escape), so plain text is tried first. Where the estimate misleads it (it sees
        # little through complements), depth first still dives (Github_medium/o65914).
        # Any order is exact: only the budget depends on it. A short dive comes first
        # (see _dive), which finds most witnesses in a few dozen terms.
        if self._dive(term, min(_DIVE_BUDGET, self.max_liveness_search)):
            return True
        parent = {term: term}
        cost = {term: 0}
        live = self._live
        best = [(_ESTIMATE_WEIGHT * self._shortest(term), 0, 0, term)]
        deepest = [term]
        expanded: set[int] = set()
        turn = 0
        while best or deepest:
            # Both orders in turn over one set of terms: each term is expanded once, and a
            # witness either order finds quickly is found in about twice its time.
            turn += 1
            if deepest and (turn & 1 or not best):
                t = deepest.pop()
            else:
                t = heapq.heappop(best)[3]
            if t in expanded:
                continue
            expanded.add(t)
            if self._nullable[t] or live.get(t) or self.derivative(t)[1]:
                # Every term on the path found leads to an accepting one: remember them all,
                # so the searches from the states that follow are answered at once.
                while True:
                    live[t] = True
                    if t == term:
                        return True
                    t = parent[t]
            for bits, nxt in self.derivative(t)[0]:
                if nxt not in parent and live.get(nxt) is not False:
                    parent[nxt] = t
                    step = cost[nxt] = cost[t] + (
                        1 if bits & _PRINTABLE_ASCII else _OTHER_BYTE_COST)
                    guess = step + _ESTIMATE_WEIGHT * self._shortest(nxt)
                    heapq.heappush(best, (guess, -step, turn, nxt))
                    deepest.append(nxt)
            if len(parent) > self.max_liveness_search:
                raise ResourceLimitError(
                    "max_liveness_search", self.max_liveness_search,
                    "an intersection or complement is too large to check for emptiness",
                )
        for t in parent:
            live[t] = False
        return False

    def _dive(self, term: int, budget: int) -> bool:
        """Whether a witness is found depth first, the child with the shortest estimate
        (:meth:`_shortest`) tried first, within ``budget`` terms (``False``: not found,
        which proves nothing). Where a complement refuses the shortest completion (a key
        an ``if`` made required, which the estimate does not see), the detour is near the
        end: backtracking from there tries it after a few dives, where the search's
        best-first turns expand every cheaper term first (JsonSchemaStore/spacefile:
        ~80,000 derivative calls a search, 8.4 s in all on its first instance; 1.8 s
        after this)."""
        live = self._live
        parent = {term: term}
        stack = [term]
        expanded = 0
        while stack and expanded < budget:
            t = stack.pop()
            expanded += 1
            if self._nullable[t] or live.get(t) or self.derivative(t)[1]:
                while True:
                    live[t] = True
                    if t == term:
                        return True
                    t = parent[t]
            children = []
            for _, nxt in self.derivative(t)[0]:
                if nxt not in parent and live.get(nxt) is not False:
                    parent[nxt] = t
                    children.append((self._shortest(nxt), nxt))
            children.sort(reverse=True)
            stack.extend(nxt for _, nxt in children)
        return False

    def _shortest(self, term: int) -> int:
        """An estimate of the length of ``term``'s shortest string, for the search's order
        (memoized): exact without intersections, complements, references and lazy terms;
        an intersection counts as its longest item, a complement as one byte if it must
        have one, a reference as nothing, a lazy term as its builder estimated."""
        found = self._shortest_known.get(term)
        if found is not None:
            return found
        kind, args = self._kind[term], self._args[term]
        if kind == _SEQ:
            # Along the right spine in a loop: concatenations are as deep as they are long.
            spine = []
            t = term
            while self._kind[t] == _SEQ and t not in self._shortest_known:
                spine.append(t)
                t = self._args[t][1]  # type: ignore[assignment]
            total = self._shortest(t)
            for s in reversed(spine):
                total += self._shortest(self._args[s][0])  # type: ignore[arg-type]
                self._shortest_known[s] = total
            return total
        if kind == _BYTES:
            found = 1
        elif kind == _ALT:
            found = min(map(self._shortest, args))  # type: ignore[arg-type]
        elif kind == _REP:
            found = args[1] * self._shortest(args[0])  # type: ignore[operator, arg-type]
        elif kind == _AND:
            found = max(map(self._shortest, args))  # type: ignore[arg-type]
        elif kind == _NOT:
            found = 1 if self._nullable[args[0]] else 0  # type: ignore[call-overload]
        elif kind == _LAZY:
            found = self._source().shortest(self._lazy_payloads[term])
        else:  # the empty string, a reference
            found = 0
        self._shortest_known[term] = found
        return found

    def is_live_within(self, term: int, budget: int) -> bool | None:
        """:meth:`is_live`, or ``None`` when deciding it would explore more than ``budget``
        terms (what was learnt on the way is kept)."""
        if not self._boolean_flag[term]:
            return True
        known = self._live.get(term)
        if known is not None:
            return known
        limit = self.max_liveness_search
        self.max_liveness_search = min(limit, budget)
        try:
            return self.is_live(term)
        except ResourceLimitError:
            return None
        finally:
            self.max_liveness_search = limit

    def is_lexical(self, term: int) -> bool:
        """Whether no rule reference and no lazy term occurs inside ``term``."""
        return not self._open_flag[term]

    def is_plain(self, term: int) -> bool:
        """Whether ``term`` is lexical and holds no intersection or complement either: its
        derivatives are cheap, and every one of its successors matches something."""
        return not (self._open_flag[term] or self._boolean_flag[term])

    def alternatives(self, term: int) -> tuple[int, ...]:
        """The members of a union; ``(term,)`` for any other term."""
        if self._kind[term] == _ALT:
            return self._args[term]  # type: ignore[return-value]
        return (term,)

    def head_tail(self, term: int) -> tuple[int, int]:
        """``(head, tail)`` of a concatenation ``head·tail``; ``(term, EPS)`` otherwise."""
        if self._kind[term] == _SEQ:
            return self._args[term]  # type: ignore[return-value]
        return term, EPS

    def counted_head(self, term: int) -> tuple[int, int, int | None, int] | None:
        """``(x, lo, hi, tail)`` when ``term`` is ``x{lo,hi}·tail``, or ``x{lo,hi}`` alone
        (``tail`` is then ``EPS``); ``hi`` is ``None`` when unbounded. ``None`` otherwise.

        >>> store = TermStore()
        >>> digit = store.byte_set(range(0x30, 0x3A))
        >>> store.counted_head(store.seq(store.repeat(digit, 2, 5), store.byte_set([0x2D]))) == (
        ...     digit, 2, 5, store.byte_set([0x2D]))
        True
        """
        head, tail = self.head_tail(term)
        if self._kind[head] != _REP:
            return None
        item, lo, hi = self._args[head]
        return item, lo, hi, tail  # type: ignore[return-value]

    def leading_run(self, term: int) -> tuple[int, int, int] | None:
        """If ``term`` starts with ``x{lo,hi}``: the characters ``x`` surely matches as one
        unit — ``(ASCII bits, how many of the multi-byte characters, hi)``, the middle one
        as :meth:`single_characters` says — else ``None``.

        The mask engine uses it to accept whole token subtrees of such characters when
        their count fits in ``hi``, instead of walking them.
        """
        counted = self.counted_head(term)
        if counted is None:
            return None
        item, _, hi, _ = counted
        ascii_bits, utf8 = self.single_characters(item)
        if not ascii_bits:
            return None
        return ascii_bits, utf8, (1 << 30) if hi is None else hi

    def counted_structure(self, term: int) -> bool:
        """Whether ``term`` is ``x{lo,hi}`` with an upper count of at least two over an
        ``x`` that is more than one byte set (an array's further items, say)."""
        if self._kind[term] != _REP:
            return False
        item, _, hi = self._args[term]
        return hi is not None and hi >= 2 and self._kind[item] != _BYTES  # type: ignore

    def unbounded_loop(self, term: int) -> bool:
        """Whether ``term`` is ``x{lo,}``: a repeat with no upper count."""
        return self._kind[term] == _REP and self._args[term][2] is None

    def with_counts_at_most(self, term: int, most: int) -> int:
        """``term`` with the counts of a leading ``x{lo,hi}`` lowered to ``most`` where they
        are higher (``x`` not matching the empty string); ``term`` itself when nothing is.

        Every copy of ``x`` takes a byte at least, so no string shorter than ``most``
        bytes tells the two apart: the mask engine shares one mask between all the counts
        of a long run (a string's ``maxLength``, ``[0-9]{1,1000}``).

        >>> store = TermStore()
        >>> digits = store.repeat(store.byte_set(range(0x30, 0x3A)), 2, 900)
        >>> store.show(store.with_counts_at_most(digits, 129))
        '[30-39]{2,129}'
        """
        counted = self.counted_head(term)
        if counted is None:
            return term
        item, lo, hi, tail = counted
        if self._nullable[item] or (lo <= most and hi is not None and hi <= most):
            return term
        lowered = self.repeat(item, min(lo, most), None if hi is None else min(hi, most))
        return self.seq(lowered, tail)

    def without_far_length_bound(self, term: int, length: int) -> int:
        """``P·tail`` for ``(C{0,hi}·y & P)·tail`` (a string's ``maxLength`` over its
        ``pattern``, or a format's own length, as a DNS name's 253 characters then an
        optional dot) where no string of at most ``length`` bytes tells the two apart: the
        bound's reach (see :meth:`length_bound_reach`) is at least ``length``; ``term``
        itself otherwise. With several such bounds over one ``P`` (a format's and a
        ``maxLength``), all of them go.

        The mask engine then shares one mask between every count of a long string with a
        pattern (a word-count pattern under ``maxLength: 500``: each count was a walk of
        its own through ~1,400 new states, a count and a word count per byte read).

        >>> store = TermStore()
        >>> letter, bang = store.byte_set(range(0x61, 0x7B)), store.byte_set([0x21])
        >>> words = store.seq(store.repeat(letter, 1, 3), bang)
        >>> bound = store.intersect([store.repeat(store.alt([letter, bang]), 0, 200), words])
        >>> store.show(store.without_far_length_bound(store.seq(bound, bang), 128))
        '[61-7a]{1,3}[21][21]'
        >>> store.without_far_length_bound(bound, 199) == bound  # 199 + 2 > 200
        True
        """
        found = self.length_bound_reach(term)
        return found[0] if found is not None and found[1] >= length else term

    def length_bound_reach(self, term: int) -> tuple[int, int] | None:
        """``(P·tail, reach)`` for ``(C{0,hi}·y & P)·tail`` where ``y`` may match nothing, no
        unit is required any more and every string of ``P`` is whole units ``C``; ``reach``
        is ``hi`` less the most bytes any state of ``P`` needs to end (the least such
        ``hi`` where several bounds are over one ``P``). ``None`` for a term of no such
        form.

        No string of at most ``reach`` bytes tells ``term`` and ``P·tail`` apart: it
        starts at most ``reach`` units, a string of ``P`` it reads into ends within
        ``hi - reach`` more bytes (so units), and where it leaves ``P`` it has used at most
        ``reach``; a string of ``C{0,hi}`` is one of ``C{0,hi}·y``. So the two states allow
        the same tokens of at most ``reach`` bytes, and only longer ones need deciding one
        by one.

        >>> store = TermStore()
        >>> letter, bang = store.byte_set(range(0x61, 0x7B)), store.byte_set([0x21])
        >>> words = store.seq(store.repeat(letter, 1, 3), bang)
        >>> bound = store.intersect([store.repeat(store.alt([letter, bang]), 0, 200), words])
        >>> free, reach = store.length_bound_reach(store.seq(bound, bang))
        >>> store.show(free), reach, store._bytes_to_end(words)  # a letter and "!" at most
        ('[61-7a]{1,3}[21][21]', 198, 2)
        """
        found = self._length_bounds(term)
        if found is None:
            return None
        kept, farthest, bounds, tail = found
        return self.seq(kept, tail), min(hi for _, hi, _ in bounds) - farthest

    def plain_length_bound(self, term: int) -> tuple[int, int, int, int] | None:
        """``(C, hi, P, tail)`` for ``(C{0,hi} & P)·tail``, a :meth:`length_bound_reach`
        form with nothing after the bounds (a string's ``maxLength`` over its ``pattern``;
        the least ``hi`` where there are several); ``None`` otherwise.

        >>> store = TermStore()
        >>> letter, bang = store.byte_set(range(0x61, 0x7B)), store.byte_set([0x21])
        >>> words = store.repeat(letter, 1, 3)
        >>> bound = store.intersect([store.repeat(letter, 0, 40), words])
        >>> unit, hi, pattern, tail = store.plain_length_bound(store.seq(bound, bang))
        >>> unit == letter, hi, pattern == words, tail == bang
        (True, 40, True, True)
        """
        found = self._length_bounds(term)
        if found is None:
            return None
        kept, _, bounds, tail = found
        units = {unit for unit, _, _ in bounds}
        if len(units) != 1 or any(after != EPS for _, _, after in bounds):
            return None
        return units.pop(), min(hi for _, hi, _ in bounds), kept, tail

    def _length_bounds(self, term: int) -> tuple[int, int, list[tuple[int, int, int]], int] | None:
        """``(P, most bytes P needs to end, [(C, hi, y) per bound], tail)`` for the forms of
        :meth:`length_bound_reach`."""
        head, tail = self.head_tail(term)
        if self._kind[head] != _AND:
            return None
        items = cast(tuple[int, ...], self._args[head])
        if not all(self.is_plain(i) for i in items):
            return None
        for kept in items:
            farthest = self._bytes_to_end(kept)
            if farthest is None:
                continue
            bounds = [self._length_bound(side, kept) for side in items if side != kept]
            if bounds and None not in bounds:
                return kept, farthest, cast(list[tuple[int, int, int]], bounds), tail
        return None

    def _length_bound(self, side: int, plain: int) -> tuple[int, int, int] | None:
        """``(C, hi, y)`` where ``side`` is ``C{0,hi}·y`` with ``y`` matching the empty
        string and every string of ``plain`` whole units ``C`` (see
        :meth:`length_bound_reach`); ``None`` otherwise.

        ``C{lo,hi}`` alone counts as ``C{0,hi}`` where every string of ``plain`` has at
        least ``lo`` units: then the lower bound holds of every string both sides take (a
        string's ``minLength: 1`` under a pattern that needs a character, whose first state
        was a walk through a count per byte; ``minLength: 2`` under ``[a-z]{2,64}``)."""
        counted = self.counted_head(side)
        if counted is None:
            return None
        unit, lo, hi, after = counted
        if (hi is None or not self._nullable[after] or self._nullable[unit]
                or not self._copies_hold(plain, unit)):
            return None
        if lo and (after != EPS or self._least_copies(plain, unit) < lo):
            return None
        return unit, hi, after

    def _least_copies(self, term: int, item: int) -> int:
        """At least how many copies of ``item`` every string of ``term`` is, for a term
        of whole copies of the prefix code ``item`` (see :meth:`_copies_hold`), from its
        shape: the sum over a concatenation and the least over a union of parts that are
        whole copies alone, ``lo`` times an item's for a repeat, else one unless it may be
        empty (memoized)."""
        key = (term, item)
        found = self._fewest_copies.get(key)
        if found is not None:
            return found
        kind, args = self._kind[term], self._args[term]
        copies = self._copy_dfas.get(item)
        parts = cast(tuple[int, ...], args) if kind == _SEQ or kind == _ALT else ()
        if copies and parts and all(self._whole_copies_of(part, item, copies, 4096)
                                    for part in parts):
            counts = [self._least_copies(part, item) for part in parts]
            found = sum(counts) if kind == _SEQ else min(counts)
        elif copies and kind == _REP and self._whole_copies_of(term, item, copies, 4096):
            found = cast(int, args[1]) * self._least_copies(cast(int, args[0]), item)
        else:
            found = 0 if self._nullable[term] else 1
        self._fewest_copies[key] = found
        return found

    def _bytes_to_end(self, plain: int) -> int | None:
        """At least as many bytes as any state of the plain term ``plain`` (``plain`` or a
        derivative of it that can still end) needs to end; ``None`` for a term that is not
        plain (memoized).

        From its shape, without its states (a pattern's counts make thousands): a state
        of ``x·y`` is a state of ``x`` then all of ``y``, or a state of ``y``; of ``x|y``,
        a state of either; of ``x{lo,hi}``, a state of ``x`` then ``lo - 1`` more copies at
        most, or the start (``lo`` copies)."""
        found = self._farthest_end.get(plain, -1)
        if found != -1:
            return found
        kinds, args = self._kind, self._args
        kind = kinds[plain]
        result: int | None
        if not self.is_plain(plain):
            result = None
        elif kind == _SEQ:
            # Along the right spine in a loop: concatenations are as deep as they are long.
            spine = []
            t = plain
            while kinds[t] == _SEQ and t not in self._farthest_end:
                spine.append(t)
                t = cast(int, args[t][1])
            result = self._bytes_to_end(t)
            after = self._shortest(t)
            for s in reversed(spine):
                head = cast(int, args[s][0])
                head_end = self._bytes_to_end(head)
                result = None if result is None or head_end is None else max(
                    result, head_end + after)
                after += self._shortest(head)
                self._farthest_end[s] = result
        elif kind == _ALT:
            ends = [self._bytes_to_end(cast(int, i)) for i in args[plain]]
            result = None if None in ends else max(cast(list[int], ends))
        elif kind == _REP:
            item, lo = cast(int, args[plain][0]), cast(int, args[plain][1])
            item_end = self._bytes_to_end(item)
            result = None if item_end is None else max(
                lo * self._shortest(item), item_end + max(lo - 1, 0) * self._shortest(item))
        else:
            result = 1 if kind == _BYTES else 0  # the empty string (a reference is not plain)
        self._farthest_end[plain] = result
        return result

    def byte_run(self, term: int) -> tuple[int, int, int, int | None, int] | None:
        """If ``term`` is ``x{lo,hi}·tail`` (or ``x{lo,hi}``, or ``x·tail`` as ``x{1,1}``) for
        a class ``x`` of single bytes: ``(byte set, x, lo, hi, tail)``, else ``None``. The automaton builds the rows
        of such states (bounded whitespace, fixed-width digits) from a sibling's row."""
        head, tail = self.head_tail(term)
        if self._kind[head] == _BYTES:
            return self._args[head][0], head, 1, 1, tail  # type: ignore[return-value]
        counted = self.counted_head(term)
        if counted is None:
            return None
        item, lo, hi, tail = counted
        if self._kind[item] != _BYTES:
            return None
        return self._args[item][0], item, lo, hi, tail  # type: ignore[return-value]

    def copy_automaton(self, item: int, limit: int = 64) -> list[list[tuple[int, int]]] | None:
        """The DFA of ``item*``: per state, ``(byte set, next state)`` pairs, where state 0
        is the start of a copy; a transition out of state 0 starts a copy, one into state 0
        ends it. ``None`` when counting copies would be ambiguous (a copy may end and go
        on: one is a prefix of another), ``item`` holds a rule reference, or the DFA would
        have more than ``limit`` states.

        A copy that comes back to where it began without ending (``(ab)*c`` after ``ab``)
        is in a state of its own, not in state 0: only a whole copy ends one.

        >>> store = TermStore()
        >>> a, backslash, n = (store.byte_set([c]) for c in (0x61, 0x5C, 0x6E))
        >>> store.copy_automaton(store.alt([a, store.seq(backslash, n)])) == [
        ...     [(1 << 0x61, 0), (1 << 0x5C, 1)], [(1 << 0x6E, 0)]]
        True
        """
        found = self._item_dfa(item, limit, ended=0, open_ends=False)
        return None if found is None else found[0]

    def item_automaton(self, item: int,
                       limit: int = 64) -> tuple[list[list[tuple[int, int]]], list[bool]] | None:
        """The DFA of ``item`` alone: per state, ``(byte set, next state)`` pairs (state 0
        is ``item`` itself, ``-1`` where a string of it is over: nothing can follow
        inside it), and per state whether a string of it may end there all the same (a
        string of it goes on past another's end; always ``False`` for a prefix code, such
        as a JSON-encoded character: ``é``, ``\\u00e9`` or ``\\u00E9``). ``None`` when
        ``item`` holds a rule reference or the DFA would have more than ``limit`` states.

        >>> store = TermStore()
        >>> a, backslash, n = (store.byte_set([c]) for c in (0x61, 0x5C, 0x6E))
        >>> store.item_automaton(store.alt([a, store.seq(backslash, n)])) == (
        ...     [[(1 << 0x61, -1), (1 << 0x5C, 1)], [(1 << 0x6E, -1)]], [False, False])
        True
        >>> store.item_automaton(store.repeat(a, 0, 2)) == (
        ...     [[(1 << 0x61, 1)], [(1 << 0x61, -1)]], [True, True])
        True
        """
        return self._item_dfa(item, limit, ended=-1, open_ends=True)

    def _item_dfa(self, item: int, limit: int, ended: int,
                  open_ends: bool) -> tuple[list[list[tuple[int, int]]], list[bool]] | None:
        # Where a string ends for sure is the state ``ended``; with ``ended == 0`` (copies
        # of ``item`` one after the other) the state ``item`` reaches again before it
        # ends must be another one, or a copy would be counted where none ended. Without
        # ``open_ends`` a string that may end and go on makes it ``None``.
        if self._longer_than(item, limit):
            # Its longest string alone passes through more states than that: deriving
            # an enum of hundreds of strings found so ~8 ms a time.
            return None
        index = {} if ended == 0 else {item: 0}
        order = [item]
        states: list[list[tuple[int, int]]] = []
        ends = [open_ends and bool(self._nullable[item])]
        while len(states) < len(order):
            pieces, refs = self.derivative(order[len(states)])
            if refs:
                return None
            moves = []
            for bits, nxt in pieces:
                if nxt == EMPTYSET or not self.is_live(nxt):
                    continue
                if nxt == EPS:
                    moves.append((bits, ended))
                    continue
                if self._nullable[nxt] and not open_ends:
                    return None
                target = index.get(nxt)
                if target is None:
                    if len(order) >= limit:
                        return None
                    target = index[nxt] = len(order)
                    order.append(nxt)
                    ends.append(bool(self._nullable[nxt]))
                moves.append((bits, target))
            states.append(moves)
        return states, ends

    def _longer_than(self, term: int, length: int) -> bool:
        """Whether ``term`` is plain (see :meth:`is_plain`) and finite, and has a string of
        more than ``length`` bytes. A DFA of such a language has more than ``length``
        states: after each proper prefix of its longest string, what may follow is a
        different language (its longest string is shorter by one byte each time)."""
        if self._unbounded_flag[term] or not self.is_plain(term):
            return False
        return self._longest(term, length) > length

    def _longest(self, term: int, length: int) -> int:
        """The byte length of the longest string of a plain finite ``term``, or any number
        above ``length`` once it is known to be longer."""
        kind, args = self._kind, self._args
        total = 0
        while kind[term] == _SEQ:  # down the right spine: as deep as it is long
            head, term = cast("tuple[int, int]", args[term])
            total += self._longest(head, length - total)
            if total > length:
                return total
        found = kind[term]
        if found == _BYTES:
            return total + 1
        if found == _ALT:
            most = 0
            for member in cast("tuple[int, ...]", args[term]):
                most = max(most, self._longest(member, length - total))
                if total + most > length:
                    break
            return total + most
        if found == _REP:
            item, _, copies = cast("tuple[int, int, int]", args[term])  # finite: a number
            return total + copies * self._longest(item, length - total)
        return total  # EPS

    def single_characters(self, term: int) -> tuple[int, int]:
        """ASCII bytes that are, alone, a match of ``term``; and how many of the valid
        multi-byte UTF-8 characters are matches too, a level of :mod:`constrain.utf8`:
        all, all but the non-ASCII spaces (``\\S``, ECMA's ``.``), or not shown to be
        either (memoized)."""
        found = self._single_chars.get(term)
        if found is not None:
            return found
        pieces, _ = self.derivative(term)
        ascii_bits = 0
        for bits, nxt in pieces:
            if self._nullable[nxt]:
                ascii_bits |= bits & ((1 << 128) - 1)
        if self._every_multibyte_char(term, exact=False):
            level = NON_ASCII_ALL
        elif self._matches_tree(term, UTF8_TREE_BUT_SPACES):
            level = NON_ASCII_BUT_SPACES
        else:
            level = NON_ASCII_NONE
        found = (ascii_bits, level)
        self._single_chars[term] = found
        return found

    def _matches_tree(self, term: int, tree: tuple[Any, ...]) -> bool:
        """Whether every byte sequence of ``tree`` (see ``constrain.utf8._tree_of``) is a
        match of ``term``, each range read as one piece of its derivatives."""
        pieces, _ = self.derivative(term)
        for first, last, children in tree:
            wanted = ((1 << (last - first + 1)) - 1) << first
            nxt = next((n for b, n in pieces if b & wanted == wanted), None)
            if nxt is None:
                return False
            if not (self._matches_tree(nxt, children) if children else self._nullable[nxt]):
                return False
        return True

    def loops_on_multibyte_chars(self, term: int) -> bool:
        """Whether every valid multi-byte UTF-8 character leads from ``term`` back to
        ``term`` itself, as its form shows without deriving ``term``: ``x*·tail`` where
        each such character is exactly one ``x`` and ``tail`` needs a first byte that is
        ASCII. False where the form does not show it (it may still hold).

        A JSON string's inside followed by its quote is such a term in every place a
        string occurs; deriving each one through every character's bytes would build a
        state per place and byte.

        >>> store = TermStore()
        >>> char = store.alt([store.byte_set(range(0x20, 0x7F)),
        ...                   store.seq(store.byte_set(range(0xC2, 0xE0)), store.byte_set(range(0x80, 0xC0)))])
        >>> quote = store.byte_set([0x22])
        >>> store.loops_on_multibyte_chars(store.seq(store.repeat(char, 0, None), quote))
        False
        >>> from constrain.utf8 import utf8_byte_ranges
        >>> every = [store.seq_all(store.byte_set(range(a, b + 1)) for a, b in r)
        ...          for lo, hi in ((0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF))
        ...          for r in utf8_byte_ranges(lo, hi)]
        >>> char = store.alt([char, *every])
        >>> store.loops_on_multibyte_chars(store.seq(store.repeat(char, 0, None), quote))
        True
        """
        counted = self.counted_head(term)
        if counted is None:
            return False
        item, lo, hi, tail = counted
        if lo or hi is not None or tail == EPS or self._nullable[tail] or not self.is_lexical(item):
            return False
        pieces, refs = self.derivative(tail)
        if refs or any(bits >> 0x80 for bits, _ in pieces):
            return False
        found = self._exact_multibyte.get(item)
        if found is None:
            found = self._exact_multibyte[item] = self._every_multibyte_char(item, exact=True)
        return found

    def _every_multibyte_char(self, term: int, exact: bool) -> bool:
        """Whether every valid multi-byte UTF-8 character matches ``term``, reading the
        same successor for every byte of a decoder step (one term per UTF-8 decoder
        state). ``exact``: what is left after a whole character is ``EPS`` and nothing
        before it can end, so each character is one match and nothing else."""
        image = {0: term}
        for source, first, last, target in UTF8_MULTIBYTE_EDGES:
            wanted = ((1 << (last - first + 1)) - 1) << first
            nxt = next((n for b, n in self.derivative(image[source])[0] if b & wanted == wanted), None)
            if nxt is None:
                return False
            if target == 0:
                if not (nxt == EPS if exact else self._nullable[nxt]):
                    return False
            elif (exact and self._nullable[nxt]) or image.setdefault(target, nxt) != nxt:
                return False
        return True

    def derivative(self, term: int) -> Derivative:
        """``(pieces, refs)``: disjoint ``(byte set, successor)`` pairs, and for each rule
        reference that may come first, the successor after that rule's text."""
        found = self._derivatives.get(term)
        if found is not None:
            return found, self._derivative_refs.get(term, ())
        pieces, made_refs = self._derive(term)
        # Tuples of pairs of numbers, each table's entry one level deep: the collector
        # stops tracking them in the young generations, so however many a compile's
        # emptiness searches make, they never reach the old one. Kept together as
        # (pieces, refs), or as lists, every entry did: each full collection walked them
        # all (~550,000 objects after Handwritten/allOfPProp5), and tuples nested two
        # deep were untracked only by the full collections they had triggered, which then
        # came at a fixed count instead of a growing one.
        found = self._derivatives[term] = tuple(pieces)
        refs: Refs = (made_refs if type(made_refs) is tuple
                      else tuple(made_refs.items()))  # type: ignore[union-attr]
        if refs:
            self._derivative_refs[term] = refs
        return found, refs

    def _derive(self, term: int) -> tuple[Pieces, dict[int, int] | Refs]:
        kind = self._kind[term]
        args = self._args[term]
        if kind in (_EMPTYSET, _EPS):
            return [], {}
        if kind == _BYTES:
            return [(args[0], EPS)], {}  # type: ignore[list-item]
        if kind == _REF:
            return [], {args[0]: EPS}  # type: ignore[dict-item]
        if kind == _LAZY:
            return self.derivative(self.force(term))
        if kind == _SEQ:
            head, tail = args
            pieces, refs = self.derivative(head)  # type: ignore[arg-type]
            out: Pieces = [(bits, self.seq(nxt, tail)) for bits, nxt in pieces]  # type: ignore[arg-type]
            out_refs = {r: self.seq(nxt, tail) for r, nxt in refs}  # type: ignore[arg-type]
            if self._nullable[head]:  # type: ignore[call-overload]
                tail_pieces, tail_refs = self.derivative(tail)  # type: ignore[arg-type]
                out = union_pieces(self, [out, tail_pieces])
                for r, nxt in tail_refs:
                    out_refs[r] = self.alt([out_refs[r], nxt]) if r in out_refs else nxt
            return out, out_refs
        if kind == _ALT:
            parts = [self.derivative(i) for i in args]  # type: ignore[arg-type]
            merged_refs: dict[int, int] = {}
            for _, refs in parts:
                for r, nxt in refs:
                    merged_refs[r] = self.alt([merged_refs[r], nxt]) if r in merged_refs else nxt
            return union_pieces(self, [p for p, _ in parts]), merged_refs
        if kind == _REP:
            item, lo, hi = args
            rest = self.repeat(item, max(lo - 1, 0), None if hi is None else hi - 1)  # type: ignore
            pieces, refs = self.derivative(item)  # type: ignore[arg-type]
            return (
                [(bits, self.seq(nxt, rest)) for bits, nxt in pieces],
                {r: self.seq(nxt, rest) for r, nxt in refs},
            )
        if kind == _AND:
            # Byte sets refined item by item, each with the successors of the items so far;
            # each final set's successors are intersected once (intersecting them pairwise
            # on the way built a term for every partial intersection, used once).
            partial: dict[tuple[int, ...], int] = {(): ALL_BYTES}
            for item in args:
                pieces, _ = self.derivative(item)  # type: ignore[arg-type]
                refined: dict[tuple[int, ...], int] = {}
                for successors, have in partial.items():
                    for bits, nxt in pieces:
                        both = have & bits
                        if both:
                            key = successors + (nxt,)
                            refined[key] = refined.get(key, 0) | both
                partial = refined
                if not partial:
                    break
            merged: dict[int, int] = {}
            for successors, bits in partial.items():
                target = self.intersect(successors)
                if target != EMPTYSET:
                    merged[target] = merged.get(target, 0) | bits
            return [(bits, target) for target, bits in merged.items()], {}
        if kind == _NOT:
            pieces, _ = self.derivative(args[0])  # type: ignore[arg-type]
            covered = 0
            out = []
            for bits, nxt in pieces:
                covered |= bits
                out.append((bits, self.complement(nxt)))
            if covered != ALL_BYTES:
                out.append((ALL_BYTES & ~covered, self.complement(EMPTYSET)))
            return out, {}
        raise AssertionError(f"unknown term kind {kind}")  # pragma: no cover

    def derivative_byte(self, term: int, byte: int) -> tuple[int, Refs]:
        """``(successor, refs)``: the part of :meth:`derivative` for one byte (the same
        successor term its pieces give that byte, ``EMPTYSET`` if none), and the same refs.

        Following one byte only builds the successor that byte needs, where a derivative
        builds every piece's: a matcher stepping through a token it was allowed needs only
        those (memoized per term and byte).
        """
        key = term << 8 | byte
        found = self._byte_derivatives.get(key)
        if found is None:
            whole = self._derivatives.get(term)
            if whole is not None:  # a row of some state had it derived: read the piece
                bit = 1 << byte
                nxt = next((n for bits, n in whole if bits & bit), EMPTYSET)
                refs: Refs = self._derivative_refs.get(term, ())
            else:
                nxt, made = self._derive_byte(term, byte)
                refs = made if type(made) is tuple else tuple(made.items())  # type: ignore[union-attr]
            self._byte_derivatives[key] = (nxt, refs) if refs else nxt
            return nxt, refs
        if type(found) is int:
            return found, ()
        return found  # type: ignore[return-value]

    def _derive_byte(self, term: int, byte: int) -> tuple[int, dict[int, int] | Refs]:
        kind = self._kind[term]
        args = self._args[term]
        if kind in (_EMPTYSET, _EPS):
            return EMPTYSET, {}
        if kind == _BYTES:
            return (EPS if args[0] >> byte & 1 else EMPTYSET), {}  # type: ignore[operator]
        if kind == _REF:
            return EMPTYSET, {args[0]: EPS}  # type: ignore[dict-item]
        if kind == _LAZY:
            return self.derivative_byte(self.force(term), byte)
        if kind == _SEQ:
            head, tail = args
            nxt, refs = self.derivative_byte(head, byte)  # type: ignore[arg-type]
            out = self.seq(nxt, tail)  # type: ignore[arg-type]
            out_refs = {r: self.seq(n, tail) for r, n in refs}  # type: ignore[arg-type]
            if self._nullable[head]:  # type: ignore[call-overload]
                tail_nxt, tail_refs = self.derivative_byte(tail, byte)  # type: ignore[arg-type]
                out = self.alt([out, tail_nxt])
                for r, n in tail_refs:
                    out_refs[r] = self.alt([out_refs[r], n]) if r in out_refs else n
            return out, out_refs
        if kind == _ALT:
            # Only the alternatives that may start with the byte: the others derive to
            # nothing (a key trie's branches but one, at every byte a token steps through).
            bit = 1 << byte
            first = self.first_bytes
            parts = [self.derivative_byte(i, byte) for i in args  # type: ignore[arg-type]
                     if first(i) & bit]  # type: ignore[arg-type]
            merged_refs: dict[int, int] = {}
            for _, refs in parts:
                for r, n in refs:
                    merged_refs[r] = self.alt([merged_refs[r], n]) if r in merged_refs else n
            return self.alt([n for n, _ in parts]), merged_refs
        if kind == _REP:
            item, lo, hi = args
            nxt, refs = self.derivative_byte(item, byte)  # type: ignore[arg-type]
            if nxt == EMPTYSET and not refs:
                return EMPTYSET, {}
            rest = self.repeat(item, max(lo - 1, 0), None if hi is None else hi - 1)  # type: ignore
            return self.seq(nxt, rest), {r: self.seq(n, rest) for r, n in refs}
        # Intersections and complements from their items' successors for this byte
        # alone: the whole derivative makes a term for every byte class (each first byte
        # of the keys a listed-key complement forbids), where a token stepping through an
        # unlisted key's string needs one (sample: a third of the time of intermediate
        # steps). The same terms as the whole derivative's pieces.
        if kind == _NOT:
            inner, _ = self.derivative_byte(args[0], byte)  # type: ignore[arg-type]
            return self.complement(inner), {}
        successors = []
        for item in args:  # an intersection: refs inside are not followed, as in _derive
            nxt, _ = self.derivative_byte(item, byte)  # type: ignore[arg-type]
            if nxt == EMPTYSET:
                return EMPTYSET, {}
            successors.append(nxt)
        return self.intersect(successors), {}

    def alphabet(self, term: int) -> int:
        """Every byte ``term`` may ever consume, as a 256-bit set (all bytes where a rule
        reference or a lazy term is inside; memoized)."""
        if self._open_flag[term]:
            return ALL_BYTES
        found = self._alphabets.get(term)
        if found is not None:
            return found
        todo = [term]  # post-order without recursion, as in fingerprint
        while todo:
            t = todo[-1]
            if t in self._alphabets:
                todo.pop()
                continue
            kind, args = self._kind[t], self._args[t]
            parts = () if kind == _BYTES else args[:1] if kind == _REP else args
            missing = [p for p in parts if p not in self._alphabets]
            if missing:
                todo.extend(missing)  # type: ignore[arg-type]
                continue
            todo.pop()
            bits = args[0] if kind == _BYTES else 0
            for p in parts:
                bits |= self._alphabets[p]  # type: ignore[index, operator]
            self._alphabets[t] = bits  # type: ignore[assignment]
        return self._alphabets[term]

    def first_bytes(self, term: int) -> int:
        """The bytes a string of ``term`` may start with, as a 256-bit set; every byte
        where a rule reference, a lazy term or a complement may come first. A byte
        outside it derives ``term`` to ``EMPTYSET`` with no refs (memoized).

        >>> store = TermStore()
        >>> ab = store.seq(store.repeat(store.byte_set([0x61]), 0, None), store.byte_set([0x62]))
        >>> [chr(b) for b in range(256) if store.first_bytes(ab) >> b & 1]
        ['a', 'b']
        """
        found = self._first_bytes.get(term)
        if found is not None:
            return found
        kind, args = self._kind[term], self._args[term]
        bits: int
        if kind == _BYTES:
            bits = args[0]  # type: ignore[assignment]
        elif kind == _EMPTYSET or kind == _EPS:
            bits = 0
        elif kind == _SEQ:
            head, tail = cast(tuple[int, int], args)
            bits = self.first_bytes(head)
            if self._nullable[head] and bits != ALL_BYTES:
                bits |= self.first_bytes(tail)
        elif kind == _ALT:
            bits = 0
            for item in cast(tuple[int, ...], args):
                bits |= self.first_bytes(item)
                if bits == ALL_BYTES:
                    break
        elif kind == _REP:
            bits = self.first_bytes(args[0])  # type: ignore[arg-type]
        elif kind == _AND:
            bits = ALL_BYTES
            for item in cast(tuple[int, ...], args):
                bits &= self.first_bytes(item)
        else:  # a complement, a rule reference, a lazy term
            bits = ALL_BYTES
        self._first_bytes[term] = bits
        return bits

    def free_prefix(self, term: int) -> int:
        """The byte set ``x`` when ``term`` is ``x*`` or ``x*·tail`` for a class ``x`` of
        single bytes, else 0. Every string over ``x`` then starts a match of ``term``
        (when ``tail`` is not empty)."""
        head: int = self._args[term][0] if self._kind[term] == _SEQ else term  # type: ignore[assignment]
        if self._kind[head] != _REP:
            return 0
        item: int
        item, lo, hi = self._args[head]  # type: ignore[assignment]
        if lo or hi is not None or self._kind[item] != _BYTES:
            return 0
        return self._args[item][0]  # type: ignore[return-value]

    def fingerprint(self, term: int) -> Fingerprint | None:
        """An id of a lexical term's structure, equal for equal structures in any store
        (so across automata); ``None`` for a term with a rule reference or a lazy term
        inside, whose meaning depends on its automaton (memoized).

        Exact, not a digest: structures are numbered in one process-wide table (see
        :class:`_StructureIds`), so two different structures never share an id.

        >>> a, b = TermStore(), TermStore()
        >>> b.byte_set([0x62])  # ids differ between the stores from here on
        2
        >>> def ab(s): return s.alt([s.seq(s.byte_set([0x61]), s.byte_set([0x62])), s.byte_set([0x63])])
        >>> a.fingerprint(ab(a)) == b.fingerprint(ab(b)) != a.fingerprint(a.byte_set([0x61]))
        True
        """
        if self._open_flag[term]:
            return None
        table = _STRUCTURES
        with table.lock:
            generation = table.start_call()
            if self._fingerprint_generation != generation:  # ids of an older table
                self._fingerprints = {}
                self._fingerprint_generation = generation
            known = self._fingerprints
            found = known.get(term)
            if found is None:
                found = self._number_structure(term, known, table.ids)
        return generation, found

    def _number_structure(self, term: int, known: dict[int, int],
                          ids: dict[tuple[object, ...], int]) -> int:
        kinds, all_args = self._kind, self._args
        todo = [term]  # post-order without recursion: concatenations nest as deep as they are long
        while todo:
            t = todo[-1]
            if t in known:
                todo.pop()
                continue
            kind, args = kinds[t], all_args[t]
            if kind == _BYTES:
                key: tuple[object, ...] = (kind, args[0])
            else:
                parts = args[:1] if kind == _REP else args
                waiting = False
                for p in parts:
                    if p not in known:
                        todo.append(p)  # type: ignore[arg-type]
                        waiting = True
                if waiting:
                    continue
                if kind == _SEQ:
                    key = (kind, known[args[0]], known[args[1]])  # type: ignore[index]
                elif kind == _REP:
                    key = (kind, known[args[0]], args[1], args[2])  # type: ignore[index]
                elif kind == _ALT or kind == _AND:  # members are sorted by id, which differs
                    key = (kind, *sorted([known[p] for p in args]))  # type: ignore[index]
                else:
                    key = (kind, *[known[p] for p in args])  # type: ignore[index]
            todo.pop()
            found = ids.get(key)
            if found is None:
                found = ids[key] = len(ids)
            known[t] = found
        return known[term]

    def show(self, term: int) -> str:
        """A compact human-readable rendering, for debugging and error messages."""
        kind, args = self._kind[term], self._args[term]
        if kind == _EMPTYSET:
            return "∅"
        if kind == _EPS:
            return "ε"
        if kind == _BYTES:
            return _show_bits(args[0])  # type: ignore[arg-type]
        if kind == _SEQ:
            return self.show(args[0]) + self.show(args[1])  # type: ignore[arg-type]
        if kind == _ALT:
            return "(" + "|".join(self.show(i) for i in args) + ")"  # type: ignore[arg-type]
        if kind == _REP:
            item, lo, hi = args
            return f"{self.show(item)}{{{lo},{'' if hi is None else hi}}}"  # type: ignore
        if kind == _AND:
            return "(" + "&".join(self.show(i) for i in args) + ")"  # type: ignore[arg-type]
        if kind == _NOT:
            return "~" + self.show(args[0])  # type: ignore[arg-type]
        if kind == _LAZY:
            return f"<lazy {args[0]!r}>"
        return f"<rule {args[0]}>"


class _StructureIds:
    """The process-wide numbering of lexical term structures behind
    :meth:`TermStore.fingerprint`: a structure's key is its kind with its parts' numbers
    (and a byte set's bits, a repeat's counts), so equal structures get one number in
    every store, exactly, at one dictionary lookup per term.

    Bounded: once it holds ``limit`` structures, the next call starts a new, empty
    generation. Fingerprints carry their generation, so one from an older table never
    equals a newer one (plans shared under old ones are simply not found again), and each
    store renumbers its terms when it sees the generation change.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.ids: dict[tuple[object, ...], int] = {}
        self.generation = 0
        self.lock = threading.Lock()

    def start_call(self) -> int:
        """The generation one fingerprint call numbers in (call with ``lock`` held)."""
        if len(self.ids) >= self.limit:
            self.ids = {}
            self.generation += 1
        return self.generation


# ~200 bytes a structure: at most ~50 MB before a new generation starts.
_STRUCTURES = _StructureIds(limit=262_144)


def union_pieces(store: TermStore, groups: list[Pieces]) -> Pieces:
    """Merge several disjoint piece lists into one whose successors are unions."""
    groups = [g for g in groups if g]
    if len(groups) == 1:
        return groups[0]
    # Fast path: the alternatives split the bytes the same way (or disjointly), which is
    # the usual case (every branch of (a|b)... has pieces [a] and [b]).
    by_bits: dict[int, list[int]] = {}
    for group in groups:
        for bits, nxt in group:
            by_bits.setdefault(bits, []).append(nxt)
    seen = 0
    for bits in by_bits:
        if seen & bits:
            break
        seen |= bits
    else:
        return [(bits, store.alt(targets)) for bits, targets in by_bits.items()]
    # The bytes split into atoms: the coarsest sets no piece's set cuts through (few:
    # pieces tend to repeat a handful of sets, like [a], [b] and [ab] in (a|b)*a(a|b){20}),
    # then each atom's successor is the union of the pieces that contain it.
    atoms: list[int] = []
    for bits in by_bits:
        outside = bits
        refined: list[int] = []
        for atom in atoms:
            inside = atom & bits
            if inside and inside != atom:
                refined.append(inside)
                refined.append(atom & ~bits)
            else:
                refined.append(atom)
            outside &= ~atom
        if outside:
            refined.append(outside)
        atoms = refined
    merged: dict[int, int] = {}
    for atom in atoms:
        target = store.alt([t for bits, targets in by_bits.items() if bits & atom for t in targets])
        merged[target] = merged.get(target, 0) | atom
    return [(bits, target) for target, bits in merged.items()]


def _show_bits(bits: int) -> str:
    ranges = []
    b = 0
    while b < 256:
        if bits >> b & 1:
            start = b
            while b + 1 < 256 and bits >> (b + 1) & 1:
                b += 1
            ranges.append(f"{start:02x}" if start == b else f"{start:02x}-{b:02x}")
        b += 1
    return "[" + ",".join(ranges) + "]"
