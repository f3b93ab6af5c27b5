"""Export the embedded SmolLM2-135M-Instruct GGUF as a Hugging Face model folder.

vLLM 0.32 has no GGUF loader, so its tests and benchmarks load this folder instead:
transformers reads the GGUF (dequantizing the Q4_1 weights to float, which needs
``gguf`` and ``accelerate``), the weights are copied into a fresh ``LlamaForCausalLM``
and model + tokenizer are saved with ``save_pretrained``. Nothing is downloaded.

    python scripts/export_smollm2_hf.py OUT_DIR     # ~20 s; skips if OUT_DIR is complete
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

MARKER = "constrain-export.txt"


def export(out: Path) -> Path:
    """Write model and tokenizer to ``out`` (atomically: a sibling folder is renamed)."""
    if (out / MARKER).is_file():
        return out
    import torch
    from transformers import LlamaForCausalLM

    from constrain.assets import load_smollm2_model, load_smollm2_tokenizer, smollm2_gguf_path

    gguf = smollm2_gguf_path()
    tok = load_smollm2_tokenizer()
    loaded = load_smollm2_model()
    # A fresh model from the same config: the GGUF-loaded one carries quantization
    # bookkeeping that vLLM would try to honour.
    config = loaded.config
    for attr in ("quantization_config", "gguf_file"):
        if hasattr(config, attr):
            delattr(config, attr)
    fresh = LlamaForCausalLM(config)
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
    if [m for m in missing if "lm_head" not in m] or unexpected:
        raise RuntimeError(f"weights did not map: missing={missing} unexpected={unexpected}")
    if getattr(config, "tie_word_embeddings", False):
        fresh.tie_weights()
    if fresh.generation_config is not None and tok.eos_token_id is not None:
        fresh.generation_config.eos_token_id = tok.eos_token_id
    tmp = out.with_name(out.name + ".partial")
    tmp.mkdir(parents=True, exist_ok=True)
    fresh.to(torch.bfloat16).save_pretrained(str(tmp), safe_serialization=True)
    tok.save_pretrained(str(tmp))
    (tmp / MARKER).write_text(f"exported from {gguf}\n")
    if out.exists():
        import shutil

        shutil.rmtree(out)
    tmp.rename(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write (created)")
    args = parser.parse_args(argv)
    print(export(args.out.resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
