"""Compile a spec (regex, choices, grammar, JSON Schema) for a vocabulary.

Every ``compile_*`` function lowers its spec to the grammar IR, builds the lazy automaton
and returns a :class:`CompiledConstraint`: immutable from the caller's point of view (its
lazily filled tables are guarded by locks), shared by any number of matchers and threads,
and memoized by content so compiling the same spec twice costs a dictionary lookup.

>>> from constrain import Vocabulary, compile_choice
>>> vocab = Vocabulary.from_token_bytes([b"yes", b"no", b"n", b"o", None], eos_token_ids=[4])
>>> c = compile_choice(["yes", "no"], vocab)
>>> m = c.matcher()
>>> m.allowed_token_ids().tolist()
[0, 1, 2]
>>> c is compile_choice(["yes", "no"], vocab)
True
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import cache
from .automaton import Automaton, AutomatonOptions
from .errors import GrammarError, RegexSyntaxError, TokenizerError
from .grammar import EMPTY, Bytes, Expr, Grammar, prefix_tree
from .masks import TokenMasks, eos_only_words
from .matcher import TERMINATED, Matcher
from .regex import parse_regex
from .vocab import Vocabulary

if TYPE_CHECKING:
    from .unique_items import UniqueGuards

__all__ = [
    "CompiledConstraint",
    "compile_choice",
    "compile_grammar",
    "compile_json_schema",
    "compile_regex",
]


@dataclass(frozen=True)
class CompileInfo:
    """What a spec compiled to (for ``constrain compile`` and reports)."""

    kind: str
    rules: int
    states_built: int
    terms_built: int


class CompiledConstraint:
    """A constraint compiled for one vocabulary; make a :class:`Matcher` per sequence."""

    def __init__(self, grammar: Grammar, vocab: Vocabulary, *, kind: str = "grammar",
                 options: AutomatonOptions | None = None) -> None:
        started = time.perf_counter()
        self.kind = kind
        self.grammar = grammar
        self.vocab = vocab
        self._eos_token_ids = vocab.eos_token_ids  # read at every step: no property call
        self._token_bytes = vocab.token_bytes
        self.automaton = Automaton(grammar, options)
        budget = self.automaton.options.max_mask_memory
        self._masks = TokenMasks(self.automaton, vocab, max_memory=budget)
        self._steps: dict[tuple[int, int], int] = {}
        # The step memo and the torch copies of masks are bounded by the same budget: an
        # eighth of it each (a step entry is ~150 bytes, a copy a mask row).
        self._max_steps = max(budget // (8 * _STEP_ENTRY_BYTES), 1024)
        self._max_torch_masks = max(budget // (32 * self._masks.words), 16)
        self._mask_memo = self._masks.memo  # read by Matcher.fill_bitmask at every step
        self._torch_masks: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._eos_only = eos_only_words(vocab)
        if self.automaton.start == Automaton.DEAD:
            raise GrammarError("the constraint's language is empty: nothing can be generated")
        # A small regular language (most regexes and choice sets) is built whole now: a
        # path through it meets almost all of its states anyway, and with every row known
        # each new mask is one trie walk instead of rounds of walking and building. Its
        # masks are made now too, for at most as long again as compiling took (a state
        # looping on a class of many tokens can take a millisecond), so that steps through
        # them cost a lookup, for every matcher of this constraint. Not for JSON Schema:
        # bounded whitespace and optional members make many states that one document
        # never meets (building ahead raised the median time to the first mask by 30% on
        # a MaskBench sample).
        if kind != "json" and self._masks.build_all(_EAGER_STATES):
            self._masks.precompute(time.perf_counter() - started)
        self._unique: UniqueGuards | None = None
        plan = grammar.metadata.get("unique_items")
        if plan is not None:
            from .unique_items import UniqueGuards

            self._unique = UniqueGuards(plan, self)  # type: ignore[arg-type]

    def matcher(self) -> Matcher:
        """A fresh matcher at the start of the constraint."""
        if self._unique is not None:
            from .unique_items import UniqueItemsMatcher

            return UniqueItemsMatcher(self, self._unique)
        return Matcher(self)

    @property
    def mask_words(self) -> int:
        """int32 words per mask row: ``ceil(vocab.size / 32)``."""
        return self._masks.words

    def masks_for_state(self, state: int) -> np.ndarray:
        """The packed mask of automaton ``state`` (``-1``, terminated: EOS only)."""
        if state < 0:
            return self._eos_only
        return self._masks.mask(state)

    def torch_mask(self, state: int) -> Any:
        """:meth:`masks_for_state` as a CPU torch tensor, made once per state (only called
        when the caller already passes torch tensors, so torch is imported)."""
        found = self._torch_masks.get(state)
        if found is None:
            import torch

            found = torch.from_numpy(self.masks_for_state(state).copy())
            if len(self._torch_masks) >= self._max_torch_masks:
                self._torch_masks.clear()
            self._torch_masks[state] = found
        return found

    def has_live_tokens(self, state: int) -> bool:
        """Whether some token (or EOS) is allowed in ``state``."""
        return bool(self.masks_for_state(state).any())

    def token_step(self, state: int, token: int) -> int:
        """The state after ``token``'s bytes (``Automaton.DEAD`` if not allowed); for EOS,
        :data:`~constrain.matcher.TERMINATED` where the constraint may end, else ``DEAD``.
        Memoized: the matcher reads the memo first, so a step seen before is one lookup."""
        found = self._steps.get((state, token))
        return self._new_step(state, token) if found is None else found

    def _new_step(self, state: int, token: int) -> int:
        """:meth:`token_step` for a step not in the memo (the matcher has looked)."""
        if state == TERMINATED:  # nothing follows EOS (and -1 would index the last row)
            return Automaton.DEAD
        automaton = self.automaton
        table = self._token_bytes
        data = table[token] if 0 <= token < len(table) else None
        if data is None:
            # EOS ids have no bytes (the vocabulary makes sure), so a token with bytes
            # needs no EOS check: a first step right after compiling costs ~10 µs, each
            # lookup a cold one.
            found = (TERMINATED if token in self._eos_token_ids
                     and automaton.is_accepting(state) else Automaton.DEAD)
        elif (state == Automaton.DEAD or automaton.has_row(state) or automaton.exponential
              or (served := self._masks.runs.lookup(state)) is None):
            found = automaton.step_bytes(state, data)
        else:
            # Inside a counted run, from a state without a row (one built ahead steps
            # faster through the rows): the bytes of the token would build a row per count.
            found = self._masks.runs.step(state, served, token, self.token_step)
        steps = self._steps
        if len(steps) >= self._max_steps:
            steps.clear()
        steps[state, token] = found
        return found

    def memory_estimate(self) -> int:
        """About how many bytes this constraint holds now: its automaton's rows and terms,
        and the masks, plans and steps it memoized (cheap: :mod:`constrain.cache` asks
        at every compile to keep its total bounded)."""
        automaton = self.automaton
        guards = 0
        if self._unique is not None:
            rows, states = self._unique.held()
            guards = rows + states * _STATE_BYTES
        return (automaton.num_states * _STATE_BYTES + len(automaton.terms) * _TERM_BYTES
                + self._masks.memory_estimate() + len(self._steps) * _STEP_ENTRY_BYTES
                + len(self._torch_masks) * 4 * self._masks.words + guards)

    def info(self) -> CompileInfo:
        """Sizes of what has been built so far."""
        return CompileInfo(
            self.kind, len(self.grammar.rules), self.automaton.num_states,
            len(self.automaton.terms),
        )

    def __repr__(self) -> str:
        return f"<CompiledConstraint {self.kind} rules={len(self.grammar.rules)} vocab={self.vocab!r}>"


# At most this many states are built when compiling (~30-100 µs each).
_EAGER_STATES = 128
# What one automaton state, term and memoized step hold, about (a state's row of 256
# successors and its stacks; a term's entries in the store's tables; a dict entry with
# its key), for memory_estimate.
_STATE_BYTES = 1024
_TERM_BYTES = 200
_STEP_ENTRY_BYTES = 150


def _compiled(kind: str, key: Any, vocab: Vocabulary, make_grammar: Any,
              options: AutomatonOptions | None) -> CompiledConstraint:
    if not isinstance(vocab, Vocabulary):
        raise TokenizerError(
            f"expected a constrain.Vocabulary, got {type(vocab).__name__}; build one with "
            "Vocabulary.from_hf(tokenizer) or Vocabulary.from_tiktoken(encoding)"
        )
    return cache.memoized_compile(
        (kind, key, vocab.fingerprint, vocab.size, options),
        lambda: CompiledConstraint(make_grammar(), vocab, kind=kind, options=options),
    )


def compile_regex(pattern: str, vocab: Vocabulary, *, unicode: bool = False,
                  options: AutomatonOptions | None = None) -> CompiledConstraint:
    """Constrain output to full matches of ``pattern`` (Python ``re`` syntax).

    ``\\d \\w \\s`` are ASCII unless ``unicode=True`` (see :mod:`constrain.regex`).

    >>> from constrain import Vocabulary, compile_regex
    >>> vocab = Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None],
    ...                                     eos_token_ids=[256])
    >>> m = compile_regex(r"[0-9]{2}", vocab).matcher()
    >>> m.advance(ord("4")), m.advance(ord("x")), m.advance(ord("2")), m.is_accepting()
    (True, False, True, True)
    """
    if not isinstance(pattern, str):
        raise RegexSyntaxError(f"a regex must be a str, not {type(pattern).__name__}",
                               repr(pattern), 0)
    return _compiled(
        "regex", (pattern, unicode), vocab,
        lambda: Grammar.single(parse_regex(pattern, unicode=unicode)), options,
    )


def compile_choice(choices: Sequence[str | bytes], vocab: Vocabulary, *,
                   options: AutomatonOptions | None = None) -> CompiledConstraint:
    """Constrain output to exactly one of ``choices`` (strings, or raw bytes)."""
    if isinstance(choices, (str, bytes)) or not len(choices):
        raise GrammarError("compile_choice needs a non-empty sequence of strings")
    items = tuple(choices)
    for c in items:
        if not isinstance(c, (str, bytes)):
            raise GrammarError(f"choices must be str or bytes, got {type(c).__name__}: {c!r}")
    return _compiled("choice", items, vocab, lambda: Grammar.single(_choice_tree(items)), options)


def _choice_tree(items: Sequence[str | bytes]) -> Expr:
    # Bytes, not characters: the UTF-8 of valid strings is the same language, and a byte
    # trie derives in one step per byte.
    keys = {c.encode() if isinstance(c, str) else c for c in items}
    return prefix_tree([(k, EMPTY) for k in keys], _BYTE_UNITS.__getitem__)


_BYTE_UNITS = [Bytes(((b, b),)) for b in range(256)]


def _document_key(schema: Any) -> Any:
    """A schema document's memo key: its JSON text in its own key order (under
    ``property_order="schema"`` the order is the language), and what is not JSON in it
    (``Decimal`` numbers, or anything the compile will refuse) apart from the text, so
    that ``Decimal("1.5")`` and ``"1.5"`` are not one key."""
    others: list[str] = []

    def placeholder(value: Any) -> None:
        others.append(f"{type(value).__module__}.{type(value).__qualname__}:{value!r}")

    try:
        text = json.dumps(schema, default=placeholder)
    except RecursionError:
        # Deeper than json writes: the compile refuses it (schema_nesting), with no key.
        return object()
    return (text, tuple(others)) if others else text


def compile_grammar(grammar: Grammar, vocab: Vocabulary, *,
                    options: AutomatonOptions | None = None) -> CompiledConstraint:
    """Constrain output to a grammar IR (see :mod:`constrain.grammar`); not memoized by
    content, since grammars are built in code: keep the returned object to share it."""
    if not isinstance(grammar, Grammar):
        raise GrammarError(f"expected a constrain.grammar.Grammar, got {type(grammar).__name__}")
    if not isinstance(vocab, Vocabulary):
        raise TokenizerError(f"expected a constrain.Vocabulary, got {type(vocab).__name__}")
    return CompiledConstraint(grammar, vocab, kind="grammar", options=options)


def compile_json_schema(schema: Any, vocab: Vocabulary, *, options: AutomatonOptions | None = None,
                        **schema_options: Any) -> CompiledConstraint:
    """Constrain output to JSON documents valid under ``schema`` (dict, JSON text, or a
    Pydantic model class); ``schema_options`` are :class:`~constrain.json_schema.JsonSchemaOptions`
    fields."""
    from .json_schema import JsonSchemaOptions, schema_to_grammar

    opts = JsonSchemaOptions(**schema_options)
    if isinstance(schema, (dict, list, bool)):
        key: Any = _document_key(schema)
    elif isinstance(schema, (str, bytes, bytearray)):
        key = schema if isinstance(schema, str) else bytes(schema)
    else:
        # The object itself (a Pydantic model class), which the memo then holds: keyed
        # by its name and id, a model redefined in a notebook took the collected one's id
        # and was given its constraint. Not a schema if unhashable: schema_to_grammar
        # raises, and nothing is memoized.
        try:
            key = ("object", schema, hash(schema))
        except TypeError:
            key = ("unhashable", id(schema))
    return _compiled(
        "json", (key, opts), vocab, lambda: schema_to_grammar(schema, opts), options,
    )
