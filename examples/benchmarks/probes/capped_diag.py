"""A capped GPU count with the task states of each stage sampled every 10 s.

Usage (on a GPU host): ``python examples/benchmarks/probes/capped_diag.py 24 2GiB`` (RMAT scale, RMM
pool size); as run for ``results/archive/capped-rmat24-h200.txt`` (a log).
"""
import collections
import re
import sys
import threading
import time

if __name__ == "__main__":
    import dtri

    scale, pool = sys.argv[1], sys.argv[2]
    with dtri.Session(backend="gpu", rmm_pool_size=pool) as session:
        client = session.open().client  # a memory cap: a local cluster, started here

        def states(dask_scheduler):
            c = collections.Counter()
            for ts in dask_scheduler.tasks.values():
                m = re.match(r"\(?'?dtri-([a-z-]+?)-[0-9a-f]{32}", str(ts.key))
                if m and ts.state != "released":
                    c[f"{m.group(1)}:{ts.state}"] += 1
            return dict(sorted(c.items()))

        def sample():
            start = time.time()
            while True:
                time.sleep(10)
                print(round(time.time() - start), client.run_on_scheduler(states), flush=True)

        threading.Thread(target=sample, daemon=True).start()
        t = time.time()
        result = dtri.count(dtri.generated(f"rmat:{scale}", seed=0), session=session)
        print("done", round(time.time() - t, 2), result.triangles, result.seconds,
              result.partitions, result.bins, result.batches, flush=True)
