"""Compilation defers Python's young garbage collections and always puts the thresholds back."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from constrain import (
    cache,
    compile_choice,
    compile_grammar,
    compile_json_schema,
    compile_regex,
    compiler,
)
from constrain.collector import DEFERRED_THRESHOLD, collector_paused
from constrain.errors import RegexSyntaxError
from constrain.grammar import Grammar, literal
from constrain.vocab import Vocabulary


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was, thresholds = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*thresholds)
    if was:
        gc.enable()
    else:
        gc.disable()


def _deferred() -> bool:
    return gc.get_threshold()[0] >= DEFERRED_THRESHOLD


@pytest.mark.parametrize("compile_one", [
    lambda v: compile_regex("[a-z]+@[a-z]+", v),
    lambda v: compile_choice(["yes", "no"], v),
    lambda v: compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}, v),
    lambda v: compile_grammar(Grammar.single(literal("ok")), v),
], ids=["regex", "choice", "json", "grammar"])
def test_compiling_defers_collections(byte_vocab: Vocabulary, monkeypatch: pytest.MonkeyPatch,
                                        compile_one: Callable[[Vocabulary], object]) -> None:
    seen: list[bool] = []
    build = compiler.CompiledConstraint.__init__

    def spy(self: compiler.CompiledConstraint, *args: Any, **kwargs: Any) -> None:
        seen.append(_deferred())
        build(self, *args, **kwargs)
        seen.append(_deferred())

    monkeypatch.setattr(compiler.CompiledConstraint, "__init__", spy)
    cache.clear_memory_caches()
    compile_one(byte_vocab)
    assert seen == [True, True]
    assert gc.get_threshold() == (700, 10, 10)


def test_a_disabled_collector_stays_disabled(byte_vocab: Vocabulary) -> None:
    cache.clear_memory_caches()
    gc.disable()
    compile_regex("[a-z]+@[a-z]+", byte_vocab)
    assert not gc.isenabled()


def test_a_zero_threshold_stays_zero(byte_vocab: Vocabulary) -> None:
    cache.clear_memory_caches()
    gc.set_threshold(0)
    compile_regex("[a-z]+@[a-z]+", byte_vocab)
    assert gc.get_threshold()[0] == 0


def test_collections_still_run_in_a_long_compilation() -> None:
    started: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(count)
    try:
        with collector_paused():
            junk = [[i] for i in range(3 * DEFERRED_THRESHOLD)]
    finally:
        gc.callbacks.remove(count)
    assert len(junk) == 3 * DEFERRED_THRESHOLD
    assert 1 <= len(started) <= 6


def test_thresholds_back_after_a_failed_compile(byte_vocab: Vocabulary) -> None:
    with pytest.raises(RegexSyntaxError):
        compile_regex("(unclosed", byte_vocab)
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_pauses_end_with_the_last() -> None:
    entered = threading.Barrier(2)
    first_done = threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with collector_paused():
            entered.wait()
        first_done.set()

    def second() -> None:
        with collector_paused():
            entered.wait()
            first_done.wait(5)
            seen["inside after the first ended"] = _deferred()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"inside after the first ended": True}
    assert gc.get_threshold() == (700, 10, 10)
