"""Hugging Face integration benchmark: mask apply cost, and constrained vs unconstrained speed.

Three measurements, in one run:

1. **Apply** (µs): :func:`constrain.integrations.hf.apply_token_bitmask` on CPU logits for
   the SmolLM2 (49,152) and Qwen2 (151,646) vocabularies, with masks of real states (a
   sparse one: digits; a dense one: inside a JSON string) and a random one (the worst case
   for branchy kernels), by the CPU path (numpy) and by the torch ops the device path uses;
   plus one whole processor call (prefix lookup + ``fill_bitmask`` + apply) on a seen prefix.
2. **Speed**: :func:`constrain.generation.generate` on the embedded SmolLM2 model, greedy,
   per case: unconstrained, constrained without fast-forward, constrained with it. The
   unconstrained run gets ``max_new_tokens`` equal to the constrained run's token count,
   so both pay the same prompt and the same number of steps. A first, untimed-for-the-ratio
   run per case compiles and computes the masks of the states visited (reported apart, as
   the cold rate); then modes are interleaved in a rotating order per case and repetition
   (this machine is shared and noisy); tokens/s are totals over runs.
3. **Model calls** per output with and without fast-forward (the same runs), and the share
   of ``model.generate()`` time spent in the logits processor.

Run from the repository root::

    python -m benchmarks.bench_hf               # ~3-6 minutes on 2 busy cores
    python -m benchmarks.bench_hf --quick       # one repetition, two cases

>>> _parse(["--reps", "3"]).reps
3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .vocabs import default_cache_dir, load_vocab

ORDER = {
    "type": "object",
    "properties": {
        "customer_full_name": {"type": "string", "maxLength": 24},
        "shipping_country_code": {"type": "string", "enum": ["FR", "DE", "US", "JP"]},
        "number_of_items_ordered": {"type": "integer", "minimum": 1, "maximum": 99},
        "is_gift_wrapped": {"type": "boolean"},
    },
    "required": ["customer_full_name", "shipping_country_code", "number_of_items_ordered",
                 "is_gift_wrapped"],
    "additionalProperties": False,
}
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 16},
                   "age": {"type": "integer", "minimum": 0, "maximum": 120}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
#: Keys are forced only when their spelling is fixed: schema order, no whitespace choice and
#: no escapes. (With the compiler's default ``escapes="all"``, SmolLM2 was seen to spell keys
#: with ``\\u`` escapes after an odd tokenization, e.g. ``"customer_ful\\u006c..."``.)
FIXED_KEYS = {"whitespace": "compact", "property_order": "schema", "escapes": "required"}
ORDER_PROMPT = "Jane Doe from France ordered 3 items, gift wrapped. Extract the order as JSON."

#: (name, spec, prompt, schema options)
CASES: list[tuple[str, Any, str, dict[str, Any]]] = [
    ("order-json fixed keys", ORDER, ORDER_PROMPT, FIXED_KEYS),
    ("order-json flexible", ORDER, ORDER_PROMPT, {"escapes": "required"}),
    ("person-json defaults", PERSON, "Describe Ada Lovelace, who died at 36, as JSON.", {}),
    ("date-regex", {"regex": r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"},
     "When did the Berlin Wall fall? Give the date.", {}),
]


def _median_us(n: int, fn: Callable[..., Any], *args: Any) -> float:
    for _ in range(5):
        fn(*args)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def bench_apply(n: int) -> list[dict[str, Any]]:
    """Median µs of applying one mask row, per vocabulary and mask kind."""
    import torch
    from constrain.integrations.hf import (
        ConstrainLogitsProcessor,
        _apply_torch,
        apply_token_bitmask,
    )

    from constrain import compile_regex

    rows = []
    for name in ("smollm2", "qwen"):
        bv = load_vocab(name, cache_dir=default_cache_dir())
        vocab = bv.vocab
        digits = compile_regex("[0-9]+", vocab)
        string = compile_regex(r'"[^"\\]*"', vocab)
        inside = string.matcher()
        inside.advance_bytes(b'"')
        masks = {
            "digits (sparse)": digits.matcher(),
            "json string (dense)": inside,
        }
        words = (vocab.size + 31) // 32
        logits = torch.randn(1, vocab.size)
        for kind, matcher in masks.items():
            bitmask = np.zeros((1, words), dtype=np.int32)
            matcher.fill_bitmask(bitmask, 0)
            allowed = int(np.unpackbits(bitmask.view(np.uint8)).sum())
            rows.append({"vocab": name, "size": vocab.size, "mask": kind, "allowed": allowed,
                         "apply_us": _median_us(n, apply_token_bitmask, logits, bitmask)})
            # The device path (what runs on GPUs and for half precision), here on CPU.
            rows.append({"vocab": name, "size": vocab.size, "mask": kind + ", torch ops",
                         "allowed": allowed,
                         "apply_us": _median_us(n, _apply_torch, logits, bitmask, False)})
        rng = np.random.default_rng(0)
        random_mask = rng.integers(-(2**31), 2**31, size=(1, words), dtype=np.int64)
        random_mask = random_mask.astype(np.int32)
        rows.append({"vocab": name, "size": vocab.size, "mask": "random 50%",
                     "allowed": vocab.size // 2,
                     "apply_us": _median_us(n, apply_token_bitmask, logits, random_mask)})
        # A whole processor call on a prefix it has seen: lookup + fill_bitmask + apply.
        proc = ConstrainLogitsProcessor([digits])
        prompt = torch.tensor([[1, 2, 3]])
        proc(prompt, logits)
        rows.append({"vocab": name, "size": vocab.size, "mask": "processor call (digits)",
                     "allowed": -1, "apply_us": _median_us(n, proc, prompt, logits)})
    return rows


def _valid(spec: Any, text: str) -> bool:
    import re

    import jsonschema

    if "regex" in spec:
        return re.fullmatch(spec["regex"], text) is not None
    try:
        jsonschema.validate(json.loads(text), spec)
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


def bench_generation(cases: Sequence[tuple[str, Any, str, dict[str, Any]]], reps: int,
                     max_new_tokens: int) -> dict[str, Any]:
    """Tokens/s and model calls per mode, interleaved per case and repetition."""
    from constrain.assets import load_smollm2_model, load_smollm2_tokenizer
    from constrain.generation import generate

    cache = default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    model, tokenizer = load_smollm2_model(cache), load_smollm2_tokenizer(cache)
    kw: dict[str, Any] = {"model": model, "tokenizer": tokenizer}
    # Cold runs: compile, and compute the mask of every state the timed runs will visit. They
    # are reported apart: masks are memoized, so later runs of a schema never pay this again.
    lengths: dict[str, int] = {}
    cold = {"tokens": 0, "seconds": 0.0}
    for name, spec, prompt, options in cases:
        t0 = time.perf_counter()
        first = generate(spec, prompt, max_new_tokens=max_new_tokens, fast_forward=False,
                         schema_options=options, **kw)
        cold["seconds"] += time.perf_counter() - t0
        cold["tokens"] += len(first.token_ids)
        generate(spec, prompt, max_new_tokens=max_new_tokens, schema_options=options, **kw)
        lengths[name] = max(1, len(first.token_ids))
    totals = {m: {"tokens": 0, "seconds": 0.0, "calls": 0} for m in ("free", "no_ff", "ff")}
    per_case: list[dict[str, Any]] = []
    for rep in range(reps):
        for index, (name, spec, prompt, options) in enumerate(cases):
            settings: dict[str, dict[str, Any]] = {
                "no_ff": {"spec": spec, "fast_forward": False, "schema_options": options},
                "free": {"spec": None, "max_new_tokens": lengths[name]},
                "ff": {"spec": spec, "fast_forward": True, "schema_options": options},
            }
            modes = list(settings)
            shift = (rep + index) % len(modes)  # rotate the order: no mode always runs first
            results = {}
            for mode in modes[shift:] + modes[:shift]:
                args = {"max_new_tokens": max_new_tokens, **settings[mode]}
                results[mode] = generate(args.pop("spec"), prompt, **args, **kw)
            for mode, r in results.items():
                totals[mode]["tokens"] += len(r.token_ids)
                totals[mode]["seconds"] += r.seconds
                totals[mode]["calls"] += r.model_calls
            ff, no_ff = results["ff"], results["no_ff"]
            if rep == 0:
                per_case.append({
                    "case": name, "text": ff.text, "finished": ff.finished,
                    "valid": _valid(spec, ff.text) and _valid(spec, no_ff.text),
                    "same_text_ff_vs_no_ff": ff.text == no_ff.text,
                    "tokens": len(ff.token_ids), "forced_tokens": ff.forced_tokens,
                    "calls_ff": ff.model_calls, "calls_no_ff": no_ff.model_calls,
                })
    rate = {m: t["tokens"] / t["seconds"] for m, t in totals.items()}
    # model.generate() with the processor: the share of the time spent inside it.
    from constrain.integrations.hf import logits_processor

    name, spec, prompt, options = cases[0]
    proc = logits_processor(spec, tokenizer, **options)
    text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                         add_generation_prompt=True, tokenize=False)
    inputs = tokenizer(text, return_tensors="pt", add_special_tokens=False)
    t0 = time.perf_counter()
    out = model.generate(**inputs, logits_processor=[proc], do_sample=False,
                         max_new_tokens=max_new_tokens)
    hf_seconds = time.perf_counter() - t0
    hf = {"case": name, "tokens": int(out.shape[1] - inputs["input_ids"].shape[1]),
          "seconds": hf_seconds, "processor_seconds": proc.seconds, "processor_calls": proc.calls,
          "processor_share": proc.seconds / hf_seconds}
    return {
        "tokens_per_s": rate,
        "cold_tokens_per_s": cold["tokens"] / cold["seconds"],
        "ratio_constrained_no_ff": rate["no_ff"] / rate["free"],
        "ratio_constrained_ff": rate["ff"] / rate["free"],
        "model_calls": {m: t["calls"] for m, t in totals.items()},
        "cases": per_case,
        "hf_generate": hf,
    }


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=2, help="repetitions of every case (default 2)")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--apply-n", type=int, default=300, help="timed apply calls per mask")
    p.add_argument("--quick", action="store_true", help="one repetition of two cases")
    p.add_argument("--skip-apply", action="store_true")
    p.add_argument("--skip-generation", action="store_true")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--json", type=Path, help="also write the results here")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark and print a report; returns the results."""
    import torch

    args = _parse(argv)
    torch.set_num_threads(args.threads)
    results: dict[str, Any] = {"threads": args.threads}
    if not args.skip_apply:
        results["apply"] = bench_apply(args.apply_n)
        print(f"apply_token_bitmask on CPU, 1 row, torch threads={args.threads} (median µs):")
        for row in results["apply"]:
            print(f"  {row['vocab']:8} {row['size']:>7}  {row['mask']:32} {row['apply_us']:8.1f}")
    if not args.skip_generation:
        cases = CASES[:1] + CASES[3:] if args.quick else CASES
        reps = 1 if args.quick else args.reps
        gen = bench_generation(cases, reps, args.max_new_tokens)
        results["generation"] = gen
        rate = gen["tokens_per_s"]
        print(f"\nSmolLM2-135M on CPU, greedy, {len(cases)} cases x {reps} reps:")
        print(f"  unconstrained           {rate['free']:7.2f} tok/s")
        print(f"  constrained, no FF      {rate['no_ff']:7.2f} tok/s  "
              f"ratio {gen['ratio_constrained_no_ff']:.3f}")
        print(f"  constrained, FF         {rate['ff']:7.2f} tok/s  "
              f"ratio {gen['ratio_constrained_ff']:.3f}")
        calls = gen["model_calls"]
        print(f"  model calls: no FF {calls['no_ff']}, FF {calls['ff']}")
        print(f"  first run of each case (compile + first masks, no FF) "
              f"{gen['cold_tokens_per_s']:.2f} tok/s")
        hf = gen["hf_generate"]
        print(f"  model.generate + processor ({hf['case']}): {hf['tokens']} tokens in "
              f"{hf['seconds']:.1f} s, {hf['processor_calls']} processor calls took "
              f"{hf['processor_seconds'] * 1e3:.1f} ms ({hf['processor_share']:.2%})")
        for c in gen["cases"]:
            print(f"  {c['case']:22} calls {c['calls_no_ff']:3} -> {c['calls_ff']:3}  "
                  f"forced {c['forced_tokens']:3}/{c['tokens']:3}  valid {c['valid']}  "
                  f"same text {c['same_text_ff_vs_no_ff']}  {c['text']!r}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
