"""GPU benchmark: vLLM and SGLang end to end, constrain vs each runtime's built-in xgrammar.

Prepared for a machine with an NVIDIA GPU; not run in CI (a test only byte-compiles it).
The same requests as ``benchmarks/bench_vllm.py`` (JSON Schema, regex, choice; greedy),
``--copies`` times over, go through:

- vLLM: unconstrained, constrain (``extra_args={"constrain": spec}``, logits processor) and
  vLLM's xgrammar backend (``StructuredOutputsParams``), one engine;
- SGLang: constrain (``--grammar-backend constrain``) and xgrammar, one engine each
  (``sglang.Engine``; choice requests are sent as an escaped-alternation regex, since
  SGLang has no choice field).

Each engine runs in its own process; the table printed at the end has one line per
runtime and backend: valid outputs, generated tokens, seconds, tokens/s.

Setup (vLLM and SGLang pin different torch builds, so give each its own venv)::

    python -m venv /opt/v && /opt/v/bin/pip install "vllm>=0.32,<0.34" -e . jsonschema
    python -m venv /opt/s && /opt/s/bin/pip install "sglang==0.5.23" -e . jsonschema
    python scripts/export_smollm2_hf.py /data/smollm2-hf      # or any HF model folder

Run::

    python benchmarks/gpu_vllm_sglang.py --model /data/smollm2-hf \\
        --vllm-python /opt/v/bin/python --sglang-python /opt/s/bin/python --copies 16
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_vllm

VLLM_BACKENDS = ["none", "constrain", "xgrammar"]
SGLANG_BACKENDS = ["constrain", "xgrammar"]


def run_vllm(model: str, max_tokens: int, copies: int) -> list[dict[str, Any]]:
    """vLLM on the GPU: constrain and xgrammar share the engine."""
    llm = bench_vllm.make_llm(model, "xgrammar", gpu_memory_utilization=0.6)
    results = []
    for backend in VLLM_BACKENDS:
        r = bench_vllm.run_backend(llm, backend, max_tokens, copies)
        results.append({"runtime": "vllm", **r.__dict__})
    return results


def sglang_params(backend: str, max_tokens: int) -> list[dict[str, Any]]:
    """SGLang sampling params for the request set (same constraints, SGLang's fields)."""
    out = []
    for _, field, value, _ in bench_vllm.CASES:
        p: dict[str, Any] = {"max_new_tokens": max_tokens, "temperature": 0.0}
        if field == "json":
            p["json_schema"] = json.dumps(value)
        elif field == "regex":
            p["regex"] = value
        else:
            p["regex"] = "(" + "|".join(re.escape(c) for c in value) + ")"
        out.append(p)
    return out


def run_sglang(model: str, backend: str, max_tokens: int, copies: int) -> list[dict[str, Any]]:
    """SGLang on the GPU with ``--grammar-backend backend`` (constrain registers itself in
    every SGLang process through its ``sglang.srt.plugins`` entry point)."""
    import sglang

    if backend == "constrain":
        from constrain.integrations.sglang import register

        register()
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    engine = sglang.Engine(model_path=model, grammar_backend=backend, mem_fraction_static=0.6)
    try:
        prompts = [tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                           add_generation_prompt=True)
                   for *_, p in bench_vllm.CASES] * copies
        params = sglang_params(backend, max_tokens) * copies
        engine.generate(prompts[:1], params[:1])  # warm-up: compile, first call
        start = time.perf_counter()
        outs = engine.generate(prompts, params)
        seconds = time.perf_counter() - start
    finally:
        engine.shutdown()
    texts = [o["text"] for o in outs]
    tokens = sum(int(o["meta_info"]["completion_tokens"]) for o in outs)
    valid = sum(bench_vllm.is_valid(f, v, t)
                for (_, f, v, _), t in zip(bench_vllm.CASES * copies, texts))
    return [{"runtime": "sglang", "backend": backend, "valid": valid, "total": len(texts),
             "tokens": tokens, "seconds": seconds, "outputs": texts}]


def worker(job: str, model: str, max_tokens: int, copies: int, out: str) -> None:
    runtime, _, backend = job.partition(":")
    if runtime == "vllm":
        results = run_vllm(model, max_tokens, copies)
    else:
        results = run_sglang(model, backend, max_tokens, copies)
    with open(out, "w") as f:
        json.dump(results, f)


def spawn(python: str, job: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        path = tmp.name
    cmd = [python, str(Path(__file__).resolve()), "--model", args.model, "--worker", job,
           "--max-tokens", str(args.max_tokens), "--copies", str(args.copies), "--out", path]
    print("running", job, flush=True)
    try:
        subprocess.run(cmd, check=True)
        with open(path) as f:
            return list(json.load(f))
    except subprocess.CalledProcessError as e:
        print(f"{job} failed (exit {e.returncode}); continuing", flush=True)
        return []
    finally:
        os.unlink(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="HF model folder or hub name")
    parser.add_argument("--runtimes", default="vllm,sglang")
    parser.add_argument("--vllm-python", default=sys.executable)
    parser.add_argument("--sglang-python", default=sys.executable)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--copies", type=int, default=16)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.model, args.max_tokens, args.copies, args.out)
        return 0
    results: list[dict[str, Any]] = []
    runtimes = args.runtimes.split(",")
    if "vllm" in runtimes:
        results += spawn(args.vllm_python, "vllm", args)
    if "sglang" in runtimes:
        for backend in SGLANG_BACKENDS:
            results += spawn(args.sglang_python, f"sglang:{backend}", args)
    print(f"\n{'runtime':<8} {'backend':<10} {'valid':>9} {'tokens':>7} {'seconds':>8} "
          f"{'tok/s':>8}")
    for r in results:
        rate = r["tokens"] / r["seconds"] if r["seconds"] else 0.0
        print(f"{r['runtime']:<8} {r['backend']:<10} {r['valid']:>4}/{r['total']:<4} "
              f"{r['tokens']:>7} {r['seconds']:>8.2f} {rate:>8.1f}")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
