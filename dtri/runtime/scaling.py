"""How many GPUs a run on a local cluster uses (``--workers auto``, the default): the count
the time model predicts fastest, from the input's rows and the link's measured bandwidth.

More GPUs share the work, but every exchange moves the edges between them, and a run of
several workers pays Dask's scheduling of its exchanges. For ``p`` workers and ``R`` input
rows, with the link's bandwidth ``B`` measured once per cluster
(:func:`dtri.runtime.link.link_bandwidth`):

    t(p) = R·s / p  +  [p > 1]·o  +  R·b·(p − 1) / p / B

``s`` is one GPU's seconds per input row (preparation and count), ``b`` the bytes per input
row that the busiest worker receives when two or more share the rows (of which it keeps
``1/p``), and ``o`` the fixed cost of a run over several workers. Each is a fitted constant
(:data:`SECONDS_PER_ROW`, :data:`BYTES_PER_ROW`, :data:`OVERHEAD_SECONDS`); a benchmark
overrides one through :func:`dtri.kernels.tuning.tuned`. The fewest workers of the least
predicted time win, among the counts whose GPUs hold the graph: where results wait in GPU
memory, at least ``R·r / M`` workers of ``M`` bytes each (``r``:
:data:`RESIDENT_BYTES_PER_ROW`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from dask.utils import format_bytes

from dtri.kernels.tuning import tuned

SECONDS_PER_ROW = 2.0e-9
"""``s`` (``scaling-seconds-per-row``): one H200 prepared and counted R-MAT 22, 24, 25 and
26 from its memory at 2.8, 1.7, 2.4 and 2.2 ns an input row
(examples/benchmarks/results/multi-gpu-h200x2.jsonl)."""
BYTES_PER_ROW = 13.0
"""``b`` (``scaling-bytes-per-row``): with the preparation exchanging edges once, the
busiest of two H100 workers received 6.3 and 6.4 bytes an input row of R-MAT 25 and 26 (the
sort's exchange, the vertex-wide sums and the count's bin; ``moved_bytes`` in
examples/benchmarks/results/multi-gpu-once-h100x2.jsonl, against 8.1 and 8.2 with two
exchanges): 13 at ``(p - 1) / p = 1/2``. The count's bin does not shrink with ``p`` and the
preparation's exchanges do, so the model may overstate the bytes of more than two workers
and keep fewer GPUs than it could over a slow link."""
OVERHEAD_SECONDS = 0.2
"""``o`` (``scaling-overhead-seconds``): two H200 over UCX took 0.12-0.24 s longer than half
of one H200's time plus their transfers on R-MAT 22-26 (multi-gpu-h200x2.jsonl)."""

RESIDENT_BYTES_PER_ROW = 48.0
"""``r`` (``scaling-resident-bytes-per-row``), the device bytes an input row needs at the
preparation's peak when results wait in GPU memory: R-MAT 26's 1.07 G rows ran on one H100
of 80 GB (at most 75 B a row), and R-MAT 27's 2.15 G rows ran out of its memory in the sort
stage (so more than 37 B a row; a run, never committed as a result), where ``--workers
auto`` over TCP had kept one GPU of four."""


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
    """``s``, ``b`` and ``o`` (see the module docstring)."""
    return (tuned("scaling-seconds-per-row", SECONDS_PER_ROW),
            tuned("scaling-bytes-per-row", BYTES_PER_ROW),
            tuned("scaling-overhead-seconds", OVERHEAD_SECONDS))


def predicted_seconds(rows: int, workers: int, bandwidth: float) -> float:
    """``t(p)`` of the module docstring for ``rows`` input rows on ``workers`` workers."""
    seconds_per_row, bytes_per_row, overhead = model()
    if workers <= 1:
        return rows * seconds_per_row
    moved = rows * bytes_per_row * (workers - 1) / workers
    return rows * seconds_per_row / workers + overhead + moved / bandwidth


def resident_bytes(rows: int) -> int:
    """Device bytes a graph of ``rows`` input rows needs while its results wait in GPU
    memory (:data:`RESIDENT_BYTES_PER_ROW`)."""
    return int(rows * tuned("scaling-resident-bytes-per-row", RESIDENT_BYTES_PER_ROW))


def fewest_holding(rows: int, available: int, device_memory: int | None) -> int:
    """The fewest of ``1 .. available`` workers whose GPUs, of ``device_memory`` bytes each,
    hold ``rows`` input rows in memory (:data:`RESIDENT_BYTES_PER_ROW`); 1 where the memory is
    not known (results that wait in host memory need no more)."""
    if not device_memory or device_memory <= 0:
        return 1
    return max(1, min(available, -(-resident_bytes(rows) // int(device_memory))))


def choose_workers(rows: int, available: int, bandwidth: float | None,
                   device_memory: int | None = None) -> WorkerChoice:
    """The fewest of ``1 .. available`` workers with the least predicted time, among those
    whose GPUs of ``device_memory`` bytes each hold the graph (:func:`fewest_holding`;
    ``None``: any count does)."""
    if available <= 1 or bandwidth is None or bandwidth <= 0:
        return WorkerChoice(max(available, 1), available, bandwidth, {},
                            "--workers auto: one GPU")
    least = fewest_holding(rows, available, device_memory)
    predicted = {p: round(predicted_seconds(rows, p, bandwidth), 6)
                 for p in range(1, available + 1)}
    best = min((p for p in predicted if p >= least), key=lambda p: (predicted[p], p))
    shown = ", ".join(f"{p}: {seconds:.3g} s" for p, seconds in predicted.items())
    resident = format_bytes(resident_bytes(rows))
    held = f"; it needs at least {least} to hold its {resident}" if least > 1 else ""
    reason = (f"--workers auto: {best} of {available} GPUs, predicted fastest for {rows} "
              f"input rows over a link of {format_bytes(int(bandwidth))}/s ({shown}){held}")
    return WorkerChoice(best, available, bandwidth, predicted, reason)
