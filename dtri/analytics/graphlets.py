"""Graphlet degrees on a prepared graph: the 16 orbit frequencies of the Fast Graphlet
Transform per vertex (:mod:`dtri.kernels.graphlets` has the orbits and the formulas), exact,
on the workers that hold the partitions; ``docs/guide.md`` ("Graphlet degrees") tells how.

The stages, each named in the task keys: ``graphlets-gather`` (the triangles at each vertex,
cached by :func:`triangles`, as one vertex-wide array; those on each edge are
:func:`edge_support`'s totals); ``graphlets-neighbours`` and ``graphlets-second`` (the sums
over neighbours, then σ5); ``graphlets-cliques`` (the triangles listed by position with the
triangles on their opposite edges, σ13, and the 4-cliques over them, σ15, per group of
partitions and per group of the triangles' top vertex, as the credits' plan,
:func:`dtri.analytics.credits.group_plan`, groups the triangles); ``graphlets-inward``,
``graphlets-plan``, ``graphlets-wedges`` and ``graphlets-cycles`` (the 4-cycles' oriented
wedges ``v - u - x``, from in-lists exchanged by target, written in batches that fit a task,
radix-split by the range of their anchor ``v`` and reduced by key per range: σ12); and
``graphlets`` (per partition, the raw frequencies, and the net ones by back substitution).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import getitem
from typing import TYPE_CHECKING, Any

from dtri.analytics.bin_layout import reaches
from dtri.analytics.count import load_group, member_starts, own_partition
from dtri.analytics.credits import group_plan, range_zeros, slice_ranges
from dtri.analytics.edge import result_module, support_totals
from dtri.analytics.vertex import triangle_counts, vertex_blocks
from dtri.errors import ConfigurationError
from dtri.kernels import graphlets as kernels
from dtri.kernels.bins import checked_key_bits
from dtri.kernels.counting import add_counts
from dtri.kernels.csr import as_csr, from_keys, row_range, sources, stored
from dtri.kernels.dispatch import array_module, frame_from_arrays, host_frame
from dtri.kernels.intersect import intersect
from dtri.options import GRAPHLET_KINDS, GRAPHLET_ORBITS
from dtri.runtime.budget import TASK_SHARES
from dtri.runtime.staging import Staging

if TYPE_CHECKING:
    import dask.dataframe as dd

    from dtri.prepared.graph import GraphData
    from dtri.runtime.timer import StageTimer

RECORD_BYTES = 160
"""Working bytes per listed triangle: three positions, their vertices, weights and the clique
kernel's per-record lists and lane classes."""


def check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigurationError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")


# ----------------------------------------------------------------- vertex-wide inputs

def joined_pieces(*pieces: Any) -> Any:
    """Arrays taken together in order (one as it is): the per-partition triangle counts as one
    vertex-wide array, or the key pieces an exchange brought."""
    return array_module(pieces[0]).concatenate(pieces) if len(pieces) > 1 else pieces[0]


def neighbour_pass(part: tuple, support: Any, degree: Any, triangles: Any, vertices: int,
                   basic: bool) -> Any:
    return kernels.neighbour_sums(as_csr(part), support, degree, triangles, vertices, basic)


def second_pass(part: tuple, sums: Any, vertices: int) -> Any:
    return kernels.neighbour_total(as_csr(part), sums[0], vertices)


def vertex_wide_sum(graph: GraphData, stage: str, func: Callable[..., Any],
                    per_partition: list[tuple]) -> Any:
    """``func(*args)`` per partition (on its owner), summed by a tree: one delayed array."""
    tasks = graph.tasks
    leaves = [tasks.task(stage, func, *args, key=(p,), at=tasks.owner(p))
              for p, args in enumerate(per_partition)]
    return tasks.tree(stage, add_counts, leaves)


# ----------------------------------------------------------------- triangles and cliques

def clique_group(staging: Staging, budget_records: int, rows: int, bounds: tuple[int, int],
                 top_bounds: tuple[int, int], group_size: int, top_size: int,
                 with_opposite: bool, vertices: int,
                 pieces: tuple[tuple[int, int, int], ...], *inputs: Any) -> Any:
    """One ``graphlets-cliques`` task: the triangles of ``pieces`` (``(input index, first row,
    last row)``) whose middle vertex lies in the group (the first ``group_size`` inputs, over
    ``bounds``), and their 4-cliques whose top vertex lies in the top group (the next
    ``top_size`` inputs, over ``top_bounds``; the group itself when ``top_size`` is 0).
    With ``with_opposite``, the second half of ``inputs`` are the partitions' supports and
    the triangles' opposite-edge sums are counted too. Returns ``(2, vertices)`` int64."""
    parts = inputs[: len(inputs) // 2] if with_opposite else inputs
    supports = inputs[len(inputs) // 2:] if with_opposite else ()
    members = list(parts[:group_size])
    group = load_group(staging, bounds, members)
    top = load_group(staging, top_bounds, list(parts[group_size: group_size + top_size])) \
        if top_size else group
    xp = array_module(group.offsets)
    group_support = xp.concatenate([staging.to_device(s) for s in supports[:group_size]]) \
        if with_opposite else None
    starts = member_starts(members)
    totals = xp.zeros((2, vertices), dtype=xp.int64)
    for index, first, last in pieces:
        part = own_partition(staging, group, starts, index, parts[index])
        piece = row_range(part, first, last)
        found = intersect(piece, group, credits=True, chunk_rows=rows)
        piece_support = staging.to_device(supports[index])[first:last] if with_opposite \
            else None
        for a, b in kernels.record_batches(found.uv, budget_records):
            records = kernels.list_triangles(piece, group, found.uv, a, b)
            totals += kernels.triangle_terms(piece, group, top, records, piece_support,
                                             group_support, vertices)
    return staging.to_host(totals)


def clique_terms(graph: GraphData, supports: list[Any]) -> Any:
    """``graphlets-cliques`` over the credits' plan, and per group every top group at or
    above it; the opposite-edge sums in the tasks whose top group is their group (each
    triangle once). One delayed ``(2, vertices)`` array."""
    tasks, bounds = graph.tasks, graph.bounds
    plan = group_plan(graph)
    budget = max(graph.task_budget // TASK_SHARES.triangle_records // RECORD_BYTES, 1)
    by_worker: dict[int, list[Any]] = {}
    for t in plan.tasks:
        first, last = plan.groups[t.group]
        members = list(range(first, last + 1))
        for h in range(t.group, len(plan.groups)):
            top_first, top_last = plan.groups[h]
            top_low, top_high = bounds[top_first], bounds[top_last + 1]
            with_opposite = h == t.group
            # a triangle's top vertex is a target of its lowest: skip pieces that miss the top
            reaching = t.pieces if with_opposite else tuple(
                p for p in t.pieces if reaches(graph.summaries[p.partition], top_low, top_high))
            if not reaching:
                continue
            tops = [] if with_opposite else list(range(top_first, top_last + 1))
            ahead = members + tops
            inputs = [*ahead, *dict.fromkeys(p.partition for p in reaching
                                             if p.partition not in ahead)]
            pieces = tuple((inputs.index(p.partition), p.first, p.last) for p in reaching)
            with tasks.on_worker(t.worker):
                by_worker.setdefault(t.worker, []).append(tasks.task(
                    "graphlets-cliques", clique_group, graph.staging, budget, plan.chunk_rows,
                    (bounds[first], bounds[last + 1]), (top_low, top_high), len(members),
                    len(tops), with_opposite, graph.vertices, pieces,
                    *(graph.parts[p] for p in inputs),
                    *((supports[p] for p in inputs) if with_opposite else ()),
                    key=(t.group, h, t.worker), on_host=True))
    if not by_worker:
        return tasks.task("graphlets-cliques", range_zeros, graph.degree, (2, graph.vertices),
                          key=("zeros",), on_host=True)
    folded = []  # summed on each worker first, so one array per worker travels
    for w, results in sorted(by_worker.items()):
        with tasks.on_worker(w):
            folded.append(tasks.tree("graphlets-cliques", add_counts, results, on_host=True))
    return tasks.tree("graphlets-cliques", add_counts, folded, on_host=True)


# ----------------------------------------------------------------- 4-cycles

def inward_split(part: tuple, bounds: list[int], bits: int) -> dict[int, Any]:
    """A partition's edges ``u → v`` as keys ``(v, u)``, cut by the rank range of ``v``."""
    from dtri.kernels.bins import pack_edges, split_by_bounds

    csr = as_csr(part)
    xp = array_module(csr.offsets)
    target = csr.dst.astype(xp.int64)
    keys = pack_edges(target, sources(csr), bits)
    return split_by_bounds(keys, target, bounds)


def inward_csr(vertices: int, bounds: list[int], index: int, *pieces: Any) -> tuple:
    """Partition ``index``'s in-lists: the CSR over its ranks of the edges that end there,
    each list the lower-ranked neighbours, ascending."""
    return stored(from_keys(joined_pieces(*pieces), vertices, bounds[index], bounds[index + 1]))


def edge_indegrees(part: Any, degree: Any) -> Any:
    """The in-degree of each source of a partition's range: its degree less its out-degree."""
    csr = as_csr(part)
    out_degree = csr.offsets[1:] - csr.offsets[:-1]
    return degree[csr.low: csr.high].astype(out_degree.dtype) - out_degree


def wedge_counts(part: tuple, degree: Any, vertices: int,
                 budget_records: int) -> tuple[Any, list[tuple[int, int]]]:
    """A partition's oriented wedges per anchor (vertex-wide) and its wedge batches, from one
    count of the wedges per edge."""
    csr = as_csr(part)
    per_edge = kernels.cycle_wedges_per_edge(csr, edge_indegrees(csr, degree))
    return (kernels.anchor_wedges(csr, per_edge, vertices),
            kernels.record_batches(per_edge, budget_records))


def ranges_of(per_anchor: Any, budget_records: int) -> list[int]:
    return kernels.anchor_ranges(per_anchor, budget_records)


def wedge_split(part: tuple, inward: tuple, first: int, last: int, bits: int,
                anchor_bounds: list[int]) -> dict[int, Any]:
    """One ``graphlets-wedges`` task: the oriented wedges of edges ``first .. last - 1``,
    cut by anchor range."""
    csr, inward = as_csr(part), as_csr(inward)
    indegree = inward.offsets[1:] - inward.offsets[:-1]
    counts = kernels.cycle_wedges_per_edge(csr, indegree, first, last)
    keys = kernels.cycle_records(csr, inward, counts, first, last, bits)
    return kernels.split_by_anchor(keys, bits, anchor_bounds)


def cycle_range(staging: Staging, bits: int, vertices: int, *pieces: Any) -> Any:
    """One ``graphlets-cycles`` task: the 4-cycles at each vertex from an anchor range's
    wedges, joined where they arrive (host memory under host staging) and moved to the
    device once."""
    keys = staging.to_device(joined_pieces(*pieces))
    return staging.to_host(kernels.cycle_credits(keys, bits, vertices))


def cycle_plan(graph: GraphData) -> tuple[list[int], list[list[tuple[int, int]]], int]:
    """The anchor ranges, each partition's wedge batches (edge ranges) and the wedges in all,
    from the per-edge wedge counts (prefix sums: nothing is written yet)."""
    tasks = graph.tasks
    budget = graph.task_budget
    bits = checked_key_bits(graph.vertices)
    batch_records = max(budget // kernels.wedge_bytes(kernels.CYCLE_RECORD_BYTES, bits), 1)
    counted = [tasks.task("graphlets-plan", wedge_counts, part, graph.degree, graph.vertices,
                          batch_records, key=(p,), at=tasks.owner(p))
               for p, part in enumerate(graph.parts)]
    per_anchor = tasks.tree("graphlets-plan", add_counts, [
        tasks.task("graphlets-plan", getitem, c, 0, key=("anchors", p), on_host=True)
        for p, c in enumerate(counted)], on_host=True)
    batches = [tasks.task("graphlets-plan", getitem, c, 1, key=("batches", p), on_host=True)
               for p, c in enumerate(counted)]
    ranges = tasks.task("graphlets-plan", ranges_of, per_anchor,
                        max(budget // kernels.wedge_bytes(kernels.CYCLE_REDUCE_BYTES, bits), 1),
                        key=("ranges",), on_host=True)
    total = tasks.task("graphlets-plan", sum_of, per_anchor, key=("total",), on_host=True)
    anchor_bounds, per_partition, wedges = graph.timer().compute(
        "graphlets-plan", ranges, batches, total)
    return list(anchor_bounds), [list(b) for b in per_partition], int(wedges)


def sum_of(values: Any) -> int:
    return int(values.sum())


def cycle_terms(graph: GraphData) -> Any:
    """4-cycles at each vertex: in-lists by exchange, wedges by batch split by anchor range,
    reduced per range. One delayed vertex-wide array."""
    tasks, bounds = graph.tasks, graph.bounds
    bits = checked_key_bits(graph.vertices)
    splits = [tasks.task("graphlets-inward", inward_split, part, bounds, bits, key=(p,))
              for p, part in enumerate(graph.parts)]
    inward = tasks.exchange("graphlets-inward", splits, inward_csr, graph.partitions,
                            graph.vertices, bounds, indexed=True)
    anchor_bounds, batches, _ = cycle_plan(graph)
    wedge_splits = [tasks.task("graphlets-wedges", wedge_split, part, inward[p], first, last,
                               bits, anchor_bounds, key=(p, first), at=tasks.owner(p))
                    for p, part in enumerate(graph.parts) for first, last in batches[p]]
    if not wedge_splits:
        return tasks.task("graphlets-cycles", range_zeros, graph.degree, graph.vertices,
                          key=("zeros",), on_host=True)
    reduced = tasks.exchange("graphlets-cycles", wedge_splits, cycle_range,
                             len(anchor_bounds) - 1, graph.staging, bits, graph.vertices,
                             on_host=True)
    return tasks.tree("graphlets-cycles", add_counts, reduced)


# ----------------------------------------------------------------- the result

def stack_rows(*arrays: Any) -> Any:
    """Vertex-wide rows (1-D or 2-D arrays) stacked into one ``(rows, vertices)`` array."""
    xp = array_module(arrays[0])
    return xp.concatenate([a[None] if a.ndim == 1 else a for a in arrays])


def orbit_frame(block: tuple, triangles: Any, rows: Any, full: bool, kind: str) -> Any:
    """One partition of :func:`graphlets`: its vertices' frequencies, indexed by input id."""
    ids, degree, present = block
    xp = array_module(degree)
    rows = xp.asarray(rows)
    if full:
        sums, second, terms, cycles = rows[:5], rows[5], rows[6:8], rows[8]
        raw = kernels.raw_orbits(degree, triangles, sums, second, terms, cycles)
    else:
        raw = kernels.raw_orbits(degree, triangles, rows[:1], None, None, None)
    values = kernels.net_from_raw(raw) if kind == "net" else raw
    if present is not None:
        ids, values = ids[present], values[:, present]
    columns = {name: values[i] for i, name in enumerate(kernels.COLUMNS[: values.shape[0]])}
    frame = frame_from_arrays(values, {"vertex": ids.astype(xp.int64), **columns})
    return frame.set_index("vertex")


def orbit_rows(graph: GraphData, timer: StageTimer, counts: list[Any], full: bool) -> Any:
    """The vertex-wide sums the frequencies are made of, persisted: neighbour sums (and, for
    every orbit, the second pass, the triangles' and 4-cliques' terms and the 4-cycles),
    stacked by row."""
    tasks = graph.tasks
    supports = support_totals(graph) if full else [None] * graph.partitions
    whole = tasks.task("graphlets-gather", joined_pieces, *counts, key=("triangles",))
    sums = vertex_wide_sum(graph, "graphlets-neighbours", neighbour_pass, [
        (part, supports[p], graph.degree, whole, graph.vertices, not full)
        for p, part in enumerate(graph.parts)])
    (sums,) = timer.submit("graphlets-neighbours", sums)
    if not full:
        return sums
    second = vertex_wide_sum(graph, "graphlets-second", second_pass,
                             [(part, sums, graph.vertices) for part in graph.parts])
    terms = clique_terms(graph, supports)
    cycles = cycle_terms(graph)
    (rows,) = timer.submit("graphlets-gather", tasks.task(
        "graphlets-gather", stack_rows, sums, second, terms, cycles, key=("rows",)))
    return rows


def graphlet_frames(graph: GraphData, orbits: str = "all", kind: str = "net") -> list[Any]:
    """The partitions of :func:`graphlets`, persisted on their owners (cached on the graph):
    delayed frames, one per sorted partition."""
    check_choice("orbits", orbits, GRAPHLET_ORBITS)
    check_choice("kind", kind, GRAPHLET_KINDS)

    def frames() -> list[Any]:
        full = orbits == "all"
        tasks, bounds = graph.tasks, graph.bounds
        timer = graph.timer()
        counts = triangle_counts(graph)
        rows = graph.cached(f"graphlet-rows-{orbits}",  # shared by net and raw
                            lambda: orbit_rows(graph, timer, counts, full))
        cut = tasks.task("graphlets-gather", slice_ranges, rows, bounds, key=("cut",))
        picks = tasks.pick_pieces("graphlets-gather", {0: cut}, {0: range(graph.partitions)})
        blocks = vertex_blocks(graph)
        return graph.per_partition("graphlets", orbit_frame, [
            (blocks[p], counts[p], picks[0, p], full, kind) for p in range(graph.partitions)],
            timer)

    return graph.cached(f"graphlet-frames-{orbits}-{kind}", frames)


def graphlets(graph: GraphData, orbits: str = "all", kind: str = "net") -> dd.DataFrame:
    """Orbit frequencies σ0 … σ15 (``orbits="sigma0-4"``: σ0 … σ4) of every vertex, ``net``
    (induced) or ``raw``: a Dask DataFrame indexed by input id, int64 columns ``sigma0`` …,
    one partition per sorted partition (cached on the graph)."""
    frames = graphlet_frames(graph, orbits, kind)
    orbit_count = kernels.ORBITS if orbits == "all" else kernels.BASIC_ORBITS
    return graph.cached(f"graphlets-{orbits}-{kind}", lambda: graph.tasks.collection(
        frames, _meta(graph, orbit_count), "graphlets"))


def _meta(graph: GraphData, orbits: int) -> Any:
    """An empty frame like the partitions."""
    xp = result_module(graph)
    empty = xp.zeros(0, dtype="int64")
    frame = frame_from_arrays(empty, {"vertex": empty,
                                      **{name: empty for name in kernels.COLUMNS[:orbits]}})
    return frame.set_index("vertex")


# ----------------------------------------------------------------- the summary (dtri graphlets)

def graphlet_summary(graph: Any, orbits: str = "all", kind: str = "net",
                     top: int = 10) -> dict[str, Any]:
    """The graph's copies of each graphlet (from the orbit sums, ``orbit_totals``: each
    orbit's sum over the vertices) and the ``top`` vertices in most 4-cliques (with
    ``orbits="sigma0-4"``: in most triangles), as plain Python values. The sums and each
    partition's first rows are taken where the partition lives; no Dask DataFrame is
    built."""
    import pandas

    frames = graphlet_frames(graph, orbits, kind)
    shown = kernels.BASIC_ORBITS if orbits == "sigma0-4" else len(kernels.COLUMNS)
    ranked = "sigma15" if shown > kernels.BASIC_ORBITS else "sigma4"
    listed = ["vertex", "sigma1", "sigma4", "sigma12", "sigma15"] \
        if shown > kernels.BASIC_ORBITS else ["vertex", *kernels.COLUMNS[1:kernels.BASIC_ORBITS]]
    tasks = graph.tasks
    sums = [tasks.task("summary", frame_sums, f, key=("sums", p), on_host=True)
            for p, f in enumerate(frames)]
    order = [ranked, "vertex"]
    tops = [tasks.task("summary", frame_top, f, listed, order, top, key=("top", p),
                       on_host=True) for p, f in enumerate(frames)] if top else []
    per_partition, heads = graph.timer().compute("summary", sums, tops)
    totals = [sum(column) for column in zip(*per_partition, strict=True)] if per_partition \
        else [0] * shown
    copies = {name: totals[orbit] // per_copy
              for name, orbit, per_copy in kernels.GRAPHLETS if orbit < shown}
    rows = frame_top(pandas.concat(heads).set_index("vertex"), listed, order, top) \
        .to_dict("records") if heads else []
    return {"graphlets": copies,
            "orbit_totals": dict(zip(kernels.COLUMNS[:shown], totals, strict=True)),
            "top": [{name: value.item() if hasattr(value, "item") else value
                     for name, value in row.items()} for row in rows]}


def frame_sums(frame: Any) -> list[int]:
    """Column sums of one partition, as Python ints."""
    return [int(v) for v in frame.sum().to_numpy().tolist()]


def frame_top(frame: Any, columns: list[str], order: list[str], top: int) -> Any:
    """A frame's first ``top`` rows of ``columns`` (its index a column) by ``order``: the
    first column descending, ties broken by the others, ascending; in host memory."""
    ascending = [False, *[True] * (len(order) - 1)]
    return host_frame(frame.reset_index()[columns].sort_values(order, ascending=ascending)
                      .head(top))


# ----------------------------------------------------------------- the plan (--explain)

def graphlet_plan(graph: GraphData, orbits: str = "all") -> dict[str, Any]:
    """What :func:`graphlets` would run, from the partition summaries and the per-edge wedge
    counts (prefix sums; no wedge or triangle is written): per stage its tasks, the batches
    and the largest task's estimated peak bytes."""
    check_choice("orbits", orbits, GRAPHLET_ORBITS)
    budget = graph.task_budget
    vertex_bytes = 8 * graph.vertices
    largest = max((s.edges for s in graph.summaries), default=0)
    stages: dict[str, Any] = {
        "neighbours": {"tasks": graph.partitions * (2 if orbits == "all" else 1),
                       "peak_bytes": 16 * largest + 12 * vertex_bytes},
    }
    if orbits == "all":
        plan = group_plan(graph)
        groups = len(plan.groups)
        tops = sum(groups - t.group for t in plan.tasks)
        group_bytes = max((sum(graph.summaries[p].edges for p in range(a, b + 1)) * 4
                           + 8 * (graph.bounds[b + 1] - graph.bounds[a])
                           for a, b in plan.groups), default=0)
        record_budget = max(min(budget // 2 // RECORD_BYTES, graph.wedges), 1)
        stages["cliques"] = {
            "groups": groups, "tasks": tops, "records_per_batch": record_budget,
            "peak_bytes": 2 * group_bytes + record_budget * RECORD_BYTES + 16 * vertex_bytes}
        anchor_bounds, batches, wedges = cycle_plan(graph)
        ranges = len(anchor_bounds) - 1
        bits = checked_key_bits(graph.vertices)
        record_bytes = kernels.wedge_bytes(kernels.CYCLE_RECORD_BYTES, bits)
        reduce_bytes = kernels.wedge_bytes(kernels.CYCLE_REDUCE_BYTES, bits)
        batch_records = max(budget // record_bytes, 1)
        range_records = max(budget // reduce_bytes, 1)
        stages["cycles"] = {
            "pairs_to_bin": wedges, "batches": sum(len(b) for b in batches),
            "anchor_ranges": ranges, "bins_moved": sum(len(b) for b in batches) * ranges,
            "peak_bytes": max(min(wedges, batch_records) * record_bytes,
                              min(wedges, range_records) * reduce_bytes)
            + 8 * vertex_bytes}
    return {"orbits": orbits, "vertices": graph.vertices, "edges": graph.edges,
            "partitions": graph.partitions, "task_budget": budget, "stages": stages}
