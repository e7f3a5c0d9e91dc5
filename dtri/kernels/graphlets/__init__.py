"""Graphlet degrees: the 16 orbit frequencies of the Fast Graphlet Transform (FGLT: Floros,
Pitsianis & Sun) per vertex, as array code over NumPy or CuPy.

The orbits of the graphlets up to four vertices (FGLT's dictionary Σ16), of a vertex ``v``:

====  ==========================================  ====  =====================================
σ0    ``v`` itself                                σ8    claw, at the centre
σ1    edge, at an end (the degree)                σ9    paw, at the tail tip
σ2    2-path, at an end                           σ10   paw, at a triangle vertex of degree 2
σ3    2-path, at the centre                       σ11   paw, at the vertex joined to the tail
σ4    triangle                                    σ12   4-cycle
σ5    3-path, at an end                           σ13   diamond, at a vertex of degree 2
σ6    3-path, at an interior vertex               σ14   diamond, at a vertex of degree 3
σ7    claw, at a leaf                             σ15   4-clique
====  ==========================================  ====  =====================================

*Raw* frequencies count subgraphs that need not be induced; *net* ones count induced subgraphs.
``raw = U · net`` with the unit upper-triangular :data:`RAW_FROM_NET`; :func:`net_from_raw`
inverts it exactly, by back substitution in int64.

The raw frequencies come from a few per-vertex and per-edge quantities, with ``d`` the degree,
``t`` the triangles at a vertex, ``s`` the triangles on an edge, sums over the neighbours
``a`` of ``v``:

* σ2 = Σ (d_a − 1), σ3 = C(d, 2), σ4 = t, σ5 = Σ σ2(a) − d (d − 1) − 2 t,
  σ6 = (d − 1) σ2 − 2 t, σ7 = Σ C(d_a − 1, 2), σ8 = C(d, 3), σ9 = Σ t_a − 2 t,
  σ10 = Σ s_va (d_a − 2), σ11 = t (d − 2), σ14 = Σ C(s_va, 2): one pass over the edges
  (:func:`neighbour_sums`), and one more for σ5 (:func:`neighbour_total`);
* σ13 = Σ over the triangles at ``v`` of the triangles on the opposite edge, minus ``t``;
  σ15, the 4-cliques: from the triangles listed by position (:func:`triangle_terms`);
* σ12, the 4-cycles: from oriented wedges binned by their anchor and reduced by key
  (:func:`cycle_records`, :func:`cycle_credits`).
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

import numpy as np

from dtri.kernels.bins import split_by_bounds
from dtri.kernels.counting import weighted_counts
from dtri.kernels.csr import CSR, sources
from dtri.kernels.dispatch import (
    array_module,
    clique_counts_kernel,
    cycle_credits_kernel,
    cycle_records_kernel,
    list_triangles_kernel,
    triangle_ids_kernel,
)

ORBITS = 16
COLUMNS = tuple(f"sigma{i}" for i in range(ORBITS))
BASIC_ORBITS = 5
"""σ0 … σ4: the orbits of the graphlets up to three vertices (``orbits="sigma0-4"``)."""
GRAPHLETS = (("edges", 1, 2), ("2-paths", 3, 1), ("triangles", 4, 3), ("3-paths", 6, 2),
             ("claws", 8, 1), ("paws", 11, 1), ("4-cycles", 12, 4), ("diamonds", 14, 2),
             ("4-cliques", 15, 4))
"""Each graphlet of two or more vertices, an orbit of it and that orbit's vertices in one
copy: the graph's copies are the orbit's sum over the vertices divided by it (net: induced
copies; raw: every copy)."""

RAW_FROM_NET = np.array([
    # σ0 σ1 σ2 σ3 σ4 σ5 σ6 σ7 σ8 σ9 σ10 σ11 σ12 σ13 σ14 σ15
    [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 1, 0, 2, 4, 2, 6],
    [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 2, 2, 2, 4, 6],
    [0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 2, 1, 3],
    [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 3],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 2, 2, 6],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 2, 3],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 3],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 3],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
], dtype=np.int64)
"""``U[i, j]``: the subgraphs of orbit ``i`` at a vertex of orbit ``j`` that span the graphlet
of ``j`` (so ``raw σ2 = net σ2 + 2 net σ4``, ``raw σ3 = net σ3 + net σ4``). Derived by
enumeration; ``tests/kernels/test_graphlet_kernels.py`` derives it again."""


def net_from_raw(raw: Any) -> Any:
    """Net frequencies (rows σ0 …) from raw ones (an int64 ``(k, n)`` array, ``k`` = 5 or 16),
    exact: back substitution through :data:`RAW_FROM_NET`'s unit upper triangle."""
    net = raw.copy()
    rows = raw.shape[0]
    for i in range(rows - 1, -1, -1):
        for j in range(i + 1, rows):
            weight = int(RAW_FROM_NET[i, j])
            if weight:
                net[i] -= weight * net[j]
    return net


def raw_from_net(net: Any) -> Any:
    """Raw frequencies from net ones (``raw = U · net``), exact in int64."""
    raw = net.copy()
    rows = net.shape[0]
    for i in range(rows):
        for j in range(i + 1, rows):
            weight = int(RAW_FROM_NET[i, j])
            if weight:
                raw[i] += weight * net[j]
    return raw


def choose2(x: Any) -> Any:
    return x * (x - 1) // 2


def choose3(x: Any) -> Any:
    """``C(x, 3)``, exact wherever it fits int64: ``C(x, 2) (x - 2) / 3``, divided before the
    product overflows (``q (x - 2) + r (x - 2) / 3`` with ``C(x, 2) = 3 q + r``)."""
    q, r = divmod(choose2(x), 3)
    return q * (x - 2) + r * (x - 2) // 3


# ----------------------------------------------------------------- sums over the neighbours

NEIGHBOUR_SUMS = 5
"""Rows of :func:`neighbour_sums`."""


def _both_ways(src: Any, dst: Any, to_src: Any, to_dst: Any, vertices: int) -> Any:
    """``Σ`` over the edges at each vertex: ``to_src`` (per edge) to its source and ``to_dst``
    to its target (exact, int64)."""
    total = weighted_counts(src, to_src, vertices)
    total += weighted_counts(dst, to_dst, vertices)
    return total


def neighbour_sums(part: CSR, support: Any, degree: Any, triangles: Any, vertices: int,
                   basic: bool = False) -> Any:
    """Over the edges of one partition, per vertex ``v`` (rank) and its neighbours ``a``
    there: ``Σ (d_a − 1)``, ``Σ C(d_a − 1, 2)``, ``Σ t_a``, ``Σ s_va (d_a − 2)`` and
    ``Σ C(s_va, 2)`` (``(5, vertices)`` int64; ``basic``: the first row only). ``support``:
    the triangles on each edge; ``degree``, ``triangles``: vertex-wide, by rank."""
    xp = array_module(part.offsets)
    src, dst = sources(part), part.dst.astype(xp.int64)
    rows = 1 if basic else NEIGHBOUR_SUMS
    out = xp.zeros((rows, vertices), dtype=xp.int64)
    if part.edges == 0:
        return out
    ds, dd = degree[src].astype(xp.int64), degree[dst].astype(xp.int64)
    out[0] = _both_ways(src, dst, dd - 1, ds - 1, vertices)
    if basic:
        return out
    out[1] = _both_ways(src, dst, choose2(dd - 1), choose2(ds - 1), vertices)
    out[2] = _both_ways(src, dst, triangles[dst], triangles[src], vertices)
    s = support.astype(xp.int64)
    out[3] = _both_ways(src, dst, s * (dd - 2), s * (ds - 2), vertices)
    pairs = choose2(s)
    out[4] = _both_ways(src, dst, pairs, pairs, vertices)
    return out


def neighbour_total(part: CSR, values: Any, vertices: int) -> Any:
    """``Σ values[a]`` over the neighbours ``a`` of each vertex along one partition's edges
    (int64, vertex-wide)."""
    xp = array_module(part.offsets)
    if part.edges == 0:
        return xp.zeros(vertices, dtype=xp.int64)
    src, dst = sources(part), part.dst.astype(xp.int64)
    return _both_ways(src, dst, values[dst], values[src], vertices)


def raw_orbits(degree: Any, triangles: Any, sums: Any, second: Any | None, tri_terms: Any,
               cycles: Any) -> Any:
    """Raw frequencies of a range of vertices (``(16, k)`` int64; ``(5, k)`` when only the
    first row of ``sums`` is given and the rest is ``None``), from their degrees, triangles,
    :func:`neighbour_sums` (rows), ``Σ σ2(a)`` (``second``), :func:`triangle_terms` rows
    (``Σ s(opposite)``, 4-cliques) and 4-cycles."""
    xp = array_module(degree)
    d = degree.astype(xp.int64)
    t = triangles.astype(xp.int64)
    full = second is not None
    raw = xp.zeros((ORBITS if full else BASIC_ORBITS, d.shape[0]), dtype=xp.int64)
    raw[0] = 1
    raw[1] = d
    raw[2] = sums[0]
    raw[3] = choose2(d)
    raw[4] = t
    if not full:
        return raw
    raw[5] = second - d * (d - 1) - 2 * t
    raw[6] = (d - 1) * sums[0] - 2 * t
    raw[7] = sums[1]
    raw[8] = choose3(d)
    raw[9] = sums[2] - 2 * t
    raw[10] = sums[3]
    raw[11] = t * (d - 2)
    raw[12] = cycles
    raw[13] = tri_terms[0] - t
    raw[14] = sums[4]
    raw[15] = tri_terms[1]
    return raw


# ----------------------------------------------------------------- triangles by position

class TriangleRecords(NamedTuple):
    """Triangles ``a < b < c`` (ranks) listed by the positions of their edges: ``ab`` and
    ``ac`` in the partition, ``bc`` in the range's CSR (int64 each)."""

    ab: Any
    ac: Any
    bc: Any


def prefix_cuts(counts: Any, budget: int) -> list[int]:
    """Cuts of ``counts`` into consecutive runs whose sums are at most ``budget`` each (an item
    above it is a run of its own), greedily from the left by searches of the prefix sums: the
    bounds, ascending from 0 to the length."""
    xp = array_module(counts)
    size = int(counts.shape[0])
    if size == 0:
        return [0]
    ends = xp.cumsum(counts.astype(xp.int64))
    bounds, before = [0], 0
    while bounds[-1] < size:
        wanted = xp.asarray([before + budget], dtype=xp.int64)
        stop = max(int(xp.searchsorted(ends, wanted, side="right")[0]), bounds[-1] + 1)
        bounds.append(stop)
        before = int(ends[stop - 1])
    return bounds


def record_batches(per_edge: Any, budget_records: int) -> list[tuple[int, int]]:
    """Edge ranges ``[first, last)`` whose records (``per_edge``: the triangles each edge lists)
    sum to at most ``budget_records`` each (an edge with more is a batch of its own): the
    prefix sums size every batch before a record is written."""
    return list(itertools.pairwise(prefix_cuts(per_edge, budget_records)))


def list_triangles(part: CSR, group: CSR, per_edge: Any, first: int, last: int
                   ) -> TriangleRecords:
    """The triangles of edges ``first .. last - 1`` of ``part`` whose middle vertex lies in
    ``group``'s range, ``per_edge`` of them at each edge (from the intersection's ``uv``
    credits), as :class:`TriangleRecords`, edge by edge."""
    xp = array_module(part.offsets)
    counts = per_edge[first:last].astype(xp.int64)
    starts = xp.zeros(last - first + 1, dtype=xp.int64)
    xp.cumsum(counts, out=starts[1:])
    total = int(starts[-1])
    ab = xp.empty(total, dtype=xp.int64)
    ac = xp.empty(total, dtype=xp.int64)
    bc = xp.empty(total, dtype=xp.int64)
    if total:
        list_triangles_kernel(part.dst, part.offsets, group.dst, group.offsets, group.low,
                              group.high, first, last, starts, ab, ac, bc)
    return TriangleRecords(ab, ac, bc)


def triangle_ids(part: CSR, lowest: Any, records: TriangleRecords, ids: Any) -> Any:
    """The input ids of ``records`` (triangles of ``part``'s edges; ``lowest``: the source of
    each edge, :func:`~dtri.kernels.csr.sources`; ``ids``: the input id of each rank),
    ascending row by row, as one int64 block of three rows ``a < b < c``."""
    xp = array_module(part.offsets)
    block = xp.empty((3, int(records.ab.shape[0])), dtype=xp.int64)
    if records.ab.shape[0]:
        triangle_ids_kernel(lowest, part.dst, ids, records.ab, records.ac, block)
    return block


def gathered_triangle_ids(lowest: Any, dst: Any, ids: Any, ab: Any, ac: Any, block: Any
                          ) -> None:
    """:func:`triangle_ids` by array code (CuPy's): the three ids gathered, then the least,
    the greatest and the middle (by exclusive or, which cannot overflow) written into
    ``block``."""
    xp = array_module(ab)
    x, y, z = (ids[ranks].astype(xp.int64, copy=False)
               for ranks in (lowest[ab], dst[ab], dst[ac]))
    low, middle, high = block
    xp.minimum(x, y, out=low)
    xp.minimum(low, z, out=low)
    xp.maximum(x, y, out=high)
    xp.maximum(high, z, out=high)
    xp.bitwise_xor(x, y, out=middle)
    middle ^= z
    middle ^= low
    middle ^= high


def clique_counts(part: CSR, group: CSR, top: CSR, records: TriangleRecords) -> tuple[Any, Any]:
    """4-cliques ``a < b < c < d`` over the triangles ``records`` whose top vertex ``c`` lies in
    ``top``'s range: per record, the ``d`` in ``N+(a) ∩ N+(b) ∩ N+(c)`` above ``c``; per edge of
    ``part``, the cliques whose ``(a, d)`` it is (int64 both)."""
    xp = array_module(part.offsets)
    per_record = xp.zeros(records.ab.shape[0], dtype=xp.int64)
    per_edge = xp.zeros(part.edges, dtype=xp.int64)
    if records.ab.shape[0]:
        clique_counts_kernel(part.dst, part.offsets, group.dst, group.offsets, group.low,
                             top.dst, top.offsets, top.low, top.high, records.ab, records.ac,
                             records.bc, per_record, per_edge)
    return per_record, per_edge


def triangle_terms(part: CSR, group: CSR, top: CSR, records: TriangleRecords,
                   part_support: Any | None, group_support: Any, vertices: int) -> Any:
    """Per vertex (rank), over the listed triangles: row 0, ``Σ`` of the triangles on the
    edge opposite it (with ``part_support``/``group_support``: the triangles on the edges of
    ``part`` and ``group``; ``None``: row 0 stays 0, counted in another task); row 1, the
    4-cliques through it whose third vertex lies in ``top``'s range. ``(2, vertices)``
    int64."""
    xp = array_module(part.offsets)
    out = xp.zeros((2, vertices), dtype=xp.int64)
    if records.ab.shape[0] == 0:
        return out
    a = xp.searchsorted(part.offsets, records.ab, side="right") - 1 + part.low
    b = part.dst[records.ab].astype(xp.int64)
    c = part.dst[records.ac].astype(xp.int64)
    if part_support is not None:
        out[0] = weighted_counts(a, group_support[records.bc], vertices)
        out[0] += weighted_counts(b, part_support[records.ac], vertices)
        out[0] += weighted_counts(c, part_support[records.ab], vertices)
    per_record, per_edge = clique_counts(part, group, top, records)
    for vertex in (a, b, c):
        out[1] += weighted_counts(vertex, per_record, vertices)
    out[1] += weighted_counts(part.dst, per_edge, vertices)
    return out


# ----------------------------------------------------------------- 4-cycles by anchor

PACKED_ID_BITS = 63
"""A wedge is one int64 key ``(v, x, u)`` when three ids fit these bits, else two."""
CYCLE_RECORD_BYTES = 48
"""Working bytes per oriented wedge of one key while a batch of them is written and split."""
CYCLE_REDUCE_BYTES = 48
"""Working bytes per oriented wedge of one key while an anchor range's wedges are joined,
sorted and reduced (the pieces and their join, the sorted copy and the sort's scratch, then a
run index and count per wedge)."""


def wedge_bytes(per_key: int, bits: int) -> int:
    """Working bytes per oriented wedge (``per_key``: a constant above), doubled where a wedge
    takes two int64 keys."""
    return per_key if 3 * bits <= PACKED_ID_BITS else 2 * per_key


def cycle_wedges_per_edge(part: CSR, indegree: Any, first: int = 0,
                          last: int | None = None) -> Any:
    """Oriented wedges of edges ``first .. last - 1`` (default: all) of a partition, each
    ``u → v``: the neighbours ``x`` of ``u`` ranked below ``v`` (other than ``v``), i.e.
    ``u``'s in-list (``indegree``: its length, per source of the range) and its out-list
    before ``v``. Each 4-cycle is two such wedges ``v - u - x`` that share the anchor ``v``
    (its highest-ranked vertex) and ``x`` (the one opposite)."""
    xp = array_module(part.offsets)
    last = part.edges if last is None else last
    row = sources(part, first, last) - part.low
    before = xp.arange(first, last, dtype=xp.int64) - part.offsets[row]
    return indegree[row] + before


def cycle_records(part: CSR, inward: CSR, counts: Any, first: int, last: int,
                  bits: int) -> Any:
    """The oriented wedges ``v - u - x`` of edges ``first .. last - 1`` as keys: ``(v, x, u)``
    packed (``bits`` each) where three ids fit 63 bits, else ``(v, x)`` packed with ``u``
    beside them (a ``(k, 2)`` array)."""
    xp = array_module(part.offsets)
    starts = xp.zeros(last - first + 1, dtype=xp.int64)
    xp.cumsum(counts.astype(xp.int64), out=starts[1:])
    total = int(starts[-1])
    three = 3 * bits <= PACKED_ID_BITS
    out = xp.empty(total if three else (total, 2), dtype=xp.int64)
    if total:
        cycle_records_kernel(part.dst, part.offsets, part.low, inward.dst, inward.offsets,
                             first, last, starts, bits, out)
    return out


def split_by_anchor(keys: Any, bits: int, anchor_bounds: list[int]) -> dict[int, Any]:
    """Wedge keys (:func:`cycle_records`) cut by the anchor ranges ``anchor_bounds``: a piece
    per range, every range present."""
    if len(anchor_bounds) == 2:
        return {0: keys}
    anchor = keys >> (2 * bits) if keys.ndim == 1 else keys[:, 0] >> bits
    return split_by_bounds(keys, anchor, anchor_bounds)


def cycle_credits(keys: Any, bits: int, vertices: int) -> Any:
    """4-cycles at each vertex (int64, vertex-wide) from every oriented wedge of a range of
    anchors: the wedges of one ``(v, x)`` — ``m`` of them — close ``C(m, 2)`` cycles, each
    at ``v``, at ``x`` and at two of the ``m`` middles (``m - 1`` at each middle)."""
    xp = array_module(keys)
    if keys.shape[0] == 0:
        return xp.zeros(vertices, dtype=xp.int64)
    return cycle_credits_kernel(keys, bits, vertices)


def sorted_cycle_credits(keys: Any, bits: int, vertices: int) -> Any:
    """:func:`cycle_credits` by a sort of the keys and their runs (the GPU's way; the CPU
    counts per anchor instead, :func:`dtri.kernels.graphlets.cpu.cycle_credits_cpu`)."""
    from dtri.kernels.dispatch import sort_keys

    xp = array_module(keys)
    if keys.shape[0] == 0:
        return xp.zeros(vertices, dtype=xp.int64)
    mask = (1 << bits) - 1
    if keys.ndim == 1:
        keys = sort_keys(keys)
        middle = keys & mask
        keys >>= bits  # the pairs (v, x), in place
        pair = keys
    else:
        order = xp.argsort(keys[:, 0])
        pair = keys[order, 0]
        middle = keys[order, 1]
        del order
    del keys
    opens = xp.empty(pair.shape[0], dtype=bool)
    opens[0] = True
    xp.not_equal(pair[1:], pair[:-1], out=opens[1:])
    starts = xp.flatnonzero(opens)
    runs = xp.diff(xp.concatenate([starts, xp.asarray([pair.shape[0]], dtype=starts.dtype)]))
    first = pair[starts]
    del pair, starts
    cycles = choose2(runs)
    total = weighted_counts(first >> bits, cycles, vertices)
    total += weighted_counts(first & mask, cycles, vertices)
    del first, cycles
    group = xp.cumsum(opens, dtype=xp.int64)
    del opens
    group -= 1
    per_record = runs[group]
    del group
    per_record -= 1
    total += weighted_counts(middle, per_record, vertices)
    return total


def anchor_wedges(part: CSR, per_edge: Any, vertices: int) -> Any:
    """Oriented wedges per anchor ``v`` (rank) of one partition's edges (int64,
    vertex-wide): what sizes the anchor ranges."""
    xp = array_module(part.offsets)
    if part.edges == 0:
        return xp.zeros(vertices, dtype=xp.int64)
    return weighted_counts(part.dst, per_edge, vertices)


def anchor_ranges(per_anchor: Any, budget_records: int) -> list[int]:
    """Anchor ranges of at most ``budget_records`` wedges each (an anchor with more is a
    range of its own), as ascending bounds from 0 to the vertex count."""
    bounds = prefix_cuts(per_anchor, budget_records)
    return bounds if len(bounds) > 1 else [0, 0]
