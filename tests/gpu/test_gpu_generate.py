"""The fused GPU generators give the NumPy generators' edges, bit for bit (needs a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from dtri.input.generate import generated

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("spec", ["rmat:1", "rmat:9", "rmat:12:3", "rmat:17:2", "gnm:1:5",
                                  "gnm:1000:5000", "gnm:2147483648:300000"])
@pytest.mark.parametrize("seed", [0, 7])
def test_fused_generator_equals_numpy(spec: str, seed: int) -> None:
    import cupy

    made = generated(spec, seed=seed)
    for start, stop in [(0, made.edges), (made.edges // 3, made.edges // 3 + 1),
                        (made.edges // 2, made.edges)]:
        cpu = made.maker("cpu").arrays((start, stop))
        gpu = made.maker("gpu").arrays((start, stop))
        for want, got in zip(cpu, gpu, strict=True):
            assert isinstance(got, cupy.ndarray) and got.dtype == np.int64
            np.testing.assert_array_equal(cupy.asnumpy(got), want)


def test_fused_generator_empty_range() -> None:
    src, dst = generated("rmat:10", seed=0).maker("gpu").arrays((5, 5))
    assert src.shape == dst.shape == (0,)
