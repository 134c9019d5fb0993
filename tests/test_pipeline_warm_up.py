"""LogitsPipeline.warm_up: the first step after it loads no kernel and imports no module."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from logitgate.processors.pipeline import LogitsPipeline, SamplingParams

#: run in a fresh interpreter by the test below: warm a pipeline up for ``sys.argv[1]`` logits, note
#: the numba kernels loaded and the modules imported, then serve requests of every kind on another
#: pipeline; prints each kernel a request loaded (or compiled) again, and each module it imported
_REQUESTS = r'''
import importlib, pkgutil, sys

import numpy as np
from numba.core.registry import CPUDispatcher

import logitgate
from logitgate import ThinkBudget, TreeDecodeConfig
from logitgate.processors.pipeline import LogitsPipeline, SamplingParams

try:
    import torch
except ImportError:
    torch = None
kernels = {}
for mod in pkgutil.walk_packages(logitgate.__path__, "logitgate."):
    if mod.name.split(".")[1] in ("kernels", "processors") and "triton" not in mod.name:
        for name, f in vars(importlib.import_module(mod.name)).items():
            if isinstance(f, CPUDispatcher):
                kernels[f"{f.py_func.__module__}.{f.__name__}"] = f
dtype = np.dtype(sys.argv[1])
V = 1000
pipe = LogitsPipeline(V, eos_token_id=999, stop_token_ids=[998]).warm_up(dtype)
assert not pipe.rows
loaded = {name: len(f.signatures) for name, f in kernels.items()}
modules = set(sys.modules)
tree = TreeDecodeConfig.from_dict({"start_token_id": 1, "end_token_id": 2, "sep": "_",
                                   "prefix_dict": {"1": [50, 60], "1_50": [70], "1_50_70": [3]}}, vocab_size=V)
requests = [SamplingParams(temperature=0.0, logit_bias={7: 2.0, 8: -1.0}, repetition_penalty=1.3),
            SamplingParams(temperature=0.7, top_p=0.8, seed=3, logprobs=3, allowed_token_ids=list(range(0, 900, 3))),
            SamplingParams(top_k=20, min_p=0.05, frequency_penalty=0.2, bad_words=[[5, 6], [7]], min_tokens=3),
            SamplingParams(temperature=0.5, tree_decode=tree, seed=4),
            SamplingParams(think_budget=ThinkBudget([11], [12], max_thinking_tokens=2), seed=5, presence_penalty=1.0)]
for row, params in enumerate(requests):
    pipe.add_request(row, params, output_token_ids=[7, 9, 7])
rng = np.random.default_rng(0)
for step in range(6):
    logits = rng.standard_normal((len(pipe.rows), V)).astype(dtype)
    if step % 2 and torch is not None:
        logits = torch.from_numpy(logits)
    pipe.step(logits)
    if step == 2:
        pipe.fork_row(1, 5)
        pipe.reorder([0, 1, 2, 3, 5, 4])
pipe.draft_bitmasks(3, [50, 70])
pipe.draft_penalty_counts(4, [7, 7])
for name, f in kernels.items():
    if len(f.signatures) != loaded[name]:
        print(name, f.signatures[-1])
for name in sorted(set(sys.modules) - modules):
    print("import", name)
'''


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_after_warm_up_no_step_loads_a_kernel_or_imports_a_module(dtype: str) -> None:
    """In a fresh process, steps of every kind after :meth:`LogitsPipeline.warm_up` (bias,
    penalties, allowed ids, bad words, minimum tokens, tree decode, thinking budget, greedy and
    sampled rows, log-probabilities, beams, drafts; numpy logits and, where torch is installed,
    CPU tensors) find every numba kernel they call loaded for the argument types they pass, and
    every module they use imported. Without the warm-up a first step took ~0.4 s."""
    done = subprocess.run([sys.executable, "-c", _REQUESTS, dtype], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "", f"kernels loaded and modules imported by steps after warm-up:\n{done.stdout}"


def test_warm_up_leaves_the_pipeline_and_its_steps_as_they_were() -> None:
    """Warm-up runs on a scratch pipeline: the rows, and what the next steps sample, are the ones a
    pipeline that was not warmed up gets."""
    outs = []
    for warm in (False, True):
        pipe = LogitsPipeline(50, eos_token_id=49)
        pipe.add_request(0, SamplingParams(temperature=0.9, top_k=10, seed=11, repetition_penalty=1.5))
        if warm:
            assert pipe.warm_up() is pipe
        assert list(pipe.rows) == [0] and pipe.rows[0].output == []
        logits = np.random.default_rng(1).standard_normal((1, 50)).astype(np.float32)
        outs.append([pipe.step(logits.copy()).tolist() for _ in range(5)])
    assert outs[0] == outs[1]


def test_warm_up_refuses_a_dtype_no_step_takes() -> None:
    with pytest.raises(TypeError, match="int32"):
        LogitsPipeline(10).warm_up(np.int32)
