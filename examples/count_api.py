"""The dtri Python API on the bundled karate club graph (45 triangles).

Run from the repository root:  python examples/count_api.py
"""

from pathlib import Path

import numpy as np
import pandas as pd

import dtri

KARATE = Path(__file__).resolve().parent / "karate.txt"


def main() -> None:
    # A file (or glob, directory, URL): just the number. With no scheduler given, a graph that
    # fits one task is counted in this process (on the GPU when one is usable and the graph
    # is big enough to gain from it); a larger one starts a local Dask cluster.
    print("count_triangles:", dtri.count_triangles(KARATE))

    # The count with the run's statistics.
    result = dtri.count(KARATE, backend="cpu", orientation="degree")
    print("count:", result.triangles, "triangles,", result.wedges, "wedges,",
          result.bins, "bins on", result.workers, "workers")
    print("to_dict:", result.to_dict())

    # In-memory edges: a pandas DataFrame (src, dst columns, or the first two) ...
    frame = pd.read_csv(KARATE, sep="\t", comment="#", header=None, names=["src", "dst"])
    print("DataFrame:", dtri.count_triangles(frame, scheduler="threads"))

    # ... or an (m, 2) integer array; direction and duplicates do not matter.
    edges = frame.to_numpy()
    both_ways = np.concatenate([edges, edges[:, ::-1]])
    print("NumPy array:", dtri.count_triangles(both_ways, scheduler="threads"))


if __name__ == "__main__":  # a local cluster, where one starts, spawns worker processes
    main()
