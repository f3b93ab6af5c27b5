#!/usr/bin/env bash
# Build the venv that tests/integrations/test_sglang.py uses to test constrain's SGLang
# grammar backend against SGLang's real classes on CPU. SGLang cannot serve without a GPU
# (and its full dependency set pulls CUDA builds), so only the package and the few
# libraries its grammar-backend and server-argument modules import are installed; torch,
# transformers, xgrammar and the SmolLM2 model come from the main environment
# (scripts/install.sh dev), shared through --system-site-packages.
#
#   scripts/setup_sglang_env.sh          -> .venv-sglang/ in the repository root
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-$PWD/.venv-sglang}"
PY="${PYTHON:-python3}"
PIP=(--quiet --disable-pip-version-check)

[ -x "$VENV/bin/python" ] || "$PY" -m venv --system-site-packages "$VENV"
"$VENV/bin/python" -m pip install "${PIP[@]}" --no-deps "sglang==0.5.23" \
    pybase64 pillow starlette msgspec pyzmq aiohttp multidict yarl propcache \
    aiohappyeyeballs aiosignal frozenlist openai partial-json-parser dill
"$VENV/bin/python" -m pip install "${PIP[@]}" --no-deps -e .
"$VENV/bin/python" -c "import sglang.srt.constrained.base_grammar_backend, constrain.integrations.sglang; print('sglang venv ready in $VENV')"
