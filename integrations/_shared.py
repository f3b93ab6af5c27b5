"""What the serving-runtime adapters share: request specs, version checks, the model
vocabularies seen in this process, and following a runtime's token list with a matcher.

A *spec* is one request's constraint in vLLM's structured-output field names, so users
move between runtimes without renaming anything: exactly one of ``json`` (a schema: dict
or JSON text), ``regex``, ``choice`` (list of strings), ``grammar`` (a
:class:`constrain.Grammar`; grammar *text* is not supported yet) or ``json_object``
(``true``: any JSON object). It may arrive as a dict or as JSON text (vLLM's ``vllm_xargs``
only carries flat values).

>>> spec = parse_spec('{"choice": ["yes", "no"]}')
>>> spec.kind, spec.value
('choice', ('yes', 'no'))
>>> check_spec(spec)
>>> parse_spec({"regex": "[0-9]+", "choice": ["a"]})
Traceback (most recent call last):
...
constrain.errors.GrammarError: a constrain spec has exactly one of 'json', 'regex', 'choice', 'grammar', 'json_object'; got 'regex', 'choice'

Importing this module loads neither torch nor any runtime.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from constrain import specs
from constrain.compiler import CompiledConstraint, compile_grammar, compile_regex
from constrain.errors import GrammarError, MissingDependencyError
from constrain.grammar import Grammar
from constrain.vocab import Vocabulary

__all__ = [
    "SPEC_KEYS",
    "Spec",
    "TrackedMatcher",
    "check_spec",
    "compile_spec",
    "known_vocabularies",
    "parse_spec",
    "remember_vocabulary",
    "require_version",
]

logger = logging.getLogger("constrain.integrations")

#: vLLM's structured-output field names, in the order errors list them.
SPEC_KEYS = ("json", "regex", "choice", "grammar", "json_object")


@dataclass(frozen=True)
class Spec:
    """One request's constraint: ``kind`` is a :data:`SPEC_KEYS` name, ``value`` its
    normalized value (schema dict or text, pattern, tuple of choices, Grammar)."""

    kind: str
    value: Any

    def describe(self) -> str:
        """A short text for logs and errors.

        >>> Spec("regex", "[a-z]+").describe()
        "regex '[a-z]+'"
        """
        text = repr(self.value)
        return f"{self.kind} {text if len(text) <= 80 else text[:77] + '...'}"


def parse_spec(raw: Any) -> Spec:
    """Read a spec from a dict, JSON text or a :class:`Spec`; raise
    :class:`~constrain.errors.GrammarError` (a ``ValueError``) naming what is wrong."""
    if isinstance(raw, Spec):
        return raw
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except ValueError as e:
            raise GrammarError(f"a constrain spec given as text must be a JSON object: {e}") from e
    if not isinstance(raw, Mapping):
        raise GrammarError(
            f"a constrain spec is a dict with one of {', '.join(map(repr, SPEC_KEYS))}; "
            f"got {type(raw).__name__}"
        )
    unknown = [k for k in raw if k not in SPEC_KEYS]
    if unknown:
        raise GrammarError(
            f"unknown constrain spec field {unknown[0]!r}; known: {', '.join(map(repr, SPEC_KEYS))}"
        )
    present = [k for k in SPEC_KEYS if k in raw and raw[k] is not None]
    if len(present) != 1:
        got = ", ".join(map(repr, present)) or "none"
        raise GrammarError(
            f"a constrain spec has exactly one of {', '.join(map(repr, SPEC_KEYS))}; got {got}"
        )
    kind = present[0]
    value = raw[kind]
    if kind == "json":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as e:
                raise GrammarError(f"'json' schema text is not valid JSON: {e}") from e
        if not isinstance(value, (Mapping, bool)):
            raise GrammarError(f"'json' must be a JSON Schema (object or boolean), got {value!r}")
        return Spec(kind, dict(value) if isinstance(value, Mapping) else value)
    if kind == "regex":
        if not isinstance(value, str):
            raise GrammarError(f"'regex' must be a string, got {type(value).__name__}")
        return Spec(kind, value)
    if kind == "choice":
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
            raise GrammarError(f"'choice' must be a non-empty list of strings, got {value!r}")
        if not all(isinstance(c, str) for c in value):
            raise GrammarError(f"'choice' must contain strings only, got {value!r}")
        return Spec(kind, tuple(value))
    if kind == "grammar":
        if isinstance(value, Grammar):
            return Spec(kind, value)
        if isinstance(value, str):
            raise GrammarError(
                "grammar text (Lark/GBNF/EBNF) is not supported by this constrain release; "
                "grammar files come with a later release. Pass a constrain.Grammar object "
                "(offline), or use 'json', 'regex' or 'choice'"
            )
        raise GrammarError(f"'grammar' must be a constrain.Grammar, got {type(value).__name__}")
    if value is not True:
        raise GrammarError(f"'json_object' must be true, got {value!r}")
    return Spec(kind, True)


def compile_spec(spec: Spec, vocab: Vocabulary) -> CompiledConstraint:
    """Compile ``spec`` for ``vocab`` through the shared, content-memoized cache
    (:func:`constrain.specs.compile_spec`; grammar objects are memoized by identity)."""
    if spec.kind == "json":
        return specs.compile_spec(spec.value, vocab)
    if spec.kind in ("regex", "choice"):
        value = list(spec.value) if spec.kind == "choice" else spec.value
        return specs.compile_spec({spec.kind: value}, vocab)
    if spec.kind == "json_object":
        return specs.compile_spec({"type": "object"}, vocab)
    return _compile_grammar_object(spec.value, vocab)


_grammar_lock = threading.Lock()
_grammar_cache: dict[tuple[int, str], tuple[Grammar, CompiledConstraint]] = {}


def _compile_grammar_object(grammar: Grammar, vocab: Vocabulary) -> CompiledConstraint:
    # compile_grammar is not memoized (grammars are built in code); requests that share
    # one Grammar object should share its compiled tables too. The entry keeps the
    # grammar alive, so its id cannot be reused while cached.
    key = (id(grammar), vocab.fingerprint)
    with _grammar_lock:
        hit = _grammar_cache.get(key)
    if hit is not None:
        return hit[1]
    compiled = compile_grammar(grammar, vocab)
    with _grammar_lock:
        return _grammar_cache.setdefault(key, (grammar, compiled))[1]


@functools.lru_cache(maxsize=1)
def _validation_vocab() -> Vocabulary:
    # Every byte as a token plus EOS: compiling against it checks a spec completely
    # (syntax, schema, empty language) without the model's tokenizer.
    return Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None],
                                       eos_token_ids=[256])


def check_spec(spec: Spec, vocabs: Sequence[Vocabulary] = ()) -> None:
    """Raise the compile error ``spec`` would raise; also compile it for ``vocabs`` (the
    models known in this process) so the request finds it in the shared cache."""
    compile_spec(spec, _validation_vocab())
    for vocab in vocabs:
        compile_spec(spec, vocab)


_known_lock = threading.Lock()
_known: dict[str, Vocabulary] = {}


def remember_vocabulary(vocab: Vocabulary) -> Vocabulary:
    """Record a model vocabulary in use in this process, so admission checks
    (:func:`check_spec`) also compile for it and requests find their constraint cached."""
    with _known_lock:
        return _known.setdefault(vocab.fingerprint, vocab)


def known_vocabularies() -> list[Vocabulary]:
    """The model vocabularies recorded in this process so far."""
    with _known_lock:
        return list(_known.values())


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("."):
        m = re.match(r"\d+", piece)
        if m is None:
            break
        parts.append(int(m.group()))
    return tuple(parts)


def require_version(distributions: Sequence[str], low: str, high: str, extra: str) -> str:
    """The installed version of the first of ``distributions``; raise
    :class:`~constrain.errors.MissingDependencyError` naming the supported range
    ``[low, high)`` and the pip extra when it is absent or outside.

    >>> require_version(["numpy"], "1.0", "99", "fast") >= "1"
    True
    """
    found = None
    for dist in distributions:
        try:
            found = importlib.metadata.version(dist)
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    wanted = f"{distributions[0]}>={low},<{high}"
    if found is None:
        raise MissingDependencyError(wanted, extra)
    if not _version_tuple(low) <= _version_tuple(found) < _version_tuple(high):
        raise MissingDependencyError(
            f"{wanted} (found {distributions[0]} {found}, whose interfaces this constrain "
            "release was not tested against)",
            extra,
        )
    return found


class TrackedMatcher:
    """A request's matcher kept in step with the token ids its runtime generated.

    Runtimes hand over the output list (vLLM) or new tokens (llama.cpp, vLLM's newer
    runner); :meth:`sync` and :meth:`extend` advance the matcher over what it has not
    seen. A token the matcher rejects (a runtime forced it past the mask) marks the
    request *broken*: from then on only EOS is allowed, so it ends quickly, and the
    rejection is logged once.

    >>> from constrain import compile_choice
    >>> vocab = Vocabulary.from_token_bytes([b"yes", b"no", None], eos_token_ids=[2])
    >>> t = TrackedMatcher(compile_choice(["yes", "no"], vocab), "req-1")
    >>> t.sync([1]); t.matcher.is_accepting(), t.broken
    (True, False)
    >>> t.sync([1, 0]); t.broken
    True
    """

    __slots__ = ("broken", "compiled", "consumed", "label", "matcher")

    def __init__(self, compiled: CompiledConstraint, label: str = "") -> None:
        self.compiled = compiled
        self.matcher = compiled.matcher()
        self.consumed = 0
        self.broken = False
        self.label = label

    @classmethod
    def ending(cls, vocab: Vocabulary, label: str = "") -> TrackedMatcher:
        """A broken tracker that allows only EOS: for a request whose constraint could
        not be compiled here, which must not run unconstrained."""
        tracked = cls(compile_regex("", vocab), label)
        tracked.broken = True
        return tracked

    def fork(self) -> TrackedMatcher:
        """An independent copy (for speculative draft tokens)."""
        twin = TrackedMatcher.__new__(TrackedMatcher)
        twin.compiled, twin.matcher, twin.consumed = self.compiled, self.matcher.copy(), self.consumed
        twin.broken, twin.label = self.broken, self.label
        return twin

    def extend(self, tokens: Sequence[int] | np.ndarray[Any, Any]) -> None:
        """Advance over newly generated ``tokens`` (negative ids, placeholders for
        tokens not known yet, stop the walk)."""
        for token in tokens:
            token = int(token)
            if token < 0:
                return
            self.consumed += 1
            if self.broken:
                continue
            if not self.matcher.advance(token):
                self.broken = True
                logger.warning(
                    "constrain: request %s generated token %d, which its constraint does not "
                    "allow (another logits stage overrode the mask?); allowing only EOS from "
                    "now on", self.label or "?", token,
                )

    def sync(self, output_ids: Sequence[int] | np.ndarray[Any, Any]) -> None:
        """Catch up with the full list of generated ids; a list that shrank (a runtime
        discarded tokens) rolls the matcher back."""
        n = len(output_ids)
        if n < self.consumed:
            back = self.consumed - n
            if not self.broken and back <= self.matcher.num_advances:
                self.matcher.rollback(back)
            self.consumed = n
        elif n > self.consumed:
            self.extend(output_ids[self.consumed:])

    def fill(self, bitmask: Any, row: int) -> None:
        """Write the allowed tokens into ``bitmask[row]`` (EOS only once broken)."""
        if self.broken:
            mask = self.compiled.masks_for_state(-1)
            target = bitmask[row]
            if isinstance(target, np.ndarray):
                target[:] = 0
                target[: len(mask)] = mask
            else:
                import torch

                target.zero_()
                target[: len(mask)].copy_(torch.from_numpy(mask))
            return
        self.matcher.fill_bitmask(bitmask, row)
