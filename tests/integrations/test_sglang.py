"""SGLang integration. SGLang needs a GPU to serve, but its grammar-backend classes import
on CPU: the tests against them run in the venv from ``scripts/setup_sglang_env.sh`` and are
started from here; without the venv they skip, saying how to build it."""

from __future__ import annotations

import pytest
from runtime_venvs import run_in_venv

from constrain.errors import MissingDependencyError


def test_missing_sglang_names_the_extra() -> None:
    try:
        import sglang  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("sglang is installed here")
    with pytest.raises(MissingDependencyError, match=r"constrain\[sglang\]"):
        import constrain.integrations.sglang  # noqa: F401


def test_backend_against_sglang_classes() -> None:
    run_in_venv("sglang", "tests/integrations/sglang_env/test_sglang_backend.py")
