"""Reading one large gzip edge list in blocks: seconds and partitions of ``read_edges`` over a
generated ``.gz`` file, on a threaded local scheduler (CPU). Run it in two checkouts to compare.
One line in the schema of ``schema.py`` (the file's size, partitions and rows in ``detail``).

    python examples/benchmarks/gzip_read.py --edges 20000000 --blocksize 16MiB --out FILE.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import time

import numpy as np
from dask.utils import parse_bytes
from schema import commit, emit, to_schema

from dtri.bench import cpu_name
from dtri.input.read import read_edges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=20_000_000)
    parser.add_argument("--blocksize", default="16MiB")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--file", help="an existing .gz edge list (else one is generated)")
    parser.add_argument("--out")
    args = parser.parse_args()
    path = args.file
    if path is None:
        path = os.path.join(tempfile.mkdtemp(), "edges.txt.gz")
        edges = np.random.default_rng(1).integers(0, 10**7, (args.edges, 2))
        with gzip.open(path, "wb", compresslevel=1) as handle:
            np.savetxt(handle, edges, fmt="%d")
    started = time.perf_counter()
    frame = read_edges(path, blocksize=parse_bytes(args.blocksize))
    rows = sum(frame.map_partitions(len).compute(scheduler="threads",
                                                 num_workers=args.threads))
    emit(to_schema("schema", {
        "benchmark": "gzip-read", "graph": f"uniform, {args.edges} edges", "device": cpu_name(),
        "backend": "cpu", "commit": commit(),
        "command": f"python examples/benchmarks/gzip_read.py --edges {args.edges} "
                   f"--blocksize {args.blocksize} --threads {args.threads}",
        "input_files": 1, "compressed_bytes": os.path.getsize(path),
        "partitions": frame.npartitions, "rows": int(rows),
        "seconds": round(time.perf_counter() - started, 3)}), args.out)


if __name__ == "__main__":
    main()
