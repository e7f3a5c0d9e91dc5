"""What NetworkX reads about the backend before loading it (the ``networkx.backend_info``
entry point): the functions dtri implements and its settings, ``nx.config.backends.dtri``.
Imports nothing of dtri's, so ``import networkx`` stays quick."""

from __future__ import annotations

from typing import Any

FUNCTIONS = ("triangles", "clustering", "average_clustering", "transitivity", "k_truss",
             "generalized_degree", "number_of_selfloops", "isolates", "all_triangles")
"""The NetworkX functions dtri implements."""

GRAPH_RESULTS = ("k_truss",)
"""Those of :data:`FUNCTIONS` that return a graph."""

DEFAULT_CONFIG: dict[str, Any] = {
    "backend": "auto",
    "scheduler": None,
    "workers": None,
    "memory_budget": None,
    "min_edges": 100_000,
}
"""``nx.config.backends.dtri``: dtri's ``backend`` (``auto``, ``cpu``, ``gpu``), the Dask
``scheduler`` address (or ``synchronous``/``threads``), local ``workers``, the
``memory_budget`` per worker, and ``min_edges``: graphs with fewer edges stay in NetworkX
when backends are chosen automatically (``backend="dtri"`` always runs dtri)."""

DOCS = {
    "triangles": "Exact, from dtri's per-vertex triangle counts.",
    "clustering": "Unweighted from the triangle counts; weighted and directed (Fagiolo's) "
                  "from dtri's triangle listing, the weights attached by merges.",
    "average_clustering": "As `clustering`; summed in node order as NetworkX does.",
    "transitivity": "Exact integer sums, divided once.",
    "k_truss": "dtri's distributed peeling; graph, node and edge attributes are kept.",
    "generalized_degree": "From dtri's edge support (the triangles on each edge).",
    "number_of_selfloops": "Counted by the conversion (NetworkX's `k_truss` asks for it).",
    "isolates": "From the converted rows (NetworkX's `k_truss` asks for them).",
    "all_triangles": "dtri's listing, out of core; each tuple in NetworkX's node order.",
}


def get_info() -> dict[str, Any]:
    """The ``networkx.backend_info`` entry point."""
    return {
        "backend_name": "dtri",
        "project": "dtri",
        "package": "dtri",
        "short_summary": "Exact triangle analytics on Dask: one or many GPUs, CPUs, out of core.",
        "functions": {name: {"additional_docs": DOCS[name]} for name in FUNCTIONS},
        "default_config": dict(DEFAULT_CONFIG),
    }
