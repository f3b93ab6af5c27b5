"""Settings for vLLM on CPU, applied before vLLM or torch is imported (a test's module is
imported after this file): in-process engine, 1 GiB of KV cache, one OpenMP thread (more
threads than cores makes vLLM crawl on a shared machine)."""

from __future__ import annotations

import os

for _name, _value in {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "OMP_NUM_THREADS": "1",
}.items():
    os.environ.setdefault(_name, _value)
