"""MaskBench (JSONSchemaBench) at the token level, every engine by the same method.

For each schema and engine: compile, then for each test instance serialize it with
``json.dumps(data, ensure_ascii=False)``, tokenize it without special tokens, and walk the
tokens: at every step fill the mask, check the token's bit, advance. A valid instance must
pass every step and have EOS allowed at the end; an invalid one must fail somewhere.
Timings: time to first mask (compile + first fill) and time between masks (advance + fill).

Each engine runs in its own worker process, one schema at a time with a deadline; a
schema that exceeds it is recorded as ``timeout`` and the worker is restarted, so no
schema can hang the run. The data is read in place from ``../shared/data/jsonschemabench``.

    python -m benchmarks.maskbench --engines constrain,llguidance --sample 40 \\
        --report docs/maskbench.md --json benchmarks/results/maskbench.json

``--sample N`` takes N schemas per subset (fixed seed); ``--all`` takes every schema.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "jsonschemabench"

__all__ = ["DATA", "check_schema", "schema_paths", "summarize_results"]


def schema_paths(root: Path = DATA, *, sample: int | None = None, seed: int = 0,
                 subsets: Iterable[str] | None = None, keyword: str | None = None) -> list[Path]:
    """Schema files, sorted; ``sample`` keeps that many per subset (seeded), among those
    whose schema uses ``keyword`` (as a key anywhere in it) when one is given."""
    wanted = set(subsets) if subsets else None
    out: list[Path] = []
    for subset in sorted(p for p in root.iterdir() if p.is_dir()):
        if wanted and subset.name not in wanted:
            continue
        files = sorted(subset.glob("*.json"))
        if keyword is not None:
            files = [f for f in files if _uses_keyword(
                json.loads(f.read_text(encoding="utf-8")).get("schema"), keyword)]
        if sample is not None and len(files) > sample:
            files = sorted(random.Random(f"{seed}:{subset.name}").sample(files, sample))
        out.extend(files)
    return out


def _uses_keyword(node: Any, keyword: str) -> bool:
    todo = [node]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if keyword in node:
                return True
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return False


_KEYWORD = re.compile(r"keyword '([^']+)'")


def check_schema(engine: Any, path: Path) -> dict[str, Any]:
    """Run one schema's instances through one engine (see the module docstring)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    result: dict[str, Any] = {
        "id": f"{path.parent.name}/{path.stem}", "engine": engine.name, "status": "ok",
        "valid": 0, "invalid": 0, "valid_rejected": 0, "invalid_accepted": 0,
        "ttfm_us": [], "tbm_us": [],
    }
    tests = doc.get("tests", [])
    bv = engine.bv
    eos = bv.eos_id
    try:
        engine.before_compile()
        t0 = time.perf_counter_ns()
        factory = engine.compile("json", doc["schema"])
        matcher = factory()
        bitmask = engine.new_bitmask()
        matcher.fill(bitmask)
        result["ttfm_us"].append((time.perf_counter_ns() - t0) / 1000)
    except Exception as e:  # noqa: BLE001 - every engine error is a result, not a crash
        # A compile-time rejection (a refused keyword, an invalid schema, a budget).
        message = str(e)
        result["status"] = "refused"
        found = _KEYWORD.search(message)
        result["keyword"] = found.group(1) if found else None
        result["detail"] = message[:300]
        return result
    for test in tests:
        text = json.dumps(test["data"], ensure_ascii=False)
        tokens = bv.encode(text)
        m = factory()
        bm = engine.new_bitmask()
        ok = True
        t_prev = time.perf_counter_ns()
        m.fill(bm)
        for token in tokens:
            words = engine.to_words(bm)
            if not words[token >> 5] >> (token & 31) & 1:
                ok = False
                break
            t_prev = time.perf_counter_ns()
            if not m.advance(token):
                ok = False
                break
            m.fill(bm)
            result["tbm_us"].append((time.perf_counter_ns() - t_prev) / 1000)
        if ok:
            words = engine.to_words(bm)
            ok = bool(words[eos >> 5] >> (eos & 31) & 1)
        if test["valid"]:
            result["valid"] += 1
            result["valid_rejected"] += not ok
        else:
            result["invalid"] += 1
            result["invalid_accepted"] += ok
    if result["valid_rejected"] or result["invalid_accepted"]:
        result["status"] = "wrong"
    return result


# ------------------------------------------------------------------------------ workers


def _worker(engine_name: str, vocab_name: str) -> None:
    """Read schema paths on stdin, write one JSON result per line on stdout."""
    from .anchors import make_engine
    from .vocabs import load_vocab

    engine = make_engine(engine_name, load_vocab(vocab_name))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        path = Path(line.strip())
        try:
            result = check_schema(engine, path)
        except Exception as e:  # noqa: BLE001
            result = {"id": f"{path.parent.name}/{path.stem}", "engine": engine_name,
                      "status": "error", "detail": f"{type(e).__name__}: {e}"[:300]}
        print(json.dumps(result), flush=True)


class _Worker:
    def __init__(self, engine: str, vocab: str) -> None:
        self.engine, self.vocab = engine, vocab
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.maskbench", "--worker", self.engine,
             "--vocab", self.vocab],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            cwd=Path(__file__).resolve().parents[1],
        )
        self._read(600)  # the ready line (vocabulary load, JIT warm-up)

    def _read(self, timeout: float) -> dict[str, Any] | None:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def run(self, path: Path, timeout: float) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(f"{path}\n")
        self.proc.stdin.flush()
        result = self._read(timeout)
        if result is None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            return {"id": f"{path.parent.name}/{path.stem}", "engine": self.engine,
                    "status": "timeout"}
        return result

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


# ------------------------------------------------------------------------------ reports


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"avg": float("nan"), "p50": float("nan"), "p99": float("nan")}
    ordered = sorted(values)
    return {
        "avg": sum(ordered) / len(ordered),
        "p50": ordered[len(ordered) // 2],
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
    }


def summarize_results(results: list[dict[str, Any]]) -> str:
    """Markdown tables: per engine and subset, then unsupported keywords, then timings."""
    by_engine: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by_engine[r["engine"]].append(r)
    lines = []
    for engine, rows in sorted(by_engine.items()):
        lines += [f"### {engine}", "",
                  ("| subset | schemas | compiled | passing | valid rejected | invalid accepted "
                   "| refused | crashed | timeouts |"),
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        per_subset: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            per_subset[r["id"].split("/")[0]].append(r)
        for subset, items in sorted(per_subset.items()) + [("TOTAL", rows)]:
            compiled = [r for r in items if r["status"] in ("ok", "wrong")]
            lines.append(
                f"| {subset} | {len(items)} | {len(compiled)} "
                f"| {sum(r['status'] == 'ok' for r in items)} "
                f"| {sum(r.get('valid_rejected', 0) for r in compiled)} "
                f"| {sum(r.get('invalid_accepted', 0) for r in compiled)} "
                f"| {sum(r['status'] == 'refused' for r in items)} "
                f"| {sum(r['status'] == 'error' for r in items)} "
                f"| {sum(r['status'] == 'timeout' for r in items)} |"
            )
        keywords = Counter(r.get("keyword") or "?" for r in rows if r["status"] == "refused")
        if keywords:
            lines += ["", "Refused, by keyword named in the error (? = none named): " + ", ".join(
                f"`{k}` {n}" for k, n in keywords.most_common())]
        lines.append("")
    lines += _keyword_table(by_engine)
    lines += _timing_table("Timings (µs; compiled schemas only)", by_engine)
    if len(by_engine) > 1:
        # Each engine's own set above includes the hard schemas only it compiles; here the
        # same schemas and instances for all: those every engine passed.
        passing = [{r["id"] for r in rows if r["status"] == "ok"} for rows in by_engine.values()]
        common = set.intersection(*passing)
        lines += _timing_table(
            f"Timings (µs) on the {len(common)} schemas every engine passed",
            {e: [r for r in rows if r["id"] in common] for e, rows in by_engine.items()})
    return "\n".join(lines) + "\n"


def _keyword_table(by_engine: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Per asserting keyword: the schemas of the run that use it anywhere, and per engine
    how many of those pass and how many it refused naming that keyword."""
    from .maskbench_bytes import keywords_used

    ids = sorted({r["id"] for rows in by_engine.values() for r in rows})
    using: dict[str, set[str]] = defaultdict(set)
    for schema_id in ids:
        path = DATA / f"{schema_id}.json"
        if path.exists():
            schema = json.loads(path.read_text(encoding="utf-8")).get("schema")
            for keyword in keywords_used(schema):
                using[keyword].add(schema_id)
    engines = sorted(by_engine)
    # Refusals by keyword only for engines whose errors name one (llguidance's do not).
    naming = {e: any(r.get("keyword") for r in by_engine[e]) for e in engines}
    columns = [f"{e} passing" + (f" | {e} refused for it" if naming[e] else "")
               for e in engines]
    lines = ["### Asserting keywords: schemas using each, passing, refused naming it", "",
             "| keyword | schemas using it | " + " | ".join(columns) + " |",
             "|---|---:|" + "".join("---:|---:|" if naming[e] else "---:|" for e in engines)]
    for keyword, users in sorted(using.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        cells = []
        for engine in engines:
            rows = [r for r in by_engine[engine] if r["id"] in users]
            cell = f"{sum(r['status'] == 'ok' for r in rows):,}"
            if naming[engine]:
                refused = sum(r["status"] == "refused" and r.get("keyword") == keyword
                              for r in rows)
                cell += f" | {refused:,}"
            cells.append(cell)
        lines.append(f"| `{keyword}` | {len(users):,} | " + " | ".join(cells) + " |")
    return lines + [""]


def _timing_table(title: str, by_engine: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = [f"### {title}", "",
             "| engine | ttfm avg | ttfm p50 | ttfm p99 | tbm avg | tbm p50 | tbm p99 | masks |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for engine, rows in sorted(by_engine.items()):
        ttfm = _stats([t for r in rows for t in r.get("ttfm_us", [])])
        tbm_values = [t for r in rows for t in r.get("tbm_us", [])]
        tbm = _stats(tbm_values)
        lines.append(
            f"| {engine} | {ttfm['avg']:.0f} | {ttfm['p50']:.0f} | {ttfm['p99']:.0f} "
            f"| {tbm['avg']:.1f} | {tbm['p50']:.1f} | {tbm['p99']:.1f} | {len(tbm_values)} |"
        )
    return lines + [""]


def _load_jsonl(path: Path, engines: list[str]) -> list[dict[str, Any]]:
    """Results of an earlier (maybe interrupted) run; a torn last line is dropped."""
    if not path.exists():
        return []
    results = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            result = json.loads(line)
        except json.JSONDecodeError:
            continue
        if result.get("engine") in engines:
            results.append(result)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engines", default="constrain,llguidance")
    parser.add_argument("--vocab", default="qwen")
    parser.add_argument("--sample", type=int, default=20, help="schemas per subset")
    parser.add_argument("--all", action="store_true", help="every schema")
    parser.add_argument("--subsets", default="")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per schema")
    parser.add_argument("--json", type=Path, help="write per-schema results here")
    parser.add_argument("--report", type=Path, help="write the markdown report here")
    parser.add_argument("--jsonl", type=Path,
                        help="append each result here as it lands (timings included) and skip "
                             "schemas already in it, so a long run survives being stopped")
    parser.add_argument("--report-only", action="store_true",
                        help="only summarize the results already in --jsonl")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker, args.vocab)
        return 0
    if not DATA.is_dir():
        print(f"MaskBench data not found at {DATA}", file=sys.stderr)
        return 2
    paths = schema_paths(sample=None if args.all else args.sample, seed=args.seed,
                         subsets=[s for s in args.subsets.split(",") if s] or None)
    engines = [e for e in args.engines.split(",") if e]
    results = _load_jsonl(args.jsonl, engines) if args.jsonl else []
    done = {(r["id"], r["engine"]) for r in results}
    if args.report_only:
        paths = []
    workers = {e: _Worker(e, args.vocab) for e in engines}
    started = time.time()
    log = args.jsonl.open("a", encoding="utf-8") if args.jsonl else None
    try:
        for i, path in enumerate(paths):
            for engine in engines:  # interleaved, so machine noise hits every engine alike
                if (f"{path.parent.name}/{path.stem}", engine) in done:
                    continue
                result = workers[engine].run(path, args.timeout)
                results.append(result)
                if log is not None:
                    log.write(json.dumps(result) + "\n")
                    log.flush()
            if (i + 1) % 50 == 0:
                print(f"{i + 1}/{len(paths)} schemas, {time.time() - started:.0f}s",
                      file=sys.stderr, flush=True)
    finally:
        if log is not None:
            log.close()
        for w in workers.values():
            w.close()
    report = summarize_results(results)
    schemas = len({r["id"] for r in results})
    header = (f"MaskBench token-level run: {schemas} schemas, vocabulary {args.vocab}, "
              f"engines {', '.join(engines)}, {time.time() - started:.0f}s, "
              f"{time.strftime('%Y-%m-%d')}\n\n")
    print(header + report)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(header + report, encoding="utf-8")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        slim = [{k: v for k, v in r.items() if k not in ("ttfm_us", "tbm_us")} for r in results]
        args.json.write_text(json.dumps(slim, indent=0), encoding="utf-8")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
