"""Calibrate the work model that balances the fused join across GPUs.

Usage (one GPU): ``python examples/benchmarks/probes/intersect_balance.py [SCALE]`` (default 25).
The RMAT graph (seed 0) is prepared in one partition; then, for each candidate model of
per-source work, the sources are cut into 2 and 4 ranges of equal modelled work
(:func:`dtri.kernels.orient.source_bounds`) and the fused join of each range against the whole edge
set is timed on this GPU alone (best of 2). One JSON line per (model, parts) with each range's
edges and seconds, and the imbalance ``max / mean``; a last line fits seconds ≈ α·edges +
β·Σ shorter list·log2(longer list) over every timed range. Each line in the schema of
``schema.py`` (family ``intersect-balance``: the figures in ``detail``).

Models, per edge ``u -> v`` at position ``i`` of ``u``'s list (``a = d+(u) - 1 - i`` later
siblings, ``b = d+(v)``), summed per source: ``edges`` (1), ``wedges`` (edges + C(d+, 2)),
``expected+c`` (``c + min((d+(u) - 1) / 2, d+(v))``, what the orient stage can compute before
the sort, for several constants ``c``), ``shorter_log+c`` (``c + min(a, b)·log2(max(a, b) + 1)``,
exact, needs the sorted lists).
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # schema.py, one folder up
from schema import command_line, emit, to_schema


def main(scale: int) -> None:
    import cudf

    from dtri.input.generate import rmat_arrays
    from dtri.kernels.bins import checked_key_bits, pack_edges
    from dtri.kernels.csr import CSR, from_keys, sources
    from dtri.kernels.intersect import intersect
    from dtri.kernels.orient import source_bounds, wedge_work
    from dtri.kernels.wedges import list_ends
    from dtri.prepared.local import prepare_partition

    src, dst = rmat_arrays(cp, 0, 16 << scale, scale, 0.57, 0.19, 0.19, 0)
    stored, n, *_ = prepare_partition(cudf.DataFrame({"src": src, "dst": dst}), "degree")
    del src, dst
    csr = CSR(*stored)  # every rank's sorted out-list
    src, dst = sources(csr), csr.dst.astype(cp.int64)
    bits = checked_key_bits(n)
    out_degree = cp.bincount(src, minlength=n)
    ends = list_ends(src)
    a = ends - 1 - cp.arange(src.shape[0])
    b = out_degree[dst]
    shorter, longer = cp.minimum(a, b).astype(cp.float64), cp.maximum(a, b).astype(cp.float64)
    shorter_log = shorter * cp.log2(longer + 1)
    expected = cp.minimum((out_degree[src] - 1) / 2, b)

    def per_source(weights):
        return cp.bincount(src, weights=weights, minlength=n)

    models = {"edges": out_degree, "wedges": wedge_work(out_degree)}
    for c in (1, 4, 16, 64):
        models[f"expected+{c}"] = per_source(expected + c)
        models[f"shorter_log+{c}"] = per_source(shorter_log + c)
    samples = []
    for name, work in models.items():
        for parts in (2, 4):
            bounds = source_bounds(work, parts)
            cuts = cp.searchsorted(src, cp.asarray(bounds)).tolist()
            ranges = []
            for (lo, hi), (low, high) in zip(itertools.pairwise(cuts),
                                             itertools.pairwise(bounds), strict=True):
                part = from_keys(pack_edges(src[lo:hi], dst[lo:hi], bits), n, low, high)
                best = float("inf")
                for _ in range(2):
                    cp.cuda.Device().synchronize()
                    started = time.perf_counter()
                    intersect(part, csr)
                    cp.cuda.Device().synchronize()
                    best = min(best, time.perf_counter() - started)
                ranges.append({"edges": hi - lo, "seconds": round(best, 4),
                               "shorter_log": float(shorter_log[lo:hi].sum())})
                samples.append((hi - lo, float(shorter_log[lo:hi].sum()), best))
            seconds = [r["seconds"] for r in ranges]
            emit(to_schema("intersect-balance",
                           {"scale": scale, "model": name, "parts": parts, "ranges": ranges,
                            "imbalance": round(max(seconds) / (sum(seconds) / parts), 3)},
                           command=command_line()), None)
    x = np.array([[e, s] for e, s, _ in samples])
    y = np.array([t for *_, t in samples])
    (alpha, beta), *_ = np.linalg.lstsq(x, y, rcond=None)
    emit(to_schema("intersect-balance",
                   {"fit": {"seconds_per_edge": alpha, "seconds_per_shorter_log": beta,
                            "edge_equivalent_of_shorter_log": beta / alpha if alpha else None}},
                   graph=f"rmat:{scale}", command=command_line()), None)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 25)
