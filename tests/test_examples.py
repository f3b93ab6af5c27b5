"""The scripts and the notebook in ``examples/`` run as shipped.

Fast tests check that they compile; ``@pytest.mark.model`` tests execute them on the
embedded SmolLM2 model. The notebook runs under ``nbclient`` when it (and a Jupyter kernel)
is installed, else its code cells are executed in order in one namespace, as a kernel would.
"""

from __future__ import annotations

import ast
import json
import re
import runpy
from pathlib import Path
from typing import Any

import pytest
from model_support import _model_cache_folder, default_model  # noqa: F401

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = ["agent_tools.py", "extraction_pipeline.py"]


def _code_cells(path: Path) -> list[str]:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert notebook["nbformat"] == 4
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_compile(name: str) -> None:
    source = (EXAMPLES / name).read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert ast.get_docstring(tree), f"{name} needs a docstring saying what it shows"
    compile(source, name, "exec")


def test_notebook_cells_compile() -> None:
    cells = _code_cells(EXAMPLES / "notebook.ipynb")
    assert len(cells) >= 5
    for i, cell in enumerate(cells):
        compile(cell, f"notebook cell {i}", "exec")


def _script(name: str) -> dict[str, Any]:
    pytest.importorskip("pydantic")
    pytest.importorskip("constrain.generation")
    return runpy.run_path(str(EXAMPLES / name), run_name="example")


@pytest.mark.model
@pytest.mark.usefixtures("default_model")
def test_agent_tools_runs(capsys: pytest.CaptureFixture[str]) -> None:
    calls = _script("agent_tools.py")["main"]()
    assert len(calls) == 3 and all(c.invoked for c in calls)
    names = {c.name for c in calls}
    assert names <= {"get_weather", "convert_currency", "answer"}
    assert "Q: What's the weather" in capsys.readouterr().out


@pytest.mark.model
@pytest.mark.usefixtures("default_model")
def test_extraction_pipeline_runs(capsys: pytest.CaptureFixture[str]) -> None:
    module = _script("extraction_pipeline.py")
    contacts = module["main"]()
    assert all(isinstance(c, module["Contact"]) for c in contacts)
    out = capsys.readouterr().out
    assert "3 records" in out and "tokens/s" in out


def _run_with_nbclient(path: Path) -> bool:
    try:
        import nbclient
        import nbformat
        from jupyter_client.kernelspec import KernelSpecManager
    except ImportError:
        return False
    if "python3" not in KernelSpecManager().find_kernel_specs():
        return False
    notebook = nbformat.read(str(path), as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    return True


@pytest.mark.model
@pytest.mark.usefixtures("default_model")
def test_notebook_runs() -> None:
    pytest.importorskip("constrain.generation")
    path = EXAMPLES / "notebook.ipynb"
    if _run_with_nbclient(path):
        return
    namespace: dict[str, Any] = {"__name__": "__notebook__"}
    for i, cell in enumerate(_code_cells(path)):
        exec(compile(cell, f"notebook cell {i}", "exec"), namespace)  # noqa: S102
    assert namespace["answer"] in ("yes", "no")
    assert set(namespace["person"]) == {"name", "age"}


def _readme_api_blocks() -> list[str]:
    text = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    start = text.index("## Python types in, validated objects out")
    section = text[start:text.index("\n## ", start + 1)]
    return [b for b in re.findall(r"```python\n(.*?)```", section, re.DOTALL)]


def test_readme_api_blocks_compile() -> None:
    blocks = _readme_api_blocks()
    assert len(blocks) >= 3
    for block in blocks:
        compile(block, "README.md", "exec")


@pytest.mark.model
@pytest.mark.usefixtures("default_model")
def test_readme_api_blocks_run() -> None:
    pytest.importorskip("constrain.generation")
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    for block in _readme_api_blocks():
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102
    assert namespace["mood"] in ("positive", "negative")
    assert isinstance(namespace["primes"], list) and len(namespace["code"]) == 3
    assert namespace["call"].invoked and namespace["sentiment"].render("x").endswith("x")
