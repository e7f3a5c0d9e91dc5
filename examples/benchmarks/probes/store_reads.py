"""Where a GPU count under a host limit spends its store's time: one worker, the seconds its
:class:`~dtri.runtime.tiered_store.TieredStore` spent on each move, its bytes, and per stage
how many results were read back from disk (by its tasks or ahead of them), how many reads
that took, their bytes and the most reads of one result, and the results whose reads took
the most bytes.

Usage (on a GPU host): ``python examples/benchmarks/probes/store_reads.py rmat:26 4GiB 12GiB``
(the graph, ``--rmm-pool-size``, ``--memory-limit``). Prints text, not a benchmark line: it
finds where to look. Run at 6cc2e64 on one H200 for the R-MAT 26 figures in
``docs/performance.md`` (Host memory).
"""
import json
import sys
import time


def count_reads(dask_worker) -> str:
    """Wrap the worker's store's disk reads, by its tasks and ahead of them, with a count per
    key."""
    import collections

    store = dask_worker.data
    store.read_keys, store.read_key_bytes = collections.Counter(), collections.Counter()
    read, read_ahead = store._read, store._read_into_host

    def counted(key):
        store.read_keys[key] += 1
        store.read_key_bytes[key] += store.file_bytes.get(key, 0)
        return read(key)

    def counted_ahead(key, path):
        store.read_keys[key] += 1
        store.read_key_bytes[key] += store.file_bytes.get(key, 0)
        return read_ahead(key, path)

    store._read, store._read_into_host = counted, counted_ahead
    return type(store).__name__


def summary(dask_worker) -> dict:
    """The store's seconds and bytes, and per stage: results read back, reads, most reads."""
    import collections

    from dtri.runtime.stages import stage_of

    store = dask_worker.data
    keys, reads, most = collections.Counter(), collections.Counter(), collections.Counter()
    read_bytes = collections.Counter()
    for key, n in store.read_keys.items():
        stage = stage_of(key) or "other"
        keys[stage] += 1
        reads[stage] += n
        most[stage] = max(most[stage], n)
        read_bytes[stage] += store.read_key_bytes[key]
    heaviest = [key for key, _ in store.read_key_bytes.most_common(8)]
    return {"seconds": {move: round(s, 2) for move, s in store.seconds.items()},
            "written": store.written_bytes, "read_back": store.read_back_bytes,
            "read_ahead": store.read_ahead_bytes, "to_host": store.to_host_bytes,
            "per_stage": {stage: {"results": keys[stage], "reads": reads[stage],
                                  "most": most[stage], "bytes": read_bytes[stage]}
                          for stage in keys},
            "heaviest": [[str(key), store.read_keys[key], store.read_key_bytes[key]]
                         for key in heaviest]}


if __name__ == "__main__":
    import dtri
    from dtri.input.generate import generated

    spec, pool, limit = sys.argv[1], sys.argv[2], sys.argv[3]
    with dtri.Session(backend="gpu", workers=1, rmm_pool_size=pool, memory_limit=limit,
                      spill_directory="/tmp/spill-probe") as session:
        client = session.open(input_rows=0).client
        print("stores", client.run(count_reads), flush=True)
        started = time.perf_counter()
        with session.prepare(generated(spec, seed=0)) as graph:
            result = graph.count()
        print("seconds", round(time.perf_counter() - started, 2), "triangles", result.triangles)
        print("stages", json.dumps(result.seconds))
        for facts in client.run(summary).values():
            print(json.dumps(facts))
