"""The on-disk token-trie cache and the in-memory compiled-constraint cache (constrain.cache)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from constrain import cache, compile_choice, compile_regex
from constrain.automaton import AutomatonOptions
from constrain.errors import CacheError, ConstrainError
from constrain.token_trie import TokenTrie
from constrain.vocab import Vocabulary


@pytest.fixture
def cache_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh disk cache; the previous setting and in-memory tries come back afterwards."""
    previous = cache.cache_dir()
    cache.set_cache_dir(tmp_path)
    cache.clear_memory_caches()
    try:
        yield tmp_path
    finally:
        cache.set_cache_dir(previous)
        cache.clear_memory_caches()


@pytest.fixture
def vocab() -> Vocabulary:
    table: list[bytes | None] = [bytes([b]) for b in range(256)]
    table += [b"ab", b"abc", "é".encode(), "日本".encode(), b"\xe6\x97", b" the", None]
    return Vocabulary.from_token_bytes(table, eos_token_ids=[len(table) - 1])


def trie_file(directory: Path) -> Path:
    files = list(directory.glob("trie-*.npz"))
    assert len(files) == 1, files
    return files[0]


def same_arrays(a: TokenTrie, b: TokenTrie) -> bool:
    x, y = a.to_arrays(), b.to_arrays()
    return x.keys() == y.keys() and all(
        x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k]) for k in x
    )


class BuildCounter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = TokenTrie.build.__func__  # type: ignore[attr-defined]

        def counting(cls: type[TokenTrie], token_bytes):  # type: ignore[no-untyped-def]
            self.calls += 1
            return original(cls, token_bytes)

        monkeypatch.setattr(TokenTrie, "build", classmethod(counting))


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> BuildCounter:
    return BuildCounter(monkeypatch)


# ------------------------------------------------------------------- write and reload


def test_trie_written_then_loaded_identically(cache_dir: Path, vocab: Vocabulary,
                                              builds: BuildCounter) -> None:
    first = cache.token_trie(vocab)
    assert builds.calls == 1
    path = trie_file(cache_dir)
    assert vocab.fingerprint[:32] in path.name
    assert cache.token_trie(vocab) is first  # memory hit
    cache.clear_memory_caches()  # what a new process sees
    second = cache.token_trie(vocab)
    assert builds.calls == 1, "the disk copy should have been used"
    assert second is not first and same_arrays(first, second)
    assert same_arrays(second, TokenTrie.build(vocab.token_bytes))


def test_no_disk_cache_by_default(tmp_path: Path, vocab: Vocabulary) -> None:
    previous = cache.cache_dir()
    cache.set_cache_dir(None)
    cache.clear_memory_caches()
    try:
        cache.token_trie(vocab)
        assert cache.cache_dir() is None
        assert not list(tmp_path.iterdir())
    finally:
        cache.set_cache_dir(previous)


def test_separate_vocabularies_get_separate_files(cache_dir: Path, vocab: Vocabulary) -> None:
    other = Vocabulary.from_token_bytes([b"x", b"yz", None], eos_token_ids=[2])
    cache.token_trie(vocab)
    cache.token_trie(other)
    assert len(list(cache_dir.glob("trie-*.npz"))) == 2


# -------------------------------------------------------------------- corrupt files


def _flip_middle(data: bytes) -> bytes:
    out = bytearray(data)
    out[len(out) // 2] ^= 0xFF
    return bytes(out)


def _central_directory_method(data: bytes) -> bytes:
    out = bytearray(data)
    at = out.find(b"PK\x01\x02")  # first central directory entry
    out[at + 10 : at + 12] = (99).to_bytes(2, "little")  # compression method 99
    return bytes(out)


CORRUPTIONS = {
    "truncated-half": lambda d: d[: len(d) // 2],
    "truncated-to-1-byte": lambda d: d[:1],
    "empty": lambda d: b"",
    "missing-last-byte": lambda d: d[:-1],
    "byte-flipped-in-data": _flip_middle,
    "garbage": lambda d: b"not a zip file at all" * 50,
    "zeroed-tail": lambda d: d[: len(d) - 200] + bytes(200),
}


@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_corrupt_file_is_detected_and_rebuilt(corrupt, cache_dir: Path, vocab: Vocabulary,  # type: ignore[no-untyped-def]
                                              builds: BuildCounter) -> None:
    good = cache.token_trie(vocab)
    path = trie_file(cache_dir)
    path.write_bytes(corrupt(path.read_bytes()))
    cache.clear_memory_caches()
    rebuilt = cache.token_trie(vocab)
    assert builds.calls == 2, "the corrupt file should have been rebuilt"
    assert same_arrays(good, rebuilt)
    # The file was rewritten with a good copy: a fresh load needs no build.
    cache.clear_memory_caches()
    assert same_arrays(good, cache.token_trie(vocab))
    assert builds.calls == 2


def test_corrupt_zip_compression_method_is_rebuilt(cache_dir: Path, vocab: Vocabulary) -> None:
    good = cache.token_trie(vocab)
    path = trie_file(cache_dir)
    path.write_bytes(_central_directory_method(path.read_bytes()))
    cache.clear_memory_caches()
    assert same_arrays(good, cache.token_trie(vocab))


def test_every_truncation_is_rebuilt(cache_dir: Path) -> None:
    """Truncated at any length (a crash mid-write without the atomic rename)."""
    small = Vocabulary.from_token_bytes([b"a", b"ab", "é".encode(), None], eos_token_ids=[3])
    good = cache.token_trie(small)
    path = trie_file(cache_dir)
    data = path.read_bytes()
    for n in range(0, len(data), max(1, len(data) // 150)):
        path.write_bytes(data[:n])
        cache.clear_memory_caches()
        assert same_arrays(good, cache.token_trie(small)), n


def test_file_for_another_vocabulary_is_rejected(cache_dir: Path, vocab: Vocabulary,
                                                 builds: BuildCounter) -> None:
    """A valid file under the wrong name (hash-prefix clash, manual copy) is not trusted."""
    other = Vocabulary.from_token_bytes([b"x", b"yz", None], eos_token_ids=[2])
    cache.token_trie(other)
    other_file = trie_file(cache_dir)
    target = cache_dir / f"trie-{vocab.fingerprint[:32]}.npz"
    other_file.rename(target)
    cache.clear_memory_caches()
    trie = cache.token_trie(vocab)
    assert same_arrays(trie, TokenTrie.build(vocab.token_bytes))
    assert builds.calls == 3  # other, vocab (rejected file), and the reference build


# ------------------------------------------------------------------- bad directories


def test_cache_dir_under_a_file_is_cache_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    previous = cache.cache_dir()
    try:
        with pytest.raises(CacheError) as info:
            cache.set_cache_dir(blocker / "sub")
        assert isinstance(info.value, ConstrainError) and isinstance(info.value, OSError)
        with pytest.raises(CacheError):
            cache.set_cache_dir(blocker)
        assert cache.cache_dir() == previous
    finally:
        cache.set_cache_dir(previous)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root can write to read-only directories")
def test_read_only_dir_is_cache_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    previous = cache.cache_dir()
    try:
        with pytest.raises(CacheError):
            cache.set_cache_dir(locked)
    finally:
        locked.chmod(0o700)
        cache.set_cache_dir(previous)


def test_directory_removed_later_is_cache_error(tmp_path: Path, vocab: Vocabulary) -> None:
    """The directory was fine when configured, but is gone when the trie is saved."""
    target = tmp_path / "cache"
    previous = cache.cache_dir()
    cache.set_cache_dir(target)
    cache.clear_memory_caches()
    try:
        target.rmdir()
        with pytest.raises(CacheError):
            cache.token_trie(vocab)
    finally:
        cache.set_cache_dir(previous)
        cache.clear_memory_caches()


def test_directory_replaced_by_file_is_cache_error(tmp_path: Path, vocab: Vocabulary) -> None:
    target = tmp_path / "cache"
    previous = cache.cache_dir()
    cache.set_cache_dir(target)
    cache.clear_memory_caches()
    try:
        target.rmdir()
        target.write_text("now a file")
        with pytest.raises(CacheError):
            cache.token_trie(vocab)
    finally:
        cache.set_cache_dir(previous)
        cache.clear_memory_caches()


def test_set_cache_dir_creates_missing_directories(tmp_path: Path, vocab: Vocabulary) -> None:
    target = tmp_path / "a" / "b" / "c"
    previous = cache.cache_dir()
    cache.set_cache_dir(target)
    cache.clear_memory_caches()
    try:
        assert target.is_dir() and cache.cache_dir() == target
        cache.token_trie(vocab)
        assert list(target.glob("trie-*.npz"))
        assert not list(target.glob("*.tmp")), "temporary files must be renamed away"
    finally:
        cache.set_cache_dir(previous)
        cache.clear_memory_caches()


# -------------------------------------------------------------------- memoized_compile


def test_memoized_compile_same_object_for_equal_specs(vocab: Vocabulary) -> None:
    cache.clear_memory_caches()
    a = compile_regex(r"[a-z]+@[a-z]+", vocab)
    assert compile_regex(r"[a-z]+@[a-z]+", vocab) is a
    twin_vocab = Vocabulary.from_token_bytes(list(vocab.token_bytes),
                                             eos_token_ids=vocab.eos_token_ids)
    assert twin_vocab is not vocab
    assert compile_regex(r"[a-z]+@[a-z]+", twin_vocab) is a
    assert compile_choice(["x", "y"], vocab) is compile_choice(("x", "y"), vocab)


@pytest.mark.parametrize(
    "make_other",
    [
        lambda v: compile_regex(r"[a-z]+@[a-z]+x", v),
        lambda v: compile_regex(r"[a-z]+@[a-z]+", v, unicode=True),
        lambda v: compile_regex(r"[a-z]+@[a-z]+", v, options=AutomatonOptions(max_states=999)),
        lambda v: compile_regex(r"[a-z]+@[a-z]+", v.with_size(v.size + 32)),
        lambda v: compile_choice([r"[a-z]+@[a-z]+"], v),
    ],
    ids=["other-pattern", "unicode-flag", "other-options", "padded-vocab", "choice-kind"],
)
def test_memoized_compile_distinguishes_specs(make_other, vocab: Vocabulary) -> None:  # type: ignore[no-untyped-def]
    a = compile_regex(r"[a-z]+@[a-z]+", vocab)
    assert make_other(vocab) is not a


def test_memoized_json_schema_keeps_property_order_apart(vocab: Vocabulary) -> None:
    # Under property_order="schema" the order of "properties" is the language: a
    # schema listing b before a must not get the constraint compiled for a before b.
    from constrain import compile_json_schema

    def schema(*keys: str) -> dict[str, object]:
        return {"type": "object", "properties": {k: {"type": "integer"} for k in keys},
                "required": ["a", "b"], "additionalProperties": False}

    def accepts(compiled: object, text: str) -> bool:
        m = compiled.matcher()  # type: ignore[attr-defined]
        return all(m.advance(b) for b in text.encode()) and bool(m.is_accepting())

    cache.clear_memory_caches()
    a_first = compile_json_schema(schema("a", "b"), vocab, property_order="schema")
    b_first = compile_json_schema(schema("b", "a"), vocab, property_order="schema")
    assert b_first is not a_first
    assert accepts(b_first, '{"b":1,"a":2}') and not accepts(b_first, '{"a":1,"b":2}')
    assert accepts(a_first, '{"a":1,"b":2}') and not accepts(a_first, '{"b":1,"a":2}')
    assert compile_json_schema(schema("b", "a"), vocab, property_order="schema") is b_first


def test_memoized_json_schema_tells_a_decimal_from_its_text(vocab: Vocabulary) -> None:
    # A Decimal is not JSON text: the key must not read it as the string it prints as.
    from decimal import Decimal

    from constrain import compile_json_schema

    cache.clear_memory_caches()
    number = compile_json_schema({"const": Decimal(1)}, vocab)
    text = compile_json_schema({"const": "1"}, vocab)
    assert text is not number
    m = text.matcher()
    assert all(m.advance(b) for b in b'"1"') and m.is_accepting()
    compile_json_schema({"const": "{1, 2}"}, vocab)  # what a set prints as, then the set:
    with pytest.raises(ConstrainError, match="not a JSON value"):
        compile_json_schema({"const": {1, 2}}, vocab)


def test_memoized_json_schema_of_a_redefined_model_is_its_own(vocab: Vocabulary) -> None:
    # A model class redefined (a notebook cell run again with other fields) is a new
    # schema, even where the collected class's id is taken again by the new one.
    import gc

    pydantic = pytest.importorskip("pydantic")
    from constrain import compile_json_schema

    cache.clear_memory_caches()
    for _ in range(5):
        model = pydantic.create_model("Person", name=(str, ...))
        named = compile_json_schema(model, vocab)
        assert compile_json_schema(model, vocab) is named
        del model
        gc.collect()
        model = pydantic.create_model("Person", age=(int, ...))
        aged = compile_json_schema(model, vocab)
        m = aged.matcher()
        assert all(m.advance(b) for b in b'{"age": 3}') and m.is_accepting()
        del model, named, aged
        gc.collect()
    # Input that is no schema is still refused with a typed error.
    with pytest.raises(ConstrainError):
        compile_json_schema(object(), vocab)
    with pytest.raises(ConstrainError):
        compile_json_schema(bytearray(b'{"type": "intger"}'), vocab)


def test_memoized_compile_builds_once_and_is_bounded() -> None:
    cache.clear_memory_caches()
    calls: list[int] = []

    def build(n: int) -> object:
        calls.append(n)
        return object()

    first = cache.memoized_compile(("test-key", 0), lambda: build(0))
    assert cache.memoized_compile(("test-key", 0), lambda: build(0)) is first
    assert calls == [0]
    for i in range(1, cache.MAX_COMPILED + 1):
        cache.memoized_compile(("test-key", i), lambda i=i: build(i))
    # Key 0 was the least recently used: evicted, so it is built again.
    assert cache.memoized_compile(("test-key", 0), lambda: build(0)) is not first
    assert calls.count(0) == 2
    cache.clear_memory_caches()


class _Sized:
    def __init__(self, size: int) -> None:
        self.size = size

    def memory_estimate(self) -> int:
        return self.size


def test_memoized_compile_is_bounded_by_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Least recently used out first once the kept objects' estimates add up to more
    than MAX_COMPILED_MEMORY; the newest stays even alone over it; sizes that grew after
    they were kept (a constraint grows as decoding meets new states, and says so with
    note_growth) are asked again."""
    cache.clear_memory_caches()
    monkeypatch.setattr(cache, "MAX_COMPILED_MEMORY", 1000)
    a = cache.memoized_compile(("sized", "a"), lambda: _Sized(400))
    b = cache.memoized_compile(("sized", "b"), lambda: _Sized(400))
    assert cache.memoized_compile(("sized", "a"), lambda: _Sized(1)) is a  # now the newest
    cache.memoized_compile(("sized", "c"), lambda: _Sized(400))  # 1,200 bytes: b goes
    assert cache.memoized_compile(("sized", "a"), lambda: _Sized(1)) is a
    assert cache.memoized_compile(("sized", "b"), lambda: _Sized(400)) is not b
    # Alone over the budget: kept, and everything older goes.
    huge = cache.memoized_compile(("sized", "huge"), lambda: _Sized(5000))
    assert list(cache._compiled.values()) == [huge]
    # Growth after being kept, as decoding reports it: a is small when kept, then holds
    # 900 bytes.
    cache.clear_memory_caches()
    a = cache.memoized_compile(("sized", "a"), lambda: _Sized(100))
    cache.memoized_compile(("sized", "b"), lambda: _Sized(100))
    a.size = 900
    cache.note_growth(800)
    cache.memoized_compile(("sized", "c"), lambda: _Sized(100))  # 1,100 bytes: a goes
    assert [v.size for v in cache._compiled.values()] == [100, 100]  # type: ignore[attr-defined]
    cache.clear_memory_caches()


def test_compiled_constraints_estimate_their_memory(vocab: Vocabulary) -> None:
    """A compiled constraint's estimate grows with the masks it memoizes, and the cache
    hears of the growth."""
    from constrain import compile_json_schema

    cache.clear_memory_caches()  # a constraint compiled and walked by another test is kept
    compiled = compile_json_schema({"type": "object", "properties": {
        "name": {"type": "string"}, "tags": {"type": "array"}}}, vocab)
    before, grown = compiled.memory_estimate(), cache._memory.grown
    m = compiled.matcher()
    for byte in b'{"name": "ab", "tags": [1':
        assert m.advance(byte)
        m.allowed_token_ids()
    assert compiled.memory_estimate() > before > 0
    assert cache._memory.grown > grown
    cache.clear_memory_caches()


def test_recurring_cache_keeps_from_the_second_offer_and_is_bounded() -> None:
    c = cache.RecurringCache(capacity=2, sightings=3)
    for key in "abc":
        c.offer(key, key.upper())
    assert len(c) == 0 and c.get("a") is None  # seen once: only the key is remembered
    for key in "abc":
        c.offer(key, key.upper())
    assert len(c) == 2 and c.get("a") is None  # "a" was kept first and went out first
    assert (c.get("b"), c.get("c")) == ("B", "C")
    c.get("b")  # used: now the most recent
    for key in "xyz":  # three new keys push the oldest sightings out
        c.offer(key, key)
    c.offer("x", "X")
    assert (c.get("b"), c.get("c"), c.get("x")) == ("B", None, "X")
    c.offer("a", "A")  # "a" was forgotten among the sightings: seen once again
    assert c.get("a") is None


def test_recurring_caches_are_per_vocabulary_and_cleared(vocab: Vocabulary) -> None:
    other = Vocabulary.from_token_bytes([b"q", None], eos_token_ids=[1])
    mine = cache.recurring(vocab, "t", 4)
    assert cache.recurring(vocab, "t", 4) is mine
    assert cache.recurring(other, "t", 4) is not mine
    assert cache.recurring(vocab, "u", 4) is not mine
    cache.clear_memory_caches()
    assert cache.recurring(vocab, "t", 4) is not mine
