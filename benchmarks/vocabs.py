"""The vocabularies the benchmarks run on: one token-bytes table per tokenizer, for every engine.

Every engine (constrain and the three anchors) builds its own tokenizer object from the same
:class:`constrain.vocab.Vocabulary` table, so all of them see identical token bytes, the same
special ids (never allowed) and the same EOS id. Token paths come from the real tokenizer.

>>> load_vocab("qwen").path("2024-01-31")  # doctest: +SKIP
[17, 15, 17, 19, 12, 15, 16, 12, 18, 16]
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from constrain.vocab import Vocabulary

__all__ = ["VOCAB_NAMES", "BenchVocab", "default_cache_dir", "load_vocab", "toy_vocab"]

#: Vocabularies available to ``--vocab``.
VOCAB_NAMES = ("smollm2", "qwen")


def default_cache_dir() -> Path:
    """Where the converted SmolLM2 tokenizer is kept between runs (GGUF parsing takes ~10 s).

    >>> default_cache_dir().name
    'bench'
    """
    return Path.home() / ".cache" / "constrain" / "bench"


@dataclass(frozen=True)
class BenchVocab:
    """A benchmark vocabulary: constrain's token table plus the tokenizer it came from.

    ``source`` is the Hugging Face tokenizer or ``tiktoken.Encoding``; ``source_kind`` says
    which (``"hf"``, ``"tiktoken"``, or ``"bytes"`` for :func:`toy_vocab`), so constrain's
    adapter can rebuild its Vocabulary through the matching public constructor. ``load_s`` is the time to load the tokenizer and build the
    table, reported once.

    >>> bv = load_vocab("qwen")  # doctest: +SKIP
    >>> bv.size, bv.eos_id  # doctest: +SKIP
    (151646, 151643)
    """

    name: str
    vocab: Vocabulary
    source: Any
    source_kind: str
    eos_id: int
    special_names: dict[int, bytes]
    encode: Callable[[str], list[int]]
    load_s: float

    @property
    def size(self) -> int:
        """Mask width in tokens (bits): every engine's bitmask has ``ceil(size / 32)`` words."""
        return self.vocab.size

    @property
    def token_bytes(self) -> tuple[bytes | None, ...]:
        """Bytes of each id; ``None`` for special, EOS and padding ids."""
        return self.vocab.token_bytes

    def path(self, text: str) -> list[int]:
        """The real tokenizer's tokens for ``text`` (no special tokens), without EOS.

        Raises ``ValueError`` when the tokens' table bytes do not spell ``text``: then the
        table and the tokenizer disagree and no comparison on this path would be meaningful.
        """
        tokens = self.encode(text)
        spelled = self.vocab.decode(tokens)
        if spelled != text.encode("utf-8"):
            raise ValueError(
                f"{self.name}: tokens {tokens} spell {spelled!r}, not {text!r}; "
                "the token table disagrees with the tokenizer"
            )
        return tokens

    def describe(self, token: int) -> str:
        """A short printable form of one token, for disagreement reports.

        >>> load_vocab("qwen").describe(151643)  # doctest: +SKIP
        "151643:<|endoftext|>"
        """
        raw = self.token_bytes[token] if 0 <= token < self.size else None
        if raw is None:
            return (
                f"{token}:{self.special_names.get(token, b'<special>').decode('utf-8', 'replace')}"
            )
        return f"{token}:{raw!r}"


def _load_qwen() -> BenchVocab:
    from constrain.assets import load_qwen_encoding

    t0 = time.perf_counter()
    enc = load_qwen_encoding()
    vocab = Vocabulary.from_tiktoken(enc)
    names = {int(i): s.encode() for s, i in enc._special_tokens.items()}
    return BenchVocab(
        name="qwen",
        vocab=vocab,
        source=enc,
        source_kind="tiktoken",
        eos_id=int(enc.eot_token),
        special_names=names,
        encode=enc.encode_ordinary,
        load_s=time.perf_counter() - t0,
    )


def _load_smollm2(cache_dir: Path | None) -> BenchVocab:
    from constrain.assets import load_smollm2_tokenizer

    t0 = time.perf_counter()
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
    tok = load_smollm2_tokenizer(cache_dir)
    vocab = Vocabulary.from_hf(tok)
    names = {int(i): t.content.encode() for i, t in tok.added_tokens_decoder.items()}

    def encode(text: str) -> list[int]:
        return list(tok.encode(text, add_special_tokens=False))

    return BenchVocab(
        name="smollm2",
        vocab=vocab,
        source=tok,
        source_kind="hf",
        eos_id=int(tok.eos_token_id),
        special_names=names,
        encode=encode,
        load_s=time.perf_counter() - t0,
    )


@functools.cache
def load_vocab(name: str, cache_dir: Path | None = None) -> BenchVocab:
    """Load one of :data:`VOCAB_NAMES` (cached per process).

    >>> load_vocab("smollm2").size  # doctest: +SKIP
    49152
    """
    if name == "qwen":
        return _load_qwen()
    if name == "smollm2":
        return _load_smollm2(cache_dir if cache_dir is not None else default_cache_dir())
    raise ValueError(f"unknown vocabulary {name!r}; choose from {', '.join(VOCAB_NAMES)}")


def toy_vocab(tokens: Sequence[bytes], name: str = "toy") -> BenchVocab:
    """A small vocabulary for tests: ``tokens`` are ids ``0..n-1`` and EOS is id ``n``.

    Its tokenizer is greedy longest-match, so every byte of a target must be a token.

    >>> bv = toy_vocab([b"a", b"b", b"ab"])
    >>> bv.path("abba"), bv.eos_id, bv.size
    ([2, 1, 0], 3, 4)
    """
    table: list[bytes | None] = [bytes(t) for t in tokens]
    eos = len(table)
    vocab = Vocabulary.from_token_bytes([*table, None], eos_token_ids=[eos])
    longest = max(len(t) for t in tokens)
    ids = {bytes(t): i for i, t in enumerate(tokens)}

    def encode(text: str) -> list[int]:
        data, out, i = text.encode("utf-8"), [], 0
        while i < len(data):
            for n in range(min(longest, len(data) - i), 0, -1):
                if data[i : i + n] in ids:
                    out.append(ids[data[i : i + n]])
                    i += n
                    break
            else:
                raise ValueError(f"{name}: no token for byte {data[i : i + 1]!r} of {text!r}")
        return out

    return BenchVocab(
        name=name,
        vocab=vocab,
        source=vocab,
        source_kind="bytes",
        eos_id=eos,
        special_names={eos: b"<eos>"},
        encode=encode,
        load_s=0.0,
    )
