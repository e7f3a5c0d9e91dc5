"""The in-process form of a partition of edges (:class:`EdgeArrays`), made by the text and
Parquet readers and the in-process input (:mod:`dtri.input.frames`) alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EdgeArrays:
    """One partition of edges as two equally long int64 arrays, ``src`` and ``dst``: what an
    in-process run passes between its stages instead of a DataFrame. Indexed by column name
    like one (``part["src"]``), so the kernels take either."""

    src: Any
    dst: Any

    def __len__(self) -> int:
        return int(self.src.shape[0])

    def __getitem__(self, column: str) -> Any:
        if column not in ("src", "dst"):
            raise KeyError(column)
        return getattr(self, column)
