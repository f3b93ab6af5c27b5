"""Two checkouts of constrain on the same MaskBench schemas, schema by schema, side by side.

Timings on a shared machine drift by ±30% over minutes, so two whole runs of the sample,
one per version, disagree by more than most changes are worth. Here each version runs in
its own worker process (its checkout on ``PYTHONPATH``), and every schema is checked by
one right after the other, in alternating order, so a slow spell hits both. Besides
times, each worker counts what does not drift: automaton rows built, plans composed and
collections of each generation of Python's garbage collector (whose placement is
deterministic for the same allocations, so a full collection that lands in one schema's
steps lands there in every run of that version). Each schema's whole time in its worker
(harness and collections included) and the time spent collecting are summed too: a
change that only moves work out of the timed steps shows there.

    git worktree add /tmp/base HEAD~1
    python -m benchmarks.maskbench_ab /tmp/base . --sample 4 --reps 2

The report gives each side's time between masks (avg) and time to first mask (p50, avg)
over the schemas both pass (each schema's best of ``--reps``), the per-schema geometric
mean ratio B/A of both, the counts, and the schemas whose status differs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from .maskbench import DATA, schema_paths

# The worker runs in the checkout under test, which may predate this module: it is
# passed as source and imports only what every checkout's benchmarks have.
_WORKER = r"""
import gc, importlib, json, sys, time, warnings
from collections import Counter
from pathlib import Path
from benchmarks.anchors import ConstrainEngine
from benchmarks.maskbench_profile import _check_within
from benchmarks.vocabs import load_vocab

COUNTED = {  # label: (module, class, method), counted where the checkout has them
    "rows": ("constrain.automaton", "Automaton", "_compute_row"),
    "plans": ("constrain.masks", "TokenMasks", "_plan"),
    "seeded plans": ("constrain.masks", "TokenMasks", "_seeded_plan"),
}
counts = Counter()
for label, (module, name, method) in COUNTED.items():
    cls = getattr(importlib.import_module(module), name, None)
    original = getattr(cls, method, None)
    if original is not None:
        def counted(*args, _label=label, _f=original, **kwargs):
            counts[_label] += 1
            return _f(*args, **kwargs)
        setattr(cls, method, counted)

started = [0.0]
seconds = Counter()

def collected(phase, info):
    if phase == "start":
        counts[f"collections gen {info['generation']}"] += 1
        started[0] = time.perf_counter()
    else:
        seconds["collecting"] += time.perf_counter() - started[0]

warnings.simplefilter("ignore")
engine = ConstrainEngine(load_vocab(sys.argv[1]))
gc.callbacks.append(collected)
# The collector's counters start equal in both workers: setting up allocates differently
# where one worker compiles the walk kernels and the other loads what it wrote to numba's
# cache, and the counts would then be shifted for every schema after.
gc.collect()
print("ready", flush=True)
for line in sys.stdin:
    counts.clear()
    seconds.clear()
    t0 = time.perf_counter()
    r = _check_within(engine, Path(line.strip()), float(sys.argv[2]))
    print(json.dumps({
        "id": r["id"], "status": r["status"], "tbm": sum(r.get("tbm_us", [])),
        "steps": len(r.get("tbm_us", [])), "ttfm": min(r.get("ttfm_us") or [0.0]),
        "counts": dict(counts), "whole": time.perf_counter() - t0,
        "collecting": seconds["collecting"],
    }), flush=True)
"""


def _start(checkout: Path, vocab: str, budget: float) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORKER, vocab, str(budget)],
        cwd=checkout, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError(f"the worker for {checkout} did not start")
    return proc


def _geomean(ratios: list[float]) -> float:
    return math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")


def compare(a: Path, b: Path, paths: list[Path], reps: int, vocab: str,
            budget: float, show: int = 0) -> str:
    """Run both checkouts over ``paths`` (see the module docstring); returns the report,
    with the ``show`` schemas whose time between masks changed most, either way."""
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {"A": {}, "B": {}}
    for rep in range(reps):
        workers = {"A": _start(a, vocab, budget), "B": _start(b, vocab, budget)}
        for n, path in enumerate(paths):
            for side in ("AB" if (n + rep) % 2 == 0 else "BA"):
                w = workers[side]
                w.stdin.write(f"{path}\n")  # type: ignore[union-attr]
                w.stdin.flush()  # type: ignore[union-attr]
                r = json.loads(w.stdout.readline())  # type: ignore[union-attr]
                runs[side].setdefault(r["id"], []).append(r)
        for w in workers.values():
            w.stdin.close()  # type: ignore[union-attr]
            w.wait()
    both = [k for k in runs["A"]
            if all(r["status"] == "ok" for side in "AB" for r in runs[side][k])
            and runs["A"][k][0]["steps"]]
    lines = [f"{len(paths)} schemas, {reps} rep(s); {len(both)} passing in both with steps"]
    best: dict[str, dict[str, tuple[float, float]]] = {}
    for side, checkout in (("A", a), ("B", b)):
        best[side] = {i: (min(r["tbm"] for r in runs[side][i]),
                          min(r["ttfm"] for r in runs[side][i])) for i in both}
        steps = sum(runs[side][i][0]["steps"] for i in both)
        tbm = sum(t for t, _ in best[side].values()) / max(steps, 1)
        ttfm = np.array([f for _, f in best[side].values()]) / 1000
        counts: Counter[str] = Counter()
        for i in both:
            counts.update(runs[side][i][0]["counts"])
        # Everything a schema cost its worker, harness and collections included: what a
        # change moves out of the timed steps (a collection put off) shows here.
        whole = sum(min(r.get("whole", 0.0) for r in runs[side][i]) for i in both)
        collecting = sum(runs[side][i][0].get("collecting", 0.0) for i in both)
        lines.append(
            f"{side} {checkout}: tbm avg {tbm:.1f} µs, ttfm p50 {np.median(ttfm):.2f} ms, "
            f"avg {ttfm.mean():.2f} ms; whole {whole:.1f} s, of which collecting "
            f"{collecting:.1f} s (first rep); first rep: "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    lines.append(
        "B/A per-schema geometric means: tbm "
        f"{_geomean([best['B'][i][0] / best['A'][i][0] for i in both if best['A'][i][0]]):.3f}, "
        f"ttfm {_geomean([best['B'][i][1] / best['A'][i][1] for i in both if best['A'][i][1]]):.3f}")
    moved = sorted((i for i in both if best["A"][i][0]),
                   key=lambda i: abs(math.log(max(best["B"][i][0], 1e-9) / best["A"][i][0])))
    for i in reversed(moved[-show:] if show else []):
        a_counts, b_counts = runs["A"][i][0]["counts"], runs["B"][i][0]["counts"]
        lines.append(
            f"  {i}: tbm {best['A'][i][0] / 1000:.1f} -> {best['B'][i][0] / 1000:.1f} ms "
            f"over {runs['A'][i][0]['steps']} steps, ttfm {best['A'][i][1] / 1000:.2f} -> "
            f"{best['B'][i][1] / 1000:.2f} ms, "
            + ", ".join(f"{k} {a_counts.get(k, 0)} -> {b_counts.get(k, 0)}"
                        for k in ("rows", "plans", "seeded plans")))
    for key in sorted(runs["A"]):
        status = {side: sorted({r["status"] for r in runs[side][key]}) for side in "AB"}
        if status["A"] != status["B"]:
            lines.append(f"  status differs: {key}: A {status['A']}, B {status['B']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", nargs="?", type=Path, help="checkout A (the baseline)")
    parser.add_argument("b", nargs="?", type=Path, help="checkout B")
    parser.add_argument("--sample", type=int, default=4, help="schemas per subset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keyword", default=None,
                        help="only schemas using this keyword (say maxLength)")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--vocab", default="qwen")
    parser.add_argument("--budget", type=float, default=30.0, help="CPU seconds per schema")
    parser.add_argument("--show", type=int, default=0,
                        help="list the schemas whose time between masks moved most")
    parser.add_argument("--skip", nargs="*", default=["Github_medium/o10566"],
                        metavar="SUBSET/NAME", help="schemas left out")
    args = parser.parse_args(argv)
    if args.a is None or args.b is None:
        parser.error("give two checkouts")
    if not DATA.is_dir():
        parser.error(f"MaskBench data not found at {DATA}")
    paths = [p for p in schema_paths(sample=args.sample, seed=args.seed, keyword=args.keyword)
             if f"{p.parent.name}/{p.stem}" not in args.skip]
    print(compare(args.a.resolve(), args.b.resolve(), paths, args.reps, args.vocab,
                  args.budget, args.show))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
