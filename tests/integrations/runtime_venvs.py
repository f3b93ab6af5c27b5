"""Run a test module inside a runtime's own venv (vLLM and SGLang pin packages that clash
with constrain's dev environment, so each lives in ``.venv-<runtime>`` at the repo root,
built by ``scripts/setup_<runtime>_env.sh``). Tests skip, naming the script, when the venv
is absent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def venv_python(runtime: str) -> Path:
    """The venv's interpreter, or skip with how to build it."""
    python = ROOT / f".venv-{runtime}" / "bin" / "python"
    if not python.is_file():
        pytest.skip(f".venv-{runtime} is absent: build it with scripts/setup_{runtime}_env.sh")
    return python


def run_in_venv(runtime: str, test_path: str, *args: str, timeout: float = 3600) -> str:
    """Run pytest on ``test_path`` with the venv's interpreter; fail with its output."""
    python = venv_python(runtime)
    cmd = [str(python), "-m", "pytest", test_path, "-q", "-p", "no:cacheprovider", "-rs", *args]
    proc = subprocess.run(cmd, check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    tail = "\n".join(proc.stdout.splitlines()[-60:])
    sys.stdout.write(f"\n--- {runtime} venv: {' '.join(cmd[1:])}\n{tail}\n")
    if proc.returncode != 0:
        pytest.fail(f"{test_path} failed in .venv-{runtime} (exit {proc.returncode}):\n{tail}\n"
                    f"{proc.stderr[-3000:]}", pytrace=False)
    if " passed" not in tail:
        pytest.fail(f"{test_path} ran no test in .venv-{runtime}:\n{tail}", pytrace=False)
    return proc.stdout
