"""``logitgate generate``: constrained generation with a small real model, with timings.

    logitgate generate "Describe a cat." --schema examples/cat.schema.json
    logitgate generate "Pick one." --choices red,green,blue --temperature 0.7 --seed 1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("prompt", help="the user message")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--schema", metavar="FILE", help="JSON Schema file the output must satisfy")
    g.add_argument("--regex", metavar="R", help="regular expression the output must fully match")
    g.add_argument("--grammar", metavar="FILE", help="GBNF/EBNF grammar file (root rule 'root')")
    g.add_argument("--choices", metavar="A,B,C", help="comma-separated list; the output is one of them")
    g.add_argument("--json", action="store_true", help="any JSON value")
    p.add_argument("--model", default=None, help="local transformers checkpoint (default: SmolLM2-135M-Instruct)")
    p.add_argument("--max-tokens", type=int, default=256, help="generation limit (default 256)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=None, help="makes sampling reproducible")
    p.add_argument("--no-schema-hint", action="store_true",
                   help="do not append the schema to the prompt (it helps small models)")
    p.add_argument("--compare-unconstrained", action="store_true",
                   help="also generate the same number of tokens without constraints and report both speeds")


def _compile(args: argparse.Namespace, compiler: Any) -> tuple[Any, str]:
    if args.schema:
        schema = json.loads(Path(args.schema).read_text())
        hint = "" if args.no_schema_hint else f"\nAnswer with a JSON object matching this schema:\n{json.dumps(schema)}"
        return compiler.compile_json_schema(schema, whitespace="flexible", max_whitespace=2), hint
    if args.regex:
        return compiler.compile_regex(args.regex), ""
    if args.grammar:
        return compiler.compile_grammar(Path(args.grammar).read_text()), ""
    if args.choices:
        choices = [c.strip() for c in args.choices.split(",") if c.strip()]
        return compiler.compile_choices(choices), f"\nAnswer with one of: {', '.join(choices)}."
    return compiler.compile_builtin_json(max_whitespace=2), "\nAnswer in JSON."


def _generate(model: Any, prompt_ids: Any, pipe: Any, max_tokens: int, stop_ids: set[int]) -> tuple[list[int], float, float]:
    """Token loop with a KV cache; returns (tokens, total seconds, seconds spent in logitgate)."""
    import torch

    out: list[int] = []
    past = None
    ids = prompt_ids
    lg_time = 0.0
    t0 = time.perf_counter()
    with torch.no_grad():
        for _ in range(max_tokens):
            res = model(input_ids=ids, past_key_values=past, use_cache=True)
            past = res.past_key_values
            logits = res.logits[:, -1, :].float()
            t = time.perf_counter()
            tok = int(pipe.step(logits)[0])
            lg_time += time.perf_counter() - t
            if tok in stop_ids:
                break
            out.append(tok)
            ids = torch.tensor([[tok]])
    return out, time.perf_counter() - t0, lg_time


def run(args: argparse.Namespace) -> int:
    import torch

    from ..contrib.models import load_default_model, load_model
    from ..engine.compiler import GrammarCompiler
    from ..processors.pipeline import LogitsPipeline, SamplingParams
    from ..tokenizer import TokenizerInfo

    torch.manual_seed(0 if args.seed is None else args.seed)
    model, tok = load_model(args.model) if args.model else load_default_model()
    info = TokenizerInfo.from_huggingface(tok, vocab_size=model.config.vocab_size)
    t = time.perf_counter()
    compiler = GrammarCompiler(info).warm_up()  # once per process and tokenizer: slices, kernels, imports
    LogitsPipeline(info.vocab_size).warm_up()  # the sampling kernels, so the first token does not load them
    warm_ms = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    compiled, hint = _compile(args, compiler)
    compile_ms = (time.perf_counter() - t) * 1e3
    messages = [{"role": "user", "content": args.prompt + hint}]
    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    prompt_ids = prompt["input_ids"]
    stops = set(info.stop_token_ids)

    def pipeline(grammar: Any) -> LogitsPipeline:
        pipe = LogitsPipeline(info.vocab_size, eos_token_id=info.eos_token_id, stop_token_ids=info.stop_token_ids)
        pipe.add_request(0, SamplingParams(temperature=args.temperature, top_p=args.top_p, seed=args.seed,
                                           grammar=grammar))
        return pipe

    if args.compare_unconstrained:  # warm the model up so neither timed run pays for first-call setup
        _generate(model, prompt_ids, pipeline(None), 2, set())
    tokens, total, lg_time = _generate(model, prompt_ids, pipeline(compiled), args.max_tokens, stops)
    text = tok.decode(tokens, skip_special_tokens=True)
    print(text)
    n = max(1, len(tokens))
    print(f"\n[logitgate] {len(tokens)} tokens in {total:.2f} s = {len(tokens) / total:.1f} tokens/s; "
          f"warm-up {warm_ms:.0f} ms (once per process); grammar compile {compile_ms:.1f} ms; "
          f"logitgate per token {lg_time / n * 1e3:.3f} ms "
          f"({100 * lg_time / total:.1f}% of the loop)", file=sys.stderr)
    complete = len(tokens) < args.max_tokens
    if not complete:
        print(f"[logitgate] stopped at --max-tokens {args.max_tokens} before the grammar could end; "
              "the output is a valid prefix, not a complete document", file=sys.stderr)
    if args.schema and complete:
        try:
            import jsonschema

            jsonschema.validate(json.loads(text), json.loads(Path(args.schema).read_text()))
            print("[logitgate] output validates against the schema (jsonschema)", file=sys.stderr)
        except ImportError:
            pass
    if args.compare_unconstrained:
        free, total_free, lg_free = _generate(model, prompt_ids, pipeline(None), max(len(tokens), 1), set())
        print(f"[logitgate] unconstrained: {len(free)} tokens in {total_free:.2f} s = "
              f"{len(free) / total_free:.1f} tokens/s (sampling {lg_free / max(1, len(free)) * 1e3:.3f} ms/token); "
              f"constrained: {len(tokens) / total:.1f} tokens/s", file=sys.stderr)
    return 0 if complete else 3

