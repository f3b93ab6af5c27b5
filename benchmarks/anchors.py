"""One adapter per engine (constrain, xgrammar, llguidance, outlines-core) over a common protocol.

An :class:`Engine` is bound to one :class:`~benchmarks.vocabs.BenchVocab` and builds that
engine's tokenizer object once (``setup_s``, reported separately, never inside compile time).
``engine.compile(kind, spec)`` returns a factory of fresh matchers; a matcher has
``fill(bitmask)``, ``advance(token) -> bool`` and ``is_accepting()``. Each engine fills its own
native bitmask (``new_bitmask()``); ``to_words`` converts it to one canonical ``uint32`` row and
is only ever called outside timed regions.

Kinds: ``"regex"`` (spec: pattern text), ``"choice"`` (spec: list of strings) and ``"json"``
(spec: a JSON Schema dict; each engine's default whitespace policy).

>>> from benchmarks.vocabs import load_vocab  # doctest: +SKIP
>>> eng = make_engine("xgrammar", load_vocab("qwen"))  # doctest: +SKIP
>>> m = eng.compile("regex", "[0-9]+")()  # doctest: +SKIP
>>> bm = eng.new_bitmask(); m.fill(bm); m.advance(17), m.is_accepting()  # doctest: +SKIP
(True, True)
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Protocol

import numpy as np

from .vocabs import BenchVocab

__all__ = [
    "ENGINE_NAMES",
    "BenchMatcher",
    "Engine",
    "EngineError",
    "Kind",
    "MatcherFactory",
    "engine_available",
    "make_engine",
]

Kind = Literal["regex", "choice", "json"]
Words = np.ndarray[Any, np.dtype[np.uint32]]

#: Every engine this module knows, in the order tables list them.
ENGINE_NAMES = ("constrain", "xgrammar", "llguidance", "outlines")


class EngineError(RuntimeError):
    """An engine refused a spec (unsupported syntax, size limit) or is not installed."""


class BenchMatcher(Protocol):
    """Per-request state of one engine: the three calls the benchmark times."""

    def fill(self, bitmask: Any) -> None:
        """Write the allowed-token mask for the next step into row 0 of ``bitmask``."""

    def advance(self, token: int) -> bool:
        """Consume ``token``; False when the engine rejects it."""

    def is_accepting(self) -> bool:
        """True when the text so far is in the language (EOS would be allowed)."""


MatcherFactory = Callable[[], BenchMatcher]


class Engine(ABC):
    """An engine bound to one vocabulary; see the module docstring for the protocol."""

    name: ClassVar[str]
    #: How the engine's compile caches are kept out of time-to-first-mask, for the report.
    cache_note: ClassVar[str]

    def __init__(self, bv: BenchVocab) -> None:
        self.bv = bv
        self.words = (bv.size + 31) // 32
        t0 = time.perf_counter()
        self._setup()
        # One tiny compile and fill, so per-vocabulary tables an engine builds lazily (on
        # first use) count as setup and not in the first case's compile time.
        self.compile("regex", "a")().fill(self.new_bitmask())
        self.setup_s = time.perf_counter() - t0

    @abstractmethod
    def _setup(self) -> None:
        """Build the engine's tokenizer object from ``self.bv`` (timed in ``setup_s``)."""

    @abstractmethod
    def compile(self, kind: Kind, spec: Any) -> MatcherFactory:
        """Compile ``spec``; the returned factory makes fresh matchers (EngineError if refused)."""

    def before_compile(self) -> None:
        """Drop compiled-grammar caches; called outside timed regions before each timed compile."""

    def new_bitmask(self) -> Any:
        """A bitmask buffer in the engine's own format, ``[1, ceil(V/32)]`` int32."""
        return np.zeros((1, self.words), dtype=np.int32)

    def to_words(self, bitmask: Any) -> Words:
        """Row 0 of ``bitmask`` as a canonical ``uint32`` copy, bits past the vocabulary cleared."""
        row = np.array(np.asarray(bitmask)[0, : self.words], dtype=np.int32).view(np.uint32)
        tail = self.bv.size % 32
        if tail:
            row[-1] &= np.uint32((1 << tail) - 1)
        return row

    def describe(self) -> dict[str, Any]:
        """Version and settings, for the JSON report."""
        return {"setup_s": self.setup_s, "cache": self.cache_note}


def _choice_alternation(choices: list[str], escape: Callable[[str], str]) -> str:
    # Longest first: leftmost-first regex engines (outlines-core) would otherwise stop at a
    # shorter choice that is a prefix of a longer one ("ab|abab" accepts only "ab" there).
    ordered = sorted(dict.fromkeys(choices), key=lambda s: (-len(s), s))
    return "(" + "|".join(escape(c) for c in ordered) + ")"


_RUST_META = set("\\.+*?()|[]{}^$#&-~")


def _rust_regex_escape(text: str) -> str:
    # Python's re.escape escapes characters the Rust regex crate rejects as escapes.
    return "".join("\\" + ch if ch in _RUST_META else ch for ch in text)


# --------------------------------------------------------------------------------- constrain


class _ConstrainMatcher:
    __slots__ = ("_m",)

    def __init__(self, m: Any) -> None:
        self._m = m

    def fill(self, bitmask: Any) -> None:
        self._m.fill_bitmask(bitmask, 0)

    def advance(self, token: int) -> bool:
        return bool(self._m.advance(token))

    def is_accepting(self) -> bool:
        return bool(self._m.is_accepting())


def _load_json_walks(constrain: Any) -> None:
    """Load (or, with numba's cache cold, compile: seconds) the walks JSON masks use that
    a regex's mask does not (a string's text, counted copies, loop plans), by one document
    through a JSON constraint over a throwaway byte vocabulary: no cache of the benchmark's
    own vocabulary learns anything from it (the process-wide leaf languages keep its three
    small ones, as they keep those of the lowering below). Without it, the first schema
    checked paid for them (~340 ms of its time to first mask, with the cache cold)."""
    vocab = constrain.Vocabulary.from_token_bytes(
        [bytes([b]) for b in range(256)] + [b'"a', b'", "', b"12", b'": ', None],
        eos_token_ids=[260])
    schema = {"type": "object", "properties": {
        "s": {"type": "string", "maxLength": 40},
        "n": {"type": "array", "items": {"type": "number"}},
        "w": {"type": "string", "pattern": "^[a-z]{3,30}$"}}}
    document = b'{"s": "a b c, d", "n": [12, 3.5, 1e3], "w": "abcdefghijk"}'
    for _ in range(2):  # the second time through, from a constraint's memoized pieces
        m = constrain.compile_json_schema(schema, vocab).matcher()
        bitmask = np.zeros((1, m.compiled.mask_words), dtype=np.int32)
        for byte in document:
            m.fill_bitmask(bitmask, 0)
            if not m.advance(byte):
                raise EngineError(f"the warm-up document was refused at {bytes([byte])!r}")


def clear_compiled(constrain: Any) -> None:
    """Empty the compiled-constraint LRU of the ``constrain`` package given (a module):
    what a cold compile must not find."""
    cache = constrain.cache
    public = getattr(cache, "clear_compiled_cache", None)
    if public is not None:
        public()
    else:
        # clear_memory_caches() would also drop the per-vocabulary trie, which is setup,
        # not compile work; only the compiled-constraint LRU must go.
        compiled = getattr(cache, "_compiled", None)
        if compiled is not None:
            compiled.clear()


class ConstrainEngine(Engine):
    """constrain through its public API only: Vocabulary.from_hf/from_tiktoken, compile_*."""

    name = "constrain"
    cache_note = "compiled-constraint LRU emptied before each compile; vocabulary tables kept"

    def _setup(self) -> None:
        import constrain

        self._c = constrain
        if self.bv.source_kind == "tiktoken":
            self.vocab = constrain.Vocabulary.from_tiktoken(self.bv.source)
        elif self.bv.source_kind == "bytes":
            self.vocab = constrain.Vocabulary.from_token_bytes(
                self.bv.token_bytes,
                eos_token_ids=self.bv.vocab.eos_token_ids,
                special_token_ids=self.bv.vocab.special_token_ids,
            )
        else:
            self.vocab = constrain.Vocabulary.from_hf(self.bv.source)
        if self.vocab.size != self.bv.size:
            raise EngineError(
                f"constrain vocabulary has {self.vocab.size} ids, bench {self.bv.size}"
            )
        # The per-vocabulary token trie and the compiled walks' machine code are built
        # and loaded once per process, as the anchors build their tokenizer tables here:
        # one mask now (of a state looping on a class, which loads the loop walk too), so
        # no timed compile or step pays for them.
        warm = constrain.compile_regex("[a-z]*!", self.vocab).matcher()
        warm.fill_bitmask(np.zeros((1, warm.compiled.mask_words), dtype=np.int32), 0)
        _load_json_walks(constrain)
        # The modules JSON Schema compilation imports on first use (jsonschema and
        # referencing build ~150 ms of classes), as the anchors import theirs before
        # timing: lowered to the IR only, so no per-vocabulary cache learns anything.
        from constrain.json_schema import schema_to_grammar

        schema_to_grammar({"type": "object", "properties": {
            "a": {"type": "string", "format": "date-time", "pattern": "^x"},
            "b": {"anyOf": [{"type": "integer", "minimum": 3}, {"$ref": "#/$defs/c"}]},
        }, "$defs": {"c": {"enum": [None, True]}}})

    def before_compile(self) -> None:
        clear_compiled(self._c)

    def compile(self, kind: Kind, spec: Any) -> MatcherFactory:
        c = self._c
        try:
            if kind == "regex":
                compiled = c.compile_regex(spec, self.vocab)
            elif kind == "choice":
                compiled = c.compile_choice(list(spec), self.vocab)
            else:
                compiled = c.compile_json_schema(spec, self.vocab)
        except c.ConstrainError as e:
            raise EngineError(f"{type(e).__name__}: {e}") from e
        return lambda: _ConstrainMatcher(compiled.matcher())

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "version": getattr(self._c, "__version__", "dev")}


# --------------------------------------------------------------------------------- xgrammar


class _XGrammarMatcher:
    __slots__ = ("_m",)

    def __init__(self, m: Any) -> None:
        self._m = m

    def fill(self, bitmask: Any) -> None:
        self._m.fill_next_token_bitmask(bitmask, 0)

    def advance(self, token: int) -> bool:
        return bool(self._m.accept_token(token))

    def is_accepting(self) -> bool:
        return bool(self._m.is_completed() or self._m.is_terminated())


def _ebnf_literal(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


class XGrammarEngine(Engine):
    """xgrammar: TokenizerInfo(RAW bytes) + GrammarCompiler(cache_enabled=False)."""

    name = "xgrammar"
    cache_note = "GrammarCompiler(cache_enabled=False)"
    #: Compile threads (xgrammar's own default is 8); set before the engine is built.
    max_threads: ClassVar[int] = 8

    def _setup(self) -> None:
        import xgrammar as xgr

        self._xgr = xgr
        # Empty bytes make xgrammar treat an id as special (never allowed); the EOS id still
        # works as a stop token through stop_token_ids.
        encoded = [b if b is not None else b"" for b in self.bv.token_bytes]
        self.info = xgr.TokenizerInfo(
            encoded,
            xgr.VocabType.RAW,
            vocab_size=self.bv.size,
            stop_token_ids=sorted(self.bv.vocab.eos_token_ids),
        )
        self.compiler = xgr.GrammarCompiler(
            self.info, max_threads=self.max_threads, cache_enabled=False
        )

    def new_bitmask(self) -> Any:
        return self._xgr.allocate_token_bitmask(1, self.bv.size)

    def to_words(self, bitmask: Any) -> Words:
        return super().to_words(bitmask.numpy())

    def compile(self, kind: Kind, spec: Any) -> MatcherFactory:
        xgr, comp = self._xgr, self.compiler
        try:
            if kind == "regex":
                cg = comp.compile_regex(spec)
            elif kind == "choice":
                alts = " | ".join(_ebnf_literal(c) for c in dict.fromkeys(spec))
                cg = comp.compile_grammar(f"root ::= {alts}")
            else:
                cg = comp.compile_json_schema(json.dumps(spec))
        except (RuntimeError, ValueError) as e:
            raise EngineError(f"{type(e).__name__}: {e}") from e
        return lambda: _XGrammarMatcher(xgr.GrammarMatcher(cg))

    def describe(self) -> dict[str, Any]:
        import xgrammar

        return {
            **super().describe(),
            "version": getattr(xgrammar, "__version__", _dist_version("xgrammar")),
            "max_threads": self.max_threads,
        }


# ------------------------------------------------------------------------------- llguidance


class _LLGuidanceMatcher:
    __slots__ = ("_m", "_nbytes", "_ptr")

    def __init__(self, m: Any) -> None:
        self._m = m
        self._ptr = 0
        self._nbytes = 0

    def fill(self, bitmask: Any) -> None:
        # The documented raw entry point (llguidance.numpy.fill_next_token_bitmask wraps it
        # with per-call asserts); the pointer of a reused buffer is looked up once.
        if self._ptr == 0 or bitmask.ctypes.data != self._ptr:
            self._ptr, self._nbytes = bitmask.ctypes.data, bitmask.shape[1] * 4
        self._m.unsafe_compute_mask_ptr(self._ptr, self._nbytes)

    def advance(self, token: int) -> bool:
        return bool(self._m.consume_token(token))

    def is_accepting(self) -> bool:
        return bool(self._m.is_accepting())


class _TokenizerSource:
    """What llguidance.TokenizerWrapper reads: token bytes, special ids, a tokenize callable."""

    def __init__(self, bv: BenchVocab) -> None:
        self.eos_token_id = bv.eos_id
        self.bos_token_id = None
        # llguidance keeps special tokens out of text matching by their id list; their bytes
        # only serve debugging output, so they carry their names.
        self.special_token_ids = [i for i, b in enumerate(bv.token_bytes) if b is None]
        self.tokens = [
            b if b is not None else bv.special_names.get(i, b"<|pad_%d|>" % i)
            for i, b in enumerate(bv.token_bytes)
        ]
        self._encode = bv.encode

    def __call__(self, text: bytes) -> list[int]:
        return self._encode(text.decode("utf-8", errors="replace"))


class LLGuidanceEngine(Engine):
    """llguidance: LLTokenizer(TokenizerWrapper(bytes)) + LLMatcher; deep_copy per matcher."""

    name = "llguidance"
    cache_note = "no compile cache; each compile builds a new LLMatcher"

    def _setup(self) -> None:
        import llguidance as llg

        self._llg = llg
        self.tokenizer = llg.LLTokenizer(
            llg.TokenizerWrapper(_TokenizerSource(self.bv)),
            n_vocab=self.bv.size,
            eos_token=sorted(self.bv.vocab.eos_token_ids),
        )

    def compile(self, kind: Kind, spec: Any) -> MatcherFactory:
        llg = self._llg
        if kind == "regex":
            grammar = llg.LLMatcher.grammar_from_regex(spec)
        elif kind == "choice":
            grammar = llg.grammar_from("choice", json.dumps(list(dict.fromkeys(spec))))
        else:
            grammar = llg.LLMatcher.grammar_from_json_schema(spec)
        # The constructor never raises on grammar errors: it enters an error state instead.
        template = llg.LLMatcher(self.tokenizer, grammar, log_level=0)
        if template.is_error():
            raise EngineError(template.get_error())
        return lambda: _LLGuidanceMatcher(template.deep_copy())

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "version": self._llg.__version__}


# ----------------------------------------------------------------------------- outlines-core


class _OutlinesMatcher:
    __slots__ = ("_done", "_eos", "_g")

    def __init__(self, guide: Any, eos: int) -> None:
        self._g = guide
        self._eos = eos
        self._done = False

    def fill(self, bitmask: Any) -> None:
        self._g.write_mask_into(bitmask.ctypes.data, bitmask.shape[1], 4)

    def advance(self, token: int) -> bool:
        if self._done:
            return False
        if token == self._eos:
            # Guide.advance(eos) raises even in a final state, by design: EOS ends the guide.
            self._done = bool(self._g.is_finished())
            return self._done
        try:
            self._g.advance(token, False)
        except ValueError:  # "No next state found": the token is not allowed
            return False
        return True

    def is_accepting(self) -> bool:
        return bool(self._g.is_finished())


class OutlinesEngine(Engine):
    """outlines-core: Vocabulary(eos, {bytes: [ids]}) + Index (full table) + Guide."""

    name = "outlines"
    cache_note = "no compile cache; each compile builds a new Index"

    def _setup(self) -> None:
        import outlines_core as oc

        self._oc = oc
        table: dict[bytes, list[int]] = {}
        for i, b in enumerate(self.bv.token_bytes):
            if b is not None:  # special ids are simply left out; EOS is passed apart
                table.setdefault(b, []).append(i)
        self.vocabulary = oc.Vocabulary(self.bv.eos_id, table)

    def compile(self, kind: Kind, spec: Any) -> MatcherFactory:
        oc = self._oc
        if kind == "regex":
            pattern = spec
        elif kind == "choice":
            pattern = _choice_alternation(list(spec), _rust_regex_escape)
        else:
            pattern = oc.json_schema.build_regex_from_schema(json.dumps(spec))
        try:
            index = oc.Index(pattern, self.vocabulary)
        except (ValueError, RuntimeError) as e:
            raise EngineError(f"{type(e).__name__}: {e}") from e
        eos = self.bv.eos_id
        return lambda: _OutlinesMatcher(oc.Guide(index), eos)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "version": _dist_version("outlines_core")}


# ------------------------------------------------------------------------------------ lookup


def _dist_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


_ENGINES: dict[str, type[Engine]] = {
    "constrain": ConstrainEngine,
    "xgrammar": XGrammarEngine,
    "llguidance": LLGuidanceEngine,
    "outlines": OutlinesEngine,
}

_MODULES = {
    "constrain": "constrain",
    "xgrammar": "xgrammar",
    "llguidance": "llguidance",
    "outlines": "outlines_core",
}

_CACHE: dict[tuple[str, int], Engine] = {}


def engine_available(name: str) -> str | None:
    """None when ``name`` can run here, else why not (missing package or API).

    >>> engine_available("no-such-engine")
    'unknown engine'
    """
    if name not in _ENGINES:
        return "unknown engine"
    import importlib

    try:
        module = importlib.import_module(_MODULES[name])
    except ImportError as e:
        return f"not installed ({e}); pip install -e '.[bench]'"
    if name == "constrain" and not hasattr(module, "compile_regex"):
        return "constrain.compile_regex is not there yet"
    return None


def make_engine(name: str, bv: BenchVocab) -> Engine:
    """The engine ``name`` bound to ``bv``, built once per process and reused across cases.

    >>> make_engine("nope", None)  # type: ignore[arg-type]
    Traceback (most recent call last):
    ...
    benchmarks.anchors.EngineError: nope: unknown engine
    """
    why = engine_available(name)
    if why is not None:
        raise EngineError(f"{name}: {why}")
    key = (name, id(bv))  # the cached engine holds bv, so its id stays unique
    if key not in _CACHE:
        _CACHE[key] = _ENGINES[name](bv)
    return _CACHE[key]
