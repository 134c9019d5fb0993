#!/usr/bin/env bash
# GPU checks and timings, for a machine with a CUDA device (CI has none).
#
#   bash bench/gpu_check.sh            # logs under $OUT (default /tmp/logitgate-gpu)
#
# Runs from a source checkout without installing: PYTHONPATH=src, with the machine's own torch,
# triton, numba and numpy. Wheels in .whl/ (e.g. xgrammar, to time its kernel beside ours) are
# installed to /tmp/site first. Then: the GPU tests and the kernel tests on CUDA, and the
# bitmask and logits benchmarks on the device.
set -u -o pipefail
OUT=${OUT:-/tmp/logitgate-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
nvidia-smi -L | tee "$OUT/device.txt"
python3 - <<'PY' | tee -a "$OUT/device.txt"
import importlib
import importlib.metadata
for name in ("torch", "triton", "numba", "numpy", "xgrammar"):
    try:
        module = importlib.import_module(name)
        # (xgrammar has no __version__: the installed distribution's version then)
        print(name, getattr(module, "__version__", None) or importlib.metadata.version(name))
    except Exception as e:  # noqa: BLE001 - report whatever is missing and go on
        print(name, "unavailable:", type(e).__name__, e)
PY
status=0
python3 -m pytest -q -p no:cacheprovider -x tests/test_gpu_kernels.py tests/test_logits_kernels.py tests/test_bitmask.py \
    2>&1 | tee "$OUT/tests.log" || status=1
python3 -m logitgate.cli.main bench bitmask --device cuda --masks random realistic sparse --repeats 50 \
    2>&1 | tee "$OUT/bench_bitmask.md" || status=1
python3 -m logitgate.cli.main bench logits --device cuda --repeats 50 2>&1 | tee "$OUT/bench_logits.md" || status=1
exit $status
