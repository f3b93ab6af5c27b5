"""Per-state token masks: which tokens an automaton state allows, as packed int32 bits.

The layout is the one vLLM, SGLang and xgrammar use: token ``t`` is allowed iff bit
``t % 32`` of word ``t // 32`` is set. A mask is computed once per automaton state by
walking the vocabulary's :class:`~constrain.token_trie.TokenTrie` (compiled with numba
when installed, else level by level with numpy; no Python loop over tokens), then
memoized, so the per-token cost of a state seen before is one dictionary lookup and a row
copy.

The compiled walk builds a state's mask from smaller states' *plans* where it can: a state
whose top frame is ``head·tail`` takes the tokens inside its head from the head's plan
(walked once, and shared by every state with that head: the same key in objects that have
written different members, the same member under different callers) and walks on only from
the trie nodes where the head may end; a union with structure in its members is the union
of its members' plans. Without that, each such state would walk its head again, building
automaton rows for every pairing of a position inside the head with what follows it.
A head is the same text in other constraints too (a JSON string, whitespace then a quote,
a number): once met in a second constraint, its plan is kept per vocabulary for all.

Where an automaton's states double with every byte (``(a|b)*a(a|b){20}``, see
:attr:`Automaton.exponential`), decoding meets a new state at every step but few distinct
members of their unions: a state's mask is the OR of its members' masks, leaving out any
that another one holds, memoized by the bitset of the members left (see
:mod:`constrain.member_sets`).

>>> from constrain.automaton import Automaton
>>> from constrain.grammar import Grammar, literal, alt
>>> from constrain.vocab import Vocabulary
>>> vocab = Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
>>> masks = TokenMasks(Automaton(Grammar.single(alt(literal("ab"), literal("a")))), vocab)
>>> masks.allowed_token_ids(masks.automaton.start).tolist()
[0, 2]
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

import numpy as np

from . import walk_kernel
from .automaton import Automaton, AutomatonOptions
from .cache import note_growth, recurring, token_trie
from .counted_runs import LEAVES, STAYS, CountedRuns
from .literal_runs import LiteralRuns, TextChain
from .token_trie import TokenTrie
from .utf8 import (
    NON_ASCII_ALL,
    NON_ASCII_BUT_SPACES,
    NON_ASCII_NONE,
    UTF8_BOUNDARY,
    UTF8_MULTIBYTE_EDGES,
    UTF8_TREE_BUT_SPACES,
)
from .vocab import Vocabulary

__all__ = ["TokenMasks", "eos_only_words", "mask_words", "set_bits"]


def mask_words(size: int) -> int:
    """Number of int32 words holding ``size`` bits."""
    return (size + 31) // 32


def eos_only_words(vocab: Vocabulary) -> np.ndarray:
    """The packed int32 mask allowing ``vocab``'s EOS ids and nothing else (read-only;
    made once per vocabulary, not per constraint: every mask of a state that may end
    ORs it in, and a terminated matcher fills it).

    >>> v = Vocabulary.from_token_bytes([b"a", None, None], eos_token_ids=[1, 2])
    >>> eos_only_words(v).tolist()
    [6]
    """
    return _eos_entry(vocab)[0]


def _eos_entry(vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`eos_only_words`, and the words that hold EOS ids with their values: where
    masks of a few states are made at once, EOS is set in those words alone."""
    key = (vocab.fingerprint, vocab.size)
    found = _eos_only.get(key)
    if found is None:
        words = np.zeros(mask_words(vocab.size), dtype=np.int32)
        set_bits(words, np.array(sorted(vocab.eos_token_ids), dtype=np.int64))
        columns = np.flatnonzero(words)
        values = words[columns].view(np.uint32)  # as the kernel ORs them into masks
        for array in (words, columns, values):
            array.flags.writeable = False
        found = (words, columns, values)
        if len(_eos_only) >= 64:  # a bound, for processes that load many vocabularies
            _eos_only.clear()
        _eos_only[key] = found
    return found


_eos_only: dict[tuple[str, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


class TokenMasks:
    """Memoized masks of one automaton over one vocabulary (thread-safe).

    Plans of heads (see :meth:`_plan`) that recur across constraints are shared through
    :func:`constrain.cache.recurring` by every ``TokenMasks`` on the vocabulary's own
    trie; one given another ``trie`` keeps its plans to itself.
    """

    def __init__(self, automaton: Automaton, vocab: Vocabulary, trie: TokenTrie | None = None,
                 use_compiled: bool | None = None,
                 max_memory: int = AutomatonOptions.max_mask_memory):
        self.automaton = automaton
        self.vocab = vocab
        self.trie = trie if trie is not None else token_trie(vocab)
        self.words = mask_words(vocab.size)
        # What the memos below may hold (see _keep_within_budget); the bytes they held when
        # last measured, and their entries then and at which to measure again.
        self.max_memory = max_memory
        self._row_bytes = 4 * self.words
        self._measured = self._measured_entries = 0
        self._next_measure = max(1, max_memory // self._row_bytes)
        self._noted = 0  # entries the compiled-constraint cache was told of
        self._eos_words, self._eos_columns, self._eos_values = _eos_entry(vocab)
        self._masks: dict[int, np.ndarray] = {}
        # Reentrant: a union's mask is made from its members' masks (see _union_mask).
        self._lock = threading.RLock()
        self._unions: dict[tuple[int, ...], np.ndarray] = {}
        self._member_unions: dict[tuple[int, bool], np.ndarray] = {}  # (members, may end)
        self._sizes: dict[int, int] = {}
        self._holding: dict[tuple[int, int], bool] = {}
        # Per automaton state: ASCII characters it may consume as a run (bits 0-63, 64-127),
        # how many of the non-ASCII characters may be in the run too (a level of
        # walk_kernel: none, all but the non-ASCII spaces, all), how many characters the
        # run may have, and whether this was computed yet. A subtree whose every suffix is
        # such a run is allowed whole.
        # Made with room for a small automaton's states, which then never grow them.
        self._loop_lo = np.zeros(_LOOP_CAPACITY, dtype=np.uint64)
        self._loop_hi = np.zeros(_LOOP_CAPACITY, dtype=np.uint64)
        self._loop_utf8 = np.zeros(_LOOP_CAPACITY, dtype=np.uint8)
        self._loop_budget = np.zeros(_LOOP_CAPACITY, dtype=np.int32)  # characters it may consume so
        self._loop_known = np.zeros(_LOOP_CAPACITY, dtype=bool)
        self.use_compiled = walk_kernel.available() if use_compiled is None else use_compiled
        # A loop plan costs a walk of most of the trie (~8 ms for a JSON string's
        # characters on a 151k vocabulary) and depends on the character class alone:
        # shared by every constraint on this vocabulary's trie.
        self._walk = (walk_kernel.TrieWalk(
            self.trie,
            recurring(vocab, "loop plans", _RECURRING_LOOP_PLANS, keep_first=True)
            if trie is None else None,
        ) if self.use_compiled else None)
        self._plans: dict[int, _Plan] = {}
        # Seeded plans by ``state << 64 | id(seeds)`` (a number, not a tuple for the
        # collector to count; see _seeded_plan), each kept with its seeds.
        self._seeded: dict[int, tuple[np.ndarray, _Plan]] = {}
        # One array per set of seeds, by the exits they are the children of (see
        # _children): plans of different states often end at the same trie nodes (every
        # string value where its quote closes), and what is walked from there is shared.
        self._seed_sets: dict[bytes, np.ndarray] = {}
        # Heads recur across constraints (a JSON string, whitespace then a quote, a
        # number): their plans are shared by every constraint on this vocabulary's trie.
        self._recurring = (recurring(vocab, "head plans", _RECURRING_PLANS)
                           if trie is None and self.use_compiled else None)
        # Heads walked from the exits of shared heads (see _seeded_plan): a cache of its
        # own, so that they do not push out the heads themselves.
        self._recurring_seeded = (recurring(vocab, "seeded head plans", _RECURRING_PLANS)
                                  if self._recurring is not None else None)
        self.runs = CountedRuns(automaton, vocab, self.trie, shared=trie is None)
        # Texts (keys, quotes) read through their items' automata, not a state per byte.
        self._literals = LiteralRuns(automaton) if self.use_compiled else None

    @property
    def memo(self) -> dict[int, np.ndarray]:
        """The masks made so far, by state (read-only for callers: a lookup that misses
        goes through :meth:`mask`)."""
        return self._masks

    def mask(self, state: int) -> np.ndarray:
        """The packed int32 mask of ``state`` (read-only; EOS set iff the state may end)."""
        found = self._masks.get(state)
        if found is None:
            found = self._made(state)
            entries = self._entries()
            if entries > self._noted:
                note_growth((entries - self._noted) * self._row_bytes)
            self._noted = entries
            if entries >= self._next_measure:
                self._keep_within_budget()
        return found

    def _made(self, state: int) -> np.ndarray:
        """A mask not memoized yet (see :meth:`mask`)."""
        twin = state
        if self.automaton.exponential and state != Automaton.DEAD:
            found = self._members_mask(state)
            if found is not None:
                self._masks[state] = found
                return found
        if state != Automaton.DEAD:
            served = self.runs.lookup(state)
            if served is not None:  # from the loop's mask (see counted_runs)
                found = self.runs.mask(state, served, self.mask(served.loop))
                self._masks[state] = found
                return found
            twin = self.automaton.bounded_twin(state, self.trie.max_depth)
        if twin != state:  # the same tokens: one mask for every count of a long run
            found = self._masks[state] = self.mask(twin)
            return found
        if state != Automaton.DEAD:
            found = self._near_bound_mask(state)
            if found is not None:
                self._masks[state] = found
                return found
        with self._lock:
            found = self._masks.get(state)
            if found is None:
                found = self._compute(state)
                self._masks[state] = found
        return found

    def memory_bytes(self) -> int:
        """Bytes of the arrays the memos hold now (masks, plans, unions), each array, or
        the buffer it is a view of, counted once."""
        seen: set[int] = set()
        total = 0

        def count(array: np.ndarray | None) -> None:
            nonlocal total
            if array is None:
                return
            buffer = array if array.base is None else array.base
            if id(buffer) not in seen:
                seen.add(id(buffer))
                total += buffer.nbytes if isinstance(buffer, np.ndarray) else array.nbytes

        with self._lock:
            for memo in (self._masks, self._unions, self._member_unions):
                for array in memo.values():
                    count(array)
            plans = [*self._plans.values(), *(plan for _, plan in self._seeded.values())]
            for plan in plans:
                for part in plan:
                    count(part)
            for array in self.runs.memo_arrays():
                count(array)
        return total

    def memory_estimate(self) -> int:
        """:meth:`memory_bytes` as last measured, plus a mask row for every entry made
        since: cheap enough to ask at every compile (see :mod:`constrain.cache`)."""
        return self._measured + (self._entries() - self._measured_entries) * self._row_bytes

    def _entries(self) -> int:
        return (len(self._masks) + len(self._plans) + len(self._seeded)
                + len(self._seed_sets) + len(self._unions)
                + len(self._member_unions) + self.runs.memo_entries())

    def _keep_within_budget(self) -> None:
        """Forget every memoized mask and plan once they hold more than ``max_memory``
        bytes; what is asked again is made again. Measured (a pass over the memos) only
        after as many new entries as mask rows would fill what was left, so the pass costs
        a small fraction of making them. Without it a constraint kept for a long time
        (a server's cache, long generations) grew without bound: ~230 MB of plans and
        masks after Github_ultra/o53885's five instances on a 151k vocabulary."""
        with self._lock:
            held = self.memory_bytes()
            if held > self.max_memory:
                self.forget()
                held = self.memory_bytes()  # views other objects still hold, say
            self._measured, self._measured_entries = held, self._entries()
            room = max(self.max_memory - held, 0) // self._row_bytes
            self._next_measure = self._measured_entries + max(room, 16)

    def forget(self) -> None:
        """Drop every memoized mask and plan (each is made again when asked for). The
        mask memo is emptied in place: callers that read it directly (see :attr:`memo`)
        keep the same dictionary."""
        with self._lock:
            self._masks.clear()
            self._plans.clear()
            self._seeded.clear()
            self._seed_sets.clear()
            self._unions.clear()
            self._member_unions.clear()
            self.runs.forget()
            self._measured = self._measured_entries = 0

    def _near_bound_mask(self, state: int) -> np.ndarray | None:
        """The mask of a state under a length bound too near for a :meth:`bounded_twin`
        (see :meth:`Automaton.length_bound_reach`) from the mask of its pattern alone:
        the same tokens up to the bound's reach, and each longer one (at most
        ``_MAX_LONG_TOKENS`` of them) allowed iff stepping through its bytes from
        ``state`` would leave a live state (see :meth:`_longer_token_rule`). ``None`` where
        the state has no such bound or too many tokens are longer.

        Walked instead, such a state (``maxLength: 100`` over a word count) builds rows
        for every count and word count its tokens pass through: 70-130 ms a step on a
        151k vocabulary, against ~8 ms served (most of it the pattern's own mask).
        """
        automaton = self.automaton
        found = automaton.length_bound_reach(state)
        if found is None:
            return None
        free, reach = found
        longer = self.trie.token_ids_of(self.trie.strings_longer_than(max(reach, 0)))
        if len(longer) > _MAX_LONG_TOKENS:
            return None
        words = self.mask(free).view(np.uint32) & ~self._eos_words.view(np.uint32)
        held = (words[longer >> 5] >> (longer & 31).astype(np.uint32)) & 1
        np.bitwise_and.at(words, longer >> 5, ~(np.uint32(1) << (longer & 31).astype(np.uint32)))
        table = self.vocab.token_bytes
        decide = self._longer_token_rule(state)
        kept = [token for token in longer[held.astype(bool)].tolist()
                if decide(token, table[token])]
        if kept:
            set_bits(words, np.array(kept, dtype=np.int64))
        packed = words.view(np.int32)
        if automaton.is_accepting(state):
            packed |= self._eos_words
        packed.flags.writeable = False
        return packed

    def _longer_token_rule(self, state: int) -> Callable[[int, bytes], bool]:
        """How :meth:`_near_bound_mask` decides a token its pattern alone allows: from
        the units it writes where the bound is a plain one over units every token reads
        the same way (a JSON string's characters, then its quote, which no character
        starts with), else by stepping ``state`` through its bytes.

        A token that leaves the string after ``c`` units fits iff ``c`` is within the
        bound (where the string ends is fixed by the token, and the pattern took it); one
        that stays inside after ``c`` whole units iff the pattern after it can end within
        the units left (:meth:`Automaton.fits_length_bound`). Stepped instead, each
        is a new intersection state per byte, at every count (~3 ms for 100 bytes)."""
        automaton = self.automaton

        def stepped(token: int, data: bytes) -> bool:
            return automaton.step_bytes(state, data) != Automaton.DEAD

        bound = automaton.length_bound(state)
        profile = self.runs.profile(bound.unit) if bound is not None else None
        if (bound is None or profile is None or bound.tail_starts is None
                or any(bound.tail_starts >> int(b) & 1 for b in np.flatnonzero(profile.starts))):
            return stepped
        copies, ends = profile.copies, profile.ends

        def by_units(token: int, data: bytes) -> bool:
            how, count = int(ends[token]), int(copies[token])
            if how == LEAVES:
                return count <= bound.most
            if how == STAYS:
                fits = automaton.fits_length_bound(bound, data, count)
                if fits is not None:
                    return fits
            return stepped(token, data)

        return by_units

    def build_all(self, limit: int) -> bool:
        """Build every automaton row and what the kernel knows about every state, when
        the automaton is a small regular one (see :meth:`Automaton.build_all`), so that
        each new mask is one walk of the trie. True when it did."""
        if not self.automaton.build_all(limit):
            return False
        # Every state is new and has its row: no filtering of the known ones first.
        states = self.automaton.reachable_states()
        assert states is not None  # build_all returned True
        self._learn_loops(states, np.array(states))
        return True

    def precompute(self, seconds: float) -> int:
        """Make the masks of the states built so far (after :meth:`build_all`, those some
        input reaches), from the start outwards, until ``seconds`` have passed; returns
        how many exist. After :meth:`build_all`, a decoding step in a state whose mask
        was made here costs a dictionary lookup."""
        deadline = time.perf_counter() + seconds
        states: Sequence[int] = (self.automaton.reachable_states()
                                 or range(1, self.automaton.num_states))
        if self.use_compiled and self.automaton.regular and not self.automaton.exponential:
            states = self._precompute_whole(states, deadline)
        for state in states:
            if time.perf_counter() > deadline:
                break
            self.mask(state)
        if self._entries() >= self._next_measure:  # as mask() does for its own
            self._keep_within_budget()
        return len(self._masks)

    def _precompute_whole(self, states: Sequence[int], deadline: float) -> list[int]:
        """Walk the masks of ``states`` in batches, one kernel call per batch, until
        ``deadline``: one walk each (as :meth:`_walk_whole`), without the Python around
        each call, which costs more than the walk of a small regex's state. Returns the
        states left to :meth:`mask`: twins of others (:meth:`mask` shares theirs), and
        any the kernel stopped at."""
        automaton, trie, walk = self.automaton, self.trie, self._walk
        assert walk is not None  # only called with the compiled walk
        left: list[int] = []
        with self._lock:
            self._sync(None)
            batch = []
            for state in states:
                if (state in self._masks or not self._loop_known[state]
                        or automaton.bounded_twin(state, trie.max_depth) != state):
                    left.append(state)
                else:
                    batch.append(state)
            # One kernel call where no state reads a run of many characters (a date, a
            # number, a choice set: a few µs of walk each, less than a call's own cost);
            # else a small first call whose pace sizes the next.
            lo, hi, utf8 = self._loop_lo, self._loop_hi, self._loop_utf8
            cheap = all(utf8.item(s) == NON_ASCII_NONE
                        and int(lo.item(s)).bit_count() + int(hi.item(s)).bit_count()
                        <= _CHEAP_RUN_CHARS for s in batch)
            first, size = 0, len(batch) if cheap else _FIRST_BATCH
            while first < len(batch):
                began = time.perf_counter()
                if began > deadline:
                    return left + batch[first:]
                chunk = batch[first:first + size]
                first += len(chunk)
                self._sync(None)
                words = np.zeros((len(chunk), self.words), dtype=np.uint32)
                done = walk.whole(automaton.table, self._loop_arrays(), chunk, words,
                                  automaton.accepting_flags(), self._eos_columns,
                                  self._eos_values)
                # Whole arrays at once: per-state numpy calls cost more than a small
                # regex's walk. Each mask is a read-only row of the batch's array.
                packed = words.view(np.int32)
                packed.flags.writeable = False
                for i in range(done):
                    self._masks[chunk[i]] = packed[i]
                left.extend(chunk[done:])
                # As many as the time left allows at the pace so far, at most eight times
                # as many as before: a state looping through most of the vocabulary
                # (``[a-z]+( [a-z]+)*``) walks ~0.3 ms, one of ``[0-9]{4}`` ~3 µs, so
                # a small regex's states are most often two calls.
                pace = max(time.perf_counter() - began, 1e-6) / len(chunk)
                size = max(1, min(8 * size, int((deadline - time.perf_counter()) / pace)))
        return left

    def allowed_token_ids(self, state: int) -> np.ndarray:
        """Token ids allowed in ``state``, ascending."""
        bits = np.unpackbits(self.mask(state).view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self.vocab.size])

    def _compute(self, state: int) -> np.ndarray:
        trie = self.trie
        accepting = state != Automaton.DEAD and self.automaton.is_accepting(state)
        automaton = self.automaton
        if state != Automaton.DEAD and trie.max_depth and self.use_compiled:
            if automaton.regular:  # no plans to compose: one walk, kept by nobody else
                packed = self._walk_whole(state, None).view(np.int32)
            else:
                words = self._plan(state)[_WORDS]
                if not accepting:
                    return words.view(np.int32)  # read-only already, shared with the plan
                packed = words.view(np.int32).copy()
        else:
            packed = np.zeros(self.words, dtype=np.int32)
            if state != Automaton.DEAD and trie.max_depth:
                set_bits(packed, trie.token_ids_of(self._walk_levels(state)))
        if accepting:
            packed |= self._eos_words
        packed.flags.writeable = False
        return packed

    def _members_mask(self, state: int) -> np.ndarray | None:
        """The mask of a state of an exponential automaton from its members' (see
        :meth:`_union_mask`), memoized per set of members left and whether it may end, or
        where one loop takes every byte they may read, the tokens of that loop's class;
        ``None`` where neither applies (fewer than two members, or too many left)."""
        automaton = self.automaton
        loop = automaton.lone_loop(state)
        if loop and not loop >> 128 and self._walk is not None:
            # The tokens made of the loop's bytes, a plan shared per vocabulary: no walk.
            key = (-loop, automaton.is_accepting(state))
            found = self._member_unions.get(key)
            if found is None:
                allowed = self._walk.loop_plan(loop & _LOW64, loop >> 64,
                                               NON_ASCII_NONE, self.words)[0]
                found = allowed.view(np.int32)
                if key[1]:
                    found = found | self._eos_words
                    found.flags.writeable = False
                self._member_unions[key] = found
            return found
        bits = automaton.uncovered_members(state, _MAX_MEMBERS)
        if bits is None:
            return None
        key = (bits, automaton.is_accepting(state))
        found = self._member_unions.get(key)
        if found is None:
            with self._lock:
                found = self._member_unions[key] = self._union_mask(
                    automaton.member_states(bits), key[1])
        return found

    def _union_mask(self, members: list[int], accepting: bool) -> np.ndarray:
        """The mask of a union from its members (``Automaton.members(...,
        uncovered=True)``: those a loop of another one covers are left out, and their
        masks never made): the OR of their masks, leaving out every mask that another one
        holds; EOS iff the union may end (memoized per set of members left).

        Used where the automaton's states grow exponentially (:attr:`Automaton.exponential`):
        each decoding step meets new states, walking each would build a row for every state
        under the trie, while their members recur. In ``(a|b)*a(a|b){20}`` the loop covers
        every other member, so every state's mask is one of two arrays.
        """
        chosen: list[int] = []
        ordered = sorted(members, key=lambda m: (-self._size(m), m)) if len(members) > 1 else members
        for member in ordered:
            if not any(self._holds(c, member) for c in chosen):
                chosen.append(member)
        key = (*sorted(chosen), accepting)
        found = self._unions.get(key)
        if found is None:
            found = self.mask(key[0])
            ends = bool((found & self._eos_words).any())  # the member may end
            if len(key) > 2 or (ends != accepting and self.vocab.eos_token_ids):
                found = found.copy()
                for member in key[1:-1]:
                    found |= self.mask(member)
                if accepting:
                    found |= self._eos_words
                else:
                    found &= ~self._eos_words
                found.flags.writeable = False
            self._unions[key] = found
        return found

    def _size(self, state: int) -> int:
        found = self._sizes.get(state)
        if found is None:
            bits = np.unpackbits(self.mask(state).view(np.uint8))
            found = self._sizes[state] = int(np.count_nonzero(bits))
        return found

    def _holds(self, state: int, other: int) -> bool:
        """Whether ``state``'s mask holds every token of ``other``'s (memoized)."""
        found = self._holding.get((state, other))
        if found is None:
            found = not (self.mask(other) & ~self.mask(state)).any()
            self._holding[(state, other)] = found
        return found

    def _plan(self, state: int, with_exits: bool = False) -> _Plan:
        """What the compiled walk knows about ``state``, built from the plans of smaller
        states where the automaton can say how (memoized per state):

        * a union of a few members: the union of the members' plans;
        * a head·tail split (see :meth:`Automaton.head_split`): the head's plan, then a
          walk on in the tail from the head's exits only (and the tail's own plan, where
          the head may be empty);
        * anything else: one walk of the vocabulary's trie.

        Exits are found only ``with_exits`` (a mask does not need them, and a state that
        may end inside a loop would make every node of the loop one).
        """
        found = self._plans.get(state)
        if found is not None and (found[_EXITS] is not None or not with_exits):
            return found
        automaton = self.automaton
        exits = walk_kernel.Exits(automaton.accepting_flags()) if with_exits else None
        ends: np.ndarray | None = None
        members = automaton.alternatives(state, _MAX_MEMBERS)
        split = None if members is not None else automaton.head_split(state)
        if members is not None:
            plans = [self._plan(member, with_exits) for member in members]
            words = _union_words([plan[_WORDS] for plan in plans])
            if with_exits:
                ends = np.unique(np.concatenate([plan[_EXITS] for plan in plans]))
        elif split is not None:
            inner = self._plan(split.head, True)
            words = inner[_WORDS]
            assert inner[_SEEDS] is not None  # a plan made with exits has seeds
            if len(inner[_SEEDS]):
                onward = self._seeded_plan(automaton.split_tail(split), inner, with_exits)
                words = words | onward[_WORDS]
                ends = onward[_EXITS] if with_exits else None  # a memo may hold exits
            elif with_exits:
                ends = _NO_NODES
            if ends is not None and split.tail_can_end:  # it may end where its head does
                ends = np.unique(np.concatenate([ends, inner[_EXITS]]))
            if split.head_can_be_empty:  # every token of the tail alone
                after = self._plan(automaton.split_tail(split), with_exits)
                words = words | after[_WORDS]
                if ends is not None:
                    ends = np.unique(np.concatenate([ends, after[_EXITS]]))
        else:
            fingerprint = None
            if with_exits and self._recurring is not None:
                fingerprint = automaton.fingerprint(state)
                if fingerprint is not None:
                    shared = self._recurring.get(fingerprint)
                    if shared is not None:
                        found = self._plans[state] = shared  # type: ignore[assignment]
                        return found  # type: ignore[return-value]
            text = self._literals.lookup(state) if self._literals is not None else None
            excluded = self._excluded_plan(state, with_exits) if text is None else None
            if text is not None:
                words, ends = self._text_plan(text, None, with_exits)
            elif excluded is not None:
                words, ends = excluded
            else:
                words = self._walk_whole(state, exits)
                if exits is not None:
                    ends = np.array(exits.nodes, dtype=np.int64)
        words.flags.writeable = False
        seeds = None if ends is None else self._children(ends)
        found = self._plans[state] = (words, ends, seeds)
        if members is None and split is None and fingerprint is not None:
            self._recurring.offer(fingerprint, found)  # type: ignore[union-attr]
        return found

    def _text_plan(self, text: tuple[TextChain, int], source: _Plan | None,
                   with_exits: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """The words and exits of a state that starts with text (see
        :mod:`constrain.literal_runs`), from every root or from ``source``'s seeds: the
        tokens read within the text, then those that go on past it, walked in the state
        after it from the nodes where the text ends."""
        (items, after), first = text
        words = np.zeros(self.words, dtype=np.uint32)
        assert self._walk is not None and self._literals is not None  # compiled walk only
        ends = self._walk.text(self._literals.table, items, first,
                               None if source is None else source[_SEEDS], words)
        if after is None:  # nothing follows: it may end where the text does
            return words, ends if with_exits else None
        exits: np.ndarray | None = _NO_NODES if with_exits else None
        if len(ends):
            read = (_NO_WORDS, ends, self._children(ends))  # only its seeds are read
            onward = self._seeded_plan(after, read, with_exits)
            words |= onward[_WORDS]
            if with_exits:
                exits = onward[_EXITS]
                if self.automaton.is_accepting(after):
                    exits = np.unique(np.concatenate([exits, ends]))
        return words, exits

    def _excluded_plan(self, state: int,
                       with_exits: bool) -> tuple[np.ndarray, np.ndarray | None] | None:
        """The words and exits of ``(x* & ~K)·tail`` (the string of an unlisted key, then
        its quote: see :meth:`Automaton.excluded_words`) without an intersection: those
        of ``x*·tail`` (a string's head, the same in every object and constraint, so
        walked once) less those of the tokens that read a string of ``K`` and go on in
        ``tail`` (``tail`` walked from where ``K`` may end). Walked whole, each prefix of
        a listed key was an intersection to derive, ~6 ms a head. ``None`` where the
        state is of no such form."""
        parts = self.automaton.excluded_words(state)
        if parts is None:
            return None
        free, excluded, tail = parts
        free_plan, keys = self._plan(free, with_exits), self._plan(excluded, True)
        assert keys[_SEEDS] is not None  # a plan made with exits has seeds
        pasts = [self._seeded_plan(tail, keys, with_exits)] if len(keys[_SEEDS]) else []
        if self.automaton.is_accepting(excluded):  # K holds the empty string
            pasts.append(self._plan(tail, with_exits))
        words = free_plan[_WORDS].copy()
        for past in pasts:
            words &= ~past[_WORDS]
        if not with_exits:
            return words, None
        ends = free_plan[_EXITS]
        for past in pasts:
            ends = np.setdiff1d(ends, past[_EXITS], assume_unique=True)  # type: ignore[arg-type]  # made with exits
        return words, ends

    def _seeded_plan(self, state: int, source: _Plan, with_exits: bool) -> _Plan:
        """What :meth:`_plan` knows about ``state``, for the tokens that reach it from
        ``source``: the walk starts at ``source[_SEEDS]`` (the children of the nodes where
        ``source``'s state may end), reading each seed's byte from ``state``. Built the
        way :meth:`_plan` builds its plans (a union from its members', a head then a walk
        on from the head's exits) and memoized per state and seeds: sources with equal
        seeds share one array (see :meth:`_children`), so what is walked from the end of
        one string value is shared by all of them (a quarter fewer walks than per source
        on a MaskBench sample).

        The tail after a head is specific to where the head occurs (the keys an object
        has not written yet, what follows the object), so walking it directly would
        build automaton states for every such place; its own members and heads are not,
        and their plans from the same ``source`` are shared: the head of an object's next
        key after any value, from the exits of a number, say, is walked once per
        vocabulary and number head, not once per set of keys written.
        """
        seeds = source[_SEEDS]
        assert seeds is not None  # a source is a plan made with exits
        key = state << 64 | id(seeds)
        found = self._seeded.get(key)
        if found is not None and (found[1][_EXITS] is not None or not with_exits):
            return found[1]
        automaton = self.automaton
        # Composed even where the state's row is built (walking on through built states
        # was cheaper before texts were read whole: composed, a union of keys reads
        # each key as text instead of building rows inside every one; sample A/B tbm
        # 0.97-0.98, rows -28%).
        members = automaton.alternatives(state, _MAX_MEMBERS)
        split = None if members is not None else automaton.head_split(state)
        ends: np.ndarray | None = None
        fingerprint = None
        if members is not None:
            plans = [self._seeded_plan(member, source, with_exits) for member in members]
            words = _union_words([plan[_WORDS] for plan in plans])
            if with_exits:
                ends = np.unique(np.concatenate([plan[_EXITS] for plan in plans]))
        elif split is not None:
            inner = self._seeded_plan(split.head, source, True)
            words = inner[_WORDS]
            ends = _NO_NODES if with_exits else None
            if inner[_SEEDS] is not None and len(inner[_SEEDS]):
                onward = self._seeded_plan(automaton.split_tail(split), inner, with_exits)
                words = words | onward[_WORDS]
                ends = onward[_EXITS] if with_exits else None  # a memo may hold exits
            if ends is not None and split.tail_can_end:
                ends = np.unique(np.concatenate([ends, inner[_EXITS]]))
            if split.head_can_be_empty:
                after = self._seeded_plan(automaton.split_tail(split), source, with_exits)
                words = words | after[_WORDS]
                if ends is not None:
                    ends = np.unique(np.concatenate([ends, after[_EXITS]]))
        else:
            if with_exits and self._recurring_seeded is not None:
                fingerprint = automaton.fingerprint(state)
                if fingerprint is not None:
                    shared = self._recurring_seeded.get((fingerprint, id(seeds)))
                    if isinstance(shared, tuple) and shared[0] is seeds:
                        self._seeded[key] = shared
                        return cast(_Plan, shared[1])
            text = self._literals.lookup(state) if self._literals is not None else None
            if text is not None:
                words, ends = self._text_plan(text, source, with_exits)
            else:
                exits = walk_kernel.Exits(automaton.accepting_flags()) if with_exits else None
                words = np.zeros(self.words, dtype=np.uint32)
                self._sync(exits)
                assert self._walk is not None  # plans are made with the compiled walk only
                pending = self._walk.seeded(automaton.table, self._loop_arrays(),
                                            seeds, state, words, exits)
                self._finish(pending, words, exits)
                if exits is not None:
                    ends = np.array(exits.nodes, dtype=np.int64)
        words.flags.writeable = False
        # The seeds are kept with the plan: their id is part of the key.
        entry = (seeds, (words, ends, None if ends is None else self._children(ends)))
        self._seeded[key] = entry
        if fingerprint is not None:
            self._recurring_seeded.offer((fingerprint, id(seeds)), entry)  # type: ignore[union-attr]
        return entry[1]

    def _walk_whole(self, state: int, exits: walk_kernel.Exits | None) -> np.ndarray:
        """The uint32 mask of one walk of the whole trie from ``state`` (EOS not set)."""
        words = np.zeros(self.words, dtype=np.uint32)
        self._finish(self._start(state, words, exits), words, exits)
        return words

    def _children(self, nodes: np.ndarray) -> np.ndarray:
        """The children of trie ``nodes`` (a plan's seeds), one read-only array for
        equal ``nodes``: seeded plans are memoized by their seeds' id."""
        if not len(nodes):  # most plans have no exits: skip the numpy calls (~20 µs)
            return _NO_NODES
        key = nodes.tobytes()
        found = self._seed_sets.get(key)
        if found is None:
            trie = self.trie
            lo = trie.child_lo[nodes]
            counts = trie.child_hi[nodes] - lo
            found = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
            found.flags.writeable = False
            self._seed_sets[key] = found
        return found

    def _start(self, state: int, words: np.ndarray,
               exits: walk_kernel.Exits | None) -> tuple[np.ndarray, np.ndarray]:
        assert self._walk is not None  # only called with the compiled walk
        self._sync(exits)
        if not self._loop_known[state]:  # the walk skips the state's own loop
            self._learn_loop(state)
            self._sync(exits)
        if (self._loop_utf8[state] == walk_kernel.NON_ASCII_UNCHECKED
                and walk_kernel.self_looping(self.automaton.table, self._loop_arrays(), state)):
            # Its loop plan, shared per class, is the whole trie's walk less its loop.
            self._check_spaces(state)
            self._sync(exits)
        return self._walk.start(self.automaton.table, self._loop_arrays(), state, words, exits)

    def _sync(self, exits: walk_kernel.Exits | None) -> None:
        """Make the per-state arrays the kernel reads cover every state built so far (it
        indexes them without bounds checks, and building states grows and replaces them)."""
        if len(self._loop_known) < self.automaton.num_states:
            self._ensure_loop_capacity(self.automaton.num_states)
        if exits is not None:
            exits.accepting = self.automaton.accepting_flags()

    def _finish(self, pending: tuple[np.ndarray, np.ndarray], words: np.ndarray,
                exits: walk_kernel.Exits | None) -> None:
        """Build what the kernel stopped at and resume it, until nothing is pending."""
        automaton = self.automaton
        nodes, states = pending
        assert self._walk is not None  # only called with the compiled walk
        while len(nodes):
            self._prepare_pending(nodes, states)
            self._sync(exits)
            nodes, states = self._walk.resume(automaton.table, self._loop_arrays(), len(nodes),
                                              words, exits)

    def _prepare_pending(self, nodes: np.ndarray, states: np.ndarray) -> None:
        """Build what the kernel stopped at: the rows of pending states, and whether their
        successors loop (the kernel resumes from the same nodes afterwards)."""
        table = self.automaton.rows_for(states)
        successors = table[states, self.trie.byte[nodes]]
        # Every live successor with children below, though the kernel asks only at a
        # character boundary above a big subtree: learning a loop builds the successor's
        # row, which the kernel needs there anyway. Asking only where the kernel does
        # cost 2% in time between masks on average and 7% at p99 on 168 MaskBench
        # schemas. A leaf's successor is not needed: leaving those out made the time to
        # first mask 10-15% shorter on 80 (a whole-document state after one token is the
        # next mask's start only for the token decoded).
        trie = self.trie
        inner = trie.child_hi[nodes] > trie.child_lo[nodes]
        self._ensure_loop_info(successors[(successors != Automaton.DEAD) & inner])
        self._sync(None)  # successors may be new states
        self._settle_spaces(nodes, successors)  # where the kernel may have stopped for it

    def _settle_spaces(self, nodes: np.ndarray, states: np.ndarray) -> None:
        """:meth:`_check_spaces` for the ``states`` reached at ``nodes`` (after their
        bytes) whose loops are not checked yet, where the subtree below holds multi-byte
        characters and is valid UTF-8: only there can the answer accept it."""
        unchecked = self._loop_utf8[states] == walk_kernel.NON_ASCII_UNCHECKED
        # count_nonzero, not .any(), on the small arrays of every new state's checks:
        # ~0.8 µs a call instead of ~2 (.any() goes through numpy's Python wrapper).
        if not np.count_nonzero(unchecked):
            return
        trie = self.trie
        asked = nodes[unchecked]
        wanted = ((trie.utf8_state[asked] == UTF8_BOUNDARY)
                  & trie.suffix_non_ascii[asked] & trie.subtree_valid[asked])
        for state in set(states[unchecked][wanted].tolist()):
            self._check_spaces(state)

    def _walk_levels(self, state: int) -> np.ndarray:
        """The same walk level by level in numpy: one vectorized step per trie depth.

        A subtree is accepted whole, without walking it, when the node sits at a character
        boundary in a state that every byte of the subtree loops back to (a JSON string's
        content, ``.*``, ``[a-z]*``...).
        """
        trie, automaton = self.trie, self.automaton
        found: list[np.ndarray] = []
        range_starts: list[np.ndarray] = []
        range_ends: list[np.ndarray] = []
        nodes = np.arange(trie.num_roots, dtype=np.int64)
        states = np.full(len(nodes), state, dtype=np.int32)
        for _ in range(trie.max_depth):
            table = automaton.rows_for(states)
            nxt = table[states, trie.byte[nodes]]
            alive = nxt != Automaton.DEAD
            if not alive.all():
                nodes, nxt = nodes[alive], nxt[alive]
            if not len(nodes):
                break
            whole = self._whole_subtrees(nodes, nxt)
            if whole is not None:
                range_starts.append(trie.start[nodes[whole]])
                range_ends.append(trie.end[nodes[whole]])
                keep = ~whole
                nodes, nxt = nodes[keep], nxt[keep]
                if not len(nodes):
                    break
            terminal = trie.terminal[nodes]
            found.append(terminal[terminal >= 0])
            lo = trie.child_lo[nodes]
            counts = trie.child_hi[nodes] - lo
            total = int(counts.sum())
            if not total:
                break
            # The children of every live node, as one index array (a vectorized "ranges").
            starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
            nodes = starts + np.arange(total)
            states = np.repeat(nxt, counts)
        if range_starts:
            cover = np.zeros(trie.num_strings + 1, dtype=np.int32)
            np.add.at(cover, np.concatenate(range_starts), 1)
            np.add.at(cover, np.concatenate(range_ends), -1)
            found.append(np.flatnonzero(np.cumsum(cover[:-1]) > 0))
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)

    def _whole_subtrees(self, nodes: np.ndarray, states: np.ndarray) -> np.ndarray | None:
        """Which nodes' entire subtrees are accepted (``None`` when none can be)."""
        trie = self.trie
        boundary = trie.utf8_state[nodes] == UTF8_BOUNDARY
        if not boundary.any():
            return None
        self._ensure_loop_info(states[boundary])
        self._settle_spaces(nodes, states)
        loop_lo = self._loop_lo[states]
        loop_hi = self._loop_hi[states]
        whole = (
            boundary
            & ((trie.suffix_lo[nodes] & ~loop_lo) == 0)
            & ((trie.suffix_hi[nodes] & ~loop_hi) == 0)
            & (~trie.suffix_non_ascii[nodes]
               | (trie.subtree_valid[nodes]
                  & ((self._loop_utf8[states] == NON_ASCII_ALL)
                     | ((self._loop_utf8[states] == NON_ASCII_BUT_SPACES)
                        & ~trie.suffix_space[nodes]))))
            & (trie.suffix_chars[nodes] <= self._loop_budget[states])
        )
        return whole if whole.any() else None

    def _loop_arrays(self) -> tuple[np.ndarray, ...]:
        return (
            self._loop_lo, self._loop_hi, self._loop_utf8, self._loop_budget, self._loop_known
        )

    def _ensure_loop_capacity(self, size: int) -> None:
        if len(self._loop_known) < size:
            grow = max(size, 2 * len(self._loop_known)) - len(self._loop_known)
            self._loop_lo = np.concatenate([self._loop_lo, np.zeros(grow, np.uint64)])
            self._loop_hi = np.concatenate([self._loop_hi, np.zeros(grow, np.uint64)])
            self._loop_utf8 = np.concatenate([self._loop_utf8, np.zeros(grow, np.uint8)])
            self._loop_budget = np.concatenate([self._loop_budget, np.zeros(grow, np.int32)])
            self._loop_known = np.concatenate([self._loop_known, np.zeros(grow, bool)])

    def _ensure_loop_info(self, states: np.ndarray) -> None:
        if not len(states):
            return
        # Every state in ``states`` is built, so the arrays cover them once synced.
        self._sync(None)
        unknown = states[~self._loop_known[states]]
        if len(unknown):
            if len(unknown) <= _SCALAR_LOOPS:
                for state in set(unknown.tolist()):
                    self._learn_loop(state)
            else:
                unknown = np.unique(unknown)
                self._learn_loops(unknown.tolist(), unknown)
            # Loop checks may have built new states; the kernel indexes these arrays by state.
            self._sync(None)

    def _learn_loop(self, state: int) -> None:
        """What the kernel needs to know about the runs of characters ``state`` may
        consume: the ASCII characters that lead back to it and whether every non-ASCII
        one does too; or else, for a counted run of a class on top (``x{lo,hi}``), the
        class and how many characters it allows. One state at a time, with scalar
        stores: masks ask for one or two states at once, where numpy calls over arrays
        cost more than the work."""
        self._settle_loop(state, self.automaton.self_loop_bits(state))

    def _learn_loops(self, states: list[int], where: slice | np.ndarray) -> None:
        """:meth:`_learn_loop` for many distinct states at once (a whole small automaton),
        ``where`` indexing them in the per-state arrays (a slice where they are a range)."""
        automaton = self.automaton
        learnt = [self._loop_facts(state, automaton.self_loop_bits(state)) for state in states]
        # Stored at once (a whole small automaton: per-state numpy stores cost more).
        self._sync(None)
        lo, hi, utf8, budget = zip(*learnt)
        self._loop_lo[where] = lo
        self._loop_hi[where] = hi
        self._loop_utf8[where] = utf8
        self._loop_budget[where] = budget
        self._loop_known[where] = True

    def _loop_facts(self, state: int, ascii_bits: int) -> tuple[int, int, int, int]:
        """What :meth:`_learn_loop` says about ``state``, given the ASCII bytes (bits
        0-127) that lead from it back to it: the loop's ASCII bits in two halves, how many
        of the non-ASCII characters loop too (a level of walk_kernel), and how many
        characters it may consume."""
        if ascii_bits:
            utf8 = self._utf8_loops_back(state)
            budget = _UNBOUNDED
        else:
            run = self.automaton.leading_run(state)
            ascii_bits, utf8, budget = run if run is not None else (0, NON_ASCII_NONE, 0)
        return ascii_bits & _LOW64, ascii_bits >> 64, utf8, min(budget, _UNBOUNDED)

    def _settle_loop(self, state: int, ascii_bits: int) -> None:
        """Store what :meth:`_loop_facts` says about ``state``."""
        lo, hi, utf8, budget = self._loop_facts(state, ascii_bits)
        self._sync(None)  # the state itself may be new to the arrays
        self._loop_lo[state] = lo
        self._loop_hi[state] = hi
        self._loop_utf8[state] = utf8
        self._loop_budget[state] = budget
        self._loop_known[state] = True

    def _utf8_loops_back(self, state: int) -> int:
        """How many of the multi-byte characters lead from ``state`` back to ``state``
        (a level of walk_kernel): all, through one automaton state per UTF-8 decoder
        state; else "not checked yet" whether all but the non-ASCII spaces do (as \\S
        and ECMA's "." read them; see :meth:`_check_spaces`)."""
        if self.automaton.row(state).item(0xC2) == Automaton.DEAD:
            return NON_ASCII_NONE  # an ASCII pattern's: no lead byte to follow
        if self.automaton.loops_on_multibyte_chars(state):
            return NON_ASCII_ALL  # no rows built for the states inside characters
        image = {UTF8_BOUNDARY: state}
        for source, first, last, target in UTF8_MULTIBYTE_EDGES:
            row = self.automaton.row(image[source])
            successors = row[first : last + 1]
            successor = int(successors[0])
            if successor == Automaton.DEAD or np.count_nonzero(successors != successor):
                break
            if image.setdefault(target, successor) != successor:
                break
        else:
            return NON_ASCII_ALL
        if np.count_nonzero(self.automaton.row(state)[0xC2:0xF5] == Automaton.DEAD):
            return NON_ASCII_NONE  # a lead byte no character may start with
        return walk_kernel.NON_ASCII_UNCHECKED  # see _check_spaces

    def _check_spaces(self, state: int) -> None:
        """Settle whether ``state``, whose loop takes some ASCII characters and not every
        multi-byte one, takes every multi-byte one but the non-ASCII spaces: through one
        automaton state per range of :data:`~constrain.utf8.UTF8_TREE_BUT_SPACES` (which
        builds their rows)."""
        if self._loop_utf8[state] != walk_kernel.NON_ASCII_UNCHECKED:
            return
        fits = self._reads_back(state, state, UTF8_TREE_BUT_SPACES)
        self._sync(None)  # the check may have built states
        self._loop_utf8[state] = (NON_ASCII_BUT_SPACES if fits
                                  else NON_ASCII_NONE)

    def _reads_back(self, state: int, loop: int, tree: tuple[Any, ...]) -> bool:
        """Whether every byte sequence of ``tree`` (see :func:`~constrain.utf8._tree_of`)
        leads from ``state`` to ``loop``, with one successor per range."""
        row = self.automaton.row(state)
        for first, last, children in tree:
            successors = row[first : last + 1]
            successor = int(successors[0])
            if successor == Automaton.DEAD or np.count_nonzero(successors != successor):
                return False
            if not children:
                if successor != loop:
                    return False
            elif not self._reads_back(successor, loop, children):
                return False
        return True


_LOW64 = (1 << 64) - 1
# States the per-state loop arrays have room for at first (they double past it).
_LOOP_CAPACITY = 64
# Masks made by the first kernel call when a small automaton's are made ahead; each
# call's pace sizes the next.
_FIRST_BATCH = 2
# A run of at most this many ASCII characters walks few tokens (digits, hex digits).
_CHEAP_RUN_CHARS = 22
# Up to this many states' loops are learnt one at a time (see _learn_loop).
_SCALAR_LOOPS = 4
# Head plans kept per vocabulary across constraints (each holds a mask row, ~19 KB on a
# 151k vocabulary, and the trie nodes where the head may end).
_RECURRING_PLANS = 1024
# Loop plans kept per vocabulary (a mask row and the trie nodes where tokens leave the
# loop: up to a few hundred KB for a JSON string's characters on a 151k vocabulary).
_RECURRING_LOOP_PLANS = 64
# Tokens longer than a length bound's reach are decided one by one, most by a lookup of
# the units they write: beyond this many, one walk of the trie costs less (a word count
# under maxLength 100 on Qwen: ~8 ms against a walk's 70-130 ms up to 553 longer tokens,
# 14 against 57 ms at 1,171, 49 against 96 ms at 4,134, 303 against 95 ms at 33,546).
_MAX_LONG_TOKENS = 4096
# Unions of at most this many members get their plan from their members' plans; a larger
# one (an enum of many strings, say) is cheaper walked as a whole.
_MAX_MEMBERS = 64


_Plan = tuple[np.ndarray, "np.ndarray | None", "np.ndarray | None"]
"""What the compiled walk learnt about one state: the tokens allowed from it
(``plan[_WORDS]``, uint32, read-only, EOS not included); the trie nodes with children
after which its language may end (``plan[_EXITS]``); and those nodes' children
(``plan[_SEEDS]``), from where a walk goes on in whatever follows the state. A plain
tuple, not a named one: the collector stops tracking a tuple of untracked objects
(arrays, ``None``), never an instance of a subclass, and a schema's first instance
keeps ~18,000 plans (Github_ultra/o53885) that every full collection walked."""
_WORDS: Final = 0
_EXITS: Final = 1
_SEEDS: Final = 2

_UNBOUNDED = walk_kernel.UNBOUNDED
_NO_NODES = np.zeros(0, dtype=np.int64)
_NO_NODES.flags.writeable = False
_NO_WORDS = np.zeros(0, dtype=np.uint32)
_NO_WORDS.flags.writeable = False


def _union_words(masks: list[np.ndarray]) -> np.ndarray:
    """The OR of read-only uint32 masks: the one mask itself when there is one (plans
    share their words; nothing writes to them)."""
    if len(masks) == 1:
        return masks[0]
    words: np.ndarray = masks[0] | masks[1]
    for mask in masks[2:]:
        words |= mask
    return words


def set_bits(packed: np.ndarray, ids: np.ndarray) -> None:
    """Set the bits of token ``ids`` in the packed mask ``packed`` (in place)."""
    ids = np.asarray(ids, dtype=np.int64)
    np.bitwise_or.at(packed.view(np.uint32), ids >> 5, (np.uint32(1) << (ids & 31)).astype(np.uint32))
