"""A model's vocabulary as the mask engine sees it: the exact bytes of every token id.

Constraints are automata over UTF-8 bytes, so each token id must be known as the bytes it
appends to the output. :class:`Vocabulary` holds that table plus what the mask engine needs
besides: the logits width (``size``, which can exceed the tokenizer), the end-of-sequence ids
(allowed only where the constraint may end) and the special ids (never allowed).

One rule ties these together: ``token_bytes[t] is None`` exactly when ``t`` is not text
(a special or EOS token, a padding id beyond the tokenizer, or an id with no string).
EOS ids are always special. A token is never allowed as text unless it has bytes.

Build one from raw bytes, a Hugging Face tokenizer (byte-level BPE or SentencePiece) or a
``tiktoken`` encoding. Importing this module loads neither torch, transformers nor tiktoken.

>>> v = Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
>>> v.size, v.decode([2, 0, 3])
(4, b'aba')
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np

from .errors import TokenizerError

__all__ = ["Vocabulary", "bytes_to_unicode"]

_FINGERPRINT_VERSION = b"constrain-vocabulary-v1\n"
_SP_SPACE = "\u2581"  # SentencePiece's "▁", which stands for a space
_SP_BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@functools.lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table used by byte-level BPE vocabularies.

    Printable Latin-1 bytes stand for themselves; the other 68 bytes are shifted to U+0100..,
    so a space is ``Ġ`` and a newline ``Ċ``.

    >>> table = bytes_to_unicode()
    >>> table[ord("a")], table[ord(" ")], table[ord("\\n")]
    ('a', 'Ġ', 'Ċ')
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    table: dict[int, str] = {b: chr(b) for b in keep}
    shifted = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


@functools.lru_cache(maxsize=1)
def _byte_level_translation() -> dict[int, str]:
    # str.translate maps each GPT-2 character to the Latin-1 character of its byte, so
    # `.encode("latin-1")` yields the bytes. Low characters that are *not* in the GPT-2 image
    # (space, controls, soft hyphen) map to U+FFFF, which makes that encode fail: such a
    # string was never byte-level encoded.
    table: dict[int, str] = {ord(c): chr(b) for b, c in bytes_to_unicode().items()}
    for code in range(256):
        table.setdefault(code, "\uffff")
    return table


def _byte_level_bytes(token: str) -> bytes:
    # Mirrors the `tokenizers` ByteLevel decoder: a string with any character outside the
    # GPT-2 table (an added token such as "<tool_call>\n") decodes to its own UTF-8.
    try:
        return token.translate(_byte_level_translation()).encode("latin-1")
    except UnicodeEncodeError:
        return token.encode("utf-8")


def _sentencepiece_bytes(token: str, byte_fallback: bool) -> bytes:
    if byte_fallback and len(token) == 6:
        m = _SP_BYTE.fullmatch(token)
        if m:
            return bytes([int(m.group(1), 16)])
    return token.replace(_SP_SPACE, " ").encode("utf-8")


def _fail(message: str) -> NoReturn:
    raise TokenizerError(message)


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, (bool, float)) or not hasattr(value, "__index__"):
        _fail(f"{what} must be an integer token id, got {value!r}")
    return int(value.__index__())


class Vocabulary:
    """Exact bytes of every token id, plus the EOS and special ids and the logits width.

    Immutable, hashable (by :attr:`fingerprint`) and picklable; share one per model.

    >>> v = Vocabulary.from_token_bytes([b"x", b"yz", None], eos_token_ids=[2])
    >>> v.token_bytes, sorted(v.eos_token_ids), len(v.with_size(8))
    ((b'x', b'yz', None), [2], 8)
    """

    __slots__ = (
        "_eos",
        "_fingerprint",
        "_lengths",
        "_special",
        "_token_bytes",
        "_tokenizer_size",
    )

    _token_bytes: tuple[bytes | None, ...]
    _tokenizer_size: int
    _eos: frozenset[int]
    _special: frozenset[int]
    _lengths: np.ndarray[Any, np.dtype[np.int32]] | None
    _fingerprint: str | None

    def __init__(self) -> None:
        raise TypeError(
            "build a Vocabulary with Vocabulary.from_token_bytes, .from_hf or .from_tiktoken"
        )

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Vocabulary is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Vocabulary is immutable; cannot delete {name!r}")

    # ----------------------------------------------------------------- constructors

    @classmethod
    def from_token_bytes(
        cls,
        token_bytes: Sequence[bytes | None],
        *,
        eos_token_ids: Iterable[int],
        special_token_ids: Iterable[int] = (),
        size: int | None = None,
    ) -> Vocabulary:
        """The raw constructor: ``token_bytes[i]`` is id ``i``'s bytes, ``None`` if not text.

        EOS and special ids must have ``None`` bytes; EOS ids count as special. ``size``
        (default ``len(token_bytes)``) is the logits width; the ids past the tokenizer are
        padding, never allowed.

        >>> v = Vocabulary.from_token_bytes([b"a", None, None], eos_token_ids=[1],
        ...                                 special_token_ids=[2], size=5)
        >>> v.size, v.tokenizer_size, sorted(v.special_token_ids), v.token_bytes[4]
        (5, 3, [1, 2], None)
        """
        if isinstance(token_bytes, (bytes, str)):
            _fail("token_bytes must be a sequence with one entry per token id, not one string")
        table: list[bytes | None] = []
        for i, tok in enumerate(token_bytes):
            if tok is None or type(tok) is bytes:
                if tok == b"":
                    _fail(f"token id {i} has empty bytes; use None for an id with no text")
                table.append(tok)
            elif isinstance(tok, (bytes, bytearray, memoryview)):  # stored as plain bytes
                table.append(bytes(tok) or _fail(f"token id {i} has empty bytes"))
            else:
                hint = " (encode it to UTF-8 first)" if isinstance(tok, str) else ""
                _fail(f"token id {i} must be bytes or None, got {type(tok).__name__} {tok!r}{hint}")
        n = len(table)
        if n == 0:
            _fail("a vocabulary needs at least one token id")
        width = n if size is None else _as_int(size, "size")
        if width < n:
            _fail(f"size {width} is smaller than the tokenizer, which has {n} ids")
        table.extend([None] * (width - n))

        def checked(ids: Iterable[int], what: str) -> frozenset[int]:
            if isinstance(ids, (int, str, bytes)):
                _fail(f"{what} must be an iterable of ids, got {ids!r}")
            out = frozenset(_as_int(t, what) for t in ids)
            for t in sorted(out):
                if not 0 <= t < n:
                    _fail(f"{what[:-1]} {t} is out of range: the tokenizer has ids 0..{n - 1}")
                if table[t] is not None:
                    _fail(
                        f"{what[:-1]} {t} has text {table[t]!r}; special and EOS ids must "
                        "have None bytes (they are never emitted as text)"
                    )
            return out

        eos = checked(eos_token_ids, "eos_token_ids")
        special = checked(special_token_ids, "special_token_ids") | eos
        return cls._make(tuple(table), n, eos, special)

    @classmethod
    def _make(
        cls,
        table: tuple[bytes | None, ...],
        tokenizer_size: int,
        eos: frozenset[int],
        special: frozenset[int],
    ) -> Vocabulary:
        self = object.__new__(cls)
        for name, value in (
            ("_token_bytes", table),
            ("_tokenizer_size", tokenizer_size),
            ("_eos", eos),
            ("_special", special),
            ("_lengths", None),
            ("_fingerprint", None),
        ):
            object.__setattr__(self, name, value)
        return self

    @classmethod
    def from_hf(
        cls,
        tokenizer: Any,
        *,
        size: int | None = None,
        eos_token_ids: Iterable[int] | None = None,
    ) -> Vocabulary:
        """From a Hugging Face tokenizer: byte-level BPE (GPT-2, Llama-3, Qwen2, SmolLM2) or
        SentencePiece style (Llama-2, Mistral: ``▁`` is a space, ``<0xNN>`` one byte).

        Special ids (``all_special_ids`` and added tokens flagged special) have no text.
        EOS ids are ``tokenizer.eos_token_id`` plus ``eos_token_ids``; an EOS id that is a
        regular token loses its text, since emitting it ends generation. ``size`` is the
        model's logits width (default: the tokenizer's id count).

        >>> from constrain.assets import load_smollm2_tokenizer  # doctest: +SKIP
        >>> v = Vocabulary.from_hf(load_smollm2_tokenizer())  # doctest: +SKIP
        >>> v.size, sorted(v.eos_token_ids), v.token_bytes[19556]  # doctest: +SKIP
        (49152, [2], b'Hello')
        """
        vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else None
        if not isinstance(vocab, Mapping) or not vocab:
            _fail(f"{type(tokenizer).__name__} has no get_vocab(); is it a Hugging Face tokenizer?")
        scheme, byte_fallback = _detect_hf_scheme(tokenizer, vocab)
        n = max(len(tokenizer), max(vocab.values()) + 1)
        strings: list[str | None] = [None] * n
        for string, i in vocab.items():
            strings[i] = string
        special = {int(t) for t in getattr(tokenizer, "all_special_ids", ()) or () if t is not None}
        added = getattr(tokenizer, "added_tokens_decoder", None) or {}
        special.update(int(i) for i, tok in added.items() if getattr(tok, "special", False))
        eos = set(_hf_eos_ids(tokenizer))
        eos.update(_as_int(t, "eos_token_ids") for t in (eos_token_ids or ()))
        if not eos:
            _fail(
                f"{type(tokenizer).__name__} has no eos_token_id; pass eos_token_ids= "
                "(the ids that end generation)"
            )
        special |= eos
        bad = sorted(t for t in special if not 0 <= t < n)
        if bad:
            _fail(
                f"special/EOS token id {bad[0]} is out of range: the tokenizer has ids 0..{n - 1}"
            )
        table: list[bytes | None] = []
        for i, string in enumerate(strings):
            if string is None or i in special:
                table.append(None)
            elif scheme == "byte_level":
                table.append(_byte_level_bytes(string) or None)
            else:
                table.append(_sentencepiece_bytes(string, byte_fallback) or None)
        return cls.from_token_bytes(table, eos_token_ids=eos, special_token_ids=special, size=size)

    @classmethod
    def from_tiktoken(
        cls,
        encoding: Any,
        *,
        size: int | None = None,
        eos_token_ids: Iterable[int] | None = None,
    ) -> Vocabulary:
        """From a ``tiktoken.Encoding``: each mergeable rank's bytes; special tokens have none.

        EOS ids are ``<|endoftext|>`` (when the encoding has it) plus ``eos_token_ids``; chat
        models usually also end on another special token (Qwen2: ``<|im_end|>``), pass it.

        >>> import tiktoken  # doctest: +SKIP
        >>> enc = tiktoken.Encoding("toy", pat_str=r"\\S+|\\s+", mergeable_ranks={b"a": 0,
        ...     b"b": 1, b"ab": 2}, special_tokens={"<|endoftext|>": 3})  # doctest: +SKIP
        >>> Vocabulary.from_tiktoken(enc).token_bytes  # doctest: +SKIP
        (b'a', b'b', b'ab', None)
        """
        try:
            n = int(encoding.max_token_value) + 1
            special_names = set(encoding.special_tokens_set)
            decode = encoding.decode_single_token_bytes
        except AttributeError as e:
            raise TokenizerError(
                f"{type(encoding).__name__} is not a tiktoken.Encoding (missing {e.name!r})"
            ) from e
        special = {int(encoding.encode_single_token(s)) for s in special_names}
        eos = {_as_int(t, "eos_token_ids") for t in (eos_token_ids or ())}
        if "<|endoftext|>" in special_names:
            eos.add(int(encoding.encode_single_token("<|endoftext|>")))
        if not eos:
            _fail(f"tiktoken encoding {encoding.name!r} has no <|endoftext|>; pass eos_token_ids=")
        special |= {t for t in eos if 0 <= t < n}
        table: list[bytes | None] = []
        for i in range(n):
            if i in special:
                table.append(None)
                continue
            try:
                table.append(decode(i) or None)
            except KeyError:  # a hole in the ranks: an id with no token
                table.append(None)
        return cls.from_token_bytes(table, eos_token_ids=eos, special_token_ids=special, size=size)

    # ------------------------------------------------------------------- properties

    @property
    def size(self) -> int:
        """Mask width, equal to the model's logits width (>= :attr:`tokenizer_size`)."""
        return len(self._token_bytes)

    @property
    def tokenizer_size(self) -> int:
        """Ids the tokenizer defines; ids from here up to :attr:`size` are padding."""
        return self._tokenizer_size

    @property
    def token_bytes(self) -> tuple[bytes | None, ...]:
        """Bytes of each id (``len == size``); ``None`` for ids that are never text."""
        return self._token_bytes

    @property
    def eos_token_ids(self) -> frozenset[int]:
        """Ids that end generation: allowed only where the constraint may end."""
        return self._eos

    @property
    def special_token_ids(self) -> frozenset[int]:
        """Ids of special tokens (EOS included): never allowed as text."""
        return self._special

    @property
    def token_lengths(self) -> np.ndarray[Any, np.dtype[np.int32]]:
        """Byte length of each id as a read-only ``int32`` array of ``size`` (0 if no text).

        >>> Vocabulary.from_token_bytes([b"ab", None], eos_token_ids=[1]).token_lengths
        array([2, 0], dtype=int32)
        """
        lengths = self._lengths
        if lengths is None:
            lengths = np.fromiter(
                (len(b) if b is not None else 0 for b in self._token_bytes),
                dtype=np.int32,
                count=len(self._token_bytes),
            )
            lengths.flags.writeable = False
            object.__setattr__(self, "_lengths", lengths)
        return lengths

    @property
    def fingerprint(self) -> str:
        """SHA-256 (hex) of everything that shapes masks; equal across processes and runs.

        >>> a = Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
        >>> a.fingerprint == Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1]).fingerprint
        True
        """
        digest = self._fingerprint
        if digest is None:
            h = hashlib.sha256(_FINGERPRINT_VERSION)
            header = {
                "size": self.size,
                "tokenizer_size": self._tokenizer_size,
                "eos": sorted(self._eos),
                "special": sorted(self._special),
            }
            h.update(json.dumps(header, sort_keys=True).encode())
            # Lengths (-1 for None) delimit the concatenated bytes unambiguously.
            lengths = np.fromiter(
                (len(b) if b is not None else -1 for b in self._token_bytes),
                dtype="<i8",
                count=len(self._token_bytes),
            )
            h.update(lengths.tobytes())
            h.update(b"".join(b for b in self._token_bytes if b is not None))
            digest = h.hexdigest()
            object.__setattr__(self, "_fingerprint", digest)
        return digest

    # ---------------------------------------------------------------------- methods

    def decode(self, ids: Iterable[int]) -> bytes:
        """Concatenated bytes of ``ids``; ids without text (special, EOS, padding) add nothing.

        >>> Vocabulary.from_token_bytes([b"h", b"i", None], eos_token_ids=[2]).decode([0, 1, 2])
        b'hi'
        """
        table = self._token_bytes
        out: list[bytes] = []
        for t in ids:
            i = _as_int(t, "decode()'s ids")
            if not 0 <= i < len(table):
                _fail(f"token id {i} is out of range: the vocabulary has ids 0..{len(table) - 1}")
            b = table[i]
            if b is not None:
                out.append(b)
        return b"".join(out)

    def with_size(self, size: int) -> Vocabulary:
        """The same vocabulary with ``size`` ids (a model's logits width); extra ids are padding.

        >>> v = Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
        >>> v.with_size(4).token_bytes
        (b'a', None, None, None)
        """
        width = _as_int(size, "size")
        if width < self._tokenizer_size:
            _fail(
                f"size {width} is smaller than the tokenizer, which has {self._tokenizer_size} ids"
            )
        if width == self.size:
            return self
        base = self._token_bytes[: self._tokenizer_size]
        table = base + (None,) * (width - self._tokenizer_size)
        return self._make(table, self._tokenizer_size, self._eos, self._special)

    def __len__(self) -> int:
        return len(self._token_bytes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self is other or (self.size == other.size and self.fingerprint == other.fingerprint)

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        text = sum(b is not None for b in self._token_bytes)
        return (
            f"Vocabulary(size={self.size}, tokenizer_size={self._tokenizer_size}, "
            f"text_tokens={text}, special={len(self._special)}, "
            f"eos={sorted(self._eos)}, fingerprint={self.fingerprint[:12]})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            Vocabulary._make,
            (self._token_bytes, self._tokenizer_size, self._eos, self._special),
        )


# ----------------------------------------------------------------- HF scheme detection


def _hf_eos_ids(tokenizer: Any) -> list[int]:
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        return []
    if isinstance(eos, (list, tuple, set, frozenset)):
        return [_as_int(t, "tokenizer.eos_token_id") for t in eos]
    return [_as_int(eos, "tokenizer.eos_token_id")]


def _walk_components(node: Any) -> list[dict[str, Any]]:
    """Flatten a tokenizers JSON component (possibly a ``Sequence``) into its parts."""
    if not isinstance(node, dict):
        return []
    parts = [node]
    for key in ("decoders", "pretokenizers", "normalizers"):
        for child in node.get(key) or ():
            parts.extend(_walk_components(child))
    return parts


def _detect_hf_scheme(tokenizer: Any, vocab: Mapping[str, int]) -> tuple[str, bool]:
    """``("byte_level" | "sentencepiece", byte_fallback)`` for a HF tokenizer, or raise."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        try:
            spec = json.loads(backend.to_str())
        except (AttributeError, TypeError, ValueError) as e:  # foreign backend: use the vocab
            spec = None
            reason = f"its backend could not be serialized ({e})"
        if spec is not None:
            decoders = _walk_components(spec.get("decoder"))
            kinds = [d.get("type") for d in decoders]
            model = spec.get("model") or {}
            byte_fallback = bool(model.get("byte_fallback")) or "ByteFallback" in kinds
            if "ByteLevel" in kinds:
                return "byte_level", False
            replaces_space = any(
                d.get("type") == "Replace"
                and (d.get("pattern") or {}).get("String") == _SP_SPACE
                and d.get("content") == " "
                for d in decoders
            )
            if "Metaspace" in kinds or replaces_space:
                return "sentencepiece", byte_fallback
            reason = (
                f"its decoder is {kinds or None} and its model {model.get('type')!r} "
                "(known: a ByteLevel decoder, or Metaspace / Replace('▁', ' ') for SentencePiece)"
            )
    else:
        reason = "it has no tokenizers backend"
    # No usable backend description (e.g. a slow tokenizer): judge by the token strings.
    image = set(bytes_to_unicode().values())
    if sum(len(s) == 1 and s in image for s in vocab) == 256 and "Ġ" in vocab:
        return "byte_level", False
    has_bytes = "<0x00>" in vocab and "<0xFF>" in vocab
    if has_bytes or sum(s.startswith(_SP_SPACE) for s in vocab) > len(vocab) // 10:
        return "sentencepiece", has_bytes
    _fail(
        f"cannot tell how {type(tokenizer).__name__}'s token strings map to bytes: {reason}; "
        "only byte-level BPE and SentencePiece vocabularies are supported. Build the table "
        "yourself and use Vocabulary.from_token_bytes"
    )
