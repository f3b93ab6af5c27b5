"""The prepared GPU benchmark (benchmarks/gpu_vllm_sglang.py) cannot run without a GPU; keep
it at least syntactically valid and its request set in step with the CPU benchmark."""

from __future__ import annotations

import py_compile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_script_compiles(tmp_path: Path) -> None:
    for name in ("gpu_vllm_sglang.py", "bench_vllm.py"):
        py_compile.compile(str(ROOT / "benchmarks" / name), cfile=str(tmp_path / f"{name}c"),
                           doraise=True)


def test_gpu_script_help_runs_without_runtimes() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_vllm_sglang.py"),
                          "--help"], capture_output=True, text=True, check=True)
    assert "--vllm-python" in out.stdout and "--sglang-python" in out.stdout
