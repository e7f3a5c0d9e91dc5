"""dtri: exact triangle counting and the analytics built on triangles, as a Dask pipeline.

The same pipeline runs on pandas/NumPy partitions and on cuDF/CuPy partitions (GPUs). A graph
is prepared once on the workers (:func:`prepare`) and analysed many times: the triangle count,
triangles per vertex, clustering, transitivity, edge support and k-truss.
"""

from dtri.analytics.count import CountResult
from dtri.api import Session, count, count_triangles, prepare
from dtri.errors import ConfigurationError, DtriError, InputError
from dtri.options import Options
from dtri.prepared.graph import PreparedGraph


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
    "Options",
    "PreparedGraph",
    "Session",
    "count",
    "count_triangles",
    "prepare",
    "read_edges",
]
__version__ = "0.1.0"
