"""The Python API: a thin layer that opens a session, shapes the input and runs the pipeline."""

from __future__ import annotations

import os
from typing import Any

from dask.utils import parse_bytes

from dtri.input.frames import as_edge_frame, input_on_gpu, is_path_like
from dtri.kernels.orient import ORIENTATIONS
from dtri.pipeline import CountResult, count_pipeline
from dtri.runtime.session import memory_caps, open_session, resolve_backend


def count(edges: Any, *, format: str = "auto", columns: tuple[Any, Any] | None = None,
          header: bool | None = None, backend: str = "auto", scheduler: str | None = None,
          scheduler_file: str | None = None, workers: int | None = None,
          memory_budget: int | str | None = None, bins: int | None = None,
          orientation: str = "degree", blocksize: int | str = "64MiB",
          npartitions: int | None = None, storage_options: dict | None = None,
          join: str = "auto", protocol: str = "auto", progress: bool = False,
          explain: bool = False, memory_limit: int | str | None = None,
          device_memory_limit: int | str | None = None, rmm_pool_size: int | str | None = None,
          spill_directory: str | os.PathLike | None = None,
          staging: str = "auto") -> CountResult:
    """Count the triangles of an undirected graph exactly, with the run's statistics.

    ``edges``: a path, glob, directory or fsspec URL of edge files (SNAP text, CSV/TSV, Matrix
    Market, Parquet, optionally ``.gz``/``.bz2``), a Dask/pandas/cuDF DataFrame, or an
    ``(m, 2)`` NumPy/CuPy array. The input is read as a simple undirected graph: directions,
    duplicate edges and self-loops do not change the count.

    ``backend``: ``auto`` (cuDF when it imports and a GPU is visible), ``cpu`` or ``gpu``.
    ``scheduler``: ``tcp://host:port`` of a running cluster, or ``threads``/``synchronous``;
    default: the active ``distributed.Client``, else a local cluster started for this run.
    ``memory_budget``: bytes (``"2GiB"`` works) one worker may plan for; default a quarter of
    the worker's memory (GPU memory on the GPU backend). ``bins``: number of radix bins (a power
    of two), default from the sizes. ``orientation``: ``degree`` or ``id``. ``join``: ``wedges``
    (materialise closure keys in budget-sized batches, radix-bin, sorted search), ``intersect``
    (fused list intersection, no wedge written; a CUDA kernel on GPUs) or ``auto`` (per
    partition, from its wedge count: the fused kernel for large ones on the GPU).
    ``protocol``: comms of a local cluster started for this run, ``tcp``, ``ucx`` or ``auto``
    (UCX between several GPU workers when ``distributed-ucxx`` is installed).

    Memory of a local cluster started for this run (bytes or strings such as ``"2GiB"``, per
    worker; :class:`dtri.runtime.session.MemoryCaps`): ``memory_limit``, host memory above which
    Dask
    spills stored results to disk, in ``spill_directory``; on GPU workers
    ``device_memory_limit``, device memory above which dask-cuda moves stored results to host
    memory, and ``rmm_pool_size``, a hard cap on the GPU memory used (an RMM pool that cannot
    grow, shared by cuDF and CuPy; the device memory limit then defaults to the pool less twice
    the memory budget). With a cap set, the default memory budget is a quarter of it. Giving
    any of them with a running cluster or scheduler raises
    :class:`dtri.errors.ConfigurationError`.


    ``staging``: where stage results wait between tasks (:mod:`dtri.runtime.staging`): ``host`` (host
    memory; each GPU task moves its inputs to the device and its results back, so the device
    holds one task's data: the fast path for graphs larger than a capped GPU), ``device``
    (GPU memory, spilled by dask-cuda under a cap) or ``auto`` (``host`` when the GPU
    workers' RMM pool is capped, ``device`` otherwise).

    The result's ``plan`` holds the counting phase's plan (bins, batches, join per
    partition)
    with estimates of each task kind's peak memory and of the bytes moved between workers
    (:class:`dtri.analytics.plan.CountPlan`). ``explain=True`` stops after planning: the input is read,
    oriented and sorted, but no wedge is written, and ``triangles`` is ``None``.
    """
    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be one of {ORIENTATIONS}, got {orientation!r}")
    budget = parse_bytes(memory_budget) if isinstance(memory_budget, str) else memory_budget
    chosen = resolve_backend(backend, input_on_gpu(edges))
    caps = memory_caps(memory_limit, device_memory_limit, rmm_pool_size, spill_directory)
    with open_session(chosen, scheduler, scheduler_file, workers, protocol, caps,
                      budget) as session:
        frame = as_edge_frame(edges, chosen, columns=columns, npartitions=npartitions,
                              **_read_options(edges, format, header, blocksize, storage_options))
        return count_pipeline(frame, session, orientation=orientation, bins=bins,
                              memory_budget=budget, join=join, partitions=npartitions,
                              progress=progress, explain=explain, staging=staging)


def _read_options(edges: Any, format: str, header: bool | None, blocksize: int | str,
                  storage_options: dict | None) -> dict[str, Any]:
    if not is_path_like(edges):
        return {}
    return {"format": format, "header": header, "blocksize": blocksize,
            "storage_options": storage_options}


def count_triangles(edges: Any, **options: Any) -> int:
    """Exact number of triangles of the undirected graph ``edges`` (see :func:`count`)."""
    return count(edges, **options).triangles
