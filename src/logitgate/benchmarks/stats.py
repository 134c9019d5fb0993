"""Percentiles and table formatting shared by the benchmark suites."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["fmt_us", "markdown_table", "percentiles"]


def percentiles(samples: Sequence[float], qs: Sequence[float]) -> list[float]:
    """The ``qs`` percentiles (0-100) of ``samples``; NaN for no samples."""
    if len(samples) == 0:
        return [float("nan")] * len(qs)
    arr = np.asarray(samples, dtype=np.float64)
    return [float(np.percentile(arr, q)) for q in qs]


def fmt_us(x: float) -> str:
    if x != x:  # NaN
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub markdown table; numbers right-aligned."""
    def cell(v: object) -> str:
        return fmt_us(v) if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
