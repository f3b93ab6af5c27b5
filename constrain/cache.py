"""Caches keyed by content hashes: per-vocabulary tables and compiled constraints.

* Per-vocabulary tables (the :class:`~constrain.token_trie.TokenTrie`) live in memory per
  process and, when a cache directory is configured, on disk as ``.npz`` files named by the
  vocabulary's fingerprint, each with a checksum. A file that is truncated, corrupt or
  written by another version is detected, deleted and rebuilt.
* Compiled constraints live in an in-memory LRU keyed by (kind, spec, vocabulary,
  options), bounded by count (:data:`MAX_COMPILED`) and by the memory they hold
  (:data:`MAX_COMPILED_MEMORY`); they are immutable, so one object serves every caller
  and thread.
* What the mask engine learns about a piece of text that recurs across constraints (a
  JSON string, whitespace then a quote, a number), per vocabulary: see
  :func:`recurring`. Kept once a piece is met in a second constraint, so pieces met once
  (an object's own keys) do not crowd it.

The disk cache is off until :func:`set_cache_dir` names a directory (no environment
variable changes behaviour silently).

>>> import tempfile
>>> from constrain.vocab import Vocabulary
>>> set_cache_dir(tempfile.mkdtemp())
>>> vocab = Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])
>>> token_trie(vocab).num_strings
2
>>> set_cache_dir(None)
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TypeVar

import numpy as np

from .errors import CacheError
from .token_trie import TokenTrie
from .vocab import Vocabulary

__all__ = [
    "RecurringCache",
    "cache_dir",
    "clear_memory_caches",
    "memoized_compile",
    "note_growth",
    "recurring",
    "set_cache_dir",
    "token_trie",
]

_FORMAT = "constrain-trie-v2"
_lock = threading.Lock()
_cache_dir: Path | None = None
_tries: dict[str, TokenTrie] = {}
_compiled: OrderedDict[Hashable, object] = OrderedDict()
MAX_COMPILED = 256
"""Compiled constraints kept in memory at most (see :func:`memoized_compile`)."""
MAX_COMPILED_MEMORY = 4 << 30
"""Bytes the kept compiled constraints may hold together, by their own estimates; each
one's memoized masks are bounded on their own by ``AutomatonOptions.max_mask_memory``."""
_recurring: dict[tuple[str, str], RecurringCache] = {}

T = TypeVar("T")


def set_cache_dir(path: str | os.PathLike[str] | None) -> None:
    """Use ``path`` for on-disk tables (created if needed); ``None`` turns the disk cache off."""
    global _cache_dir
    if path is None:
        _cache_dir = None
        return
    target = Path(path)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CacheError(f"cannot create cache directory {target}: {e}") from e
    if not os.access(target, os.W_OK):
        raise CacheError(f"cache directory {target} is not writable")
    _cache_dir = target


def cache_dir() -> Path | None:
    """The configured on-disk cache directory, if any."""
    return _cache_dir


def clear_memory_caches() -> None:
    """Forget in-memory tries, compiled constraints and recurring plans (the disk cache is
    kept)."""
    with _lock:
        _tries.clear()
        _compiled.clear()
        _memory.reset()
        _recurring.clear()


def token_trie(vocab: Vocabulary) -> TokenTrie:
    """The token trie of ``vocab``: from memory, else from disk, else built (and saved)."""
    key = vocab.fingerprint
    found = _tries.get(key)
    if found is not None:
        return found
    with _lock:
        found = _tries.get(key)
        if found is None:
            found = _load_trie(key)
            if found is None:
                found = TokenTrie.build(vocab.token_bytes)
                _save_trie(key, found)
            _tries[key] = found
    return found


def _trie_path(key: str) -> Path | None:
    return None if _cache_dir is None else _cache_dir / f"trie-{key[:32]}.npz"


def _checksum(arrays: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256(_FORMAT.encode())
    for name in sorted(arrays):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(arrays[name]).tobytes())
    return digest.hexdigest()


def _load_trie(key: str) -> TokenTrie | None:
    path = _trie_path(key)
    if path is None or not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        stored = str(arrays.pop("checksum"))
        if str(arrays.pop("format")) != _FORMAT or str(arrays.pop("key")) != key:
            raise ValueError("stale cache entry")
        if stored != _checksum(arrays):
            raise ValueError("checksum mismatch")
        return TokenTrie.from_arrays(arrays)
    except Exception:  # noqa: BLE001 - any failure to read it back means: rebuild
        # Corrupt or stale (zipfile alone raises half a dozen types on damaged headers):
        # remove it so the rebuilt table replaces it.
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass
        return None


def _save_trie(key: str, trie: TokenTrie) -> None:
    path = _trie_path(key)
    if path is None:
        return
    arrays = trie.to_arrays()
    buffer = io.BytesIO()
    np.savez(buffer, checksum=_checksum(arrays), format=_FORMAT, key=key, **arrays)  # type: ignore[arg-type]
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_bytes(buffer.getvalue())
        os.replace(tmp, path)  # atomic: readers never see half a file
    except OSError as e:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # the directory itself is gone or not a directory: nothing to clean
        raise CacheError(f"cannot write cache file {path}: {e}") from e


def memoized_compile(key: Hashable, build: Callable[[], T]) -> T:
    """Return the cached object for ``key`` or build, cache and return it.

    At most :data:`MAX_COMPILED` objects are kept, and, among objects that tell their
    size (a ``memory_estimate()`` method, as compiled constraints have), at most
    :data:`MAX_COMPILED_MEMORY` bytes: least recently used out first, never the one
    just returned. A compiled constraint grows as decoding meets new states, so the sizes
    are asked again as new entries come (see :class:`_MemoryAccount`)."""
    with _lock:
        if key in _compiled:
            _compiled.move_to_end(key)
            return _compiled[key]  # type: ignore[return-value]
    value = build()
    with _lock:
        _compiled[key] = value
        _compiled.move_to_end(key)
        while len(_compiled) > MAX_COMPILED:
            _compiled.popitem(last=False)
        _memory.make_room(_compiled)
    return value


class _MemoryAccount:
    """The kept compiled constraints' sizes as last asked, and how much constraints have
    memoized since (:func:`note_growth`). Asking every size costs ~1 µs an entry (200 µs
    with the cache full), so they are asked only when the sizes last asked, what grew
    since and the newest entry may add up to more than :data:`MAX_COMPILED_MEMORY`."""

    def __init__(self) -> None:
        self.total = 0
        self.grown = 0

    def reset(self) -> None:
        """Nothing kept any more."""
        self.total = self.grown = 0

    def make_room(self, kept: OrderedDict[Hashable, object]) -> None:
        """Drop the least recently used of ``kept`` (never the newest) while all of them
        hold more than :data:`MAX_COMPILED_MEMORY`."""
        newest = _size_of(next(reversed(kept.values())))
        if self.total + self.grown + newest <= MAX_COMPILED_MEMORY:
            self.total += newest
            return
        sizes = [_size_of(v) for v in kept.values()]
        self.total, self.grown = sum(sizes), 0
        for size in sizes[:-1]:
            if self.total <= MAX_COMPILED_MEMORY:
                break
            kept.popitem(last=False)
            self.total -= size


_memory = _MemoryAccount()


def note_growth(nbytes: int) -> None:
    """Tell the compiled-constraint cache that a constraint memoized about ``nbytes``
    more (masks and plans as decoding meets new states), so that it asks the kept
    constraints' sizes again before they could add up to more than
    :data:`MAX_COMPILED_MEMORY`."""
    _memory.grown += nbytes


def _size_of(value: object) -> int:
    estimate = getattr(value, "memory_estimate", None)
    return int(estimate()) if callable(estimate) else 0


class RecurringCache:
    """Values keyed by content, kept from the second time a key is offered on (the first
    time only the key is remembered; with ``keep_first``, from the first: for values that
    cost much more than a lookup), up to ``capacity`` values, least recently used out
    first. Thread-safe.

    >>> c = RecurringCache(capacity=2)
    >>> c.offer(b"k", 1); c.get(b"k") is None
    True
    >>> c.offer(b"k", 1); c.get(b"k")
    1
    """

    def __init__(self, capacity: int, sightings: int = 65536, keep_first: bool = False) -> None:
        self.capacity = capacity
        self._keep_first = keep_first
        self._values: OrderedDict[Hashable, object] = OrderedDict()
        self._seen: OrderedDict[Hashable, None] = OrderedDict()
        self._sightings = sightings
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> object | None:
        with self._lock:
            found = self._values.get(key)
            if found is not None:
                self._values.move_to_end(key)
            return found

    def offer(self, key: Hashable, value: object) -> None:
        with self._lock:
            if key in self._values:
                return
            if key not in self._seen and not self._keep_first:
                self._seen[key] = None
                if len(self._seen) > self._sightings:
                    self._seen.popitem(last=False)
                return
            self._values[key] = value
            while len(self._values) > self.capacity:
                self._values.popitem(last=False)

    def __len__(self) -> int:
        return len(self._values)


def recurring(vocab: Vocabulary, name: str, capacity: int,
              keep_first: bool = False) -> RecurringCache:
    """The process-wide :class:`RecurringCache` called ``name`` for ``vocab`` (made with
    ``capacity`` and ``keep_first`` the first time it is asked for)."""
    key = (vocab.fingerprint, name)
    with _lock:
        found = _recurring.get(key)
        if found is None:
            found = _recurring[key] = RecurringCache(capacity, keep_first=keep_first)
        return found
