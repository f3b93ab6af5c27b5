"""MaskBench at the byte level: compile every schema, match every test instance.

For each of the 11,305 MaskBench schemas (``../shared/data/jsonschemabench``, see its
SOURCE.md) this compiles the schema with :func:`constrain.json_schema.schema_to_grammar`
and checks each test instance, serialized by ``json.dumps`` both with and without
``ensure_ascii``, against the automaton: a valid instance must be accepted and an invalid one
rejected, both spellings. A schema *passes* when it compiles and every instance is judged
right (schemas without tests pass when they compile). Each schema runs under a time budget
(``--budget``, default 20 s of CPU time, compile and matching together) in a worker
process, so one pathological schema cannot hang the run.

Prints per-subset counts (schemas, compiled, passing, valid instances rejected, invalid
instances accepted), refusals by keyword (number of schemas), and other errors by kind.

    python benchmarks/maskbench_bytes.py                 # everything (about 10-20 minutes)
    python benchmarks/maskbench_bytes.py --sample 300    # stratified sample, fixed seed
    python benchmarks/maskbench_bytes.py --only Github_hard/o16749.json -v
    python benchmarks/maskbench_bytes.py --jsonl results.jsonl   # one record per schema
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import random
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "jsonschemabench"


class CpuTimeout(BaseException):
    """Raised by the CPU-time alarm (:func:`arm_cpu_alarm`); a BaseException, so no
    ``except Exception`` in the code being timed swallows it."""


def _alarm(signum: int, frame: Any) -> None:
    raise CpuTimeout()


def arm_cpu_alarm(budget: float) -> None:
    """Raise :class:`CpuTimeout` once ``budget`` seconds of this process's CPU time pass."""
    signal.signal(signal.SIGPROF, _alarm)
    # Re-arm every second: an exception raised inside a callback Python ignores (a gc
    # callback, a __del__) is swallowed, and a one-shot timer would then never stop the work.
    signal.setitimer(signal.ITIMER_PROF, budget, 1.0)


def stop_cpu_alarm() -> None:
    """Cancel the CPU-time alarm, even if it fires while being cancelled."""
    while True:
        try:
            signal.setitimer(signal.ITIMER_PROF, 0)
            return
        except CpuTimeout:
            continue


def check_schema_file(path: str, budget: float, options: dict[str, Any] | None = None) -> dict:
    """Compile one MaskBench file and judge its tests; returns a JSON-able record."""
    data = json.loads(Path(path).read_text())
    record: dict[str, Any] = {"file": path, "subset": Path(path).parent.name,
                              "tests": len(data["tests"]), "compiled": False,
                              "valid_rejected": 0, "invalid_accepted": 0, "error": None,
                              "keyword": None, "detail": None, "failures": []}
    try:
        _check(data, budget, options, record)
    except CpuTimeout:
        # The re-armed alarm fired after the work's own handlers (while a result was being
        # recorded, or in the ``finally`` that cancels it): never let it kill the pool.
        stop_cpu_alarm()
        if "seconds" not in record and record["error"] is None:
            record["error"] = "timeout"
    return record


def _check(data: Any, budget: float, options: dict[str, Any] | None,
           record: dict[str, Any]) -> None:
    from constrain.automaton import Automaton
    from constrain.errors import SchemaError, UnsupportedSchemaError
    from constrain.json_schema import JsonSchemaOptions, schema_to_grammar

    # CPU time, not wall time: the budget means the same on a busy machine.
    try:
        record["keywords"] = sorted(keywords_used(data["schema"]))
    except Exception:  # noqa: BLE001 - a schema jsonschema cannot even classify
        record["keywords"] = []
    arm_cpu_alarm(budget)
    start = time.perf_counter()
    cpu_start = time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grammar = schema_to_grammar(data["schema"], JsonSchemaOptions(**(options or {})))
            automaton = Automaton(grammar)
        record["compiled"] = True
        record["compile_s"] = round(time.perf_counter() - start, 4)
        for i, test in enumerate(data["tests"]):
            texts = [json.dumps(test["data"], ensure_ascii=a).encode() for a in (False, True)]
            for ascii_, text in zip((False, True), texts):
                if ascii_ and text == texts[0]:
                    continue  # pure ASCII: the same text
                accepted = automaton.matches(text)
                if accepted != test["valid"]:
                    key = "valid_rejected" if test["valid"] else "invalid_accepted"
                    record[key] += 1
                    record["failures"].append({"test": i, "ensure_ascii": ascii_,
                                               "valid": test["valid"]})
                    break
    except CpuTimeout:
        record["error"] = "timeout"
    except UnsupportedSchemaError as e:
        record["error"] = "unsupported"
        record["keyword"] = e.keyword
        record["detail"] = f"{e.pointer}: {e.detail}"[:300]
    except SchemaError as e:
        record["error"] = "schema_error"
        record["detail"] = str(e)[:300]
    except RecursionError:
        record["error"] = "RecursionError"
    except Exception as e:  # noqa: BLE001 - a benchmark reports every failure kind
        record["error"] = type(e).__name__
        record["detail"] = "".join(traceback.format_exception_only(type(e), e))[:300]
    finally:
        stop_cpu_alarm()
    record["cpu_s"] = round(time.process_time() - cpu_start, 3)
    record["seconds"] = round(time.perf_counter() - start, 3)


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
                "dependencies")
_SCHEMA_ONE = ("items", "additionalItems", "additionalProperties", "contains", "propertyNames",
               "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")


def keywords_used(schema: Any) -> set[str]:
    """The asserting keywords (of the document's dialect) used anywhere in ``schema``."""
    from constrain.json_nodes import Dialect

    known = Dialect.for_schema(schema).keywords
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        found.update(k for k in node if k in known)
        for k in _SCHEMA_MAPS:
            if isinstance(node.get(k), dict):
                stack.extend(node[k].values())
        for k in _SCHEMA_ONE:
            if isinstance(node.get(k), dict):
                stack.append(node[k])
        for k in _SCHEMA_LISTS:
            if isinstance(node.get(k), list):
                stack.extend(node[k])
    return found


def _worker(args: tuple[str, float, dict[str, Any]]) -> dict:
    return check_schema_file(*args)


def list_files(data_dir: Path) -> list[Path]:
    return sorted(p for p in data_dir.glob("*/*.json"))


def stratified_sample(files: list[Path], n: int, seed: int = 0) -> list[Path]:
    """About ``n`` files, proportional to subset sizes (at least 2 per subset), fixed seed."""
    by_subset: dict[str, list[Path]] = collections.defaultdict(list)
    for f in files:
        by_subset[f.parent.name].append(f)
    rng = random.Random(seed)
    out = []
    for subset in sorted(by_subset):
        group = by_subset[subset]
        k = max(2, round(n * len(group) / len(files)))
        out.extend(rng.sample(group, min(k, len(group))))
    return sorted(out)


def report(records: list[dict], out: Any = sys.stdout) -> None:
    subsets: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    keywords: collections.Counter = collections.Counter()
    errors: collections.Counter = collections.Counter()
    for r in records:
        c = subsets[r["subset"]]
        c["schemas"] += 1
        c["compiled"] += r["compiled"]
        ok = r["compiled"] and not r["error"] and not r["valid_rejected"] and not r["invalid_accepted"]
        c["passing"] += ok
        c["valid_rejected"] += r["valid_rejected"]
        c["invalid_accepted"] += r["invalid_accepted"]
        if r["error"] == "unsupported":
            keywords[r["keyword"]] += 1
        elif r["error"]:
            errors[r["error"]] += 1
    total: collections.Counter = collections.Counter()
    cols = ("schemas", "compiled", "passing", "valid_rejected", "invalid_accepted")
    print(f"{'subset':24}" + "".join(f"{c:>17}" for c in cols), file=out)
    for name in sorted(subsets):
        total.update(subsets[name])
        print(f"{name:24}" + "".join(f"{subsets[name][c]:>17}" for c in cols), file=out)
    print(f"{'TOTAL':24}" + "".join(f"{total[c]:>17}" for c in cols), file=out)
    print("\nrefused, by keyword (schemas):", file=out)
    for k, n in keywords.most_common():
        print(f"  {n:6}  {k}", file=out)
    print("\nasserting keywords: schemas using them / of those passing", file=out)
    used: collections.Counter = collections.Counter()
    passing: collections.Counter = collections.Counter()
    for r in records:
        ok = r["compiled"] and not r["error"] and not r["valid_rejected"] and not (
            r["invalid_accepted"])
        for k in r.get("keywords", ()):
            used[k] += 1
            passing[k] += ok
    for k, n in used.most_common():
        print(f"  {n:6}  {passing[k]:6}  {k}", file=out)
    print("\nother errors (schemas):", file=out)
    for k, n in errors.most_common():
        print(f"  {n:6}  {k}", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sample", type=int, default=0, help="stratified sample size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", action="append", default=[], help="subset/file.json")
    parser.add_argument("--subset", action="append", default=[])
    parser.add_argument("--budget", type=float, default=20.0, help="CPU seconds per schema")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--jsonl", type=Path, help="write one record per schema here")
    parser.add_argument("--options", default="{}", help="JsonSchemaOptions as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each failure")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"MaskBench data not found at {args.data}", file=sys.stderr)
        return 2
    files = list_files(args.data)
    if args.only:
        files = [args.data / o for o in args.only]
    if args.subset:
        files = [f for f in files if f.parent.name in args.subset]
    if args.sample:
        files = stratified_sample(files, args.sample, args.seed)
    options = json.loads(args.options)
    tasks = [(str(f), args.budget, options) for f in files]
    start = time.perf_counter()
    records = []
    out = args.jsonl.open("w") if args.jsonl else None
    with multiprocessing.get_context("fork").Pool(args.jobs, maxtasksperchild=50) as pool:
        for r in pool.imap_unordered(_worker, tasks, chunksize=4):
            records.append(r)
            if out is not None:
                out.write(json.dumps(r) + "\n")
                out.flush()
            if args.verbose and (r["error"] not in (None, "unsupported")
                                 or r["valid_rejected"] or r["invalid_accepted"]):
                print(json.dumps({k: r[k] for k in ("file", "error", "keyword", "detail",
                                                    "valid_rejected", "invalid_accepted")}),
                      file=sys.stderr)
            if len(records) % 500 == 0:
                print(f"... {len(records)}/{len(tasks)} in {time.perf_counter() - start:.0f} s",
                      file=sys.stderr, flush=True)
    if out is not None:
        out.close()
    records.sort(key=lambda r: r["file"])
    report(records)
    print(f"\n{len(records)} schemas in {time.perf_counter() - start:.0f} s", file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
