"""Side-by-side benchmark of the core engine: constrain vs xgrammar, llguidance, outlines-core.

Same vocabularies (SmolLM2 49k, Qwen 151k), same regexes and choice sets, same token paths (the
real tokenizer's tokens of each target string, then EOS). Prints, per vocabulary and case, time
to first mask (compile + first mask) and time between masks (advance + next mask: mean, p50,
p99), the mask cross-check, and the ratios constrain / engine (< 1 means constrain is faster).

Run from the repository root::

    python -m benchmarks.bench_core --vocab both --reps 5 --json bench.json
    python -m benchmarks.bench_core --engines xgrammar,llguidance,outlines --cases date,uuid

>>> _parse(["--vocab", "qwen", "--reps", "2"]).reps
2
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .anchors import (
    ENGINE_NAMES,
    Engine,
    EngineError,
    XGrammarEngine,
    engine_available,
    make_engine,
)
from .cases import select_cases
from .harness import CaseReport, Options, run_case
from .vocabs import VOCAB_NAMES, load_vocab

__all__ = ["format_tables", "main"]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_core", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--vocab", default="both", choices=[*VOCAB_NAMES, "both"])
    p.add_argument("--reps", type=int, default=5, help="timed repetitions per target (default 5)")
    p.add_argument(
        "--warm",
        action="store_true",
        help="reuse one compiled grammar per engine and case (steady state) instead of "
        "compiling for every rep and target",
    )
    p.add_argument("--cases", default=None, help="comma-separated substrings of case names")
    p.add_argument("--with-json", action="store_true", help="also run the JSON Schema smoke case")
    p.add_argument(
        "--engines",
        default=",".join(ENGINE_NAMES),
        help=f"comma-separated subset of {','.join(ENGINE_NAMES)} (default: all that import)",
    )
    p.add_argument(
        "--baseline", default="constrain", help="engine the ratios divide (default constrain)"
    )
    p.add_argument("--json", dest="json_out", type=Path, default=None, help="write results here")
    p.add_argument("--probe-timeout", type=float, default=60.0, help="s; 0 disables the fork probe")
    p.add_argument("--probe-mem-gib", type=float, default=6.0)
    p.add_argument("--engine-budget", type=float, default=60.0, help="s per slow engine per case")
    p.add_argument("--xgrammar-threads", type=int, default=8, help="xgrammar compile threads")
    p.add_argument("--cache-dir", type=Path, default=None, help="SmolLM2 tokenizer cache folder")
    return p.parse_args(argv)


_LEGEND = """\
ttfm: time to first mask = compile + matcher + first fill (with --warm: matcher + first fill).
tbm: time between masks = advance + next fill, over all steps of all targets and reps.
Ratios: baseline time / engine time (< 1: the baseline is faster). check: miss = steps whose
mask lacked the path's token, rej = path tokens refused by advance, noacc = complete targets
not accepted; ok when all are 0."""


def _fmt(us: float | None) -> str:
    if us is None:
        return "-"
    if us >= 100_000:
        return f"{us / 1e6:.2f}s"
    if us >= 1000:
        return f"{us / 1e3:.2f}ms"
    return f"{us:.1f}us"


def _ratio(ours: float | None, theirs: float | None) -> str:
    if not ours or not theirs:
        return "-"
    return f"{ours / theirs:.2f}"


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _case_rows(rep: CaseReport, baseline: str) -> list[str]:
    lines = []
    base = rep.runs.get(baseline)
    bstats = base.stats() if base is not None and base.status == "ok" else None
    for name, run in rep.runs.items():
        if run.status != "ok":
            lines.append(f"  {name:<11} {run.status}: {run.detail[:90]}")
            continue
        s = run.stats()
        check = (
            f"miss={run.mask_misses} rej={run.advance_rejects} noacc={run.not_accepting}"
            if run.mask_misses or run.advance_rejects or run.not_accepting
            else "ok"
        )
        ratios = "-"
        if bstats is not None and name != baseline:
            ratios = (
                f"{_ratio(bstats['ttfm']['p50_us'], s['ttfm']['p50_us'])} / "
                f"{_ratio(bstats['tbm']['mean_us'], s['tbm']['mean_us'])}"
            )
        lines.append(
            f"  {name:<11} {_fmt(s['ttfm']['p50_us']):>9} {_fmt(s['ttfm']['mean_us']):>9} "
            f"{_fmt(s['tbm']['mean_us']):>9} {_fmt(s['tbm']['p50_us']):>9} "
            f"{_fmt(s['tbm']['p99_us']):>9} {run.reps:>4}  {ratios:<13} {check}"
        )
    for pair, d in rep.disagreements.items():
        a, b = pair.split("|")
        lines.append(
            f"  masks differ {a} vs {b}: {d['steps']}/{rep.steps_compared} steps; tokens only "
            f"{a} allows: {d['only_' + a]}, only {b} allows: {d['only_' + b]}"
        )
    return lines


def format_tables(
    reports: list[CaseReport],
    engines: dict[str, dict[str, Engine]],
    baseline: str,
    warm: bool = False,
) -> str:
    """The human-readable tables, one per vocabulary, with a summary block each."""
    out: list[str] = []
    for vocab in dict.fromkeys(r.vocab for r in reports):
        vr = [r for r in reports if r.vocab == vocab]
        mode = "warm: grammar reused" if warm else "cold: new compile per rep and target"
        out.append(f"\n=== vocabulary {vocab} ({mode}) ===")
        setup = ", ".join(f"{n} {e.setup_s:.2f}s" for n, e in engines[vocab].items())
        out.append(f"tokenizer-info setup (once, not in compile): {setup}")
        out.append(
            f"  {'engine':<11} {'ttfm p50':>9} {'ttfm mean':>9} {'tbm mean':>9} {'tbm p50':>9} "
            f"{'tbm p99':>9} {'reps':>4}  {baseline + '/x':<13} check"
        )
        out.append(
            f"  {'':<11} {'':>9} {'':>9} {'':>9} {'':>9} {'':>9} {'':>4}  {'ttfm / tbm':<13}"
        )
        for r in vr:
            out.append(f"{r.case} [{r.kind}] paths={r.path_lengths}")
            out.extend(_case_rows(r, baseline))
        out.append(
            f"summary over cases where both ran (geometric means of per-case ratios {baseline}/x):"
        )
        for name in engines[vocab]:
            ttfm_r, tbm_r, ttfm_abs, tbm_abs = [], [], [], []
            for r in vr:
                run, base = r.runs.get(name), r.runs.get(baseline)
                if run is None or run.status != "ok":
                    continue
                s = run.stats()
                ttfm_abs.append(s["ttfm"]["p50_us"])
                tbm_abs.append(s["tbm"]["mean_us"])
                if base is not None and base.status == "ok" and name != baseline:
                    b = base.stats()
                    if b["ttfm"]["p50_us"] and s["ttfm"]["p50_us"]:
                        ttfm_r.append(b["ttfm"]["p50_us"] / s["ttfm"]["p50_us"])
                    if b["tbm"]["mean_us"] and s["tbm"]["mean_us"]:
                        tbm_r.append(b["tbm"]["mean_us"] / s["tbm"]["mean_us"])
            g_ttfm, g_tbm = _geomean(ttfm_r), _geomean(tbm_r)
            out.append(
                f"  {name:<11} ttfm p50 geomean {_fmt(_geomean(ttfm_abs)):>9}, tbm mean geomean "
                f"{_fmt(_geomean(tbm_abs)):>9} ({len(ttfm_abs)} cases)"
                + (
                    f"; ratio ttfm {g_ttfm:.2f}, tbm {g_tbm:.2f} over {len(ttfm_r)} cases"
                    if g_ttfm and g_tbm
                    else ""
                )
            )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the process exit code (0 unless nothing could run)."""
    args = _parse(argv)
    XGrammarEngine.max_threads = args.xgrammar_threads
    wanted = [e for e in args.engines.split(",") if e]
    names = []
    for name in wanted:
        why = engine_available(name)
        if why is None:
            names.append(name)
        else:
            print(f"skipping {name}: {why}", file=sys.stderr)
    cases = select_cases(args.cases, with_json=args.with_json)
    if not names or not cases:
        print("nothing to run (no engine or no case selected)", file=sys.stderr)
        return 2
    baseline = args.baseline if args.baseline in names else names[0]
    opts = Options(
        reps=args.reps,
        warm=args.warm,
        probe_timeout_s=args.probe_timeout,
        probe_mem_gib=args.probe_mem_gib,
        engine_budget_s=args.engine_budget,
    )
    vocabs = list(VOCAB_NAMES) if args.vocab == "both" else [args.vocab]
    reports: list[CaseReport] = []
    engines: dict[str, dict[str, Engine]] = {}
    meta: dict[str, Any] = {"vocabs": {}, "engines": {}}
    for vname in vocabs:
        bv = load_vocab(vname, args.cache_dir)
        print(
            f"[{vname}] vocabulary: {bv.size} ids, eos {bv.eos_id}, loaded in {bv.load_s:.2f}s",
            flush=True,
        )
        meta["vocabs"][vname] = {"size": bv.size, "eos": bv.eos_id, "load_s": bv.load_s}
        engines[vname] = {}
        for name in names:
            try:
                engines[vname][name] = make_engine(name, bv)
            except EngineError as e:
                print(f"[{vname}] {name} setup failed: {e}", file=sys.stderr)
                continue
            desc = engines[vname][name].describe()
            meta["engines"].setdefault(name, {})[vname] = desc
            print(f"[{vname}] {name} setup {desc['setup_s']:.2f}s ({desc['cache']})", flush=True)
        for case in cases:
            t0 = time.perf_counter()
            rep = run_case(list(engines[vname].values()), bv, case, opts)
            reports.append(rep)
            print(f"[{vname}] {case.name}: {time.perf_counter() - t0:.1f}s", flush=True)
    print(_LEGEND)
    print(format_tables(reports, engines, baseline, args.warm))
    if args.json_out is not None:
        doc = {
            "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
            "options": {
                **vars(opts),
                "xgrammar_threads": args.xgrammar_threads,
                "baseline": baseline,
            },
            **meta,
            "cases": [r.to_json() for r in reports],
        }
        args.json_out.write_text(json.dumps(doc, indent=1))
        print(f"wrote {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
