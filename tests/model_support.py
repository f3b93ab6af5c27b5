"""A fixture for tests that call the generation API with its *default* model.

``generate()``/``generate_as()`` without ``model=`` load SmolLM2 through
``constrain.assets`` with the disk cache of :func:`constrain.set_cache_dir`. The
``default_model`` fixture points that cache at pytest's cache folder (the one
``tests/integrations`` uses for ``smollm2_model``) for the duration of a test, so the
de-quantized weights are converted once per machine, not once per session. Import it into
a test module with ``from model_support import _model_cache_folder, default_model``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from constrain import cache
from constrain.errors import MissingDependencyError


@pytest.fixture(scope="session")
def _model_cache_folder(pytestconfig: pytest.Config) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    store = getattr(pytestconfig, "cache", None)  # absent under -p no:cacheprovider
    if store is not None:
        folder = Path(store.mkdir("constrain-models"))
    else:
        folder = Path(tempfile.gettempdir()) / "constrain-test-models"
        folder.mkdir(exist_ok=True)
    from constrain.assets import load_smollm2_model, load_smollm2_tokenizer

    try:  # load once (memoized per folder) so that each test only pays for generation
        load_smollm2_model(folder)
        load_smollm2_tokenizer(folder)
    except MissingDependencyError as e:
        pytest.skip(f"SmolLM2 model unavailable: {e}")
    return folder


@pytest.fixture
def default_model(_model_cache_folder: Path) -> Iterator[Any]:
    """The embedded model is the default, loaded from pytest's cache folder."""
    previous = cache.cache_dir()
    cache.set_cache_dir(_model_cache_folder)
    try:
        yield _model_cache_folder
    finally:
        cache.set_cache_dir(previous)
