"""dtri: exact triangle counting as a Dask wedge → radix-bin → join pipeline.

The same pipeline runs on pandas/NumPy partitions and on cuDF/CuPy partitions (GPUs).
"""

from dtri.api import count, count_triangles
from dtri.errors import ConfigurationError, DtriError, InputError
from dtri.pipeline import CountResult


def read_edges(*args, **kwargs):
    """Read edge files as a Dask DataFrame of ``src, dst`` (see
    :func:`dtri.input.read.read_edges`)."""
    from dtri.input.read import read_edges as _read_edges

    return _read_edges(*args, **kwargs)


__all__ = [
    "ConfigurationError",
    "CountResult",
    "DtriError",
    "InputError",
    "count",
    "count_triangles",
    "read_edges",
]
__version__ = "0.1.0"
