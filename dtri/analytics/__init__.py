"""Analytics on a prepared graph: the triangle count and its plan, triangles per vertex,
clustering, transitivity, edge support and k-truss."""
