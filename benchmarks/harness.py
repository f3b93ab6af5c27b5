"""Measurement machinery shared by every side-by-side benchmark (regex/choice, JSON Schema).

:func:`run_case` takes engines bound to one vocabulary and one :class:`~benchmarks.cases.Case`:

1. **Probe** (optional): each engine compiles once in a forked child with a time and memory
   limit, so an engine whose compile explodes (outlines-core builds the full DFA x vocabulary
   table) is reported as ``timeout``/``oom`` instead of hanging the run.
2. **Warm-up and cross-check** (untimed): every engine walks every target's token path in
   lock-step; at each step each engine's mask is converted to canonical words and checked to
   contain the path's token, and every pair of engines is compared (disagreements counted).
3. **Timed reps**, engines interleaved (rotated order each rep) so machine noise hits all alike.
   Each rep and target: a new compile, so every sample is a request on an unseen grammar.
   *Time to first mask* = compile + matcher + first fill. *Time between masks* = for each path
   token, ``advance(token)`` + fill of the next mask. ``time.perf_counter_ns``, GC off inside.
   With ``Options(warm=True)`` the grammar compiled by step 2 is reused instead (steady state
   of a server that sees the same constraint again).

>>> summarize([1000, 2000, 3000])["p50_us"]
2.0
"""

from __future__ import annotations

import gc
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .anchors import BenchMatcher, Engine, EngineError, MatcherFactory
from .cases import Case
from .vocabs import BenchVocab

__all__ = ["CaseReport", "EngineRun", "Options", "run_case", "summarize"]

_ns = time.perf_counter_ns


@dataclass(frozen=True)
class Options:
    """How hard to measure; the defaults fit a shared 2-core machine.

    ``reps``: timed repetitions per target. ``warm``: reuse the grammar compiled (and walked)
    by the cross-check pass instead of compiling per rep, so masks an engine memoizes per
    compiled grammar are warm; "time to first mask" is then matcher creation + first fill.
    ``probe_timeout_s`` / ``probe_mem_gib``: limits of
    the forked compile probe (``probe_timeout_s=0`` skips probing). ``engine_budget_s``: an
    engine whose probed compile is slow gets fewer reps, so that its reps for one case stay
    near this budget (at least one rep always runs).
    """

    reps: int = 5
    warm: bool = False
    probe_timeout_s: float = 60.0
    probe_mem_gib: float = 6.0
    engine_budget_s: float = 60.0
    max_examples: int = 3


@dataclass
class EngineRun:
    """One engine's results on one case."""

    engine: str
    status: str = "ok"  # ok | error | timeout | oom | crashed
    detail: str = ""
    probe_s: float | None = None
    reps: int = 0
    compile_ns: list[int] = field(default_factory=list)
    ttfm_ns: list[int] = field(default_factory=list)
    tbm_ns: list[int] = field(default_factory=list)
    steps_checked: int = 0
    mask_misses: int = 0  # the path's next token was missing from the engine's mask
    advance_rejects: int = 0  # advance(token) returned False on a path token
    not_accepting: int = 0  # a complete target was not accepted (EOS refused)

    def stats(self) -> dict[str, Any]:
        """Summaries of the three timing series."""
        return {
            "compile": summarize(self.compile_ns),
            "ttfm": summarize(self.ttfm_ns),
            "tbm": summarize(self.tbm_ns),
        }


@dataclass
class CaseReport:
    """Everything measured for one case on one vocabulary."""

    case: str
    kind: str
    vocab: str
    path_lengths: list[int]
    runs: dict[str, EngineRun]
    steps_compared: int = 0
    disagreements: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (raw samples omitted, summaries kept)."""
        return {
            "case": self.case,
            "kind": self.kind,
            "vocab": self.vocab,
            "path_lengths": self.path_lengths,
            "steps_compared": self.steps_compared,
            "disagreements": self.disagreements,
            "engines": {
                name: {
                    "status": r.status,
                    "detail": r.detail,
                    "probe_s": r.probe_s,
                    "reps": r.reps,
                    "steps_checked": r.steps_checked,
                    "mask_misses": r.mask_misses,
                    "advance_rejects": r.advance_rejects,
                    "not_accepting": r.not_accepting,
                    **r.stats(),
                }
                for name, r in self.runs.items()
            },
        }


def summarize(samples_ns: Sequence[int]) -> dict[str, Any]:
    """n, mean, p50 and p99 in microseconds (None when there are no samples).

    >>> summarize([])["mean_us"] is None
    True
    """
    if not samples_ns:
        return {"n": 0, "mean_us": None, "p50_us": None, "p99_us": None}
    a = np.asarray(samples_ns, dtype=np.float64) / 1e3
    return {
        "n": int(a.size),
        "mean_us": float(a.mean()),
        "p50_us": float(np.percentile(a, 50)),
        "p99_us": float(np.percentile(a, 99)),
    }


# ---------------------------------------------------------------------------------- probe


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _probe(engine: Engine, case: Case, opts: Options) -> tuple[str, str, float | None]:
    """Compile + first fill in a forked child; (status, detail, seconds)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report "ok <s>" or "error <msg>" and leave without cleanup
        os.close(read_fd)
        try:
            t0 = time.perf_counter()
            m = engine.compile(case.kind, case.spec)()
            m.fill(engine.new_bitmask())
            msg = f"ok {time.perf_counter() - t0}"
        except Exception as e:  # noqa: BLE001 - any failure is a result to report
            msg = f"error {type(e).__name__}: {e}"
        os.write(write_fd, msg.encode("utf-8", "replace")[:4000])
        os._exit(0)
    os.close(write_fd)
    limit = opts.probe_mem_gib * 2**30
    deadline = time.monotonic() + opts.probe_timeout_s
    status = ""
    while True:
        done, wstatus = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            status = "timeout"
        elif _rss_bytes(pid) > limit:
            status = "oom"
        if status:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_fd)
            what = (
                f"> {opts.probe_timeout_s:g} s"
                if status == "timeout"
                else f"> {opts.probe_mem_gib:g} GiB"
            )
            return status, f"compile probe killed ({what})", None
        time.sleep(0.02)
    with os.fdopen(read_fd, "rb") as f:
        msg = f.read().decode("utf-8", "replace")
    if msg.startswith("ok "):
        return "ok", "", float(msg[3:])
    if msg.startswith("error "):
        return "error", msg[6:], None
    return "crashed", f"probe exited with status {wstatus} and no report", None


# ------------------------------------------------------------------------ cross-check pass


def _bits(words: np.ndarray, token: int) -> bool:
    return bool((int(words[token >> 5]) >> (token & 31)) & 1)


def _token_ids(words: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))


def _cross_check(
    engines: Sequence[Engine],
    bv: BenchVocab,
    case: Case,
    paths: list[list[int]],
    report: CaseReport,
    opts: Options,
) -> dict[str, MatcherFactory]:
    live = [e for e in engines if report.runs[e.name].status == "ok"]
    factories: dict[str, MatcherFactory] = {}
    for e in live:
        try:
            factories[e.name] = e.compile(case.kind, case.spec)
        except EngineError as err:  # the probe passed but the in-process compile did not
            report.runs[e.name].status, report.runs[e.name].detail = "error", str(err)
    live = [e for e in live if e.name in factories]
    for ti, path in enumerate(paths):
        matchers: dict[str, BenchMatcher] = {e.name: factories[e.name]() for e in live}
        masks = {e.name: e.new_bitmask() for e in live}
        full = path + [bv.eos_id]
        for step, token in enumerate(full):
            words: dict[str, np.ndarray] = {}
            for e in live:
                if e.name not in matchers:
                    continue
                matchers[e.name].fill(masks[e.name])
                words[e.name] = e.to_words(masks[e.name])
                run = report.runs[e.name]
                run.steps_checked += 1
                if not _bits(words[e.name], token):
                    run.mask_misses += 1
            names = sorted(words)
            if len(names) > 1:
                report.steps_compared += 1
            for i, a in enumerate(names):
                for b in names[i + 1 :]:
                    diff = words[a] ^ words[b]
                    if not diff.any():
                        continue
                    d = report.disagreements.setdefault(
                        f"{a}|{b}",
                        {"steps": 0, f"only_{a}": 0, f"only_{b}": 0, "examples": []},
                    )
                    only_a = _token_ids(words[a] & ~words[b])
                    only_b = _token_ids(words[b] & ~words[a])
                    d["steps"] += 1
                    d[f"only_{a}"] += int(only_a.size)
                    d[f"only_{b}"] += int(only_b.size)
                    if len(d["examples"]) < opts.max_examples:
                        d["examples"].append(
                            {
                                "target": ti,
                                "step": step,
                                "prefix": bv.vocab.decode(path[:step]).decode("utf-8", "replace"),
                                f"only_{a}": [bv.describe(int(t)) for t in only_a[:4]],
                                f"only_{b}": [bv.describe(int(t)) for t in only_b[:4]],
                            }
                        )
            for name in list(matchers):
                m = matchers[name]
                if token == bv.eos_id and not m.is_accepting():
                    report.runs[name].not_accepting += 1
                if not m.advance(token):
                    report.runs[name].advance_rejects += 1
                    del matchers[name]  # cannot follow this path any further
    return factories


# ----------------------------------------------------------------------------- timed reps


def _timed_rep(
    engine: Engine, case: Case, path: list[int], run: EngineRun, warm: MatcherFactory | None
) -> None:
    if warm is None:
        engine.before_compile()
    bitmask = engine.new_bitmask()
    gc.collect()
    gc.disable()
    try:
        t0 = _ns()
        m = (warm if warm is not None else engine.compile(case.kind, case.spec))()
        t1 = _ns()
        m.fill(bitmask)
        t2 = _ns()
        steps: list[int] = []
        for token in path:
            s0 = _ns()
            ok = m.advance(token)
            m.fill(bitmask)
            s1 = _ns()
            if not ok:  # already counted by the cross-check; keep only valid steps
                break
            steps.append(s1 - s0)
    finally:
        gc.enable()
    run.compile_ns.append(t1 - t0)
    run.ttfm_ns.append(t2 - t0)
    run.tbm_ns.extend(steps)


def _reps_for(run: EngineRun, n_targets: int, opts: Options) -> int:
    if opts.warm or run.probe_s is None or run.probe_s <= 0:
        return opts.reps
    fit = int(opts.engine_budget_s / (run.probe_s * max(1, n_targets)))
    return max(1, min(opts.reps, fit))


def run_case(
    engines: Sequence[Engine], bv: BenchVocab, case: Case, opts: Options = Options()
) -> CaseReport:
    """Probe, cross-check and time ``engines`` on ``case`` over ``bv``; see the module doc."""
    paths = [bv.path(t) for t in case.targets]
    report = CaseReport(
        case=case.name,
        kind=case.kind,
        vocab=bv.name,
        path_lengths=[len(p) for p in paths],
        runs={e.name: EngineRun(e.name) for e in engines},
    )
    for e in engines:
        run = report.runs[e.name]
        if opts.probe_timeout_s > 0:
            run.status, run.detail, run.probe_s = _probe(e, case, opts)
    factories = _cross_check(engines, bv, case, paths, report, opts)
    live = [e for e in engines if report.runs[e.name].status == "ok"]
    reps = {e.name: _reps_for(report.runs[e.name], len(paths), opts) for e in live}
    for rep in range(max(reps.values(), default=0)):
        k = rep % len(live)
        order = live[k:] + live[:k]
        for path in paths:
            for e in order:
                if rep < reps[e.name]:
                    warm = factories[e.name] if opts.warm else None
                    _timed_rep(e, case, path, report.runs[e.name], warm)
    for e in live:
        report.runs[e.name].reps = reps[e.name]
    return report
