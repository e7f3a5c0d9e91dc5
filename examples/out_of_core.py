"""A graph bigger than the memory it is given: a generated R-MAT graph counted under a memory
budget of a few tasks' worth, on two worker processes that spill to disk, exactly as without
the budget.

Run from the repository root:  python examples/out_of_core.py
"""

import dtri
from dtri.input.generate import generated


def main() -> None:
    graph = generated("rmat:14", seed=1)  # 262,144 input edges, made on the workers
    free = dtri.count(graph, backend="cpu", workers=2)
    # each task plans for 1 MiB; each worker process is held to 402 MiB: 400 MiB of its own
    # (dtri.worker-overhead-cpu), 1 MiB for the running task and 1 MiB of stored results,
    # the rest spilled to disk (a smaller limit is refused, naming the least that works)
    capped = dtri.count(graph, backend="cpu", workers=2, memory_budget="1MiB",
                        memory_limit="402MiB")
    print("triangles:", free.triangles, "and under the budget:", capped.triangles)
    print("partitions:", free.partitions, "and under the budget:", capped.partitions)
    assert capped.triangles == free.triangles


if __name__ == "__main__":  # the local cluster spawns worker processes
    main()
