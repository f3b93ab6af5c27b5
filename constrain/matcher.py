"""The per-request Matcher: the contract every integration and benchmark relies on.

A matcher is a cursor over a compiled constraint: an automaton state plus a history for
:meth:`Matcher.rollback`. It is cheap to create and to copy; the compiled constraint it
points to is shared and immutable.

>>> import numpy as np
>>> from constrain import Vocabulary, compile_regex
>>> vocab = Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
>>> m = compile_regex("ab?", vocab).matcher()
>>> m.allowed_token_ids().tolist()
[0, 2]
>>> m.advance(0), m.allowed_token_ids().tolist(), m.is_accepting()
(True, [1, 3], True)
>>> bitmask = np.zeros((1, 1), dtype=np.int32)
>>> m.fill_bitmask(bitmask, 0); bin(int(bitmask[0, 0]))
'0b1010'
>>> m.advance(3), m.is_terminated()
(True, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .automaton import Automaton

if TYPE_CHECKING:
    from .compiler import CompiledConstraint

__all__ = ["Matcher"]

TERMINATED = -1
"""The state of a matcher once EOS is accepted."""
_TERMINATED = TERMINATED
_DEAD = Automaton.DEAD


class Matcher:
    """Decoding state of one sequence under one :class:`~constrain.CompiledConstraint`.

    Not thread-safe (one per request); :meth:`copy` for beams and forks.
    """

    __slots__ = ("_compiled", "_history", "_state")

    def __init__(self, compiled: CompiledConstraint) -> None:
        self._compiled = compiled
        self._state = compiled.automaton.start
        self._history: list[int] = []

    @property
    def compiled(self) -> CompiledConstraint:
        """The constraint this matcher follows."""
        return self._compiled

    @property
    def state(self) -> int:
        """The automaton state (-1 once terminated); equal states allow equal tokens."""
        return self._state

    def fill_bitmask(self, bitmask: Any, row: int = 0) -> None:
        """Write this step's allowed tokens into ``bitmask[row]``.

        ``bitmask`` is an int32 numpy array or torch tensor ``[rows, words]`` with
        ``words >= ceil(vocab.size / 32)``; words past the vocabulary are zeroed. Once
        terminated, only EOS is allowed so a decoding loop can always finish.
        """
        state = self._state
        compiled = self._compiled
        mask = compiled._mask_memo.get(state)  # memoized: no calls
        if mask is None:
            mask = compiled.masks_for_state(state)
        if bitmask.__class__ is np.ndarray:
            # The common case in one indexing operation (a step costs a few microseconds,
            # so each call and shape check around the copy shows); a row wider or
            # narrower than the mask does not broadcast and takes the general path.
            try:
                bitmask[row] = mask
            except ValueError:
                write_row(mask, bitmask, row)
        elif isinstance(bitmask, np.ndarray):
            write_row(mask, bitmask, row)
        else:
            write_tensor_row(compiled.torch_mask(state), bitmask, row)

    def _mask(self) -> np.ndarray:
        """The packed mask of this step."""
        return self._compiled.masks_for_state(self._state)

    def allowed_token_ids(self) -> np.ndarray:
        """The token ids allowed now, ascending (a convenience over :meth:`fill_bitmask`)."""
        bits = np.unpackbits(self._mask().view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self._compiled.vocab.size])

    def is_allowed(self, token: int) -> bool:
        """Whether ``token`` may come next."""
        mask = self._mask()
        if not 0 <= token < len(mask) * 32:
            return False
        return bool(int(mask[token >> 5]) >> (token & 31) & 1)

    def advance(self, token: int) -> bool:
        """Consume ``token``; ``False`` (state unchanged) if it is not allowed.

        EOS where the constraint may end terminates the matcher.
        """
        state = self._state
        if state == _TERMINATED:
            return False
        compiled = self._compiled
        # The memo first: a step taken before (by any matcher) is one lookup.
        nxt = compiled._steps.get((state, token))
        if nxt is None:
            nxt = compiled._new_step(state, token)
        if nxt == _DEAD:
            return False
        self._history.append(state)
        self._state = nxt
        return True

    def advance_bytes(self, data: bytes) -> bool:
        """Consume raw bytes (e.g. forced bytes re-tokenized elsewhere); ``False`` if rejected."""
        if self._state == _TERMINATED:
            return False
        nxt = self._compiled.automaton.step_bytes(self._state, data)
        if nxt == Automaton.DEAD or not self._compiled.has_live_tokens(nxt):
            return False
        self._history.append(self._state)
        self._state = nxt
        return True

    def rollback(self, n: int = 1) -> None:
        """Undo the last ``n`` successful advances."""
        if not 0 <= n <= len(self._history):
            raise ValueError(f"cannot roll back {n} steps; {len(self._history)} were taken")
        if n:
            self._state = self._history[-n]
            del self._history[-n:]

    def reset(self) -> None:
        """Back to the start, forgetting the history."""
        self._state = self._compiled.automaton.start
        self._history.clear()

    def is_accepting(self) -> bool:
        """Whether the text so far is complete (EOS would be allowed now)."""
        return self._state == _TERMINATED or self._compiled.automaton.is_accepting(self._state)

    def is_terminated(self) -> bool:
        """Whether EOS has been accepted."""
        return self._state == _TERMINATED

    def forced_bytes(self) -> bytes:
        """Bytes every valid continuation starts with (empty when there is a choice)."""
        if self._state == _TERMINATED:
            return b""
        return self._compiled.automaton.forced_bytes(self._state)

    @property
    def num_advances(self) -> int:
        """How many advances can be rolled back."""
        return len(self._history)

    def copy(self) -> Matcher:
        """An independent matcher at the same position, with the same history."""
        twin = Matcher.__new__(Matcher)
        twin._compiled = self._compiled
        twin._state = self._state
        twin._history = list(self._history)
        return twin

    def __repr__(self) -> str:
        return f"<Matcher state={self._state} steps={len(self._history)}>"


def write_row(mask: np.ndarray, bitmask: np.ndarray, row: int) -> None:
    """Copy the packed ``mask`` into ``bitmask[row]``, zeroing words past it."""
    words = len(mask)
    # One indexing operation per call: this runs once per decoded token, and each numpy
    # call costs about as much as copying the ~19 KB row of a 151k vocabulary.
    if bitmask.shape[-1] == words:
        bitmask[row] = mask
    else:
        bitmask[row, :words] = mask
        bitmask[row, words:] = 0


def write_tensor_row(source: Any, bitmask: Any, row: int) -> None:
    """:func:`write_row` for a torch ``bitmask`` from the CPU tensor ``source``."""
    target = bitmask[row]
    words = source.shape[0]
    if target.device != source.device:
        source = source.to(target.device, non_blocking=True)
    target[:words].copy_(source)
    if target.shape[0] > words:
        target[words:].zero_()
