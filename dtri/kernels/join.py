"""Join: how many closure keys of one bin are edges, by sorted search in the bin's edge keys."""

from __future__ import annotations

from typing import Any

from dtri.kernels.dispatch import array_module


def count_closed(closure: Any, edge_keys: Any) -> int:
    """Number of ``closure`` keys present in the ascending ``edge_keys`` (exact Python int).

    Edge keys are unique (the graph is simple), so each closed wedge is counted once: it is
    one triangle, seen from its lowest-ranked vertex.
    """
    if closure.shape[0] == 0 or edge_keys.shape[0] == 0:
        return 0
    xp = array_module(closure)
    position = xp.searchsorted(edge_keys, closure)
    xp.minimum(position, edge_keys.shape[0] - 1, out=position)
    return int(xp.count_nonzero(edge_keys[position] == closure))
