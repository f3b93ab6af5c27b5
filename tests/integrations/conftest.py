"""Fixtures for the runtime adapters: the embedded SmolLM2 model.

De-quantizing the GGUF weights takes tens of seconds (minutes on a busy machine), so the
converted model is kept in pytest's cache folder (``.pytest_cache/d/constrain-models``) and
later sessions load it in about a second.

Torch runs on one thread here: these machines share two cores between several processes, and
OpenMP threads that spin-wait for a core they do not get made forward passes ten times slower.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from constrain.errors import MissingDependencyError


@pytest.fixture(scope="session")
def smollm2_model(pytestconfig: pytest.Config) -> Any:
    """SmolLM2-135M-Instruct as a transformers model (float32, CPU, eval mode); shared."""
    from constrain.assets import load_smollm2_model

    cache = getattr(pytestconfig, "cache", None)
    folder = None if cache is None else Path(cache.mkdir("constrain-models"))
    import torch

    torch.set_num_threads(1)
    try:
        model = load_smollm2_model(folder)
    except MissingDependencyError as e:
        pytest.skip(f"SmolLM2 model unavailable: {e}")
    return model
