"""One LogitsPipeline, four kinds of request, a stand-in model (random logits).

Row 0: JSON-ish regex + penalties + top-p; row 1: tree decode; row 2: thinking budget, then a
grammar for the answer; row 3: plain sampling with bias, min_tokens and bad words.

Run: python examples/pipeline_tour.py
"""

import re
from pathlib import Path

import numpy as np

import logitgate as lg

# a small vocabulary: single bytes, a few words, <think> </think>, <eos>; padded logits (V=70000)
words = [bytes([b]) for b in range(32, 127)] + [b"yes", b"no", b' "', b"<think>", b"</think>", b"<eos>"]
vocab = words + [b"<unused%d>" % i for i in range(70000 - len(words))]
EOS, THINK, END_THINK = vocab.index(b"<eos>"), vocab.index(b"<think>"), vocab.index(b"</think>")
specials = [EOS, THINK, END_THINK, *range(len(words), len(vocab))]
tok = lg.TokenizerInfo.from_vocab(vocab, eos_token_id=EOS, special_token_ids=specials)

compiler = lg.GrammarCompiler(tok)
answer = compiler.compile_regex(r"(yes|no)")
code = compiler.compile_regex(r"[A-Z]{2}-[0-9]{3}")
tree = lg.TreeDecodeConfig.from_file(Path(__file__).with_name("tree_decode.json"), vocab_size=len(vocab))
think = lg.ThinkBudget(begin_think_ids=[THINK], end_think_ids=[END_THINK], max_thinking_tokens=5)

pipe = lg.LogitsPipeline(vocab_size=len(vocab), eos_token_id=EOS)
pipe.add_request(0, lg.SamplingParams(grammar=code, temperature=0.8, top_p=0.95, repetition_penalty=1.2, seed=1))
pipe.add_request(1, lg.SamplingParams(tree_decode=tree, seed=2))
pipe.add_request(2, lg.SamplingParams(think_budget=think, grammar=answer, seed=3))
pipe.add_request(3, lg.SamplingParams(logit_bias={vocab.index(b"!"): 5.0}, min_tokens=4, seed=4,
                                      bad_words=[[vocab.index(b"?")]], top_k=20))

rng = np.random.default_rng(0)
out: dict[int, list[int]] = {r: [] for r in range(4)}
done: set[int] = set()
for _ in range(12):
    logits = rng.standard_normal((4, len(vocab))).astype(np.float32)   # the "model" ...
    logits[:, len(words):] -= 20.0                                      # ... rarely says <unusedN>
    tokens = pipe.step(logits)
    for r, t in enumerate(tokens.tolist()):
        if r not in done:
            out[r].append(t)
            if t in (EOS, tree.end_token_id):
                done.add(r)
                pipe.remove(r)

def text(ids: list[int]) -> str:
    return b"".join(vocab[t] for t in ids).decode("utf-8", "replace")

print("row 0 (regex [A-Z]{2}-[0-9]{3}):", text(out[0]))
print("row 1 (tree decode):           ", out[1])
print("row 2 (think <= 5, then yes|no):", text(out[2]))
print("row 3 (bias, min_tokens, top-k):", text(out[3]))
assert re.fullmatch(r"[A-Z]{2}-[0-9]{3}<eos>", text(out[0]))
assert out[1][0] in (64000, 64003) and out[1][-1] == 2
assert re.fullmatch(r"([^<]|<(?!/think>))*</think>(yes|no)<eos>", text(out[2]).replace("<think>", ""))
assert EOS not in out[3][:4] and vocab.index(b"?") not in out[3]
