"""Analytics on a prepared graph: the karate club's triangles per vertex, clustering,
transitivity, edge support and k-truss, prepared once and analysed many times.

Run from the repository root:  python examples/analytics_api.py
"""

from pathlib import Path

import dtri

KARATE = Path(__file__).resolve().parent / "karate.txt"


def main() -> None:
    # One session: its options are checked once, its local cluster serves every graph.
    with dtri.Session(backend="cpu", workers=2) as session:
        graph = session.prepare(KARATE)  # read, canonicalize, orient, sort: on the workers
        print(graph)
        print("triangles:", graph.count_triangles())

        # Per-vertex results are Dask Series indexed by the input's vertex ids.
        triangles = graph.triangles()
        print("most triangles:", triangles.nlargest(3).compute().to_dict())
        clustering = graph.clustering()  # reuses the per-vertex counts and the degrees
        print("clustering of vertex 1:", clustering.compute()[1])
        print("average clustering:", graph.average_clustering())
        print("transitivity:", graph.transitivity())

        # Per-edge results are Dask DataFrames: u < v by input id.
        support = graph.edge_support()
        print("edges on most triangles:\n", support.nlargest(3, "support").compute())

        # The 4-truss is a prepared graph itself: it counts, and trusses, again.
        four = graph.k_truss(4)
        print("4-truss:", four.edges, "edges,", four.count_triangles(), "triangles")
        numbers = graph.truss_numbers().compute()
        print("edges per truss number:", numbers["truss"].value_counts().sort_index().to_dict())

        # Results write to Parquet through Dask, one file per partition:
        # support.to_parquet("support/"); triangles.to_frame().to_parquet("triangles/")
        graph.release()  # the workers let go of the graph; the session stays open


if __name__ == "__main__":  # Dask's local cluster starts worker processes
    main()
