"""The Matcher contract (constrain.matcher) that integrations and benchmarks rely on."""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from byte_vocab_layout import BYTE_VOCAB_EOS

from constrain import compile_choice, compile_regex
from constrain.automaton import Automaton
from constrain.compiler import CompiledConstraint
from constrain.grammar import Grammar
from constrain.matcher import TERMINATED, Matcher
from constrain.regex import parse_regex
from constrain.vocab import Vocabulary

EOS = BYTE_VOCAB_EOS
AB_ID, ABC_ID = 256, 257  # b"ab", b"abc" in byte_vocab


def ids(text: str) -> list[int]:
    return list(text.encode())


def unpack(row: np.ndarray, size: int) -> list[int]:
    bits = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:size]).tolist()


@pytest.fixture
def matcher(byte_vocab: Vocabulary) -> Matcher:
    return compile_regex(r"ab[0-9]{1,3}", byte_vocab).matcher()


# ------------------------------------------------------------------------- fill_bitmask


@pytest.mark.parametrize("row", [0, 1, 2])
@pytest.mark.parametrize("extra_words", [0, 1, 5], ids=lambda n: f"extra{n}")
def test_fill_bitmask_numpy_row_only(matcher: Matcher, row: int, extra_words: int,
                                     byte_vocab: Vocabulary) -> None:
    words = (byte_vocab.size + 31) // 32
    bitmask = np.full((3, words + extra_words), -1, dtype=np.int32)
    matcher.fill_bitmask(bitmask, row)
    for other in {0, 1, 2} - {row}:
        assert (bitmask[other] == -1).all()
    assert (bitmask[row, words:] == 0).all()
    assert unpack(bitmask[row], byte_vocab.size) == [ord("a"), AB_ID]
    assert unpack(bitmask[row], byte_vocab.size) == matcher.allowed_token_ids().tolist()


def test_fill_bitmask_default_row_and_tracks_state(matcher: Matcher,
                                                   byte_vocab: Vocabulary) -> None:
    bitmask = np.zeros((1, (byte_vocab.size + 31) // 32), dtype=np.int32)
    assert matcher.advance(AB_ID)
    matcher.fill_bitmask(bitmask)
    assert unpack(bitmask[0], byte_vocab.size) == ids("0123456789")
    assert matcher.advance(ord("7"))
    matcher.fill_bitmask(bitmask, 0)
    assert unpack(bitmask[0], byte_vocab.size) == ids("0123456789") + [EOS]


def test_fill_bitmask_torch(matcher: Matcher, byte_vocab: Vocabulary) -> None:
    torch = pytest.importorskip("torch")
    words = (byte_vocab.size + 31) // 32
    bitmask = torch.full((4, words + 3), -1, dtype=torch.int32)
    matcher.advance(AB_ID)
    matcher.advance(ord("1"))
    matcher.fill_bitmask(bitmask, 2)
    assert bool((bitmask[[0, 1, 3]] == -1).all())
    assert bool((bitmask[2, words:] == 0).all())
    assert unpack(bitmask[2].numpy(), byte_vocab.size) == ids("0123456789") + [EOS]


@pytest.mark.slow  # a fresh interpreter importing torch: ~5-12 s
def test_fill_bitmask_torch_emits_no_warning() -> None:
    pytest.importorskip("torch")
    code = (
        "import warnings, torch, constrain\n"
        "warnings.simplefilter('error')\n"
        "v = constrain.Vocabulary.from_token_bytes([b'a', None], eos_token_ids=[1])\n"
        "m = constrain.compile_regex('a', v).matcher()\n"
        "m.fill_bitmask(torch.zeros((1, 1), dtype=torch.int32), 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def test_fill_bitmask_after_termination_is_eos_only(matcher: Matcher,
                                                    byte_vocab: Vocabulary) -> None:
    for token in (AB_ID, ord("4"), EOS):
        assert matcher.advance(token)
    assert matcher.is_terminated() and matcher.is_accepting()
    bitmask = np.full((2, (byte_vocab.size + 31) // 32 + 1), -1, dtype=np.int32)
    matcher.fill_bitmask(bitmask, 1)
    assert unpack(bitmask[1], byte_vocab.size) == [EOS]
    assert bitmask[1, -1] == 0 and (bitmask[0] == -1).all()
    assert matcher.allowed_token_ids().tolist() == [EOS]


def test_no_step_follows_termination(matcher: Matcher, byte_vocab: Vocabulary) -> None:
    """After EOS every token is dead, from the matcher and from the constraint's own step
    (which once read the row table's last row for the terminated state, -1)."""
    compiled = matcher._compiled
    for token in (AB_ID, ord("4"), EOS):
        assert matcher.advance(token)
    for token in (ord("a"), AB_ID, ord("4"), EOS):
        assert not matcher.advance(token)
        assert compiled.token_step(TERMINATED, token) == Automaton.DEAD
    assert matcher.is_terminated()


# ---------------------------------------------------------------------------- advance


@pytest.mark.parametrize(
    "token",
    [ord("a"), ord("x"), EOS, 258, -1, BYTE_VOCAB_EOS + 1, 10**6],
    ids=["wrong-byte", "other-byte", "eos-too-early", "token-dead", "negative",
         "past-vocab", "huge"],
)
def test_rejected_advance_leaves_state_unchanged(matcher: Matcher, token: int) -> None:
    assert matcher.advance(ord("a"))
    before = (matcher.state, matcher.num_advances, matcher.allowed_token_ids().tolist())
    assert matcher.advance(token) is False
    assert (matcher.state, matcher.num_advances, matcher.allowed_token_ids().tolist()) == before
    assert not matcher.is_allowed(token)


def test_multi_byte_token_and_eos(byte_vocab: Vocabulary) -> None:
    m = compile_choice(["abc", "abx"], byte_vocab).matcher()
    assert m.advance(ABC_ID)
    assert m.is_accepting() and not m.is_terminated()
    assert m.allowed_token_ids().tolist() == [EOS]
    assert m.advance(EOS) and m.is_terminated()
    assert m.advance(EOS) is False and m.advance(ord("a")) is False
    assert m.forced_bytes() == b""


def test_special_and_padding_tokens_are_never_accepted() -> None:
    table: list[bytes | None] = [b"a", b"b", None, None]
    vocab = Vocabulary.from_token_bytes(table, eos_token_ids=[2], special_token_ids=[3],
                                        size=40)
    m = compile_regex("[ab]*", vocab).matcher()
    assert m.allowed_token_ids().tolist() == [0, 1, 2]
    for token in (3, 4, 39):
        assert not m.is_allowed(token) and m.advance(token) is False
    assert m.advance(1) and m.allowed_token_ids().tolist() == [0, 1, 2]


def test_numpy_integer_tokens(matcher: Matcher) -> None:
    assert matcher.advance(np.int64(AB_ID))
    assert matcher.advance(np.int32(ord("5")))
    assert matcher.advance(np.int64(EOS)) and matcher.is_terminated()


# --------------------------------------------------------------------------- rollback


def test_rollback_restores_states(matcher: Matcher) -> None:
    states = [matcher.state]
    for token in (AB_ID, ord("1"), ord("2"), EOS):
        assert matcher.advance(token)
        states.append(matcher.state)
    assert matcher.is_terminated() and matcher.num_advances == 4
    matcher.rollback(1)
    assert not matcher.is_terminated() and matcher.state == states[3]
    matcher.rollback(2)
    assert matcher.state == states[1] and matcher.num_advances == 1
    assert matcher.allowed_token_ids().tolist() == ids("0123456789")
    matcher.rollback(0)
    assert matcher.state == states[1]
    matcher.rollback(1)
    assert matcher.state == states[0] and matcher.num_advances == 0


@pytest.mark.parametrize("steps, n", [(0, 1), (2, 3), (2, -1)], ids=["empty", "too-many",
                                                                      "negative"])
def test_rollback_errors(matcher: Matcher, steps: int, n: int) -> None:
    for token in (AB_ID, ord("3"))[:steps]:
        assert matcher.advance(token)
    state = matcher.state
    with pytest.raises(ValueError):
        matcher.rollback(n)
    assert matcher.state == state and matcher.num_advances == steps


def test_rejected_advance_is_not_rolled_back(matcher: Matcher) -> None:
    assert matcher.advance(ord("a"))
    assert not matcher.advance(ord("z"))
    matcher.rollback(1)
    assert matcher.num_advances == 0 and matcher.state == matcher.compiled.automaton.start


# ------------------------------------------------------------------------- copy / misc


def test_copy_is_independent(matcher: Matcher) -> None:
    matcher.advance(AB_ID)
    twin = matcher.copy()
    assert twin.state == matcher.state and twin.num_advances == matcher.num_advances
    assert twin.advance(ord("9")) and twin.advance(EOS)
    assert twin.is_terminated() and not matcher.is_terminated()
    assert matcher.allowed_token_ids().tolist() == ids("0123456789")
    matcher.rollback(1)
    assert twin.num_advances == 3
    twin.rollback(3)
    assert matcher.state == twin.state


def test_forced_bytes(byte_vocab: Vocabulary) -> None:
    m = compile_regex(r"hello (world|wide)", byte_vocab).matcher()
    assert m.forced_bytes() == b"hello w"
    assert m.advance_bytes(b"hello w")
    assert m.forced_bytes() == b""
    assert m.advance(ord("o")) and m.forced_bytes() == b"rld"
    m2 = compile_regex("日本", byte_vocab).matcher()
    assert m2.forced_bytes() == "日本".encode()
    assert m2.advance(0xE6) and m2.forced_bytes() == "日本".encode()[1:]


def test_advance_bytes_rejects_and_keeps_state(matcher: Matcher) -> None:
    start = matcher.state
    assert not matcher.advance_bytes(b"ax")
    assert matcher.state == start and matcher.num_advances == 0
    assert matcher.advance_bytes(b"ab12") and matcher.is_accepting()
    matcher.rollback(1)
    assert matcher.state == start


def test_reset_and_cheap_creation(matcher: Matcher) -> None:
    matcher.advance(AB_ID)
    matcher.reset()
    assert matcher.num_advances == 0 and matcher.state == matcher.compiled.automaton.start
    many = [matcher.compiled.matcher() for _ in range(10_000)]
    assert all(m.state == matcher.state for m in many[::1000])


def test_is_accepting_follows_automaton(byte_vocab: Vocabulary) -> None:
    m = compile_regex(r"a(bc)?", byte_vocab).matcher()
    assert not m.is_accepting()
    m.advance(ord("a"))
    assert m.is_accepting() and EOS in m.allowed_token_ids()
    m.advance(ord("b"))
    assert not m.is_accepting() and EOS not in m.allowed_token_ids()


# ----------------------------------------------------------------------- thread safety


def _walk(compiled: CompiledConstraint, seed: int, steps: int) -> list[tuple[int, bytes]]:
    """A deterministic walk: at each step record (token, mask bytes), pick by seed."""
    rng = np.random.default_rng(seed)
    m = compiled.matcher()
    words = compiled.mask_words
    bitmask = np.zeros((1, words), dtype=np.int32)
    eos = min(compiled.vocab.eos_token_ids)
    record: list[tuple[int, bytes]] = []
    for step in range(steps):
        m.fill_bitmask(bitmask, 0)
        allowed = m.allowed_token_ids()
        assert len(allowed), "empty mask"
        if eos in allowed and (step > steps // 2 or len(allowed) == 1):
            token = eos
        else:
            choices = allowed[allowed != eos] if len(allowed) > 1 else allowed
            token = int(rng.choice(choices))
        record.append((token, bitmask.tobytes()))
        assert m.advance(token)
        if m.is_terminated():
            break
    return record


THREAD_PATTERN = r'\{"name": "[^"\\]{0,12}", "tags": \[("[a-zé日]{1,6}"(, )?){0,4}\], "n": [0-9]{1,6}\}'


def _thread_check(vocab: Vocabulary, steps: int) -> None:
    grammar = Grammar.single(parse_regex(THREAD_PATTERN))
    reference = CompiledConstraint(grammar, vocab)  # not memoized: cold tables
    expected = {seed: _walk(reference, seed, steps) for seed in range(8)}
    shared = CompiledConstraint(grammar, vocab)
    barrier = threading.Barrier(8)

    def work(seed: int) -> list[tuple[int, bytes]]:
        barrier.wait()  # all threads hit the cold tables at once
        return _walk(shared, seed, steps)

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = {seed: pool.submit(work, seed) for seed in range(8)}
        for seed, future in futures.items():
            assert future.result(timeout=120) == expected[seed], f"thread {seed} diverged"


def test_threads_share_one_constraint_byte_vocab(byte_vocab: Vocabulary) -> None:
    _thread_check(byte_vocab, steps=80)


def test_threads_share_one_constraint_smollm2(smollm2_vocab: Vocabulary) -> None:
    _thread_check(smollm2_vocab, steps=40)
