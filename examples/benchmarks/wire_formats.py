"""The wire formats side by side (issue 68): the bytes and the seconds to pack and unpack
what a 2D count sends, on the CPU or the GPU.

    python examples/benchmarks/wire_formats.py rmat:18 --sides 2,3,4 --backend cpu
    python examples/benchmarks/wire_formats.py rmat:24 --sides 2,4 --backend gpu

The graph is generated and prepared in this process (one sorted partition), cut into the
q² pieces of each grid side q, and the pieces made into blocks, as ``dtri-cyclic-blocks``
does; then, for each format of :data:`dtri.kernels.wire.WIRE_FORMATS`, every block is packed
and unpacked ``--repeat`` times (best taken; on the GPU each timed step waits for the
device). One line per graph, side and format, in the schema of ``schema.py``: ``seconds`` is
packing and unpacking every block once, ``detail`` the bytes per target of the blocks as
packed (their ``sizeof``, what a transfer carries) and each step's seconds.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from schema import command_line, emit, to_schema

FAMILY = "wire-format"


def synchronized(backend: str) -> Any:
    """A function that waits for the device (nothing on the CPU)."""
    if backend == "gpu":
        import cupy

        return cupy.cuda.Device().synchronize
    return lambda: None


def best(step: Any, repeat: int, wait: Any) -> tuple[float, Any]:
    """The fastest of ``repeat`` runs of ``step()``, and its last result."""
    fastest, result = float("inf"), None
    for _ in range(repeat):
        wait()
        started = time.perf_counter()
        result = step()
        wait()
        fastest = min(fastest, time.perf_counter() - started)
    return fastest, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--sides", default="2,3,4")
    parser.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from dask.sizeof import sizeof

    import dtri
    from dtri.kernels.csr import as_csr
    from dtri.kernels.cyclic import cyclic_block, cyclic_pieces
    from dtri.kernels.wire import WIRE_FORMATS, unpack_rows

    wait = synchronized(args.backend)
    for spec in args.graphs:
        with dtri.prepare(dtri.generated(spec), backend=args.backend, npartitions=1) as graph:
            part = as_csr(graph.parts[0])
            edges = part.edges
            for q in (int(side) for side in args.sides.split(",")):
                raw = [cyclic_block("raw", piece)
                       for piece in cyclic_pieces(part, q, "raw").values()]
                for fmt in WIRE_FORMATS:
                    pack_seconds, packed = best(
                        lambda fmt=fmt, raw=raw: [cyclic_block(fmt, block) for block in raw],
                        args.repeat, wait)
                    unpack_seconds, _ = best(
                        lambda packed=packed: [unpack_rows(block) for block in packed],
                        args.repeat, wait)
                    nbytes = sum(sizeof(block) for block in packed)
                    own = {"graph": spec, "backend": args.backend,
                           "seconds": round(pack_seconds + unpack_seconds, 6),
                           "format": fmt, "grid_side": q, "edges": edges,
                           "bytes": nbytes, "bytes_per_target": round(nbytes / edges, 4),
                           "pack_seconds": round(pack_seconds, 6),
                           "unpack_seconds": round(unpack_seconds, 6),
                           "pack_gb_per_s": round(4 * edges / pack_seconds / 1e9, 3)}
                    emit(to_schema(FAMILY, own, command=command_line()), args.out)


if __name__ == "__main__":
    main()
