"""MaskBench conformance at the byte level, on a fixed stratified sample.

For every sampled schema that compiles, every valid test instance must be accepted and
every invalid one rejected (``json.dumps`` with and without ``ensure_ascii``). Schemas we
refuse (``UnsupportedSchemaError``) or that exceed the per-schema time budget are counted,
not failed: refusing is honest, and speed is the benchmark's business
(``benchmarks/maskbench_bytes.py`` runs all 11,305 schemas).

The data lives outside the repository (``../shared/data/jsonschemabench``, see its
SOURCE.md); without it the test is skipped.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "jsonschemabench"
SAMPLE_SIZE = 80
SEED = 7
BUDGET_S = 10.0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DATA.is_dir(), reason=f"MaskBench data not found at {DATA}"),
]


def _bench():  # type: ignore[no-untyped-def]
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "maskbench_bytes.py"
    spec = importlib.util.spec_from_file_location("maskbench_bytes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sample() -> list[Path]:
    if not DATA.is_dir():
        return []
    bench = _bench()
    return bench.stratified_sample(bench.list_files(DATA), SAMPLE_SIZE, SEED)


@pytest.mark.parametrize("path", _sample(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_maskbench_schema(path: Path) -> None:
    record = _bench().check_schema_file(str(path), BUDGET_S)
    if record["error"] == "timeout":
        pytest.skip(f"over the {BUDGET_S:g} s budget before every instance was checked "
                    "(counted, not failed: see the module docstring)")
    if record["error"] == "unsupported":
        pytest.skip(f"refused: {record['keyword'] or ''} {record['detail'] or ''}")
    assert record["error"] is None, record["detail"]
    assert not record["failures"], json.dumps(record["failures"])
