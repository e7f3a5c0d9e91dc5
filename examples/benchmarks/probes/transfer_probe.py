"""GPU topology, peer-copy bandwidth, and Dask worker-to-worker transfer speed per protocol.

Run on a host with two or more GPUs and distributed-ucxx installed:
``python examples/benchmarks/probes/transfer_probe.py`` (its printed lines, read by
``schema.transfer_lines``: results/transfer-probe-h200x4.jsonl).
Each protocol runs in its own process, with a time limit, so a hung comm cannot stall the rest.
"""

import subprocess
import sys
import time


def dask_transfer(protocol: str) -> None:
    """Move a CuPy array and a cuDF frame (0.27 and 2.15 GB) from one worker to the other."""
    from dask_cuda import LocalCUDACluster
    from distributed import Client, wait

    kwargs = {}
    if protocol.startswith("ucx"):
        kwargs = {"enable_tcp_over_ucx": True, "enable_nvlink": True,
                  "enable_infiniband": False}
    cluster = LocalCUDACluster(n_workers=2, protocol=protocol, **kwargs)
    client = Client(cluster)
    workers = list(client.nthreads())
    print(protocol, "workers", workers, flush=True)

    def make(nbytes):
        import cupy

        return cupy.arange(nbytes // 8, dtype=cupy.int64)

    def make_frame(nbytes):
        import cudf
        import cupy

        rows = nbytes // 16
        return cudf.DataFrame({"src": cupy.arange(rows, dtype=cupy.int64),
                               "dst": cupy.arange(rows, dtype=cupy.int64)})

    for maker in (make, make_frame):
        for size in (1 << 28, 1 << 31):
            made = client.submit(maker, size, workers=[workers[0]], pure=False)
            wait(made)
            start = time.perf_counter()
            client.submit(len, made, workers=[workers[1]], pure=False).result()
            took = time.perf_counter() - start
            print(f"{protocol} {maker.__name__} {size / 1e9:.2f} GB {took:.3f} s "
                  f"{size / took / 1e9:.2f} GB/s", flush=True)
    client.close()
    cluster.close()


def main() -> None:
    import cupy
    import numpy

    gpus = cupy.cuda.runtime.getDeviceCount()
    print("gpus", gpus)
    for i in range(gpus):
        peers = [cupy.cuda.runtime.deviceCanAccessPeer(i, j) if i != j else 1
                 for j in range(gpus)]
        print("peer", i, peers)
    with cupy.cuda.Device(0):
        source = cupy.ones(1 << 28, dtype=cupy.int64)
        cupy.cuda.Device(0).synchronize()
    with cupy.cuda.Device(1):
        target = cupy.empty(1 << 28, dtype=cupy.int64)
        for _ in range(3):
            start = time.perf_counter()
            target.data.copy_from_device(source.data, source.nbytes)
            cupy.cuda.Device(1).synchronize()
            print(f"peer copy 0->1 {source.nbytes / (time.perf_counter() - start) / 1e9:.1f} GB/s")
    pinned = cupy.cuda.alloc_pinned_memory(source.nbytes)
    host = numpy.frombuffer(pinned, dtype=numpy.int64, count=source.size)
    for _ in range(2):
        start = time.perf_counter()
        source.get(out=host)
        print(f"D2H pinned {source.nbytes / (time.perf_counter() - start) / 1e9:.1f} GB/s")
    for protocol in ("tcp", "ucx", "ucxx"):
        try:
            subprocess.run([sys.executable, __file__, protocol], timeout=150, check=False)
        except subprocess.TimeoutExpired:
            print(protocol, "timed out")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        dask_transfer(sys.argv[1])
    else:
        main()
