"""How many GPUs a run on a local cluster uses (``--workers auto``, the default): the count
the time model predicts fastest, from the input's rows and the link's measured bandwidth.

More GPUs share the work, but every exchange moves the edges between them, and a run of
several workers pays Dask's scheduling of its exchanges. For ``p`` workers and ``R`` input
rows, with the link's bandwidth ``B`` measured once per cluster
(:func:`dtri.runtime.link.link_bandwidth`):

    t(p) = R·s / p  +  [p > 1]·o  +  R·b·(p − 1) / p / B

``s`` is one GPU's seconds per input row (preparation and count), ``b`` the bytes per input
row that the busiest worker receives when two or more share the rows (of which it keeps
``1/p``), and ``o`` the fixed cost of a run over several workers. Each is a ``dask.config``
key (:data:`SECONDS_PER_ROW`, :data:`BYTES_PER_ROW`, :data:`OVERHEAD_SECONDS`), measured
as the defaults say. The fewest workers of the least predicted time win.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import dask
from dask.utils import format_bytes

SECONDS_PER_ROW = "dtri.scaling-seconds-per-row"
DEFAULT_SECONDS_PER_ROW = 2.0e-9
"""One H200 prepared and counted R-MAT 22, 24 and 25 from its memory at 2.8, 1.7 and 2.3 ns
an input row (examples/benchmarks/results/multi-gpu-h200x2.jsonl)."""
BYTES_PER_ROW = "dtri.scaling-bytes-per-row"
DEFAULT_BYTES_PER_ROW = 16
"""The busiest worker of two received about 16 bytes an input row of R-MAT 22-25 (the
canonicalize and sort exchanges' packed keys, and the count's bins), measured as
``moved_bytes`` (examples/benchmarks/results/multi-gpu-h200x2.jsonl)."""
OVERHEAD_SECONDS = "dtri.scaling-overhead-seconds"
DEFAULT_OVERHEAD_SECONDS = 0.35
"""Two H200 over UCX took 0.28-0.39 s longer than half of one H200's time plus their
transfers, on R-MAT 22, 24 and 25 alike (multi-gpu-h200x2.jsonl)."""


@dataclass(frozen=True)
class WorkerChoice:
    """The worker count ``--workers auto`` chose, and the predictions it chose by."""

    workers: int
    available: int
    bandwidth: float | None
    """The link's measured bytes per second (``None``: one worker, nothing to measure)."""
    predicted: dict[int, float]
    """Predicted seconds by worker count."""
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def model() -> tuple[float, float, float]:
    """``s``, ``b`` and ``o`` from ``dask.config`` (see the module docstring)."""
    return (float(dask.config.get(SECONDS_PER_ROW, DEFAULT_SECONDS_PER_ROW)),
            float(dask.config.get(BYTES_PER_ROW, DEFAULT_BYTES_PER_ROW)),
            float(dask.config.get(OVERHEAD_SECONDS, DEFAULT_OVERHEAD_SECONDS)))


def predicted_seconds(rows: int, workers: int, bandwidth: float) -> float:
    """``t(p)`` of the module docstring for ``rows`` input rows on ``workers`` workers."""
    seconds_per_row, bytes_per_row, overhead = model()
    if workers <= 1:
        return rows * seconds_per_row
    moved = rows * bytes_per_row * (workers - 1) / workers
    return rows * seconds_per_row / workers + overhead + moved / bandwidth


def choose_workers(rows: int, available: int, bandwidth: float | None) -> WorkerChoice:
    """The fewest of ``1 .. available`` workers with the least predicted time."""
    if available <= 1 or bandwidth is None or bandwidth <= 0:
        return WorkerChoice(max(available, 1), available, bandwidth, {},
                            "--workers auto: one GPU")
    predicted = {p: round(predicted_seconds(rows, p, bandwidth), 6)
                 for p in range(1, available + 1)}
    best = min(predicted, key=lambda p: (predicted[p], p))
    shown = ", ".join(f"{p}: {seconds:.3g} s" for p, seconds in predicted.items())
    reason = (f"--workers auto: {best} of {available} GPUs, predicted fastest for {rows} "
              f"input rows over a link of {format_bytes(int(bandwidth))}/s ({shown})")
    return WorkerChoice(best, available, bandwidth, predicted, reason)
