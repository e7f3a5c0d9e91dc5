"""Probe: GPU topology, peer copy bandwidth, and Dask worker-to-worker transfer speed per protocol."""
import subprocess
import sys
import time


def dask_transfer(protocol: str) -> None:
    from dask_cuda import LocalCUDACluster
    from distributed import Client, wait

    kwargs = {}
    if protocol.startswith("ucx"):
        kwargs = dict(enable_tcp_over_ucx=True, enable_nvlink=True, enable_infiniband=False)
    cluster = LocalCUDACluster(n_workers=2, protocol=protocol, **kwargs)
    client = Client(cluster)
    workers = list(client.scheduler_info()["workers"])
    print(protocol, "workers", workers, flush=True)

    def make(nbytes):
        import cupy
        return cupy.arange(nbytes // 8, dtype=cupy.int64)

    def make_frame(nbytes):
        import cudf
        import cupy
        n = nbytes // 16
        return cudf.DataFrame({"src": cupy.arange(n, dtype=cupy.int64), "dst": cupy.arange(n, dtype=cupy.int64)})

    def consume(x):
        return len(x)

    for maker in (make, make_frame):
        for size in (1 << 28, 1 << 31):
            f = client.submit(maker, size, workers=[workers[0]], pure=False)
            wait(f)
            t = time.perf_counter()
            g = client.submit(consume, f, workers=[workers[1]], pure=False)
            g.result()
            dt = time.perf_counter() - t
            print(f"{protocol} {maker.__name__} {size/1e9:.2f} GB {dt:.3f} s {size/dt/1e9:.2f} GB/s", flush=True)
            del f, g
    client.close()
    cluster.close()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        dask_transfer(sys.argv[1])
        sys.exit(0)
    import cupy

    n = cupy.cuda.runtime.getDeviceCount()
    print("gpus", n)
    for i in range(n):
        print("peer", i, [cupy.cuda.runtime.deviceCanAccessPeer(i, j) if i != j else 1 for j in range(n)])
    with cupy.cuda.Device(0):
        a = cupy.ones(1 << 28, dtype=cupy.int64)
        cupy.cuda.Device(0).synchronize()
    with cupy.cuda.Device(1):
        b = cupy.empty(1 << 28, dtype=cupy.int64)
        for _ in range(3):
            t = time.perf_counter()
            b.data.copy_from_device(a.data, a.nbytes)
            cupy.cuda.Device(1).synchronize()
            print(f"peer copy 0->1 {a.nbytes / (time.perf_counter() - t) / 1e9:.1f} GB/s")
    h = cupy.cuda.alloc_pinned_memory(a.nbytes)
    import numpy
    host = numpy.frombuffer(h, dtype=numpy.int64, count=a.size)
    for _ in range(2):
        t = time.perf_counter(); a.get(out=host); print(f"D2H pinned {a.nbytes/(time.perf_counter()-t)/1e9:.1f} GB/s")
    for protocol in ("tcp", "ucx", "ucxx"):
        try:
            subprocess.run([sys.executable, __file__, protocol], timeout=150)
        except subprocess.TimeoutExpired:
            print(protocol, "timed out")
