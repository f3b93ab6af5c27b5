"""Two checkouts of constrain compiling the core cases, paired in one process.

`bench_core` collects garbage before every timed compile, and right after a collection a
small regex's compile takes 2-4x as long as back to back (every kind of numpy call pays
its first use again). Two runs of `bench_core`, one per version, disagree by more than
most changes to a compile are worth. Here the base checkout's ``constrain`` package is
copied under another name and imported beside the one under test, and the two compile
each case in turn, in alternating order, each right after ``gc.collect()``: a slow
spell hits both. Each compile is timed up to its first mask (compile, matcher, first
fill), as ``bench_core`` times it.

    git worktree add /tmp/base HEAD~1
    python -m benchmarks.compile_ab /tmp/base . --cases float,iso_date --reps 200

It prints, per case, each side's median time to first mask and their ratio B/A.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .anchors import clear_compiled
from .cases import CASES, Case, select_cases
from .vocabs import load_vocab


def import_checkout(checkout: Path, name: str, into: Path) -> ModuleType:
    """``checkout``'s ``constrain`` package, copied into ``into`` as package ``name`` and
    imported (its modules import each other relatively, so the copy is self-contained)."""
    source = checkout / "constrain"
    if not (source / "__init__.py").is_file():
        raise SystemExit(f"{checkout} has no constrain package")
    shutil.copytree(source, into / name, ignore=shutil.ignore_patterns("__pycache__"))
    if str(into) not in sys.path:
        sys.path.insert(0, str(into))
    return importlib.import_module(name)


class _Side:
    """One version: its package and its vocabulary over the bench vocabulary's source."""

    def __init__(self, package: ModuleType, bench_vocab: Any) -> None:
        self.package = package
        self.vocab = package.Vocabulary.from_tiktoken(bench_vocab.source)
        # The per-vocabulary trie and the compiled walks are loaded once, as in bench_core.
        warm = package.compile_regex("[a-z]*!", self.vocab).matcher()
        warm.fill_bitmask(np.zeros((1, warm.compiled.mask_words), dtype=np.int32), 0)

    def time_to_first_mask(self, case: Case) -> int:
        """Nanoseconds to compile ``case`` and fill its first mask, right after a full
        collection (the compiled-constraint cache emptied first)."""
        package = self.package
        clear_compiled(package)
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter_ns()
            if case.kind == "regex":
                compiled = package.compile_regex(case.spec, self.vocab)
            else:
                compiled = package.compile_choice(list(case.spec), self.vocab)
            matcher = compiled.matcher()
            matcher.fill_bitmask(np.zeros((1, compiled.mask_words), dtype=np.int32), 0)
            return time.perf_counter_ns() - started
        finally:
            gc.enable()


def compare(base: _Side, new: _Side, case: Case, reps: int) -> tuple[float, float]:
    """Median time to first mask (µs) of ``base`` and ``new`` on ``case``, paired."""
    for _ in range(3):  # first compiles load what each case's masks share per vocabulary
        base.time_to_first_mask(case)
        new.time_to_first_mask(case)
    times: dict[str, list[int]] = {"base": [], "new": []}
    for rep in range(reps):
        order = (("base", base), ("new", new)) if rep % 2 else (("new", new), ("base", base))
        for label, side in order:
            times[label].append(side.time_to_first_mask(case))
    return statistics.median(times["base"]) / 1e3, statistics.median(times["new"]) / 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path, help="checkout A (the reference)")
    parser.add_argument("new", type=Path, help="checkout B (the change)")
    parser.add_argument("--cases", default="", help="comma-separated substrings of case names")
    parser.add_argument("--reps", type=int, default=100, help="paired compiles per case")
    args = parser.parse_args(argv)
    cases = [c for c in (select_cases(args.cases) if args.cases else CASES)
             if c.kind in ("regex", "choice")]
    bench_vocab = load_vocab("qwen")
    with tempfile.TemporaryDirectory(prefix="compile_ab_") as scratch:
        into = Path(scratch)
        sides = [_Side(import_checkout(checkout.resolve(), name, into), bench_vocab)
                 for checkout, name in ((args.base, "constrain_ab_base"),
                                        (args.new, "constrain_ab_new"))]
        print(f"{'case':14s} {'A µs':>9s} {'B µs':>9s}   B/A   ({args.reps} paired compiles each)")
        ratios = []
        for case in cases:
            a, b = compare(sides[0], sides[1], case, args.reps)
            ratios.append(b / a)
            print(f"{case.name:14s} {a:9.1f} {b:9.1f}  {b / a:.3f}", flush=True)
        if ratios:
            print(f"geometric mean B/A {statistics.geometric_mean(ratios):.3f} over {len(ratios)} cases")


if __name__ == "__main__":
    main()
