"""The bytes the fused join reads from device memory (a model; the device's peak bandwidth is
:func:`dtri.runtime.bandwidth.peak_bandwidth`).

The model (:func:`join_bytes`) counts what each edge the join works on (a *live* edge: its
target in the group's range, both lists non-empty) must read at least once, 4 bytes a list
member (int32 targets) and 8 an offset:

* every live edge: its target (4), the end of its source's list (8) and its target's two
  offsets (16), :data:`INDEX_BYTES` in all;
* a *hashed* edge: each later member of its source, once (a probe, 4 bytes), and each target's
  list, once per pass, into its table;
* a *searched* edge: its shorter list, once, and one member of the longer one per step of
  binary search (``shorter × bit-length of longer``, the steps' bound the class rule uses).

The counts come from the run's own data: on the GPU from sums the kernels already make (the
hashed work's prefix sum, the classes' counts, one block-wide sum of the searched edges' steps
in the pass that classes them); :func:`dtri.kernels.intersect.work_counters` computes the same
from the lists, for tests. Reads that hit in L2 are counted too, and the pieces' second fills
of a table (a hub's edges spread over several blocks) are not: a model of the join's unique
traffic, what bounds it from below, not a measurement.
"""

from __future__ import annotations

from typing import Any

MEMBER_BYTES = 4
"""A list member (an int32 target)."""
INDEX_BYTES = MEMBER_BYTES + 3 * 8
"""What a live edge reads besides the lists: its target and three int64 offsets."""


def join_bytes(edges: int, members: int, search_steps: int) -> int:
    """The join's bytes read: ``edges`` live edges, ``members`` list members read once (the
    hashed edges' probes and tables, the searched edges' shorter lists) and ``search_steps``
    steps of binary search."""
    return INDEX_BYTES * edges + MEMBER_BYTES * (members + search_steps)


def counted_bytes(counters: dict[str, int]) -> int:
    """:func:`join_bytes` of :func:`dtri.kernels.intersect.work_counters`' counters."""
    return join_bytes(counters["edges"], counters["probes"] + counters["table_members"]
                      + counters["searched_members"], counters["search_steps"])


class JoinCount(int):
    """A join task's triangles, carrying the bytes it read (``None`` where not modelled): an
    ``int`` everywhere a count is summed or saved."""

    bytes_read: int | None

    def __new__(cls, triangles: int, bytes_read: int | None) -> JoinCount:
        made = super().__new__(cls, triangles)
        made.bytes_read = bytes_read
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        return JoinCount, (int(self), self.bytes_read)


def bytes_read(count: Any) -> int | None:
    """The bytes a join task's (or a sum's) count carries, else ``None``."""
    return getattr(count, "bytes_read", None)


def summed(counts: Any) -> int:
    """The exact sum of join counts; a :class:`JoinCount` with their bytes where every one
    carries bytes (a task of another join, a unit reused from a checkpoint: plain ``int``)."""
    counts = list(counts)
    triangles = sum(int(c) for c in counts)
    read = [bytes_read(c) for c in counts]
    if not counts or any(b is None for b in read):
        return triangles
    return JoinCount(triangles, sum(b for b in read if b is not None))
