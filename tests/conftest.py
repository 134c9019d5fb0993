"""Test session setup: Triton kernels run in the interpreter on machines without a CUDA GPU."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

# Triton reads TRITON_INTERPRET when kernels are defined, so decide before anything imports it.
if "TRITON_INTERPRET" not in os.environ and shutil.which("nvidia-smi") is None:
    os.environ["TRITON_INTERPRET"] = "1"

sys.path.insert(0, str(Path(__file__).parent))

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
