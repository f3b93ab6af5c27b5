"""Where constrain's MaskBench time goes: the token-level method in one process, profiled.

Runs :func:`benchmarks.maskbench.check_schema` (the same method as the side-by-side run)
for constrain alone, in this process with a CPU-time budget per schema, over a stratified sample, and
prints time to first mask and time between masks (avg, p50, p99), the schemas that cost
the most, what the garbage collector took (its young and full passes, and the objects it
freed: those left in reference cycles), and optionally a ``cProfile`` table of the whole
run. A steadier way than the side-by-side run to see whether an engine change helped: no
anchor shares the machine.

    python -m benchmarks.maskbench_profile --sample 4             # 84 schemas
    python -m benchmarks.maskbench_profile --sample 4 --profile tottime
    python -m benchmarks.maskbench_profile --only Github_ultra/o65424 Kubernetes/kb_661_Normalized
    python -m benchmarks.maskbench_profile --sample 0 --keyword if --budget 10   # 73 schemas
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import time
import warnings
from typing import Any

import numpy as np

from .anchors import ConstrainEngine
from .maskbench import DATA, check_schema, schema_paths
from .maskbench_bytes import CpuTimeout, arm_cpu_alarm, stop_cpu_alarm
from .vocabs import load_vocab


def _check_within(engine: Any, path: Any, budget: float) -> dict[str, Any]:
    arm_cpu_alarm(budget)
    try:
        try:
            return check_schema(engine, path)
        finally:
            stop_cpu_alarm()
    except CpuTimeout:
        stop_cpu_alarm()  # it may have fired again on the way out
        return {"id": f"{path.parent.name}/{path.stem}", "status": "timeout"}
    except Exception as e:  # noqa: BLE001 - a budget error while matching, say
        return {"id": f"{path.parent.name}/{path.stem}", "status": "error",
                "detail": f"{type(e).__name__}: {e}"[:300]}


class CollectorClock:
    """Time and count the garbage collector's passes while installed (``gc.callbacks``).

    >>> clock = CollectorClock()
    >>> clock.install(); _ = gc.collect(); clock.remove()
    >>> clock.passes[2] >= 1
    True
    """

    def __init__(self) -> None:
        self.passes = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self.freed = 0  # objects found unreachable: what reference counting left behind
        self._began = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        generation = info["generation"]
        self.passes[generation] += 1
        self.seconds[generation] += time.perf_counter() - self._began
        self.freed += info["collected"]

    def install(self) -> None:
        gc.callbacks.append(self._callback)

    def remove(self) -> None:
        gc.callbacks.remove(self._callback)

    def summary(self) -> str:
        young = self.seconds[0] + self.seconds[1]
        return (f"collector: {self.passes[0] + self.passes[1]} young passes ({young:.2f} s), "
                f"{self.passes[2]} full ({self.seconds[2]:.2f} s); {self.freed} objects "
                f"freed by it (left in reference cycles)")


def _stats(values: list[float]) -> str:
    if not values:
        return "none"
    a = np.asarray(values)
    return (f"avg {a.mean():.1f} µs, p50 {np.percentile(a, 50):.1f} µs, "
            f"p99 {np.percentile(a, 99):.1f} µs over {len(a)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=4,
                        help="schemas per subset (0: all of them)")
    parser.add_argument("--keyword", default=None,
                        help="only schemas using this keyword (say if)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab", default="qwen")
    parser.add_argument("--profile", metavar="SORT", help="cProfile sort key (tottime, cumtime)")
    parser.add_argument("--top", type=int, default=8, help="costliest schemas to list")
    parser.add_argument("--budget", type=float, default=20.0, help="CPU seconds per schema")
    parser.add_argument("--only", nargs="+", metavar="SUBSET/NAME",
                        help="these schemas instead of a sample (e.g. Github_ultra/o65424)")
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        parser.error(f"MaskBench data not found at {DATA}")
    engine = ConstrainEngine(load_vocab(args.vocab))
    profiler = cProfile.Profile() if args.profile else None
    results: list[dict[str, Any]] = []
    clock = CollectorClock()
    clock.install()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if profiler:
            profiler.enable()
        paths = ([DATA / f"{name}.json" for name in args.only] if args.only
                 else schema_paths(sample=args.sample or None, seed=args.seed,
                                   keyword=args.keyword))
        for path in paths:
            results.append(_check_within(engine, path, args.budget))
        if profiler:
            profiler.disable()
    clock.remove()
    ok = [r for r in results if r["status"] == "ok"]
    print(f"{len(results)} schemas, {len(ok)} passing, "
          f"{sum(r['status'] == 'wrong' for r in results)} wrong, "
          f"{sum(r['status'] == 'refused' for r in results)} refused, "
          f"{sum(r['status'] == 'timeout' for r in results)} over the budget, "
          f"{sum(r['status'] == 'error' for r in results)} errors while matching")
    print("ttfm:", _stats([t for r in ok for t in r["ttfm_us"]]))
    print("tbm: ", _stats([t for r in ok for t in r["tbm_us"]]))
    print(clock.summary())
    for r in results:
        if r["status"] in ("error", "wrong", "timeout", "refused"):
            print(f"  {r['status']}: {r['id']} {r.get('detail', '')[:160]}")
    costliest = sorted(ok, key=lambda r: -sum(r["tbm_us"]))[: args.top]
    for r in costliest:
        print(f"  {r['id']}: {sum(r['tbm_us']) / 1000:.0f} ms over {len(r['tbm_us'])} steps")
    if profiler:
        pstats.Stats(profiler).sort_stats(args.profile).print_stats(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
