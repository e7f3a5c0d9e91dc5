"""dtri as a NetworkX backend: ``nx.triangles(G, backend="dtri")`` and friends.

NetworkX (3.2+) finds the backend through the ``networkx.backends`` and
``networkx.backend_info`` entry points of this package (:mod:`dtri.nx.backend`,
:mod:`dtri.nx.info`). A call converts the NetworkX graph once (node labels of any hashable
type to dense integer ids, the edges to an array; NetworkX caches the conversion on the graph),
prepares it with :func:`dtri.prepare` under the settings of ``nx.config.backends.dtri``, and
returns NetworkX's types keyed by the graph's own labels.
"""
