"""transformers `generate` constrained by a JSON Schema, with beams, on SmolLM2-135M-Instruct.

Run: python examples/transformers_json.py   (after the README's main-job install; the model is
converted and cached on first use)
"""

import json
from pathlib import Path

import jsonschema
import torch

import logitgate as lg
from logitgate.contrib.models import load_default_model
from logitgate.contrib.transformers import LogitgateLogitsProcessor

schema = json.loads(Path(__file__).with_name("cat.schema.json").read_text())
model, hf_tok = load_default_model()
info = lg.TokenizerInfo.from_huggingface(hf_tok, vocab_size=model.config.vocab_size)
compiled = lg.GrammarCompiler(info).compile_json_schema(schema)

chat = [{"role": "user", "content": "Describe a cat named Tom as JSON."}]
prompt = hf_tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
inputs = hf_tok([prompt], return_tensors="pt")

for kwargs in ({"do_sample": False}, {"num_beams": 2, "num_return_sequences": 2, "do_sample": False},
               {"do_sample": True, "temperature": 0.8, "num_return_sequences": 2}):
    torch.manual_seed(0)
    proc = LogitgateLogitsProcessor.from_grammar(compiled)   # a fresh processor per generate call
    out = model.generate(**inputs, logits_processor=[proc], max_new_tokens=80,
                         pad_token_id=hf_tok.eos_token_id, **kwargs)
    for row in out[:, inputs["input_ids"].shape[1]:]:
        text = hf_tok.decode(row, skip_special_tokens=True)
        jsonschema.validate(json.loads(text), schema)
        print(kwargs, "->", text)
