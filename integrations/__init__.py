"""Runtime adapters (Hugging Face, vLLM, SGLang, llama.cpp), shipped as ``constrain.integrations``.

Each adapter is one thin module over the shared Matcher contract; importing this package
imports no runtime.
"""
