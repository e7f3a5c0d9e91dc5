"""Canonicalize → rank → orient → sort of a graph held in one partition, in one task.

Across partitions these stages are joined by exchanges of array pieces
(:mod:`dtri.prepared.distributed`); when the whole edge list fits one partition (one GPU, or a
small graph) the same array operations run back to back in one ``dtri-prepare`` task, without
any exchange. A small graph on the GPU is prepared on the host and moved to the device
prepared (:func:`prepare_inputs_on_host`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import dask
import numpy as np

from dtri.input.edges import EdgeArrays
from dtri.kernels.bins import MAX_KEY_BITS
from dtri.kernels.canonicalize import (
    MARKS_BYTES_PER_ID,
    canonical_keys,
    dense_range,
    id_columns,
    ids_by_rank,
    partition_vertices,
    vertex_count,
)
from dtri.kernels.csr import CSR, from_keys
from dtri.kernels.dispatch import array_module, compiled_kernels_ready, is_device_object, to_host
from dtri.kernels.orient import (
    adirection_epsilon,
    auto_orientation,
    by_rank,
    degree_counts,
    hash_list_limit,
    longest_out_list,
    orient_keys,
    orientation_reason,
    out_degree_counts,
    peel_levels,
    rank_and_order,
)
from dtri.prepared.inputs import concat_frames


class WholeGraph(NamedTuple):
    """A graph prepared in one task (:func:`prepare_partition`)."""

    csr: tuple
    """Its oriented edges as a CSR over every rank ``[0, n)``, a plain tuple as partitions are
    stored (:func:`dtri.kernels.csr.stored`)."""
    vertices: int
    """The number of vertices ``n``."""
    ids: Any
    """By rank, the input id of every vertex."""
    degree: Any
    """By rank, the degree of every vertex."""
    orientation: str
    """The orientation used (``auto`` resolved)."""
    reason: str
    """One line on why (:func:`orient_whole`)."""

HOST_PREPARE_EDGES = "dtri.host-prepare-edges"
"""``dask.config`` key: a GPU run's input of at most this many rows, in one partition, is
prepared on the host (:func:`prepare_inputs_on_host`)."""
MAX_MARKED_ID = (1 << MAX_KEY_BITS) - 1
"""The largest id :func:`prepare_marked_on_cpu` takes: its dense ids, fewer, then fit a
packed key's :data:`~dtri.kernels.bins.MAX_KEY_BITS`."""


def prepare_partition(frame: Any, orientation: str, limit: int | None = None,
                      epsilon: float | None = None) -> WholeGraph:
    """One partition's edges prepared: oriented (:func:`orient_whole`), ranked and sorted;
    by numba's one-pass kernel where it applies (:func:`prepare_marked_on_cpu`)."""
    fused = prepare_marked_on_cpu(frame, orientation, limit)
    if fused is not None:
        return fused
    vertices = partition_vertices(frame)
    n = vertex_count(vertices)
    keys = canonical_keys(frame, vertices)
    degree = degree_counts(keys, n)
    oriented, order, orientation, reason = orient_whole(keys, degree, n, orientation, limit,
                                                        epsilon)
    csr = from_keys(oriented, n, 0, n)
    return WholeGraph(tuple(csr), n, ids_by_rank(vertices, order), by_rank(degree, order),
                      orientation, reason)


def prepare_marked_on_cpu(frame: Any, orientation: str, limit: int | None = None,
                          ) -> WholeGraph | None:
    """:func:`prepare_partition` by numba's one-pass kernel
    (:func:`dtri.kernels.prepare.cpu.prepare_marked`), where it applies: host arrays whose ids are
    held as marks (:func:`~dtri.kernels.canonicalize.partition_vertices`' rule), the
    ``degree`` or ``id`` orientation (or ``auto`` where it keeps ``degree``), in a process
    whose numba kernels are ready (:func:`~dtri.kernels.dispatch.compiled_kernels_ready`: a
    process's first small count imports no numba). ``None``
    elsewhere: the NumPy path then runs, and refuses what it refuses."""
    if orientation not in ("auto", "degree", "id"):
        return None
    src, dst = id_columns(frame)
    if is_device_object(src) or not src.shape[0] or not compiled_kernels_ready(src.shape[0]):
        return None  # the GPU's and an empty frame's path need no numba kernel, nor its wait
    smallest = min(int(src.min()), int(dst.min()))
    largest = max(int(src.max()), int(dst.max()))
    if smallest < 0 or largest > MAX_MARKED_ID or \
            not dense_range(largest, 2 * src.shape[0], MARKS_BYTES_PER_ID):
        return None
    from dtri.kernels.prepare.cpu import prepare_marked

    # int64 whatever the input's ids: the one type the kernel is loaded for ahead
    # (dtri.kernels.warm), where another would compile it again
    out, offsets, n, ids, degree, longest = prepare_marked(
        np.ascontiguousarray(src, dtype=np.int64), np.ascontiguousarray(dst, dtype=np.int64),
        largest, orientation != "id")
    if orientation == "auto":
        limit = hash_list_limit() if limit is None else limit
        orientation = auto_orientation(longest, limit)
        if orientation != "degree":
            return None  # the peeling's ranks: the NumPy path
        reason = orientation_reason(orientation, longest, limit)
    else:
        reason = orientation_reason(orientation)
    return WholeGraph(tuple(CSR(out, offsets, 0)), n, ids, degree, orientation, reason)


def orient_whole(keys: Any, degree: Any, vertices: int, orientation: str,
                 limit: int | None = None, epsilon: float | None = None,
                 ) -> tuple[Any, Any | None, str, str]:
    """The oriented keys of a whole graph, the dense vertex of every rank (``None``: the
    dense ids), the orientation used (``auto`` resolved: degree unless its longest out-list
    exceeds ``limit``, default :func:`~dtri.kernels.orient.hash_list_limit`) and one line on
    why. ``epsilon``: the peeling's (default
    :func:`~dtri.kernels.orient.adirection_epsilon`); the caller passes both when they must
    be read where the run started rather than here."""
    longest = None
    if orientation == "auto":
        rank, order = rank_and_order(degree, "degree")
        oriented = orient_keys(keys, rank, vertices)
        longest = longest_out_list(out_degree_counts(oriented, vertices))
        limit = hash_list_limit() if limit is None else limit
        orientation = auto_orientation(longest, limit)
        if orientation == "degree":  # the keys oriented already
            return oriented, order, orientation, orientation_reason(orientation, longest, limit)
        del rank, order, oriented  # not held through the peeling
    peeling = rounds = None
    if orientation == "adirection":
        epsilon = adirection_epsilon() if epsilon is None else epsilon
        peeling = peel_levels(keys, degree, vertices, epsilon)
        rounds = peeling.rounds
    rank, order = rank_and_order(degree, orientation, peeling)
    return (orient_keys(keys, rank, vertices), order, orientation,
            orientation_reason(orientation, longest, limit, rounds))


def prepare_inputs(orientation: str, limit: int | None, epsilon: float | None,
                   *frames: Any) -> WholeGraph:
    """:func:`prepare_partition` of input partitions taken together."""
    return prepare_partition(concat_frames(*frames), orientation, limit, epsilon)


def host_prepare_edges() -> int:
    """``dtri.host-prepare-edges``: the largest input a GPU run prepares on
    the host."""
    return int(dask.config.get(HOST_PREPARE_EDGES))


def prepare_inputs_on_host(orientation: str, limit: int | None, epsilon: float | None,
                           *frames: Any) -> WholeGraph:
    """:func:`prepare_inputs` of a small graph's device partitions, run on host copies and
    moved back to the device as the prepared graph (one copy an array). Its few thousand
    edges cost the CPU microseconds a step, where the device pays a launch for each of the
    preparation's dozens of array calls (and a machine's first process compiles a CUDA
    module for each); the prepared graph is the same either way."""
    src, dst = id_columns(concat_frames(*frames))
    xp = array_module(src)
    whole = prepare_partition(EdgeArrays(to_host(src), to_host(dst)), orientation, limit,
                              epsilon)
    return whole._replace(
        csr=tuple(xp.asarray(item) if hasattr(item, "shape") else item for item in whole.csr),
        ids=xp.asarray(whole.ids), degree=xp.asarray(whole.degree))
