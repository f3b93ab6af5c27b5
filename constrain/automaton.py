"""Grammar IR → one lazy deterministic automaton over UTF-8 bytes.

Each rule becomes a term (see :mod:`constrain.terms`); a *configuration* is the set of
stacks of terms the input may be in. Stacks are persistent and hash-consed (a stack is an
id naming its top term and the stack below), so pushing, popping and comparing are O(1)
whatever the depth, and stacks share their common bottoms. Rule references push a frame and
a finished rule pops it, so recursion is exact, never unrolled. For a regex or a
non-recursive schema a configuration is a single one-frame stack and this is a plain DFA.

Configurations are numbered as they are reached: these numbers are the automaton's states.
A state's 256 successors are computed once, when first needed, into a numpy row, so the mask
engine can index them in bulk. ``max_states`` bounds memory with a clear error.

>>> from constrain.grammar import Grammar, literal, alt, star, ref, seq
>>> g = Grammar({"start": seq(literal("["), alt(literal("x"), ref("start")), literal("]"))})
>>> a = Automaton(g)
>>> a.matches(b"[[[x]]]"), a.matches(b"[[x]"), a.matches(b"[]")
(True, False, False)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import NamedTuple, cast

import numpy as np

from . import grammar as ir
from .errors import GrammarError, ResourceLimitError
from .member_sets import MemberSets
from .recursion_limit import ensure_recursion_limit
from .terms import ALL_BYTES, EMPTYSET, EPS, Fingerprint, TermStore
from .utf8 import utf8_byte_ranges

__all__ = ["Automaton", "AutomatonOptions", "CountedRun", "HeadSplit", "LiteralText"]

Stack = int  # an id into Automaton._stack_frames; 0 is the empty stack
# A configuration: its stacks, ascending, none of them dead (a tuple of ints, which the
# garbage collector stops tracking, where a frozenset is walked by every full collection).
Config = tuple[Stack, ...]
# A small DFA (see TermStore.item_automaton): per state, (byte set, next state) pairs,
# and whether a string may end there.
Code = tuple[list[list[tuple[int, int]]], list[bool]]
EMPTY_STACK = 0
DEAD_STACK = -1  # a stack with a dead frame: dropped

# Code points per UTF-8 length; surrogates are excluded by the caller.
_UTF8_BANDS = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF))
_MAX_STACKS_PER_STEP = 100_000
# A row table doubles up to this many rows, then reserves _RESERVED_ROWS (16 MiB of
# address space, backed only where states are interned: see Automaton._grow_rows).
_DOUBLED_ROWS = 1_024
_RESERVED_ROWS = 16_384
# Members of an exponential automaton derived at compile (see MemberSets.derive_reachable).
_EAGER_MEMBERS = 64
# States of one item's automaton (see Automaton.code_of): a JSON-encoded character has
# at most 15 (a surrogate pair's escape), a gap of 20 whitespace characters 21; a
# bigger item is walked as usual.
_CODE_STATES = 32
# Code automata kept for the whole process, by item structure (see Automaton._code_of).
_SHARED_CODES = 65536
_shared_codes: dict[Fingerprint, Code | None] = {}
_shared_codes_lock = threading.Lock()
_MEMBER_LIVENESS_BUDGET = 2_000
# A token under a length bound falls back to stepping through its bytes past this.
_FIT_LIVENESS_BUDGET = 2_000


class HeadSplit(NamedTuple):
    """See :meth:`Automaton.head_split`: the head's state, whether the tail may match the
    empty string (then the state may end where its head does), whether the head may
    match the empty string (then every token of the tail's state is one of the state's
    too), and the tail as a stack and a term on top of it (its state is made on request,
    by :meth:`Automaton.split_tail`)."""

    head: int
    tail_can_end: bool
    head_can_be_empty: bool
    rest: int
    tail: int


class CountedRun(NamedTuple):
    """See :meth:`Automaton.counted_run`: the state's next step is ``item{least,most}``
    (``most`` ``None``: unbounded), then ``tail`` on top of the stack ``below``."""

    item: int
    least: int
    most: int | None
    below: Stack
    tail: int


class LengthBound(NamedTuple):
    """See :meth:`Automaton.length_bound`: the state is ``(unit{0,most} & pattern)·tail``
    on its only stack, and ``tail`` starts with a byte of ``tail_starts`` (a 256-bit set;
    ``None`` where it may start otherwise: empty, or with a rule)."""

    unit: int
    most: int
    pattern: int
    tail_starts: int | None


class LiteralText(NamedTuple):
    """See :meth:`Automaton.literal_text`: the state's only stack is ``below`` with
    ``top`` on it, ``top`` starts with ``items`` (``starts[i]``: the concatenation
    item ``i`` begins), and ``after`` is the state once they are read (``None``: the end)."""

    top: int
    below: Stack
    items: tuple[int, ...]
    starts: tuple[int, ...]
    after: int | None


@dataclass(frozen=True)
class AutomatonOptions:
    """Budgets of one automaton.

    ``max_states`` (default 100,000): reached configurations; each costs a 1 KiB row, so the
    default caps rows at ~100 MB. ``max_terms`` (default 2,000,000): distinct terms built by
    derivatives (~200 bytes each). ``max_stacks_per_state`` (default 1,024): candidate
    stacks alive at once; only ambiguous recursive grammars come near it. All raise
    :class:`ResourceLimitError`.

    ``max_mask_memory`` (default 1 GiB) bounds the masks and plans a compiled constraint
    memoizes instead: past it they are forgotten and made again as decoding asks for
    them (a mask row is ~19 KB on a 151k vocabulary; the heaviest MaskBench schemas'
    first instances hold ~250 MB).
    """

    max_states: int = 100_000
    max_terms: int = 2_000_000
    max_stacks_per_state: int = 1024
    max_mask_memory: int = 1 << 30


class _LazyTerms:
    """Builds an automaton's lazy terms (see :class:`~constrain.terms.LazySource`) from
    the payload ``(node, rule)`` of each: the :class:`~constrain.grammar.Lazy` node and
    the rule it occurs in.

    The store keeps this, and the automaton keeps the store: it holds the automaton
    weakly, since a strong reference back would make every automaton cyclic garbage, left
    for the garbage collector's full passes instead of being freed when its constraint
    is dropped.
    """

    __slots__ = ("_automaton",)

    def __init__(self, automaton: Automaton) -> None:
        self._automaton = weakref.ref(automaton)

    def _owner(self) -> Automaton:
        automaton = self._automaton()
        assert automaton is not None  # the store is only reached through its automaton
        return automaton

    # A payload is the node; the rule it occurs in is the automaton's to say (a
    # (node, rule) pair per lazy term stayed tracked by the collector: ~1,900 after
    # Github_ultra/o53885's first instance).

    def build(self, payload: object) -> int:
        owner = self._owner()
        node = cast(ir.Lazy, payload)
        return owner._convert(node.build(), owner._lazy_rules[id(node)])

    def live(self, payload: object) -> bool:
        owner = self._owner()
        node = cast(ir.Lazy, payload)
        return owner._needs_live(node.needs, owner._lazy_rules[id(node)])

    def shortest(self, payload: object) -> int:
        return self._owner()._needs_shortest(cast(ir.Lazy, payload).needs)


class Automaton:
    """The lazy byte-level automaton of a :class:`~constrain.grammar.Grammar`.

    Thread-safe: building new states takes a lock; reading built ones does not.
    """

    DEAD = 0

    def __init__(self, grammar: ir.Grammar, options: AutomatonOptions | None = None) -> None:
        ensure_recursion_limit()
        self._build(grammar, options)

    def _build(self, grammar: ir.Grammar, options: AutomatonOptions | None) -> None:
        self.options = options or AutomatonOptions()
        self.grammar = grammar
        library = grammar.library
        # A library's rules are numbered first, as in its own store (see _library_start).
        names = list(grammar.rules)
        if library is not None:
            names = [*library.rules, *(n for n in names if n not in library.rules)]
        self._rule_names = names
        self._rule_index = {name: i for i, name in enumerate(names)}
        start = _library_start(library, self.options) if library is not None else None
        # The library's rules are the grammar's and reference only each other: what its
        # own automaton found about them holds here (each fixpoint took two passes over
        # them per compile).
        settled_nullable: dict[str, bool] = {}
        settled_productive: dict[str, bool] = {}
        if start is not None and library is not None:
            settled_nullable = {n: start._rule_nullable[n] for n in library.rules}
            settled_productive = {n: start._rule_productive[n] for n in library.rules}
        # An unreferenced start rule's values are never asked for, and walking it is
        # walking the whole document of a JSON Schema's grammar (twice).
        skipped = () if grammar.start_referenced else (grammar.start,)
        self._rule_nullable: dict[str, bool] = _rule_fixpoint(
            grammar, _expr_nullable, settled_nullable, skipped)
        # A rule that can never finish (recursion without a base case) has an empty
        # language; its references become the empty set so no path leads into it.
        self._productive_memo: dict[int, tuple[ir.Expr, bool]] = {}
        known = self._productive_memo
        self._rule_productive: dict[str, bool] = _rule_fixpoint(
            grammar, lambda expr, rules: _expr_productive(expr, rules, known),
            settled_productive, skipped)
        nullable_by_index = [self._rule_nullable[n] for n in names]
        self._parts_memo: dict[int, tuple[tuple[ir.Expr, ...], bool]] = {}
        self._live_memo: dict[int, tuple[ir.Expr, bool]] = {}
        self._shortest_memo: dict[int, tuple[ir.Expr, int]] = {}
        # Terms by node id, and the nodes converted, held so that their ids stay theirs:
        # in a list, the memo's entries are numbers the collector does not track (as
        # (node, term) pairs, ~6,000 a heavy schema's first instance made stayed tracked
        # for every later full collection).
        self._converted_nodes: list[ir.Expr] = []
        self._utf8_memo: dict[int, tuple[ir.Expr, bool]] = {}
        self._char_cache: dict[tuple[tuple[int, int], ...], int] = {}
        # A library's own memos, read where this automaton's miss, not copied into each
        # compile: with the term store's per-term lists (now bytearrays), such copies were
        # ~7,000 of the ~12,000 references each young collection during a median compile
        # followed. Its nodes stay held by the library's automaton, which the grammar
        # keeps alive through its library.
        self._library_chars: dict[tuple[tuple[int, int], ...], int] = {}
        self._library_utf8: dict[int, tuple[ir.Expr, bool]] | None = None
        if start is None:
            self.terms = TermStore(self.options.max_terms, nullable_by_index)
            self._converted: dict[int, int] = {}
            self._utf8_star: int | None = None
            done: list[int] = []
        else:
            self.terms = start.terms.fork(self.options.max_terms, nullable_by_index)
            self._converted = start._converted.copy()  # numbers only: not tracked
            self._library_chars = start._char_cache
            self._library_utf8 = start._utf8_memo
            self._utf8_star = start._utf8_star
            done = start.rule_terms[:len(library.rules)]  # type: ignore[union-attr]
        self._lazy_source = _LazyTerms(self)
        self._lazy_rules: dict[int, str] = {}  # by lazy node id: the rule it occurs in
        rules = grammar.rules
        self.rule_terms: list[int] = done + [self._convert(rules[name], name)
                                             for name in names[len(done):]]
        # A start rule with no reference and no lazy term inside (a regex, a choice set;
        # other rules, a library's say, are then unreachable): every state is a single
        # stack holding a lexical term, so it never splits into a head and a tail nor into
        # structured alternatives.
        self.regular = self.terms.is_lexical(self.rule_terms[self._rule_index[grammar.start]])
        # Set by build_all when the states double level after level (a union of positions
        # that keeps growing, as in ``(a|b)*a(a|b){20}``) in a plain language (no
        # intersection or complement): decoding meets new states at every step, while the
        # members of their unions stay few (see _step_members).
        self.exponential = False
        self._check_left_recursion()
        self._lock = threading.RLock()
        # Persistent stacks: id -> (top term, id of the stack below); id 0 is empty.
        self._stack_frames: list[tuple[int, int]] = [(EPS, EMPTY_STACK)]
        # By ``term << 32 | below``: a number, not a tuple made at every push.
        self._stack_ids: dict[int, int] = {}
        self._stack_can_end_flags: list[bool] = [True]
        # None for a state of an exponential automaton made from its members' bitset alone
        # (see _step_members): its union term and stack are made if something asks.
        self._configs: list[Config | None] = [()]
        self._config_ids: dict[Config, int] = {(): self.DEAD}
        # Room for a small regex's states; the rows are set as states are interned (a
        # zeroed table cost more to make, right after a collection, than a small regex's
        # walks).
        self._rows = np.empty((16, 256), dtype=np.int32)
        # Single steps of states without a row, by ``state << 8 | byte`` (a number: no
        # tuple for the collector to count).
        self._steps: dict[int, int] = {}
        # The distinct live successors of each built row, as it was built (build_all walks
        # them; reading them back from a 256-entry row costs more than the row took).
        self._successors: dict[int, tuple[int, ...]] = {}
        # The ASCII bytes that lead from a state back to itself, as its row was built from
        # its derivative (the mask engine asks of every state; reading them back from the
        # row is three numpy calls).
        self._self_loops: dict[int, int] = {}
        self._reachable: list[int] | None = None  # see reachable_states
        self._codes: dict[int, Code | None] = {}
        # Per (unit, pattern term): the fewest units left found enough to end, the most
        # found too few (see fits_length_bound).
        self._fits: dict[tuple[int, int], tuple[int | None, int]] = {}
        self._bits_of_state: dict[int, int] = {}
        self._state_of_bits: dict[int, int] = {}
        # Per state, what alternatives() and head_split() found: a mask's plan asks again
        # from every source that reaches the state (half their calls in a sample). Plain
        # tuples of numbers, so the collector stops tracking them.
        self._alternatives_found: dict[int, tuple[int, ...] | None] = {}
        self._splits_found: dict[int, tuple[int, bool, bool, int, int] | None] = {}
        self._rows[self.DEAD] = self.DEAD
        self._accepting = np.zeros(16, dtype=bool)
        start_rule = self._rule_index[grammar.start]
        self.start = self._intern(
            _config((self._push(EMPTY_STACK, self.rule_terms[start_rule]),))
        )

    # -- IR conversion -----------------------------------------------------------------

    def _convert(self, expr: ir.Expr, rule: str) -> int:
        key = id(expr)
        found = self._converted.get(key)
        if found is not None:
            return found
        t = self.terms
        kind = type(expr)
        if kind is ir.Chars:
            result = self._chars(expr.ranges)  # type: ignore[union-attr]
        elif kind is ir.Seq:
            # From the right, each item onto the rest: what seq_all does, without the
            # generator (a literal key is a Seq of one Chars per character).
            convert = self._convert
            result = EPS
            for item in reversed(expr.items):  # type: ignore[union-attr]
                result = t.seq(convert(item, rule), result)
        elif isinstance(expr, ir.Chars):
            result = self._chars(expr.ranges)
        elif isinstance(expr, ir.Bytes):
            bits = 0
            for lo, hi in expr.ranges:
                if not 0 <= lo <= hi <= 255:
                    raise GrammarError(f"byte range {lo}-{hi} outside 0..255", rule)
                bits |= ((1 << (hi - lo + 1)) - 1) << lo
            result = t.bytes_term(bits)
        elif isinstance(expr, ir.Seq):
            result = t.seq_all(self._convert(i, rule) for i in expr.items)
        elif isinstance(expr, ir.Alt):
            result = t.alt(self._convert(i, rule) for i in expr.items)
        elif isinstance(expr, ir.Repeat):
            result = t.repeat(self._convert(expr.item, rule), expr.min, expr.max)
        elif isinstance(expr, ir.And):
            # A complement beside an item of valid UTF-8 only (a JSON string's inside)
            # needs no bound of its own: without it, what follows a byte its language
            # does not start with is that item's plain term again, shared and looping
            # (the string of an unlisted key, once off every listed key), instead of a
            # new intersection at every step.
            bounded = any(type(i) is ir.Not for i in expr.items) and any(
                self._only_utf8(i) for i in expr.items)
            items = [self._complement(i, rule, bounded) if type(i) is ir.Not
                     else self._convert(i, rule) for i in expr.items]
            self._forbid_refs(items, "intersection", rule)
            result = t.intersect(items)
        elif isinstance(expr, ir.Not):
            result = self._complement(expr, rule, False)
        elif isinstance(expr, ir.Ref):
            productive = self._rule_productive[expr.name]
            result = t.ref(self._rule_index[expr.name]) if productive else EMPTYSET
        elif isinstance(expr, ir.Lazy):
            result = self._lazy(expr, rule)
        else:
            raise GrammarError(f"not a grammar expression: {expr!r}", rule)
        self._converted[key] = result
        self._converted_nodes.append(expr)
        return result

    def _complement(self, expr: ir.Not, rule: str, bounded: bool) -> int:
        """The term of ``expr``: valid UTF-8 strings outside its item, or, when
        ``bounded`` (an intersection with valid UTF-8 only), all strings outside it."""
        inner = self._convert(expr.item, rule)
        self._forbid_refs([inner], "complement", rule)
        outside = self.terms.complement(inner)
        return outside if bounded else self.terms.intersect([outside, self.utf8_star()])

    def _lazy(self, expr: ir.Lazy, rule: str) -> int:
        needs = expr.needs
        if not all(self._productive(n) for n in needs):
            return EMPTYSET
        # Nodes of one family share their parts: judged once.
        found = self._parts_memo.get(id(expr.parts))
        if found is None:
            found = (expr.parts, any(ir.contents(p)[1] for p in expr.parts))
            self._parts_memo[id(expr.parts)] = found
        # It matches something exactly when every one of its needs does: liveness looks
        # there, instead of building this node and every node after it.
        boolean = any(ir.contents(n)[0] for n in needs)
        self._lazy_rules[id(expr)] = rule  # the node is held by the store, with its term
        return self.terms.lazy(expr.key, expr, self._lazy_source, nullable=expr.nullable,
                               boolean=boolean, has_ref=found[1])

    def _needs_shortest(self, needs: tuple[ir.Expr, ...]) -> int:
        return sum(ir.shortest_length(n, self._shortest_memo) for n in needs)

    def _needs_live(self, needs: tuple[ir.Expr, ...], rule: str) -> bool:
        return all(self._live(n, rule) for n in needs)

    def _live(self, expr: ir.Expr, rule: str) -> bool:
        """Whether ``expr``'s term would be live, converting only its intersections and
        complements: a need is often a whole object whose one boolean part is a key
        pattern, and converting all of it would undo the laziness of the node needing it."""
        if not ir.contents(expr)[0]:
            return self._productive(expr)
        found = self._live_memo.get(id(expr))
        if found is not None:
            return found[1]
        if isinstance(expr, ir.Seq):
            result = all(self._live(i, rule) for i in expr.items)
        elif isinstance(expr, ir.Alt):
            result = any(self._live(i, rule) for i in expr.items)
        elif isinstance(expr, ir.Repeat):
            result = expr.min == 0 or self._live(expr.item, rule)
        elif isinstance(expr, ir.Lazy):
            result = all(self._live(n, rule) for n in expr.needs)
        else:  # an intersection or a complement: decided on its term
            result = self.terms.is_live(self._convert(expr, rule))
        self._live_memo[id(expr)] = (expr, result)
        return result

    def _productive(self, expr: ir.Expr) -> bool:
        found = self._productive_memo.get(id(expr))
        if found is None:
            found = (expr, _expr_productive(expr, self._rule_productive, self._productive_memo))
            self._productive_memo[id(expr)] = found
        return found[1]

    def _forbid_refs(self, items: list[int], what: str, rule: str) -> None:
        if any(self.terms.has_ref(i) for i in items):
            raise GrammarError(
                f"a rule reference inside {what} is not regular; inline it first", rule
            )

    def utf8_star(self) -> int:
        """The term for any sequence of valid UTF-8 characters."""
        if self._utf8_star is None:
            self._utf8_star = self.terms.repeat(self._chars(ir.ANY_CHAR.ranges), 0, None)
        return self._utf8_star

    def _only_utf8(self, expr: ir.Expr) -> bool:
        """:func:`~constrain.grammar.only_utf8`, memoized; the library's memo is copied
        in at the first question (few compiles ask any)."""
        if self._library_utf8 is not None:
            self._utf8_memo = self._library_utf8.copy()
            self._library_utf8 = None
        return ir.only_utf8(expr, self._utf8_memo)

    def _chars(self, ranges: tuple[tuple[int, int], ...]) -> int:
        found = self._char_cache.get(ranges)
        if found is None:
            found = self._library_chars.get(ranges)
        if found is not None:
            return found
        t = self.terms
        if len(ranges) == 1 and ranges[0][1] < 0x80:  # ASCII: one byte set
            lo, hi = ranges[0]
            result = self._char_cache[ranges] = t.bytes_term(((1 << (hi - lo + 1)) - 1) << lo)
            return result
        result = t.alt([
            t.seq_all([t.bytes_term(bits) for bits in sequence])
            for sequence in _utf8_sequences(ranges)
        ])
        self._char_cache[ranges] = result
        return result

    def _check_left_recursion(self) -> None:
        # A rule that can reach itself without consuming a byte would push frames forever.
        first: dict[int, set[int]] = {}
        for i, term in enumerate(self.rule_terms):
            first[i] = {rule for rule, _ in self.terms.derivative(term)[1]}
        names = self._rule_names
        for i, firsts in first.items():
            seen: set[int] = set()
            todo = list(firsts)
            while todo:
                r = todo.pop()
                if r == i:
                    raise GrammarError("left recursion (a rule reaches itself first)", names[i])
                if r not in seen:
                    seen.add(r)
                    todo.extend(first[r])

    # -- configurations ----------------------------------------------------------------

    def _push(self, below: Stack, term: int) -> Stack:
        """The stack ``below`` with ``term`` on top (finished ε tops are popped at once)."""
        # Only forced, live terms other than ε are keys, so a hit needs none of the checks
        # below (most pushes repeat one made before: ~140,000 on the MaskBench sample).
        found = self._stack_ids.get(term << 32 | below)
        if found is not None:
            return found
        # A state's top is never a lazy term, so equal content is always the same state.
        term = self.terms.force(term)
        if term == EPS:
            return below
        if term == EMPTYSET or not self.terms.is_live(term):
            return DEAD_STACK
        key = term << 32 | below
        found = self._stack_ids.get(key)
        if found is None:
            found = len(self._stack_frames)
            self._stack_frames.append((term, below))
            self._stack_ids[key] = found
            self._stack_can_end_flags.append(
                self.terms.nullable(term) and self._stack_can_end_flags[below]
            )
        return found

    def _intern(self, config: Config) -> int:
        found = self._config_ids.get(config)
        if found is not None:
            return found
        self._check_stacks(config)
        ident = len(self._configs)
        if ident >= self.options.max_states:
            raise ResourceLimitError(
                "max_states", self.options.max_states, "raise AutomatonOptions.max_states"
            )
        self._configs.append(config)
        self._config_ids[config] = ident
        if ident >= len(self._rows):
            self._grow_rows()
        self._rows[ident] = -1  # no row yet
        flags = self._stack_can_end_flags
        self._accepting[ident] = (flags[config[0]] if len(config) == 1
                                  else any(flags[s] for s in config))
        return ident

    def _check_stacks(self, config: Config) -> None:
        if len(config) > self.options.max_stacks_per_state:
            raise ResourceLimitError(
                "max_stacks_per_state", self.options.max_stacks_per_state,
                "the grammar is too ambiguous: too many candidate parses are alive at once",
            )

    def _grow_rows(self) -> None:
        """Enlarge the row table. Only the rows in use are copied; each new one is set when
        its state is interned. It doubles up to 1,024 rows (small automata: memory the
        allocator hands back and forth), then reserves :data:`_RESERVED_ROWS` at once:
        ``np.empty`` of that size is address space the system backs page by page as
        states are interned, so the automata that grow past it (thousands of states)
        copy their table once or twice, not at every doubling. Copying into fresh memory
        is what cost: its pages are faulted in while copying (a doubling from 8,192 rows
        took 1–80 ms here, from one run to the next)."""
        size = len(self._rows)
        grown = 2 * size
        if grown > _DOUBLED_ROWS:
            grown = max(grown, min(_RESERVED_ROWS, self.options.max_states))
        rows = np.empty((grown, 256), dtype=np.int32)
        rows[:size] = self._rows
        self._rows = rows
        accepting = np.zeros(grown, bool)
        accepting[:size] = self._accepting
        self._accepting = accepting

    def _stack_pieces(self, stack: Stack, out: list[tuple[int, Stack]],
                      byte: int | None = None) -> None:
        """Append ``(byte set, next stack)`` for every byte the stack can consume next
        (for ``byte`` only, when given: then every byte set is that byte's).

        A worklist, not recursion: popping through many finished frames or pushing through
        nested rules must not depend on Python's recursion limit.
        """
        todo = [stack]
        seen = {stack}
        frames = self._stack_frames
        while todo:
            stack = todo.pop()
            if stack == EMPTY_STACK:
                continue
            top, rest = frames[stack]
            if byte is None:
                pieces, refs = self.terms.derivative(top)
            else:
                nxt, refs = self.terms.derivative_byte(top, byte)
                pieces = [(1 << byte, nxt)] if nxt != EMPTYSET else []
            for bits, nxt in pieces:
                out.append((bits, self._push(rest, nxt)))
            followers = []
            for rule, nxt in refs:
                # A call in tail position leaves nothing to return to (tail-call
                # elimination), so right recursion does not grow the stack.
                caller = self._push(rest, nxt)
                if caller != DEAD_STACK:
                    followers.append(self._push(caller, self.rule_terms[rule]))
            if rest != EMPTY_STACK and self.terms.nullable(top):
                followers.append(rest)
            for follower in followers:
                if follower not in seen:  # a stack reached twice has been expanded once
                    seen.add(follower)
                    todo.append(follower)
            if len(seen) > _MAX_STACKS_PER_STEP:
                raise ResourceLimitError(
                    "max_stacks_per_step", _MAX_STACKS_PER_STEP,
                    "rules reach too many different calls without consuming input",
                )

    def _compute_row(self, state: int) -> None:
        ensure_recursion_limit()
        with self._lock:
            if self._rows.item(state, 0) >= 0:
                return
            run = self._byte_run_row(state)
            if run is not None:
                self._rows[state], self._successors[state], loop = run
                if loop is not None:
                    self._self_loops[state] = loop
                return
            pieces: list[tuple[int, Stack]] = []
            for stack in self._config_of(state):
                self._stack_pieces(stack, pieces)
            row = np.zeros(256, dtype=np.int32)
            successors = []
            loop = 0
            if _disjoint(pieces):  # the common case: one frame's derivative, no merging
                for bits, stack in pieces:
                    if stack != DEAD_STACK:
                        target = self._intern((stack,))
                        _set_row(row, bits, target)
                        successors.append(target)
                        if target == state:
                            loop |= bits
            else:
                for bits, members in _partition(pieces):
                    target = self._intern(_config(members))
                    _set_row(row, bits, target)
                    successors.append(target)
                    if target == state:
                        loop |= bits
            self._rows[state] = row
            self._successors[state] = tuple(successors)
            self._self_loops[state] = loop & _ASCII_BYTES

    def _byte_run_row(self, state: int) -> tuple[np.ndarray, tuple[int, ...], int | None] | None:
        """The row of a state whose only stack has ``x{lo,hi}·tail`` on top, for a class
        ``x`` of single bytes, built without derivatives: a byte of ``x`` counts one down,
        and (when ``lo`` is 0) every other byte does what it does after the run, which is
        the row of the state with ``tail`` on top, shared by all the counts. Bounded
        whitespace in JSON makes twenty such states at every gap; this is ~10× cheaper than
        deriving each. ``None`` where the shortcut does not apply (the run's bytes also
        start the tail, or any other shape); else the row, its successors, and the ASCII
        bytes that lead back to ``state`` (``None``: not known without reading the row)."""
        config = self._config_of(state)
        if len(config) != 1:
            return None
        (stack,) = config
        if stack == EMPTY_STACK:
            return None
        top, rest = self._stack_frames[stack]
        run = self.terms.byte_run(top)
        if run is None:
            return None
        bits, item, lo, hi, tail = run
        t = self.terms
        after = self._push(rest, t.seq(t.repeat(item, max(lo - 1, 0),
                                                 None if hi is None else hi - 1), tail))
        positions = _bit_positions(bits)
        loop: int | None = 0
        if lo:
            row = np.zeros(256, dtype=np.int32)
            successors: tuple[int, ...] = ()
        else:
            base = self._push(rest, tail)
            if base == DEAD_STACK:
                return None
            base_state = self._intern((base,))
            row = self.row(base_state).copy()
            if np.count_nonzero(row[positions]):
                return None
            successors = self._successors[base_state]
            if state in successors:
                loop = None
        if after != DEAD_STACK:
            target = self._intern((after,))
            row[positions] = target
            successors = (*successors, target)
            if target == state and loop is not None:
                loop = bits & _ASCII_BYTES
        return row, successors, loop

    # -- public queries ----------------------------------------------------------------

    @property
    def num_states(self) -> int:
        """How many states have been built so far."""
        return len(self._configs)

    def row(self, state: int) -> np.ndarray:
        """The 256 successor states of ``state`` (``DEAD`` where a byte is rejected)."""
        if self._rows.item(state, 0) < 0:  # .item: a Python int, no numpy scalar
            self._compute_row(state)
        return self._rows[state]  # type: ignore[no-any-return]

    def rows_for(self, states: np.ndarray) -> np.ndarray:
        """The full row table, after making sure every state in ``states`` has its row."""
        table = self._rows
        if len(states) == 1:  # the usual case: no numpy calls for one state
            state = int(states[0])
            if table.item(state, 0) < 0:
                self._compute_row(state)
                table = self._rows
            return table
        missing = states[table[states, 0] < 0]
        if len(missing):
            for s in set(missing.tolist()):
                self._compute_row(s)
            table = self._rows
        return table

    def self_loop_bits(self, state: int) -> int:
        """The ASCII bytes (bits 0-127) that lead from ``state`` back to itself (builds
        its row)."""
        found = self._self_loops.get(state)
        if found is None:
            loops = self.row(state)[:128] == state
            found = 0
            if np.count_nonzero(loops):
                found = int.from_bytes(np.packbits(loops, bitorder="little").tobytes(),
                                       "little")
            self._self_loops[state] = found
        return found

    @property
    def table(self) -> np.ndarray:
        """All rows built so far, by state (a row of -1 is not built yet; rows past the
        states made so far are not set); it is replaced, not resized, when it grows, so
        a reference stays consistent."""
        return self._rows

    def has_row(self, state: int) -> bool:
        """Whether ``state``'s row is built (builds nothing)."""
        return bool(self._rows.item(state, 0) >= 0)

    def has_rows(self, states: np.ndarray) -> np.ndarray:
        """Which of ``states`` have their row built already (builds nothing)."""
        return self._rows[states, 0] >= 0  # type: ignore[no-any-return]

    def step(self, state: int, byte: int) -> int:
        """The state after ``byte``, or ``DEAD``."""
        return int(self.row(state)[byte])

    @cached_property
    def _member_sets(self) -> MemberSets:
        # Made once the automaton is found exponential (see _step_members): its 256
        # per-byte tables cost ~30 µs, a percent of a typical schema's compile.
        return MemberSets(self.terms)

    def step_bytes(self, state: int, data: bytes) -> int:
        """The state after all of ``data``, or ``DEAD`` as soon as a byte is rejected.

        A state whose row is not built is left by that byte alone (see
        :meth:`TermStore.derivative_byte`), without building its row: a matcher following
        a token passes through states nothing else needs the rows of; and from there on,
        until a state with a row, on its stacks, without making a state for each byte
        (see :meth:`_step_through`).
        """
        # Through built rows, one lookup per byte: a row not built yet holds -1 in every
        # column, and DEAD's row holds DEAD, so neither needs a check of its own.
        item = self._rows.item  # .item: a Python int, ~3x cheaper than indexing
        for i, byte in enumerate(data):
            found = item(state, byte)
            if found < 0:
                return self._step_unbuilt(state, data[i:] if i else data)
            state = found
        return state

    def _step_unbuilt(self, state: int, data: bytes) -> int:
        """:meth:`step_bytes` from ``state``, whose row is not built."""
        rows, steps = self._rows, self._steps
        for i, byte in enumerate(data):
            if rows.item(state, 0) >= 0:
                state = rows.item(state, byte)
            elif self.exponential:
                return self._step_members(state, data[i:] if i else data)
            else:
                found = steps.get(state << 8 | byte)
                if found is None:
                    inside = self._step_in_head(state, data[i:] if i else data)
                    if i + 1 < len(data):
                        if inside is not None:
                            return inside
                        return self._step_through(state, data[i:])
                    if inside is None:
                        found = self._step(state, byte)
                    else:
                        found = steps[state << 8 | byte] = inside
                state = found
                rows = self._rows  # building may have grown the table
            if state == self.DEAD:
                return state
        return state

    def _step_in_head(self, state: int, data: bytes) -> int | None:
        """:meth:`step_bytes` from a state without a row whose mask was made from its
        head (see :meth:`head_split`): through the head's rows while its mask's walk
        built them, then on the head's term (its derivatives by a byte are memoized, and
        the same head recurs wherever it occurs), and one new top at the end, the head's
        term then the tail; instead of a derivative of the whole top, a new term, at
        every byte. Where the head may end before a byte, the byte goes on in the head
        if the tail cannot start with it (a number's next digit), and in the tail if the
        head cannot take it (a comma after the number): that state then steps through
        the rest. ``None`` where neither holds, or where there is no split, the head is
        not one term, or a byte of the head calls a rule."""
        split = self._splits_found.get(state)
        if not split:
            return None
        head, _, _, rest, tail = split
        t = self.terms
        term = -1  # the head's term, once past its built rows
        tail_first = -1  # the bytes the tail may start with (all: it may be empty), once asked
        with self._lock:  # the table and the flags are replaced together as they grow
            item, accepting = self._rows.item, self._accepting
            for i, byte in enumerate(data):
                ends = accepting[head] if term < 0 else t.nullable(term)
                if ends and tail_first < 0:
                    tail_first = ALL_BYTES if t.nullable(tail) else t.first_bytes(tail)
                tail_takes = ends and tail_first >> byte & 1
                if term < 0:
                    following = item(head, byte)
                    if following > self.DEAD:
                        if tail_takes:
                            return None
                        head = following
                        continue
                    if following < 0:  # no row: on the head's term from here
                        term = self._lone_term(head)
                        if term < 0:
                            return None
                if term >= 0:
                    term, refs = t.derivative_byte(term, byte)
                    if refs:
                        return None
                    if term != EMPTYSET:
                        if tail_takes:
                            return None
                        continue
                if not tail_takes:  # neither the head nor the tail takes the byte
                    return self.DEAD
                stack = self._push(rest, tail)
                after = self.DEAD if stack == DEAD_STACK else self._intern((stack,))
                break
            else:
                if term < 0:
                    term = self._lone_term(head)
                    if term < 0:
                        return None
                found = self._push(rest, t.seq(term, tail))
                return self.DEAD if found == DEAD_STACK else self._intern((found,))
        return after if after == self.DEAD else self.step_bytes(after, data[i:])

    def _lone_term(self, state: int) -> int:
        """The term of a state that is one term on the empty stack, else -1."""
        config = self._config_of(state)
        if len(config) != 1:
            return -1
        term, below = self._stack_frames[config[0]]
        return term if below == EMPTY_STACK else -1

    def _step_through(self, state: int, data: bytes) -> int:
        """:meth:`step_bytes` from a state without a row, by more than one byte: each byte
        on the configuration's stacks, and a state made only where the bytes end (or where
        one with a row is met). Made at every byte, the states inside a token (the middle
        of a key, of a value's text) were a fifth of the states of five heavy MaskBench
        schemas with their instances, each with its entry in the row table, and nothing
        but the token's own step memo (:meth:`CompiledConstraint.token_step
        <constrain.compiler.CompiledConstraint.token_step>`) ever read them. The bytes
        are not memoized here: stepping through the same bytes again (``matches`` on
        strings that share a prefix) derives them again from the terms' memos."""
        ensure_recursion_limit()
        with self._lock:
            config = self._config_of(state)
            for i, byte in enumerate(data):
                pieces: list[tuple[int, Stack]] = []
                for stack in config:
                    self._stack_pieces(stack, pieces, byte)
                if len(pieces) == 1:  # the usual case: no set to sort
                    config = () if pieces[0][1] == DEAD_STACK else (pieces[0][1],)
                else:
                    config = _config(stack for _, stack in pieces)
                if not config:
                    return self.DEAD
                known = self._config_ids.get(config)
                if known is not None and self._rows.item(known, 0) >= 0:
                    return self.step_bytes(known, data[i + 1:])
                self._check_stacks(config)
            return self._intern(config)

    def _step_members(self, state: int, data: bytes) -> int:
        """:meth:`step_bytes` from a state of an :attr:`exponential` automaton that has
        no row: its members' bitset (see :class:`~constrain.member_sets.MemberSets`)
        through all of ``data``, and a union term and a state made once, at the end, for
        a set of members not met before (a row makes them after every byte, and decoding
        meets new ones at almost every step)."""
        sets = self._member_sets
        with self._lock:
            bits = self.member_bits(state)
            following = sets.step(bits, data)
            found = self._state_of_bits.get(following)
            if found is None:
                # Every member is live (a plain language): no bits, no state.
                found = self._intern_members(following) if following else self.DEAD
                self._state_of_bits[following] = found
            return found

    def _intern_members(self, bits: int) -> int:
        """A new state for the union of the members ``bits`` (of an :attr:`exponential`
        automaton), without its configuration: decoding reads such a state's bitset
        (steps, masks from its members) and nothing else, so the union term and stack,
        half of a step's time, are made only where something asks (see
        :meth:`_config_of`)."""
        ident = len(self._configs)
        if ident >= self.options.max_states:
            raise ResourceLimitError(
                "max_states", self.options.max_states, "raise AutomatonOptions.max_states"
            )
        self._configs.append(None)
        if ident >= len(self._rows):
            self._grow_rows()
        self._rows[ident] = -1  # no row yet
        self._accepting[ident] = self._member_sets.nullable(bits)
        self._bits_of_state[ident] = bits
        return ident

    def _config_of(self, state: int) -> Config:
        """The configuration of ``state``, made now for one interned by its members alone
        (see :meth:`_intern_members`). Another state may hold the same configuration (one
        reached through a row): they are equal states, their masks equal."""
        config = self._configs[state]
        if config is None:
            with self._lock:
                members = self._member_sets.members(self._bits_of_state[state])
                config = (self._push(EMPTY_STACK, self.terms.union_of(members)),)
                self._configs[state] = config
                self._config_ids.setdefault(config, state)
        return config

    def member_bits(self, state: int) -> int:
        """The bitset of ``state``'s union members, in an :attr:`exponential` automaton
        (see :class:`~constrain.member_sets.MemberSets`)."""
        found = self._bits_of_state.get(state)
        if found is None:
            sets = self._member_sets
            (stack,) = self._config_of(state)
            top = self._stack_frames[stack][0]
            found = self._bits_of_state[state] = sets.bitset_of(self.terms.alternatives(top))
            self._state_of_bits.setdefault(found, state)
        return found

    def uncovered_members(self, state: int, limit: int) -> int | None:
        """For a state of an :attr:`exponential` automaton: the bitset of its members
        that no loop of another one covers (see :meth:`members`), whose masks make its
        own; ``None`` where there are more than ``limit`` of them, or fewer than two
        members to begin with."""
        sets = self._member_sets
        with self._lock:
            members = self.member_bits(state)
            if not members & (members - 1):  # one member: the state is its own
                return None
            bits = sets.uncovered(members)
        return None if bits.bit_count() > limit else bits

    def lone_loop(self, state: int) -> int:
        """For a state of an :attr:`exponential` automaton: the byte class ``x`` where its
        only uncovered member is ``x*·tail`` with every byte in ``x`` (see
        :meth:`MemberSets.lone_loop <constrain.member_sets.MemberSets.lone_loop>`), else
        0."""
        with self._lock:
            return self._member_sets.lone_loop(self.member_bits(state))

    def member_states(self, bits: int) -> list[int]:
        """The states of the members in ``bits`` (see :meth:`uncovered_members`)."""
        sets = self._member_sets
        with self._lock:
            stacks = {self._push(EMPTY_STACK, term) for term in sets.members(bits)}
            states = [self._intern((s,)) for s in stacks - {DEAD_STACK}]
            for state in states:  # found by their bits too (see _intern_members)
                self.member_bits(state)
            return states

    def _step(self, state: int, byte: int) -> int:
        ensure_recursion_limit()
        with self._lock:
            pieces: list[tuple[int, Stack]] = []
            for stack in self._config_of(state):
                self._stack_pieces(stack, pieces, byte)
            stacks = _config(stack for _, stack in pieces)
            target = self._intern(stacks) if stacks else self.DEAD
            self._steps[state << 8 | byte] = target
            return target

    def is_accepting(self, state: int) -> bool:
        """Whether the input may end in ``state``."""
        return bool(self._accepting[state])

    def accepting_flags(self) -> np.ndarray:
        """A view of the per-state accepting flags built so far."""
        return self._accepting[: len(self._configs)]

    def matches(self, data: bytes) -> bool:
        """Whether ``data`` is in the language (a full match).

        >>> from constrain.grammar import Grammar, literal
        >>> Automaton(Grammar.single(literal("é"))).matches("é".encode())
        True
        """
        state = self.step_bytes(self.start, data)
        return state != self.DEAD and self.is_accepting(state)

    def leading_run(self, state: int) -> tuple[int, int, int] | None:
        """For a state whose next step is ``x{lo,hi}`` of a character class ``x`` (the top
        of its only stack): ``(ascii bits, how many of the non-ASCII chars too, hi)``, the
        middle one a level of :mod:`constrain.utf8` — any run of at most ``hi`` such
        characters is allowed from here. ``None`` for any other state."""
        config = self._config_of(state)
        if len(config) != 1:
            return None
        (stack,) = config
        if stack == EMPTY_STACK:
            return None
        with self._lock:  # it may derive the run's item, which makes terms
            return self.terms.leading_run(self._stack_frames[stack][0])

    def loops_on_multibyte_chars(self, state: int) -> bool:
        """Whether every multi-byte character leads from ``state`` back to it, as the top
        of its only stack shows without building the states inside those characters (see
        :meth:`TermStore.loops_on_multibyte_chars`); False where it does not show it."""
        config = self._config_of(state)
        if len(config) != 1 or config[0] == EMPTY_STACK:
            return False
        with self._lock:  # it may derive, which makes terms
            return self.terms.loops_on_multibyte_chars(self._stack_frames[config[0]][0])

    def bounded_twin(self, state: int, length: int) -> int:
        """A state no string of at most ``length`` bytes tells apart from ``state``
        (the same ones lead to dead states, and both may end or not): ``state`` with the
        counts of a counted repeat on top of its only stack lowered to ``length + 1``
        (see :meth:`TermStore.with_counts_at_most`), or without a length bound too far
        for such a string to reach over the pattern it bounds (see
        :meth:`TermStore.without_far_length_bound`); ``state`` itself where neither
        applies.

        Tokens are such strings, so the two have the same mask: decoding a long counted
        run meets a new state at every token, but all of them share the twin's mask.
        """
        if self.terms.largest_count < length:
            # No count is that high, so neither rewrite applies (each needs a count above
            # ``length``): asked of every state of a small regex as its masks are made
            # ahead, the two term walks were ~7% of compiling ``iso_date``.
            return state
        config = self._config_of(state)
        if len(config) != 1 or config[0] == EMPTY_STACK:
            return state
        top, rest = self._stack_frames[config[0]]
        with self._lock:  # making terms and states
            lowered = self.terms.with_counts_at_most(top, length + 1)
            if lowered == top:
                lowered = self.terms.without_far_length_bound(top, length)
            if lowered == top:
                return state
            stack = self._push(rest, lowered)
            return self.DEAD if stack == DEAD_STACK else self._intern((stack,))

    def length_bound_reach(self, state: int) -> tuple[int, int] | None:
        """For a state whose only stack has a length bound over a pattern on top (see
        :meth:`TermStore.length_bound_reach`): the state with the pattern alone, and how
        many bytes a string may have for the two states to agree on it. ``None`` for any
        other state.

        A ``maxLength`` shorter than the longest token (plus what the pattern needs to
        end) has no :meth:`bounded_twin`, but its mask is still the pattern's but for the
        few tokens longer than that reach (see :class:`~constrain.masks.TokenMasks`)."""
        config = self._config_of(state)
        if len(config) != 1 or config[0] == EMPTY_STACK:
            return None
        top, rest = self._stack_frames[config[0]]
        with self._lock:  # making terms and states
            found = self.terms.length_bound_reach(top)
            if found is None:
                return None
            free, reach = found
            stack = self._push(rest, free)
            return (self.DEAD if stack == DEAD_STACK else self._intern((stack,))), reach

    def length_bound(self, state: int) -> LengthBound | None:
        """For a state whose only stack has a plain length bound over a pattern on top
        (:meth:`TermStore.plain_length_bound`): its parts; ``None`` for any other state.
        With them a token longer than the bound's reach is decided from how many units it
        writes and the pattern's state after it (see :meth:`fits_length_bound`)."""
        config = self._config_of(state)
        if len(config) != 1 or config[0] == EMPTY_STACK:
            return None
        top = self._stack_frames[config[0]][0]
        with self._lock:  # derivatives make terms
            t = self.terms
            found = t.plain_length_bound(top)
            if found is None:
                return None
            unit, most, pattern, tail = found
            starts: int | None = None
            if not t.nullable(tail):
                pieces, refs = t.derivative(tail)
                if not refs:
                    starts = 0
                    for bits, _ in pieces:
                        starts |= bits
            return LengthBound(unit, most, pattern, starts)

    def fits_length_bound(self, bound: LengthBound, data: bytes, units: int) -> bool | None:
        """Whether ``data``, read as ``units`` whole units that stay inside the bound (it
        ends where a unit does), leaves the pattern a way to end within the units left:
        ``(unit{0,most-units} & pattern')`` is not empty, ``pattern'`` the pattern after
        ``data`` (stepped alone: its states recur, the bound's count does not). ``None``
        where deciding it would search more than a budget allows.

        Monotone in the units left, so each pattern state remembers the fewest found
        enough and the most found too few, and most tokens are decided by a lookup."""
        left = bound.most - units
        if left < 0:
            return False
        with self._lock:  # derivatives make terms
            t = self.terms
            pattern = bound.pattern
            for byte in data:
                pattern = t.derivative_byte(pattern, byte)[0]
                if pattern == EMPTYSET:
                    return False
            enough, too_few = self._fits.get((bound.unit, pattern), (None, -1))
            if enough is not None and left >= enough:
                return True
            if left <= too_few:
                return False
            live = t.is_live_within(
                t.intersect([t.repeat(bound.unit, 0, left), pattern]), _FIT_LIVENESS_BUDGET)
            if live is not None:
                self._fits[(bound.unit, pattern)] = (
                    (left if enough is None else min(enough, left), too_few) if live
                    else (enough, max(too_few, left)))
            return live

    def counted_run(self, state: int) -> CountedRun | None:
        """For a state whose only stack has a counted repeat ``x{lo,hi}·tail`` on top, of a
        lexical ``x`` that cannot match the empty string and a count that is not plain
        ``x*``: that run; ``None`` for any other state (builds nothing).

        A long count (a JSON string's ``maxLength``, ``[a-z]{1,30}``) meets a new state at
        every token; they all share the tokens of the state looping on ``x`` instead
        (:meth:`run_states`), up to how many copies of ``x`` each token writes (see
        :mod:`constrain.counted_runs`).

        >>> from constrain.grammar import Grammar, char_range, literal, repeat, seq
        >>> a = Automaton(Grammar.single(seq(repeat(char_range("a", "z"), 2, 9), literal("!"))))
        >>> run = a.counted_run(a.start)
        >>> loop, after = a.run_states(run)
        >>> (run.least, run.most), a.step_bytes(loop, b"abcdefghijk!") == a.step_bytes(after, b"!")
        ((2, 9), True)
        """
        config = self._config_of(state)
        if len(config) != 1 or config[0] == EMPTY_STACK:
            return None
        top, below = self._stack_frames[config[0]]
        t = self.terms
        counted = t.counted_head(top)
        if counted is None:
            return None
        item, least, most, tail = counted
        if (not least and most is None) or not t.is_lexical(item) or t.nullable(item):
            return None
        return CountedRun(item, least, most, below, tail)

    def literal_text(self, state: int, limit: int) -> LiteralText | None:
        """For a state whose only stack has on top a concatenation starting with at least
        two plain items that read as one deterministic chain, at most ``limit`` of them:
        those items, the concatenations they start (one per item), and the state after
        them (``None`` where nothing follows). ``None`` for any other state.

        Each item is either a prefix code (:meth:`TermStore.item_automaton`: a
        JSON-encoded character, a quote; ``"name"`` in any spelling), or a run that may
        end anywhere (bounded whitespace) whose bytes are none of those the next item,
        a prefix code, starts with, so the first byte that is not the run's own is the
        next item's. The last item is a prefix code.

        Such text has one state per byte of each spelling of each character, all of them
        built as rows when a walk reads through it; the mask engine follows the items'
        own small automata instead (see :mod:`constrain.literal_runs`).

        >>> from constrain.grammar import Grammar, literal, seq, star, char_range
        >>> a = Automaton(Grammar.single(seq(literal("ab"), star(char_range("a", "z")))))
        >>> text = a.literal_text(a.start, 64)
        >>> len(text.items), a.step_bytes(a.start, b"ab") == text.after
        (2, True)
        """
        config = self._config_of(state)
        if len(config) != 1 or config[0] == EMPTY_STACK:
            return None
        top, below = self._stack_frames[config[0]]
        t = self.terms
        items: list[int] = []
        starts: list[int] = []
        rest = top
        with self._lock:  # derivatives make terms
            open_end = False  # whether the last item kept may end and go on
            while rest != EPS and len(items) < limit:
                item, after = t.head_tail(rest)
                code = self._code_of(item) if t.is_plain(item) else None
                if code is None:
                    break
                if open_end and (any(code[1]) or _bits_of(self._code_of(items[-1])[0])  # type: ignore[index]
                                 & _bits_of(code[0][:1])):
                    break  # where the run before it ends would not be fixed by the bytes
                items.append(item)
                starts.append(rest)
                rest = after
                open_end = any(code[1])
            if open_end:  # the last item must end where its bytes say
                rest = starts.pop()
                items.pop()
            if len(items) < 2:
                return None
            stack = below if rest == EPS else self._push(below, rest)
            if stack == DEAD_STACK:  # not for a live state: its text goes on somewhere
                return None
            after_state = None if stack == EMPTY_STACK else self._intern((stack,))
        return LiteralText(top, below, tuple(items), tuple(starts), after_state)

    def code_of(self, item: int) -> Code | None:
        """:meth:`TermStore.item_automaton` of ``item`` (memoized)."""
        with self._lock:
            return self._code_of(item)

    def _code_of(self, item: int) -> Code | None:
        if item in self._codes:
            return self._codes[item]
        # The same characters are in the keys of every schema: their automata are made
        # once per process, by the structure of the item (byte sets are part of it, so
        # an automaton found is exactly this item's).
        key = self.terms.fingerprint(item)
        if key is not None and key in _shared_codes:
            found = _shared_codes[key]
        else:
            found = self.terms.item_automaton(item, _CODE_STATES)
            if key is not None:
                with _shared_codes_lock:
                    if len(_shared_codes) >= _SHARED_CODES:
                        _shared_codes.clear()
                    _shared_codes[key] = found
        self._codes[item] = found
        return found

    def run_states(self, run: CountedRun) -> tuple[int, int] | None:
        """``(loop, after)``: the state with ``item*`` in place of ``run``'s count, and
        the state with the run over (its tail on top); ``None`` where either is dead."""
        t = self.terms
        with self._lock:
            loop = self._push(run.below, t.seq(t.repeat(run.item, 0, None), run.tail))
            after = self._push(run.below, run.tail)
            if DEAD_STACK in (loop, after):
                return None
            return self._intern((loop,)), self._intern((after,))

    def after_copies(self, run: CountedRun, copies: int) -> int:
        """The state of ``run`` after ``copies`` whole copies of its item (at most its
        ``most``): the same state the bytes of those copies lead to."""
        t = self.terms
        most = None if run.most is None else run.most - copies
        with self._lock:
            stack = self._push(run.below, t.seq(t.repeat(run.item, max(run.least - copies, 0),
                                                         most), run.tail))
            return self.DEAD if stack == DEAD_STACK else self._intern((stack,))

    def copy_automaton(self, item: int) -> np.ndarray | None:
        """:meth:`TermStore.copy_automaton` of a run's ``item`` as a table (int16
        ``[states, 256]``, -1 where a byte is refused)."""
        with self._lock:  # derivatives make terms
            states = self.terms.copy_automaton(item)
        if states is None:
            return None
        table = np.full((len(states), 256), -1, dtype=np.int16)
        for row, moves in zip(table, states):
            for bits, target in moves:
                row[_bit_positions(bits)] = target
        return table

    def alternatives(self, state: int, limit: int) -> tuple[int, ...] | None:
        """:meth:`members` where they have structure; ``None`` as well when the members
        are lexical (see :meth:`head_split`): alternatives of a regex, a choice set or an
        enum share their prefixes and are cheaper walked together.

        A member with structure recurs in many unions (the keys still allowed in objects
        that have written different members so far, the branches of an ``anyOf`` alive
        after different prefixes), so what is learnt about it is shared.
        """
        if limit > 0xFFFF:  # beyond the memo's keys (masks ask for at most 64)
            return self._find_alternatives(state, limit)
        key = state << 16 | limit  # a number: see _steps
        found = self._alternatives_found.get(key, False)
        if found is False:
            found = self._alternatives_found[key] = self._find_alternatives(state, limit)
        return found  # type: ignore[return-value]

    def _find_alternatives(self, state: int, limit: int) -> tuple[int, ...] | None:
        config = self._config_of(state)
        t, frames = self.terms, self._stack_frames
        found: tuple[int, ...] | None = None
        if not (all(s == EMPTY_STACK
                    or (t.is_lexical(frames[s][0]) and frames[s][1] == EMPTY_STACK)
                    for s in config)
                or (len(config) == 1 and t.is_lexical(frames[config[0]][0]))):
            members = self.members(state, limit)
            found = None if members is None else tuple(members)
        return found

    def fingerprint(self, state: int) -> Fingerprint | None:
        """For a state that is one lexical term and nothing after it (a head, see
        :meth:`head_split`), an id of that term's structure, equal across automata
        (:meth:`TermStore.fingerprint`); ``None`` for any other state."""
        config = self._config_of(state)
        if len(config) != 1 or config[0] == EMPTY_STACK:
            return None
        top, rest = self._stack_frames[config[0]]
        if rest != EMPTY_STACK:
            return None
        with self._lock:
            return self.terms.fingerprint(top)

    def members(self, state: int, limit: int, uncovered: bool = False) -> list[int] | None:
        """States whose languages' union is ``state``'s: one per candidate stack, or one
        per live member of a union on top of the only stack. ``None`` when there are
        fewer than two or more than ``limit``, or when a member's emptiness is hard to
        decide.

        With ``uncovered``, members of a union with nothing below it are left out when a
        loop at the start of another member accepts every byte they may consume: any
        string of such bytes starts a match of that other member, so their tokens are
        all allowed there already. The states returned then make the same tokens, not
        the same language: whether the union may end is the union state's to say.

        >>> from constrain.grammar import Grammar, alt, literal
        >>> from constrain.regex import parse_regex
        >>> a = Automaton(Grammar.single(alt(literal("ab"), literal("cd"))))
        >>> [a.matches(b"ab"), a.matches(b"cd")], len(a.members(a.start, 8))
        ([True, True], 2)
        >>> a = Automaton(Grammar.single(parse_regex("[ab]*a[ab]{3}")))
        >>> state = a.step_bytes(a.start, b"a")
        >>> len(a.members(state, 8)), a.members(state, 8, uncovered=True) == [a.start]
        (2, True)
        """
        config = self._config_of(state)
        if len(config) > limit:
            return None
        with self._lock:
            if len(config) > 1:
                return [self._intern((stack,)) for stack in config]
            (stack,) = config
            if stack == EMPTY_STACK:
                return None
            top, rest = self._stack_frames[stack]
            members = self.terms.alternatives(top)
            if not 1 < len(members) <= limit:
                return None
            # Members whose emptiness is hard to decide stay together: walked alone, they
            # ask the automaton much harder questions than their union does.
            live = [self.terms.is_live_within(m, _MEMBER_LIVENESS_BUDGET) for m in members]
            if None in live:
                return None
            members = tuple(m for m, ok in zip(members, live) if ok)
            if uncovered and rest == EMPTY_STACK:  # only a live loop covers anything
                members = _uncovered(self.terms, members)
            stacks = {self._push(rest, m) for m in members}
            return [self._intern((s,)) for s in stacks - {DEAD_STACK}]

    def excluded_words(self, state: int) -> tuple[int, int, int] | None:
        """For a state that is one term ``(x* & ~K)·tail`` and nothing after it (see
        :meth:`TermStore.excluded_words`): the states of ``x*·tail``, ``K`` and
        ``tail``, whose tokens make its own; ``None`` for any other state."""
        config = self._config_of(state)
        if len(config) != 1 or config[0] == EMPTY_STACK:
            return None
        top, rest = self._stack_frames[config[0]]
        if rest != EMPTY_STACK:
            return None
        with self._lock:
            found = self.terms.excluded_words(top)
            if found is None:
                return None
            stacks = [self._push(EMPTY_STACK, term) for term in found]
            if DEAD_STACK in stacks:
                return None
            free, excluded, tail = (self._intern((stack,)) for stack in stacks)
            return free, excluded, tail

    def head_split(self, state: int) -> HeadSplit | None:
        """A head state and a tail (made on request) whose concatenation is ``state``'s
        language, so that every token either stays inside the head or finishes it and goes
        on in the tail.

        The head is the lexical start of the top frame (no rule reference, no lazy term:
        a key and its colon, a string value, whitespace and commas), up to the first piece
        of structure; or that piece alone when it comes first. It may match the empty
        string where it is lexical through and through (the rest of a number, which an
        object's next member or its end follows), or where it is that piece of structure
        alone (an object's optional members, then its end). A head is the same language
        wherever it occurs (the same key in objects that have written different members
        so far, a member inside different callers), so what a walk learns inside it is
        shared. ``None`` where there is nothing to split (several stacks, no tail).
        """
        found = self._splits_found.get(state, False)
        if found is False:
            found = self._splits_found[state] = self._find_head_split(state)
        return None if found is None else HeadSplit(*found)  # type: ignore[misc]

    def split_tail(self, split: HeadSplit) -> int:
        """The state of ``split``'s tail. Made only when some token goes past the head:
        making it builds a lazy tail (an object's next members, say) that nothing else
        may ever need."""
        with self._lock:
            stack = split.rest if split.tail == EPS else self._push(split.rest, split.tail)
            return self._intern(_config((stack,)))

    def _find_head_split(self, state: int) -> tuple[int, bool, bool, int, int] | None:
        config = self._config_of(state)
        if len(config) != 1:
            return None
        (stack,) = config
        if stack == EMPTY_STACK:
            return None
        top, rest = self._stack_frames[stack]
        t = self.terms
        if rest == EMPTY_STACK and t.is_lexical(top):
            return None  # all head (a regex's states, say)
        items: list[int] = []
        can_be_empty = all_lexical = True
        tail = top
        first, after_first = t.head_tail(top)
        if (not t.is_lexical(first) and t.nullable(first)
                and (after_first != EPS or rest != EMPTY_STACK)):
            # A piece of structure that may be empty (an object's optional members), alone:
            # its own plan, then the tail from where it ends, and the tail's own.
            items, tail, all_lexical = [first], after_first, False
        while tail != EPS and not (items and not all_lexical and can_be_empty):
            item, after = t.head_tail(tail)
            lexical = t.is_lexical(item)
            if items and not lexical and (all_lexical or not can_be_empty):
                break
            if items and all_lexical and not can_be_empty and t.counted_structure(item):
                break  # what follows counts down (items left): the head recurs without it
            items.append(item)
            tail = after
            can_be_empty = can_be_empty and t.nullable(item)
            all_lexical = all_lexical and lexical
            if not lexical and not can_be_empty:
                break
        if (tail == EPS and rest == EMPTY_STACK) or (
                can_be_empty and not all_lexical and items != [first]):
            return None
        with self._lock:
            head_stack = self._push(EMPTY_STACK, t.seq_all(items))
            if head_stack == DEAD_STACK:
                return None
            head = self._intern((head_stack,))
        tail_can_end = t.nullable(tail) and self._stack_can_end_flags[rest]
        return head, tail_can_end, can_be_empty, rest, tail

    def build_all(self, limit: int) -> bool:
        """Build the row of every state reachable from the start, when the grammar is a
        small regular language (:attr:`regular`, at most ``limit`` states). True when
        every reachable state has its row; then a trie walk never stops for one.

        It gives up early, keeping the rows built so far (later steps use them), where the
        states would be too many: a counted repeat of more than ``limit`` copies
        (``[0-9]{1,1000}``: a state per count), or, in an infinite language,
        breadth-first levels that double twice in a row up to more than 4 states (more
        than 2 where a counted repeat could double them past ``limit``:
        ``(a|b)*a(a|b){20}``, whose states double with every byte up to 2**21; a single
        wide level is the inside of multi-byte characters); then, in a plain language
        (no intersection or complement), :attr:`exponential` is set.

        >>> from constrain.grammar import Grammar, literal, alt
        >>> a = Automaton(Grammar.single(alt(literal("ab"), literal("b"))))
        >>> a.build_all(16), a.num_states, bool(a.has_rows(np.arange(a.num_states)).all())
        (True, 4, True)
        """
        if not self.regular or self.terms.largest_count > limit:
            return False
        try:
            return self._build_levels(limit)
        except ResourceLimitError:
            # Building ahead is optional: the states a decoding reaches report the budget
            # when (and if) it reaches them.
            return False

    def _build_levels(self, limit: int) -> bool:
        seen = {self.start}
        order = [self.start]
        widths = [1, 1]
        level = [self.start]
        # Levels that double three times in a row (to more than 4 states) show a union of
        # positions that keeps growing. Where a counted repeat could keep it growing past
        # ``limit`` (2**count states), twice is enough: each level is a row per state
        # (ab_suffix's time to first mask -13%).
        doubled = 2 if 1 << min(self.terms.largest_count, 62) > limit else 4
        while level:
            following: list[int] = []
            for state in level:
                self.row(state)
                for target in self._successors[state]:
                    if target != self.DEAD and target not in seen:
                        seen.add(target)
                        following.append(target)
            if len(seen) > limit:
                return False
            width = len(following)
            if (self.terms.has_loop and width > doubled and width >= 2 * widths[-1]
                    and widths[-1] >= 2 * widths[-2]
                    and self.terms.is_plain(self.rule_terms[0])):
                self.exponential = True
                self._member_sets.derive_reachable(self.member_bits(self.start),
                                                   _EAGER_MEMBERS)
                # Decoding finds states by their members from now on (see
                # _intern_members): the states built so far must be found that way too.
                for built in seen:
                    self.member_bits(built)
                return False
            widths.append(width)
            order += following
            level = following
        self._reachable = order
        return True

    def reachable_states(self) -> list[int] | None:
        """The states some input reaches from the start, breadth first, once
        :meth:`build_all` has returned True (else None). Building rows also makes states
        no input reaches, such as the tail after a run of bytes alone, whose row the
        run's row is made from.

        >>> from constrain.grammar import Grammar, literal, alt
        >>> a = Automaton(Grammar.single(alt(literal("ab"), literal("b"))))
        >>> a.reachable_states() is None, a.build_all(16), a.reachable_states()
        (True, True, [1, 2, 3])
        """
        return self._reachable

    def forced_bytes(self, state: int, limit: int = 4096) -> bytes:
        """The bytes every continuation from ``state`` starts with (for jump-forward)."""
        out = bytearray()
        while len(out) < limit and not self.is_accepting(state) and state != self.DEAD:
            row = self.row(state)
            live = np.flatnonzero(row != self.DEAD)
            if len(live) != 1:
                break
            out.append(int(live[0]))
            state = int(row[live[0]])
        return bytes(out)


def _uncovered(terms: TermStore, members: tuple[int, ...]) -> tuple[int, ...]:
    """``members`` without those whose alphabet the loop at the start of another one
    holds (see :meth:`Automaton.members`); of members with equal loops, the first stays."""
    loops: dict[int, int] = {}  # loop bytes -> the first member starting with that loop
    for i, member in enumerate(members):
        bits = terms.free_prefix(member)
        if bits:
            loops.setdefault(bits, i)
    if not loops:
        return members
    alphabet = terms.alphabet
    if len(loops) == 1:  # the common case, without the general loop below
        ((bits, first),) = loops.items()
        return tuple(m for i, m in enumerate(members) if i == first or alphabet(m) & ~bits)
    kept = []
    for i, member in enumerate(members):
        own = alphabet(member)
        if not any(own & ~bits == 0 and j != i for bits, j in loops.items()):
            kept.append(member)
    return tuple(kept)


@lru_cache(maxsize=4096)
def _utf8_sequences(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, ...], ...]:
    """The UTF-8 encodings of the code points in ``ranges`` (surrogates left out), as
    sequences of byte sets (bit b set: byte b); one-byte characters come merged into one
    set. Shared by every automaton: the same characters recur in every JSON grammar."""
    single = 0
    sequences: list[tuple[int, ...]] = []
    for lo, hi in ranges:
        for part_lo, part_hi in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), hi)):
            if part_lo > part_hi:
                continue
            for band_lo, band_hi in _UTF8_BANDS:
                a, b = max(part_lo, band_lo), min(part_hi, band_hi)
                if a > b:
                    continue
                for byte_ranges in utf8_byte_ranges(a, b):
                    sets = tuple(((1 << (h - l + 1)) - 1) << l for l, h in byte_ranges)
                    if len(sets) == 1:
                        single |= sets[0]
                    else:
                        sequences.append(sets)
    return ((single,), *sequences) if single else tuple(sequences)


def _config(stacks: Iterable[Stack]) -> Config:
    """The configuration of ``stacks`` (dead ones dropped)."""
    return tuple(sorted(set(stacks) - {DEAD_STACK}))


def _partition(pieces: list[tuple[int, Stack]]) -> list[tuple[int, set[Stack]]]:
    """Split overlapping ``(byte set, stack)`` pieces into disjoint byte sets with the set of
    stacks each leads to."""
    by_bits: dict[int, set[Stack]] = {}
    for bits, stack in pieces:
        if stack != DEAD_STACK:
            by_bits.setdefault(bits, set()).add(stack)
    if _disjoint([(bits, 0) for bits in by_bits]):  # the usual case: no splitting needed
        return list(by_bits.items())
    acc: list[tuple[int, set[Stack]]] = []
    for bits, stacks in by_bits.items():
        new_acc: list[tuple[int, set[Stack]]] = []
        for have, members in acc:
            both = have & bits
            if both:
                new_acc.append((both, members | stacks))
                if have & ~bits:
                    new_acc.append((have & ~bits, members))
                bits &= ~have
            else:
                new_acc.append((have, members))
        if bits:
            new_acc.append((bits, set(stacks)))
        acc = new_acc
    return acc


def _set_row(row: np.ndarray, bits: int, target: int) -> None:
    if bits & (bits - 1) == 0:  # one byte: a scalar store, far cheaper than fancy indexing
        row[bits.bit_length() - 1] = target
    else:
        row[_bit_positions(bits)] = target


def _bits_of(states: list[list[tuple[int, int]]]) -> int:
    """Every byte some state of ``states`` has a move on."""
    bits = 0
    for moves in states:
        for byte_set, _ in moves:
            bits |= byte_set
    return bits


def _disjoint(pieces: list[tuple[int, Stack]]) -> bool:
    seen = 0
    for bits, _ in pieces:
        if seen & bits:
            return False
        seen |= bits
    return True


_positions_cache: dict[int, np.ndarray] = {}
_ASCII_BYTES = (1 << 128) - 1


def _bit_positions(bits: int) -> np.ndarray:
    """Indices of the set bits of a 256-bit set (memoized: the same classes recur)."""
    found = _positions_cache.get(bits)
    if found is None:
        raw = np.frombuffer(bits.to_bytes(32, "little"), dtype=np.uint8)
        found = np.flatnonzero(np.unpackbits(raw, bitorder="little"))
        if len(_positions_cache) < 65536:
            _positions_cache[bits] = found
    return found


_library_starts: weakref.WeakKeyDictionary[ir.RuleLibrary, Automaton] = weakref.WeakKeyDictionary()
_library_lock = threading.Lock()


def _library_start(library: ir.RuleLibrary, options: AutomatonOptions) -> Automaton | None:
    """The automaton of ``library``'s rules and common expressions, built once per process
    (while the library lives): grammars that include the library fork its terms and its
    conversions instead of converting the same expressions again. ``None`` for an empty
    library, or one too large for ``options``."""
    with _library_lock:
        found = _library_starts.get(library)
        if found is None:
            if not library.rules and not library.common:
                return None
            rules = dict(library.rules)
            # A start rule of its own, numbered after the library's: it converts the
            # common expressions, and nothing references it.
            start = "library.common"
            while start in rules:
                start += "_"
            rules[start] = ir.alt(*library.common)
            found = Automaton(ir.Grammar(rules, start))
            for expr in library.common:  # each under its own id: alt() flattened them
                found._convert(expr, start)
            found.utf8_star()  # what every complement is intersected with
            # Whether the library's expressions are valid UTF-8 by construction: a JSON
            # string's inside is asked about in every object with unlisted keys, and
            # walking it took ~35 µs of each compile (3.5 µs copied).
            for expr in (*library.rules.values(), *library.common):
                ir.only_utf8(expr, found._utf8_memo)
            # Heads made of library terms (a key's characters, a string's inside) are
            # fingerprinted to share their mask plans: their parts' ids come forked.
            terms = found.terms
            for term in range(len(terms)):
                terms.fingerprint(term)
            _library_starts[library] = found
    if len(found.terms) >= options.max_terms // 2:
        return None
    return found


def _rule_fixpoint(
    grammar: ir.Grammar, holds: Callable[[ir.Expr, dict[str, bool]], bool],
    settled: dict[str, bool], skipped: tuple[str, ...] = (),
) -> dict[str, bool]:
    """The least fixpoint of a rule property (nullable, productive) over references,
    given its values on the ``settled`` rules (a library's: see :func:`_library_start`);
    ``skipped`` rules, which nothing references, are left ``False``."""
    result = dict.fromkeys(grammar.rules, False)
    open_rules: dict[str, ir.Expr] = {}
    for name, expr in grammar.rules.items():
        if name in settled:
            result[name] = settled[name]
        elif name not in skipped:
            open_rules[name] = expr
    changed = True
    while changed:
        changed = False
        for name, expr in open_rules.items():
            if not result[name] and holds(expr, result):
                result[name] = True
                changed = True
    return result


def _expr_productive(expr: ir.Expr, rules: dict[str, bool],
                     known: dict[int, tuple[ir.Expr, bool]] | None = None) -> bool:
    """Whether ``expr`` matches some finite string, given which rules do (And/Not hold no
    references, and their emptiness is checked on the automaton's terms instead).

    ``known`` remembers the answers for parts without references, which do not depend on
    ``rules``: a key's characters recur all over a JSON grammar."""
    kind = type(expr)
    if kind is ir.Chars or kind is ir.Bytes:
        return any(lo <= hi for lo, hi in expr.ranges)  # type: ignore[union-attr]
    if kind is ir.Ref:
        return rules[expr.name]  # type: ignore[union-attr]
    if kind is ir.And or kind is ir.Not:
        return True
    if kind is ir.Lazy:
        return all(_expr_productive(n, rules, known) for n in expr.needs)  # type: ignore[union-attr]
    ref_free = known is not None and not ir.contents(expr)[1]
    if ref_free:
        found = known.get(id(expr))  # type: ignore[union-attr]
        if found is not None:
            return found[1]
    if kind is ir.Seq:
        result = all(_expr_productive(i, rules, known) for i in expr.items)  # type: ignore[union-attr]
    elif kind is ir.Alt:
        result = any(_expr_productive(i, rules, known) for i in expr.items)  # type: ignore[union-attr]
    elif kind is ir.Repeat:
        result = expr.min == 0 or _expr_productive(expr.item, rules, known)  # type: ignore[union-attr]
    else:
        raise GrammarError(f"not a grammar expression: {expr!r}")
    if ref_free:
        known[id(expr)] = (expr, result)  # type: ignore[index]
    return result


def _expr_nullable(expr: ir.Expr, rules: dict[str, bool]) -> bool:
    if isinstance(expr, (ir.Chars, ir.Bytes)):
        return False
    if isinstance(expr, ir.Seq):
        return all(_expr_nullable(i, rules) for i in expr.items)
    if isinstance(expr, ir.Alt):
        return any(_expr_nullable(i, rules) for i in expr.items)
    if isinstance(expr, ir.Repeat):
        return expr.min == 0 or _expr_nullable(expr.item, rules)
    if isinstance(expr, ir.And):
        return all(_expr_nullable(i, rules) for i in expr.items)
    if isinstance(expr, ir.Not):
        return not _expr_nullable(expr.item, rules)
    if isinstance(expr, ir.Ref):
        return rules[expr.name]
    if isinstance(expr, ir.Lazy):
        return expr.nullable
    raise GrammarError(f"not a grammar expression: {expr!r}")


