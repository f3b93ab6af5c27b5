"""Compilation pauses Python's cyclic garbage collector and always puts it back."""

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
from constrain.collector import collector_paused
from constrain.errors import RegexSyntaxError
from constrain.grammar import Grammar, literal
from constrain.vocab import Vocabulary


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.parametrize("compile_one", [
    lambda v: compile_regex("[a-z]+@[a-z]+", v),
    lambda v: compile_choice(["yes", "no"], v),
    lambda v: compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}, v),
    lambda v: compile_grammar(Grammar.single(literal("ok")), v),
], ids=["regex", "choice", "json", "grammar"])
def test_compiling_pauses_the_collector(byte_vocab: Vocabulary, monkeypatch: pytest.MonkeyPatch,
                                        compile_one: Callable[[Vocabulary], object]) -> None:
    seen: list[bool] = []
    build = compiler.CompiledConstraint.__init__

    def spy(self: compiler.CompiledConstraint, *args: Any, **kwargs: Any) -> None:
        seen.append(gc.isenabled())
        build(self, *args, **kwargs)
        seen.append(gc.isenabled())

    monkeypatch.setattr(compiler.CompiledConstraint, "__init__", spy)
    cache.clear_memory_caches()
    compile_one(byte_vocab)
    assert seen == [False, False]
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled(byte_vocab: Vocabulary) -> None:
    cache.clear_memory_caches()
    gc.disable()
    compile_regex("[a-z]+@[a-z]+", byte_vocab)
    assert not gc.isenabled()


def test_collector_back_on_after_a_failed_compile(byte_vocab: Vocabulary) -> None:
    with pytest.raises(RegexSyntaxError):
        compile_regex("(unclosed", byte_vocab)
    assert gc.isenabled()


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
            seen["inside after the first ended"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"inside after the first ended": False}
    assert gc.isenabled()
