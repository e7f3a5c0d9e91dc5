"""The intersection strategy that both fused-join kernels follow
(:mod:`dtri.kernels.intersect.cpu`, numba; :mod:`dtri.kernels.intersect.cuda`, CUDA), apart
from :mod:`dtri.kernels.intersect`, which picks one of them for an array: each edge's class
(hashed, searched, or nothing to do: the rule of :func:`edge_class`), the hash tables' tuning
and size limit, the peeling's edge states, the threads a CPU kernel may use and which CPU
kernel joins a partition (:func:`cpu_kernel`).
Both kernel modules import this one and neither imports
:mod:`dtri.kernels.intersect`, so each can be read and tested on its own."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from dtri.kernels.csr import CSR
from dtri.kernels.dispatch import array_module

STATE_GONE, STATE_ALIVE, STATE_LEAVING = 0, 1, 2
"""Per-edge states of a graph being peeled."""

CREDIT_DTYPE = np.uint32
"""Per-edge credits: at most the vertices of the graph, below 2**31."""


SEARCH_CLASSES = (0, 1, 2, 3, 4, 5)
"""Search classes: ``1 << class`` GPU lanes per edge (the shorter list's length, rounded up to a
power of two, at most 32)."""
HASHED = 6
"""The class of an edge whose target's list is streamed through its source's hash table."""
NOTHING = 255
"""The class of an edge with nothing to intersect (outside the group, gone, or an empty list)."""


class HashTuning(NamedTuple):
    """When an edge's intersection probes a hash table (the constants below, read per call;
    a benchmark overrides them through :func:`dtri.kernels.tuning.tuned`)."""

    enabled: bool
    """``hash-probes``: false searches every edge (to compare kernels)."""
    min_members: int
    """``hash-min-members``: a target needs a list this long for a table."""
    probe_cost: float
    """``hash-probe-cost``: the cost of one probe in steps of binary search."""
    piece_probes: int
    """``hash-piece-probes``: probes per GPU block (a piece of the hashed edges)."""
    warp_table_bits: int
    """``hash-warp-table-bits``: tables of at most ``2**bits`` slots are one per warp,
    larger ones one per block (GPU)."""
    spread: int
    """``hash-slots-per-member`` (2, 4 or 8) as a power of two: a GPU count's table of a list
    of ``b`` members has ``b << spread`` slots, rounded up to a power of two, where that takes
    at most :attr:`spread_bytes`; a larger table, and every table of a run with credits, is
    the least at most half full (and at most the largest the device's shared memory
    holds)."""
    spread_bytes: int
    """``hash-spread-max-bytes``: the largest table a list's spread may fill. A larger
    table leaves a multiprocessor room for fewer blocks."""


HASH_TUNING = HashTuning(True, 32, 1.0, 32768, 8, 2, 64 << 10)
"""The fitted defaults (examples/benchmarks/probes/kernel_probe.py, on an H200): 32 members,
a probe as costly as a search step, 32,768 probes a block, warp tables up to 256 slots, 4
slots a member in tables up to 64 KiB."""


def hash_tuning() -> HashTuning:
    """The hash probes' tuning: :data:`HASH_TUNING`, with a benchmark's overrides."""
    from dtri.kernels.tuning import tuned

    slots = tuned("hash-slots-per-member", 1 << HASH_TUNING.spread)
    if slots not in (2, 4, 8):
        raise ValueError(f"hash-slots-per-member must be 2, 4 or 8, got {slots}")
    return HashTuning(tuned("hash-probes", HASH_TUNING.enabled),
                      tuned("hash-min-members", HASH_TUNING.min_members),
                      tuned("hash-probe-cost", HASH_TUNING.probe_cost),
                      tuned("hash-piece-probes", HASH_TUNING.piece_probes),
                      tuned("hash-warp-table-bits", HASH_TUNING.warp_table_bits),
                      slots.bit_length() - 1,
                      tuned("hash-spread-max-bytes", HASH_TUNING.spread_bytes))


def hash_max_members(credits: bool) -> int:
    """The longest list a table holds at half load: 2**14 for a count (2**15 slots of keys,
    128 KiB of GPU shared memory), 2**13 with credits (keys and positions)."""
    return 1 << (13 if credits else 14)


def edge_class(a: int, b: int, tuning: HashTuning, max_members: int) -> int:
    """The class of an edge ``(u, v)`` with ``a`` later members of ``u`` and ``b`` of ``v``:
    :data:`NOTHING`, :data:`HASHED` or a search class (the rule of the module docstring; the
    CUDA ``classify_edges`` and the numba kernel apply the same)."""
    if a <= 0 or b <= 0:
        return NOTHING
    shorter, longer = min(a, b), max(a, b)
    if (tuning.enabled and tuning.min_members <= b <= max_members
            and a * tuning.probe_cost <= shorter * longer.bit_length()):
        return HASHED
    return min((shorter - 1).bit_length(), 5)


def leaving_sources(csr: CSR, state: Any) -> Any:
    """Per source of ``csr``'s range: whether one of its edges is leaving (uint8)."""
    xp = array_module(csr.offsets)
    leaving = xp.zeros(csr.edges + 1, dtype=xp.int64)
    xp.cumsum(state == STATE_LEAVING, out=leaving[1:])
    ends = leaving[csr.offsets]
    return (ends[1:] > ends[:-1]).astype(xp.uint8)


PARALLEL_MIN_EDGES = "dtri.kernel-parallel-min-edges"
"""``dask.config`` key: partitions with fewer edges intersect on one thread (starting numba's
threads costs more)."""


def kernel_threads() -> int:
    """Threads one CPU kernel may use (``dtri.kernel-threads`` in ``dask.config``: set by
    in-process runs; 1 elsewhere, where tasks run side by side), at most numba's."""
    import dask
    import numba

    asked = int(dask.config.get("dtri.kernel-threads"))
    return max(1, min(asked, numba.config.NUMBA_NUM_THREADS))




CPU_KERNEL = "dtri.cpu-kernel"
"""``dask.config`` key: the CPU fused join's kernel, ``auto`` (:func:`cpu_kernel` decides
per partition) or one of :data:`CPU_KERNELS`."""
CPU_KERNELS = ("marks", "hash", "search")
"""The CPU kernels: ``marks`` (each row's members marked in an array indexed by rank, then
every edge streams its target's list against the marks: SuiteSparse's saxpy under the mask,
a row at a time); ``hash`` (per edge by :func:`edge_class`: the target's list in a hash
table, or the shorter list searched in the longer); ``search`` (every edge searched: merge or
galloping from the shorter list)."""
MARKS_MAX_VERTICES = 1 << 20
"""``auto`` marks a partition's rows while the marks (a byte a vertex for a count, four with
credits, one array per thread) stay within a core's cache: up to this many vertices. Past
it a probe into the marks misses the cache where a hash table of the target's list does
not."""
MARKS_GALLOP_RATIO = 2.0
"""An edge whose target's list is longer than this × the rest of its row × log2 of that
list's length gallops from the row's side instead of streaming the list past the marks."""


def cpu_kernel(vertices: int, stateful: bool = False) -> str:
    """The CPU kernel of a fused join over ranks ``[0, vertices)``: ``dtri.cpu-kernel`` where
    set, else ``marks`` up to :data:`MARKS_MAX_VERTICES`, ``hash`` past it. A peeling
    (``stateful``) takes ``hash`` (or ``search``, where set): the marks kernel has no
    states."""
    import dask

    chosen = str(dask.config.get(CPU_KERNEL))
    if chosen not in ("auto", *CPU_KERNELS):
        raise ValueError(f"{CPU_KERNEL} must be auto or one of {', '.join(CPU_KERNELS)}, "
                         f"got {chosen!r}")
    if stateful:
        return "search" if chosen == "search" else "hash"
    if chosen != "auto":
        return chosen
    return "marks" if vertices <= MARKS_MAX_VERTICES else "hash"


def cpu_kernel_reason(kernel: str, vertices: int) -> str:
    """One line on why :func:`cpu_kernel` chose ``kernel`` for ``vertices`` ranks (what
    ``dtri count --explain`` prints)."""
    import dask

    chosen = dask.config.get(CPU_KERNEL)
    if chosen != "auto":
        return f"{CPU_KERNEL} = {chosen}"
    if kernel == "marks":
        return (f"{vertices:,} vertices, at most {MARKS_MAX_VERTICES:,}: each row "
                "marked once, every edge streams its target's list")
    return (f"{vertices:,} vertices, more than {MARKS_MAX_VERTICES:,}: a mark per "
            "vertex would miss the cache; hash tables per target, else search")
