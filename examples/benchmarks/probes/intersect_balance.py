"""Calibrate the work model that balances the fused join across GPUs (or CPU workers).

Usage (one GPU): ``python examples/benchmarks/probes/intersect_balance.py [SCALE]`` (default
25) ``[--backend gpu|cpu] [--costs C1,C2]``. The RMAT graph (seed 0) is prepared in one
partition; then, for each candidate model of per-source work, the sources are cut into
ranges of equal modelled work (:func:`dtri.kernels.orient.source_bounds`) and the fused join
of each range against the whole edge set is timed on this GPU alone (best of 2). With
``--backend cpu`` it runs on one CPU thread, by the kernel a count of this graph picks
(:func:`dtri.kernels.strategy.cpu_kernel`), as a worker's task runs it. One JSON line per
(model, parts) with each range's seconds, its figures below, and the imbalance
``max / mean``; a last line per set of figures fits seconds as a sum of them over every
timed range, with each fit's largest error.

A range's figures, per edge ``u -> v`` (``l = (d+(u) - 1) / 2``, the mean later siblings of
``u``, which is what the orient stage knows before the sort; ``b = d+(v)``): ``edges``;
``steps``, ``min(l, b)·log2(max(l, b) + 1)`` (what :func:`dtri.kernels.orient.intersection_work`
adds to its edge cost); and that split by the kernel's class of the edge
(:func:`dtri.kernels.strategy.edge_class` taken at ``l``): ``search_steps`` over the searched
edges and ``probes``, ``l``, over the hashed ones. Also ``sources``, the range's sources with
edges, and ``calls``, 1 (a fixed cost per call).

Models: ``edges`` (1), ``wedges`` (edges + C(d+, 2)), ``intersect``
(:func:`~dtri.kernels.orient.intersection_work` as dtri runs it, with the key of the
backend's kernel, ``join-edge-cost-gpu``, ``-cpu`` or ``-marks``), ``intersect-1024``
(the same with the edge cost of 1024 that dtri took before the hash probes), and
``intersect-C`` for each cost of ``--costs``. The fit over ``edges``, ``steps`` and
``calls`` gives that key: its ``in_edges`` of ``steps`` is one over the edge cost.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # schema.py, one folder up
from schema import command_line, emit, to_schema

FITS = (("edges", "steps"), ("edges", "steps", "calls"), ("edges", "search_steps", "probes"),
        ("edges", "search_steps", "probes", "calls"), ("edges", "steps", "sources", "calls"))


def source_figures(xp, src, dst, out_degree, n: int) -> dict:
    """The figures of the module docstring per source (``n`` floats each), from the
    source-sorted edges ``src -> dst`` (arrays of ``xp``): per-edge arrays are made one or
    two at a time."""
    from dtri.kernels.strategy import hash_max_members, hash_tuning

    tuning = hash_tuning()
    later = (out_degree[src] - 1) / 2
    target = out_degree[dst].astype(xp.float64)
    shorter, longer = xp.minimum(later, target), xp.maximum(later, target)
    steps = shorter * xp.log2(longer + 1)
    longer = xp.floor(xp.log2(xp.maximum(longer, 1))) + 1  # its bit length
    hashed = ((target >= tuning.min_members) & (target <= hash_max_members(False))
              & (later * tuning.probe_cost <= shorter * longer) & (later > 0))
    hashed &= bool(tuning.enabled)
    del target, shorter, longer

    def summed(weights):
        return xp.bincount(src, weights=weights, minlength=n)

    figures = {"edges": out_degree.astype(xp.float64), "steps": summed(steps),
               "search_steps": summed(xp.where(hashed, 0.0, steps))}
    del steps
    figures["probes"] = summed(xp.where(hashed, later, 0.0))
    figures["sources"] = (out_degree > 0).astype(xp.float64)
    return figures


def main(scale: int, backend: str, costs: list[float]) -> None:
    import dask

    from dtri.input.generate import rmat_arrays
    from dtri.kernels.bins import checked_key_bits, pack_edges
    from dtri.kernels.csr import CSR, from_keys, sources
    from dtri.kernels.intersect import intersect
    from dtri.kernels.orient import (
        intersection_work,
        join_edge_kernel,
        source_bounds,
        wedge_work,
    )
    from dtri.kernels.strategy import cpu_kernel
    from dtri.prepared.local import prepare_partition

    if backend == "gpu":
        import cudf
        import cupy as xp

        frame_type, synchronize = cudf.DataFrame, xp.cuda.Device().synchronize
    else:
        import pandas as pd

        xp, frame_type, synchronize = np, pd.DataFrame, (lambda: None)
    src, dst = rmat_arrays(xp, 0, 16 << scale, scale, 0.57, 0.19, 0.19, 0)
    stored, n, *_ = prepare_partition(frame_type({"src": src, "dst": dst}), "degree")
    del src, dst
    csr = CSR(*stored)  # every rank's sorted out-list
    kernel = cpu_kernel(n)  # the CPU's, as a count of this graph picks it; the GPU ignores it
    src, dst = sources(csr), csr.dst.astype(xp.int64)
    keys = pack_edges(src, dst, checked_key_bits(n))
    out_degree = xp.bincount(src, minlength=n)
    per_source = source_figures(xp, src, dst, out_degree, n)  # each figure summed per source
    del dst
    prefix = {name: xp.concatenate([xp.zeros(1), xp.cumsum(values)])
              for name, values in per_source.items()}
    del per_source

    models = {"edges": out_degree, "wedges": wedge_work(out_degree),
              "intersect": intersection_work(keys, out_degree, n)}
    key = f"dtri.kernel-tuning.join-edge-cost-{join_edge_kernel(backend == 'gpu', n)}"
    for cost in [1024.0, *costs]:
        with dask.config.set({key: cost}):
            models[f"intersect-{cost:g}"] = intersection_work(keys, out_degree, n)
    samples = []
    for name, work in models.items():
        for parts in (2, 4, 8):
            bounds = source_bounds(work, parts)
            cuts = xp.searchsorted(src, xp.asarray(bounds)).tolist()  # edge positions
            ranges = []
            for (lo, hi), (low, high) in zip(itertools.pairwise(cuts),
                                             itertools.pairwise(bounds), strict=True):
                part = from_keys(keys[lo:hi], n, low, high)
                best = float("inf")
                for _ in range(2):
                    synchronize()
                    started = time.perf_counter()
                    intersect(part, csr, kernel=kernel)
                    synchronize()
                    best = min(best, time.perf_counter() - started)
                figures = {f: float(prefix[f][high] - prefix[f][low]) for f in prefix}
                figures["calls"] = 1.0
                ranges.append({"seconds": round(best, 5), **figures})
                samples.append(ranges[-1])
            seconds = [r["seconds"] for r in ranges]
            emit(to_schema("intersect-balance",
                           {"backend": backend, "scale": scale, "model": name, "parts": parts,
                            "ranges": ranges,
                            "imbalance": round(max(seconds) / (sum(seconds) / parts), 3),
                            "kernel": kernel if backend == "cpu" else "cuda"},
                           command=command_line()), None)
    y = np.array([r["seconds"] for r in samples])
    for fit in FITS:
        x = np.array([[r[f] for f in fit] for r in samples])
        coefficients, *_ = np.linalg.lstsq(x, y, rcond=None)
        error = np.abs(x @ coefficients - y) / y
        emit(to_schema("intersect-balance",
                       {"backend": backend,
                        "fit": dict(zip(fit, (float(c) for c in coefficients), strict=True)),
                        "in_edges": {f: float(c / coefficients[0])
                                     for f, c in zip(fit, coefficients, strict=True)},
                        "largest_error": round(float(error.max()), 4),
                        "ranges": len(samples)},
                       graph=f"rmat:{scale}", command=command_line()), None)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scale", nargs="?", type=int, default=25)
    parser.add_argument("--backend", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--costs", default="",
                        help="more per-edge costs to cut by, comma-separated (intersect-COST)")
    arguments = parser.parse_args()
    main(arguments.scale, arguments.backend,
         [float(c) for c in arguments.costs.split(",") if c])
