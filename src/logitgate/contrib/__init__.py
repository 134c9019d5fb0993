"""Adapters for serving engines and libraries (transformers, vLLM, llama-cpp-python); optional imports."""
