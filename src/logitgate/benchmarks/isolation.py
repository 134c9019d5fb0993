"""Run benchmark tasks in a child process per engine, surviving crashes and timeouts."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time

__all__ = ["SINGLE_THREAD_ENV", "EngineProcess"]

SINGLE_THREAD_ENV = {
    "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "RAYON_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false", "OPENBLAS_NUM_THREADS": "1",
}


class EngineProcess:
    """A worker process for one engine; restarted after a crash or a timeout."""

    def __init__(self, engine: str, tokenizer: str, start_timeout: float = 300.0):
        self.engine = engine
        self.tokenizer = tokenizer
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.init_error: str | None = None

    def _start(self) -> None:
        env = dict(os.environ, **SINGLE_THREAD_ENV)
        self.stderr_file = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - lives as long as the worker
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "logitgate.benchmarks.worker", self.engine, self.tokenizer],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr_file, text=True, env=env, bufsize=1,
        )
        line = self._read_line(self.start_timeout)
        if line is None or not line.get("ready"):
            err = self._stderr_tail()
            self.close()
            self.init_error = f"engine {self.engine} failed to start: {err}"
            raise RuntimeError(self.init_error)

    def _stderr_tail(self) -> str:
        if self.proc is None:
            return ""
        try:
            self.proc.kill()
            self.proc.wait(timeout=5)
            self.stderr_file.seek(0)
            return self.stderr_file.read()[-800:]
        except Exception:
            return ""

    def _read_line(self, timeout: float) -> dict | None:
        assert self.proc is not None and self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                if sel.select(left):
                    line = self.proc.stdout.readline()
                    if not line:
                        return {"status": "crash", "error": "worker exited", "tbm_us": []}
                    return json.loads(line)
        finally:
            sel.close()

    def run(self, task: dict, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(task) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.close()
            return {"status": "crash", "error": "worker pipe closed", "tbm_us": []}
        result = self._read_line(timeout)
        if result is None:
            self.close()
            return {"status": "timeout", "error": f"no answer within {timeout:g} s", "tbm_us": []}
        if result.get("status") == "crash" and self.proc.poll() is not None:
            result["error"] = (result.get("error", "") + " " + self._stderr_tail())[-800:]
            self.close()
        return result

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except Exception:
                pass
            self.proc = None
