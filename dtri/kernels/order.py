"""Vertex orders: the order in which the intersection kernel takes its targets' work.

The hashed edges of the fused join are processed per target (:mod:`dtri.kernels.intersect.
cuda`), in pieces handed to thread blocks in the order of a partition's *schedule*, a
permutation of its rows (:attr:`dtri.kernels.csr.CSR.schedule`); the ranks stay as they are:

* ``rank``: the rows as stored (no schedule);
* ``degree``: the targets with most work first (hubs first), so the longest pieces start
  early and the last wave of blocks is made of short ones;
* ``aorder``: after Hu, Zou & Liu's A-order, greedy bucketing of each target's
  memory-access profile. Targets are sorted by their work (the probes their in-edges
  stream, :func:`in_work`, plus their table) and dealt in serpentine order into buckets of
  about :data:`WAVE` blocks, each running whole: every bucket holds heavy and light targets
  side by side, and every bucket the same total.

A target's work comes from every partition's edges into it (:func:`in_work`, summed over the
partitions like the degrees), so the schedule of each partition is computed where it lives.
"""

from __future__ import annotations

from typing import Any

from dtri.kernels.csr import CSR, degrees
from dtri.kernels.dispatch import array_module

ORDERS = ("rank", "degree", "aorder")

WAVE = 1024
"""The size of an ``aorder`` bucket (``aorder-wave``): about the thread blocks that run at once
on a GPU (an H200 holds 132 SMs × 8 blocks of 256 threads)."""


def in_work(csr: CSR, vertices: int) -> Any:
    """Per vertex (rank ``0 .. vertices - 1``): the later members of its in-neighbours over
    this partition's edges into it, ``Σ a`` over its in-edges, the probes its hash table takes
    (int64)."""
    from dtri.kernels.counting import weighted_counts
    from dtri.kernels.csr import sources

    xp = array_module(csr.offsets)
    position = xp.arange(csr.edges, dtype=xp.int64)
    rows = sources(csr) - csr.low
    later = csr.offsets[rows + 1] - position - 1
    return weighted_counts(csr.dst.astype(xp.int64), later, vertices)


def schedule(csr: CSR, order: str, work: Any, degree: Any) -> Any | None:
    """The rows of ``csr`` in ``order`` (``None`` for ``rank``): ``work`` and ``degree`` are
    the partition's slices (rows ``0 .. high - low - 1``) of the vertex-wide :func:`in_work`
    sums and degrees."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if order == "rank":
        return None
    xp = array_module(csr.offsets)
    rows = int(csr.offsets.shape[0]) - 1
    if order == "degree":
        return xp.argsort(-degree.astype(xp.int64), kind="stable")
    load = work + 2 * degrees(csr)  # the probes plus filling the table
    heaviest = xp.argsort(-load, kind="stable")
    from dtri.kernels.tuning import tuned

    wave = max(1, tuned("aorder-wave", WAVE))
    place = xp.arange(rows, dtype=xp.int64)
    deal, slot = place // wave, place % wave
    bucket = xp.where(deal % 2 == 0, slot, wave - 1 - slot)  # serpentine
    rounds = (rows + wave - 1) // wave
    return heaviest[xp.argsort(bucket * rounds + deal, kind="stable")]
