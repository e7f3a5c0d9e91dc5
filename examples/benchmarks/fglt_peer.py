"""FGlT, the Fast Graphlet Transform (Floros, Pitsianis & Sun, HPEC 2020), as a benchmark peer.

The C++ executable is built outside the repository, single-threaded, by
``.peers/fglt/build.sh`` (github.com/fcdimitr/fglt at 847eece4, patched to print its counts as
exact integers, and to write the raw frequencies when given ``--raw``). It reads a Matrix Market
pattern symmetric file and writes, per vertex, 16 frequencies in the order of ``ORBITS`` into
its working directory: ``freq_net.csv`` (induced graphlet orbits, the paper's net
frequencies) and, with ``--raw``, ``freq_raw.csv`` (non-induced subgraph counts, the raw
frequencies).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np

PEER_DIR = Path(__file__).resolve().parents[2] / ".peers" / "fglt"

#: FGlT's column order, σ0..σ15 of the paper's dictionary (its CSV header in brackets).
ORBITS = (
    "vertex",  # [0] vertex (==1)
    "edge end",  # [1] degree
    "2-path end",  # [2] 2-path
    "2-path centre",  # [3] bifork
    "triangle",  # [4] 3-cycle
    "3-path end",  # [5] 3-path, end
    "3-path interior",  # [6] 3-path, interior
    "claw leaf",  # [7] claw, leaf
    "claw centre",  # [8] claw, root
    "paw tail tip",  # [9] paw, handle
    "paw triangle vertex of degree 2",  # [10] paw, base
    "paw triangle vertex joined to the tail",  # [11] paw, center
    "4-cycle",  # [12] 4-cycle
    "diamond degree-2 vertex",  # [13] diamond, off-cord
    "diamond degree-3 vertex",  # [14] diamond, on-cord
    "4-clique",  # [15] 4-clique
)

_REPORTED = re.compile(r"Total elapsed time:\s*([0-9.eE+-]+)\s*sec")
_THREADS = re.compile(r"using (\d+) threads")


def fglt_binary() -> Path | None:
    """The built FGlT executable under ``.peers/fglt``, or None when it has not been built."""
    path = PEER_DIR / "bin" / "fglt"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def write_mtx(src: np.ndarray, dst: np.ndarray, vertices: int, path: Path) -> int:
    """Write the simple undirected graph as a Matrix Market pattern symmetric file.

    Edges may come once or in both directions, in any order; self-loops and duplicates are
    dropped. Vertex ``i`` is row/column ``i + 1``. Returns the number of undirected edges.
    """
    src = np.asarray(src, dtype=np.int64).ravel()
    dst = np.asarray(dst, dtype=np.int64).ravel()
    if src.shape != dst.shape:
        raise ValueError("src and dst must have the same length")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= vertices):
        raise ValueError(f"vertex ids must lie in [0, {vertices})")
    low, high = np.minimum(src, dst), np.maximum(src, dst)
    keys = np.unique(low[low != high] * vertices + high[low != high])
    rows, cols = keys % vertices + 1, keys // vertices + 1  # lower triangle, by column
    with open(path, "w") as handle:
        handle.write("%%MatrixMarket matrix coordinate pattern symmetric\n")
        handle.write(f"{vertices} {vertices} {keys.size}\n")
        np.savetxt(handle, np.column_stack((rows, cols)), fmt="%d")
    return int(keys.size)


def read_frequencies(path: Path, vertices: int) -> np.ndarray:
    """Read one of FGlT's CSV files as an ``(vertices, 16)`` int64 array."""
    text = path.read_text()
    body = text.split("\n", 1)[1] if "\n" in text else ""
    if "e" in body or "E" in body:
        warnings.warn(
            f"{path.name} prints some counts with 6 significant digits (unpatched FGlT); "
            "they are rounded",
            stacklevel=2,
        )
    table = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    table = table.reshape(-1, len(ORBITS) + 1)
    if table.shape[0] != vertices or not np.array_equal(table[:, 0], np.arange(vertices)):
        raise ValueError(f"{path} does not list vertices 0..{vertices - 1} in order")
    return np.rint(table[:, 1:]).astype(np.int64)


def run_fglt(
    src: np.ndarray,
    dst: np.ndarray,
    vertices: int,
    workdir: Path,
    *,
    raw: bool = False,
    binary: Path | None = None,
    timeout: float | None = None,
) -> dict:
    """Run FGlT on one thread on the graph ``(src, dst)`` over ``vertices`` vertices.

    ``seconds`` is the wall clock of the binary's process alone (it reads the ``.mtx`` file,
    transforms and writes its CSV files); ``reported_seconds`` is FGlT's own "Total elapsed
    time" (the transform only). ``raw`` and ``net`` are ``(vertices, 16)`` int64 arrays in the
    order of ``ORBITS``, or None for a file the binary did not write. The raw frequencies are
    written only when ``raw`` is true (and never by the unpatched binary); writing them adds
    to ``seconds``, so time with ``raw=False``, as upstream FGlT runs.
    """
    binary = binary if binary is not None else fglt_binary()
    if binary is None:
        raise FileNotFoundError(f"FGlT is not built: run {PEER_DIR / 'build.sh'}")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    mtx = workdir / "graph.mtx"
    write_mtx(src, dst, vertices, mtx)
    outputs = {"raw": workdir / "freq_raw.csv", "net": workdir / "freq_net.csv"}
    for path in outputs.values():
        path.unlink(missing_ok=True)
    # FGlT built without Cilk is serial; the variables pin a Cilk or OpenMP build to one worker
    env = {**os.environ, "CILK_NWORKERS": "1", "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    proc = subprocess.run(
        [str(binary), *(["--raw"] if raw else []), str(mtx.resolve())],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"FGlT failed ({proc.returncode}): {proc.stderr.strip()}")
    threads = _THREADS.search(proc.stdout)
    if threads is None or int(threads.group(1)) != 1:
        raise RuntimeError(f"FGlT did not run on one thread: {proc.stdout.strip()}")
    reported = _REPORTED.search(proc.stdout)
    result: dict = {
        "seconds": seconds,
        "reported_seconds": float(reported.group(1)) if reported else None,
    }
    for name, path in outputs.items():
        result[name] = read_frequencies(path, vertices) if path.is_file() else None
    return result
