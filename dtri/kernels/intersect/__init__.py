"""Fused join: triangles by sorted-list intersection per oriented edge, no wedge written.

For an oriented edge ``e = (u, v)`` of a partition, the triangles it closes are
``N+(u)[after v] ∩ N+(v)``: each triangle ``u < v < w`` (by rank) is found once, at its two
lowest vertices, and the memory is the edges alone.

``N+(u)`` comes from the partition itself (:class:`~dtri.kernels.csr.CSR`, whole adjacency
lists); ``N+(v)`` from a CSR of the source range the target lies in (an edge bin, a group of
partitions, or the partition itself), so a task needs one partition and one such range.

Beyond a total, :func:`intersect` says where the triangles are. Each triangle ``u < v < w``
found at ``e = (u, v)`` is credited to its three edges, by position:

* ``uv[e]``, the edge between its two lowest vertices, in the partition;
* ``uw[i]``, where ``i`` is the position of ``w`` in ``u``'s list (the edge ``(u, w)``), in the
  partition;
* ``vw[j]``, where ``j`` is the position of ``w`` in ``v``'s list (the edge ``(v, w)``), in the
  range's CSR (``group_credits``).

Those give the triangles on each edge (its support: the three credits summed where each edge
lives) and the triangles at each vertex: ``u`` through ``uv`` by source, ``v`` through ``uv``
by target and ``w`` through ``uw`` by target (:func:`vertex_credits`), with no per-triangle
write to a vertex (on skewed graphs most ``w`` are a few hubs, whose counters every thread
would hit at once).

Per-edge *states* (0 gone, 1 alive, 2 leaving) restrict the search to the edges still there,
and ``peel`` credits only the triangles that lose an edge, to their edges that stay: the
support each keeping edge loses when the leaving ones go (:mod:`dtri.analytics.truss`).

How an edge is intersected depends on its two lengths, ``a`` (``u``'s members after ``v``)
and ``b`` (``v``'s list), by :func:`~dtri.kernels.strategy.edge_class`, the same rule on
both backends: *hashed* where ``v``'s list is long enough to be worth a table and streaming
``u``'s later members through it costs no more than searching (all the hashed edges
together cost their wedges); else *search*, the shorter list walked and each member
binary-searched in the longer one (smaller-degree-first: ``Σ min(len) · log(max)``).

On NumPy arrays the kernel is compiled by numba (one pass over the partition, a table per
thread); on CuPy arrays it runs as CUDA kernels (:mod:`dtri.kernels.intersect.cuda`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from dtri.kernels.csr import CSR
from dtri.kernels.dispatch import array_module, is_device_object
from dtri.kernels.strategy import (
    CPU_KERNELS,
    CREDIT_DTYPE,
    MARKS_GALLOP_RATIO,
    PARALLEL_MIN_EDGES,
    hash_max_members,
    hash_tuning,
    kernel_threads,
    leaving_sources,
)


def work_counters(part: CSR, group: CSR, credits: bool = False,
                  hash_max: int | None = None) -> dict[str, int]:
    """What the fused join of ``part`` against ``group`` does, by the class rule
    (:func:`edge_class`): edges per class, the hashed edges' probes (``Σ a``) and tables
    filled (``Σ b`` over their distinct targets), the searched edges' shorter lists
    (``searched_members``) and steps (``Σ`` shorter × bit-length of longer) and, for
    comparison, the steps were every edge searched. ``hash_max``: the longest list a table
    holds, where not :func:`hash_max_members` (the GPU's may be less: its shared memory's);
    :func:`dtri.kernels.traffic.counted_bytes` makes the bytes read of them."""
    from dtri.kernels.csr import sources

    xp = array_module(part.offsets)
    tuning = hash_tuning()
    v = part.dst.astype(xp.int64)
    inside = xp.flatnonzero((v >= group.low) & (v < group.high))
    position = inside
    rows = sources(part)[inside] - part.low
    a = part.offsets[rows + 1] - position - 1
    target = v[inside] - group.low
    b = group.offsets[target + 1] - group.offsets[target]
    live = (a > 0) & (b > 0)
    a, b, target = a[live], b[live], target[live]
    shorter, longer = xp.minimum(a, b), xp.maximum(a, b)
    steps = shorter * (xp.floor(xp.log2(longer.astype(xp.float64))).astype(xp.int64) + 1)
    limit = (hash_max_members(credits) if hash_max is None else hash_max) \
        if tuning.enabled else 0
    hashed = ((b >= tuning.min_members) & (b <= limit)
              & (a * tuning.probe_cost <= steps))
    tables = xp.unique(target[hashed])
    return {"edges": int(live.sum()), "hashed_edges": int(hashed.sum()),
            "probes": int(a[hashed].sum()),
            "table_members": int((group.offsets[tables + 1] - group.offsets[tables]).sum()),
            "searched_edges": int((~hashed).sum()),
            "searched_members": int(shorter[~hashed].sum()),
            "search_steps": int(steps[~hashed].sum()),
            "search_steps_if_all_searched": int(steps.sum())}


class Intersection(NamedTuple):
    """What :func:`intersect` found: the triangles, and where asked, their credits."""

    triangles: int
    """Triangles found (with ``peel``: those that lose an edge)."""
    uv: Any = None
    """Per partition edge: triangles where it joins the two lowest vertices."""
    uw: Any = None
    """Per partition edge ``(u, w)``: triangles where it joins the lowest and the highest."""
    vw: Any = None
    """Per edge of the range's CSR: triangles where it joins the two highest vertices."""
    bytes_read: int | None = None
    """On the GPU, the bytes the join read by the model of :mod:`dtri.kernels.traffic`
    (``None`` on the CPU: its kernels keep no such sums)."""


def intersect(part: CSR, group: CSR, *, credits: bool = False, group_credits: bool = False,
              part_state: Any = None, group_state: Any = None, peel: bool = False,
              chunk_rows: int | None = None, group_out: Any = None,
              kernel: str = "hash") -> Intersection:
    """Triangles closed by the edges of ``part`` whose target lies in ``group``'s source range.

    ``credits``: also return ``uv`` and ``uw`` (per edge of ``part``); ``group_credits``: also
    ``vw`` (per edge of ``group``). ``part_state``/``group_state`` (uint8 per edge, both or
    neither): only edges in a state other than gone take part; with ``peel``, only the
    triangles with a leaving edge are counted, and only the alive (not leaving) edges are
    credited. ``chunk_rows``: on the GPU, partition rows per pass (bounds the working
    arrays). ``group_out``: the group's credits are added to it in place (one group-wide
    array for many calls) instead of to a new ``vw``. ``part`` and ``group`` may be the same
    CSR. ``kernel``: on the CPU, one of :data:`~dtri.kernels.strategy.CPU_KERNELS` (the
    planner's choice, :func:`~dtri.kernels.strategy.cpu_kernel`); ``marks`` takes no states
    (a peeling runs ``hash``). The GPU's kernels ignore it.
    """
    if kernel not in CPU_KERNELS:
        raise ValueError(f"kernel must be one of {CPU_KERNELS}, got {kernel!r}")
    if (part_state is None) != (group_state is None):
        raise ValueError("give both part_state and group_state, or neither")
    if peel and part_state is None:
        raise ValueError("peel needs the edges' states")
    xp = array_module(part.offsets)
    uv = uw = vw = None
    if credits or peel:
        uv = xp.zeros(part.edges, dtype=CREDIT_DTYPE)
        uw = xp.zeros(part.edges, dtype=CREDIT_DTYPE)
    if group_credits:
        vw = xp.zeros(group.edges, dtype=CREDIT_DTYPE) if group_out is None else group_out
    if part.edges == 0 or group.edges == 0 or group.high <= group.low:
        return Intersection(0, uv, uw, vw, 0 if is_device_object(part.offsets) else None)
    if is_device_object(part.offsets):
        from dtri.kernels.intersect.cuda import intersect_cuda

        found, read = intersect_cuda(part, group, uv, uw, vw, part_state, group_state, peel,
                                     chunk_rows)
        return Intersection(found, uv, uw, vw, read)
    found = _intersect_numpy(part, group, uv, uw, vw, part_state, group_state, peel, kernel)
    return Intersection(found, uv, uw, vw)


def vertex_credits(part: CSR, uv: Any, uw: Any, vertices: int, out: Any = None) -> Any:
    """Triangles at each vertex (rank) from a partition's ``uv`` and ``uw`` credits: ``u`` by
    ``uv`` at the source, ``v`` by ``uv`` and ``w`` by ``uw`` at the target (int64, one per
    rank ``0 .. vertices - 1``), added to ``out`` in place where given (one vertex-wide array
    in all: at R-MAT 28 each is 2 GiB)."""
    from dtri.kernels.counting import weighted_counts
    from dtri.kernels.csr import sources

    xp = array_module(part.offsets)
    lowest = uv.astype(xp.int64)
    total = weighted_counts(sources(part), lowest, vertices, out)
    lowest += uw
    return weighted_counts(part.dst, lowest, vertices, total)


# ---------------------------------------------------------------- the CPU kernel (numba)

def _intersect_numpy(part: CSR, group: CSR, uv: Any, uw: Any, vw: Any, part_state: Any,
                     group_state: Any, peel: bool, kernel: str, threads: int | None = None,
                     ) -> int:
    """:func:`intersect` on NumPy arrays, by a numba kernel (:mod:`dtri.kernels.intersect.cpu`), on
    several threads where the run allows it and no credit goes to the group (its counters
    are shared between rows). ``marks``: each row marked once, every edge streaming its
    target's list (:func:`~dtri.kernels.intersect.cpu.intersect_marked`); else edges are classed by
    :func:`edge_class` with the tables' limit of the credits wherever anything beyond the
    count is recorded (as on the GPU), ``search`` with the tables off. ``threads``: the
    threads to use (:func:`dtri.kernels.warm.warm_count_kernels` loads both kinds), else as
    the run and the partition allow."""
    import dask

    from dtri.kernels.intersect.cpu import (
        intersect_edges,
        intersect_edges_parallel,
        intersect_marked,
        intersect_marked_threads,
    )

    none8 = np.zeros(0, dtype=np.uint8)
    none32 = np.zeros(0, dtype=CREDIT_DTYPE)
    stateful = part_state is not None
    smallest = dask.config.get(PARALLEL_MIN_EDGES)
    if threads is None:
        threads = kernel_threads() if part.edges >= smallest and vw is None else 1
    if kernel == "marks" and not stateful:
        credited = uv is not None
        # a count's marks are flags (a byte); with credits, positions in the row
        flags = np.zeros(1, dtype=np.int32 if credited else np.uint8)
        row_credits = (uv, uw) if credited else (none32, none32)
        if threads > 1:
            row_uv, row_uw = row_credits
            return intersect_marked_threads(
                threads, part.dst, part.offsets, group.dst, group.offsets, group.low,
                group.high, credited, row_uv, row_uw, MARKS_GALLOP_RATIO, flags)
        return int(intersect_marked(
            part.dst, part.offsets, group.dst, group.offsets, group.low, group.high,
            credited, vw is not None, *row_credits, vw if vw is not None else none32,
            MARKS_GALLOP_RATIO, flags))
    part_leaving = leaving_sources(part, part_state) if peel else none8
    group_leaving = leaving_sources(group, group_state) if peel else none8
    states = (part_state if stateful else none8, group_state if stateful else none8,
              part_leaving, group_leaving)
    edge_credits = (uv if uv is not None else none32, uw if uw is not None else none32)
    tuning = hash_tuning()
    recorded = uv is not None or vw is not None or stateful
    hashing = (bool(tuning.enabled) and kernel != "search", int(tuning.min_members),
               float(tuning.probe_cost), int(hash_max_members(recorded)))
    if threads > 1:
        return int(intersect_edges_parallel(
            threads, part.dst, part.offsets, group.dst, group.offsets, group.low, group.high,
            uv is not None, stateful, peel, *states, *edge_credits, hashing))
    return int(intersect_edges(
        part.dst, part.offsets, group.dst, group.offsets, group.low, group.high,
        uv is not None, vw is not None, stateful, peel, *states, *edge_credits,
        vw if vw is not None else none32, hashing))
