"""The one CUDA loader compiles each of dtri's ``.cu`` sources on the device, once per device
and options, and serves the kernels that the modules ask for (needs a GPU)."""

from __future__ import annotations

import pytest

from dtri.kernels.cuda_source import CUDA_SOURCES, cuda_module

pytestmark = pytest.mark.gpu


def test_every_source_compiles_once_per_device_and_options() -> None:
    from dtri.kernels.graphlets.cuda import CUDA_SOURCE as GRAPHLETS
    from dtri.kernels.intersect.cuda import CUDA_SOURCE as INTERSECT
    from dtri.kernels.intersect.cuda import MODES, mode_kernels
    from dtri.kernels.peel.cuda import CUDA_SOURCE as PEEL
    from dtri.kernels.peel.cuda import ID_TYPES

    options = {GRAPHLETS: [((), ("-std=c++17",))],
               INTERSECT: [(mode_kernels(mode), ("-std=c++17",)) for mode in MODES],
               PEEL: [(tuple(f"peel_round<{t}>" for t in ID_TYPES.values()), ("-std=c++17",))],
               ("dtri.input", "generate.cu"): [((), ())]}
    assert set(options) == set(CUDA_SOURCES)
    for source, variants in options.items():
        for expressions, flags in variants:
            module = cuda_module(*source, options=flags, name_expressions=expressions)
            assert cuda_module(*source, options=flags, name_expressions=expressions) is module


def test_the_modules_kernels_come_from_the_loader() -> None:
    from dtri.input.generate import _fused_kernel
    from dtri.kernels.graphlets.cuda import kernel as graphlet_kernel
    from dtri.kernels.intersect.cuda import COUNT, PEEL
    from dtri.kernels.intersect.cuda import kernel as intersect_kernel

    for name in ("list_triangles", "clique_counts", "cycle_records"):
        assert graphlet_kernel(name) is not None
    for mode in (COUNT, PEEL):
        for name in ("edge_rows", f"search_edges<{mode}>", f"hash_pieces<{mode}>"):
            assert intersect_kernel(name, mode) is not None
    for name in ("rmat_edges", "gnm_edges"):
        assert _fused_kernel(name) is not None
