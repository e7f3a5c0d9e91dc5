"""Weighted and directed clustering, with NetworkX's definitions, of an edge list with values:
dtri's triangle listing (:func:`~dtri.analytics.listing.list_triangles`), with the values of
each triangle's pairs attached by Dask merges (pandas or cuDF partitions, out of core as the
listing and Dask's merges are). ``docs/guide.md`` ("As a NetworkX backend") tells it in words.

1. *Canonical pairs.* A later row of an edge replaces an earlier one (the same unordered pair
   undirected, the same ordered pair directed), as ``networkx.Graph.add_edge`` keeps the last
   weight. The weights are divided by the largest left, self-loops included (NetworkX's
   ``max_weight``); then self-loops go. Each vertex pair is one row ``u < v``: undirected its
   weight ``x``; directed its arcs ``u → v`` and ``v → u`` (``pf``, ``pb``) and their weights
   (``wf``, ``wb``, 0 where the arc is absent).
2. *Triangles.* Each listed once, ``a < b < c`` by input id; three merges against the pairs
   attach the values of ``(a, b)``, ``(a, c)`` and ``(b, c)``. A triangle's value: undirected
   and weighted ``cbrt(x_ab x_ac x_bc)``; directed ``n_ab n_ac n_bc``, ``n`` the arcs of a
   pair (1 or 2); directed and weighted, the sum over the 8 choices of one arc per pair of the
   cube root of their weights' product (an absent arc weighs 0): what NetworkX's
   ``_directed_weighted_triangles_and_degree_iter`` sums twice at each of its vertices.
3. *Per vertex.* ``t`` is twice the sum of its triangles' values (NetworkX's ``t``);
   clustering is ``t / (d (d - 1))`` undirected, ``t / (2 (d_tot (d_tot - 1) - 2 d_bi))``
   directed (``d_tot`` in- plus out-degree, ``d_bi`` the reciprocated pairs), 0 where
   ``t = 0``. Integer values stay integers, so the unweighted answers are exact; the weighted
   ones differ from NetworkX's only by the order of the sums (a few units in the last place).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dtri.analytics.listing import list_triangles
from dtri.kernels.dispatch import array_module, column_to_array, frame_from_arrays, is_device_object

if TYPE_CHECKING:
    import dask.dataframe as dd

    from dtri.prepared.graph import GraphData

ROW_STRIDE = 2**40
"""Rows per partition in the position key (a partition of more rows would need a wider key)."""


def _positions(part: Any, partition_info: dict | None = None) -> Any:
    """A partition with ``row``: each row's position in the input (partition, then row)."""
    number = 0 if partition_info is None else partition_info["number"]
    return part.assign(row=np.arange(len(part), dtype=np.int64) + number * ROW_STRIDE)


def last_rows(frame: dd.DataFrame, key: list[str]) -> dd.DataFrame:
    """The last row of ``frame`` for each value of ``key``, by input position."""
    meta = frame._meta.assign(row=np.zeros(0, dtype=np.int64))
    placed = frame.map_partitions(_positions, meta=meta)
    last = placed.groupby(key)["row"].max().reset_index()
    return placed.merge(last, on=[*key, "row"]).drop(columns="row")


def canonical_pairs(edges: dd.DataFrame, weight: str | None, directed: bool,
                    ) -> tuple[dd.DataFrame, dd.Series]:
    """The vertex pairs of ``edges`` (columns ``src``, ``dst`` and ``weight``) once, ``u < v``,
    with their values (module docstring, 1.), and every vertex of the rows (a vertex of a
    self-loop only too)."""
    frame = edges[["src", "dst"]].assign(w=edges[weight] if weight is not None else 1)
    low = frame["src"].where(frame["src"] <= frame["dst"], frame["dst"])
    high = frame["dst"].where(frame["src"] <= frame["dst"], frame["src"])
    frame = last_rows(frame if directed else frame.assign(src=low, dst=high), ["src", "dst"])
    vertices = _vertices(frame)
    scale = frame["w"].max() if weight is not None else 1
    frame = frame[frame["src"] != frame["dst"]]
    u = frame["src"].where(frame["src"] < frame["dst"], frame["dst"])
    v = frame["dst"].where(frame["src"] < frame["dst"], frame["src"])
    w = frame["w"] / scale if weight is not None else frame["w"]
    if not directed:
        return frame.assign(u=u, v=v, x=w)[["u", "v", "x"]], vertices
    forward = (frame["src"] < frame["dst"]).astype("int64")
    arcs = frame.assign(u=u, v=v, pf=forward, pb=1 - forward, wf=w * forward,
                        wb=w * (1 - forward))[["u", "v", "pf", "pb", "wf", "wb"]]
    return arcs.groupby(["u", "v"]).sum().reset_index(), vertices


def _vertices(frame: dd.DataFrame) -> dd.Series:
    import dask.dataframe as dd

    ends = dd.concat([frame["src"].rename("vertex"), frame["dst"].rename("vertex")])
    return ends.drop_duplicates()


SIDES = (("a", "b"), ("a", "c"), ("b", "c"))
"""A listed triangle's three pairs, by its columns (``a < b < c``)."""


def triangle_values(found: Any, directed: bool, weighted: bool) -> Any:
    """Each listed triangle's value (module docstring, 2.), as an array."""
    def column(name: str) -> Any:
        return column_to_array(found[name])

    names = ["".join(side) for side in SIDES]
    if not directed:
        product = column("x_ab") * column("x_ac") * column("x_bc")
        return array_module(product).cbrt(product) if weighted else product
    if not weighted:
        arcs = [column(f"pf_{e}") + column(f"pb_{e}") for e in names]
        return arcs[0] * arcs[1] * arcs[2]
    sides = [(column(f"wf_{e}"), column(f"wb_{e}")) for e in names]
    xp = array_module(sides[0][0])
    total = xp.zeros(len(found), dtype=xp.float64)
    for x in sides[0]:
        for y in sides[1]:
            for z in sides[2]:
                total += xp.cbrt(x * y * z)
    return total


def triangle_credits(found: Any, directed: bool, weighted: bool) -> Any:
    """Each listed triangle's value credited to its three vertices, twice (NetworkX's ``t``
    counts each triangle both ways round): ``vertex``, ``value``."""
    value = triangle_values(found, directed, weighted)
    xp = array_module(value)
    vertex = xp.concatenate([column_to_array(found[c]) for c in ("a", "b", "c")])
    return frame_from_arrays(vertex, {"vertex": vertex, "value": xp.tile(value * 2, 3)})


def with_pair_values(triangles: dd.DataFrame, pairs: dd.DataFrame) -> dd.DataFrame:
    """The listed triangles with the values of their three pairs, by merges against
    ``pairs`` (a value ``x`` of the pair ``a, b`` as ``x_ab``)."""
    values = [c for c in pairs.columns if c not in ("u", "v")]
    pairs = pairs.astype({"u": "int64", "v": "int64"})  # as the listing's ids
    for low, high in SIDES:
        side = pairs.rename(columns={"u": low, "v": high,
                                     **{c: f"{c}_{low}{high}" for c in values}})
        triangles = triangles.merge(side, on=[low, high])
    return triangles


def vertex_triangle_values(triangles: dd.DataFrame, pairs: dd.DataFrame, directed: bool,
                           weighted: bool) -> dd.Series:
    """Per vertex with a triangle: twice the sum of its triangles' values (its ``t``)."""
    triangles = with_pair_values(triangles, pairs) if directed or weighted \
        else triangles.assign(x_ab=1, x_ac=1, x_bc=1)  # every value is 1
    meta = pairs._meta.__class__({"vertex": np.zeros(0, dtype=np.int64),
                                  "value": np.zeros(0, "float64" if weighted else "int64")})
    credits = triangles.map_partitions(triangle_credits, directed, weighted, meta=meta)
    return credits.groupby("vertex")["value"].sum()


def clustering_values(part: Any, directed: bool) -> Any:
    """Clustering of a partition of per-vertex ``t`` and degrees (module docstring, 3.)."""
    t = part["t"].values
    xp = array_module(t)
    if directed:
        total, both = part["degree"].values, part["reciprocal"].values
        pairs = (total * (total - 1) - 2 * both) * 2
    else:
        degree = part["degree"].values
        pairs = degree * (degree - 1)
    values = xp.zeros(t.shape[0], dtype=xp.float64)
    some = t != 0
    values[some] = t[some] / pairs[some]
    return part["t"].__class__(values, index=part.index, name="clustering")


def clustering_frame(graph: GraphData, edges: dd.DataFrame, weight: str | None = None,
                     directed: bool = False) -> dd.DataFrame:
    """Per vertex of ``edges`` (columns ``src``, ``dst`` and the ``weight`` column), indexed by
    ``vertex``: ``t`` (twice its triangles' values), ``degree`` (directed: in plus out),
    ``reciprocal`` (directed: pairs with both arcs) and ``clustering``. ``graph``: the
    prepared simple undirected graph of ``edges``, whose triangles are listed; the frame is
    lazy and reads the graph's partitions, so it is computed before the graph is released."""
    import dask.dataframe as dd

    pairs, vertices = canonical_pairs(edges, weight, directed)
    weighted = weight is not None
    triangles = list_triangles(graph)
    if type(triangles._meta) is not type(pairs._meta):
        triangles = triangles.to_backend("cudf" if is_device_object(pairs._meta) else "pandas")
    per_vertex = vertex_triangle_values(triangles, pairs, directed, weighted)
    if directed:  # a pair's arcs count at both its ends, and whether it has both
        arcs = pairs["pf"] + pairs["pb"]
        counted = {"degree": arcs, "reciprocal": (arcs == 2).astype("int64")}
    else:
        counted = {"degree": pairs["u"] * 0 + 1}
    ends = dd.concat([pairs[[end]].rename(columns={end: "vertex"}).assign(**counted)
                      for end in ("u", "v")])
    degrees = ends.groupby("vertex").sum()
    frame = vertices.to_frame().merge(degrees, left_on="vertex", right_index=True, how="left")
    frame = frame.merge(per_vertex.rename("t").to_frame(), left_on="vertex",
                        right_index=True, how="left")
    frame = frame.fillna(0).astype({"degree": "int64", "t": "float64" if weighted else "int64"})
    if directed:
        frame = frame.astype({"reciprocal": "int64"})
    frame = frame.set_index("vertex", sort=False)
    return frame.assign(clustering=frame.map_partitions(clustering_values, directed,
                                                        meta=("clustering", "float64")))
