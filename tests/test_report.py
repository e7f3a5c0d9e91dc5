"""The summaries' top lists (:mod:`dtri.report`): the first rows by a column, descending,
ties by the others, ascending, exactly as a full sort gives them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dtri.report import first_rows


@pytest.mark.parametrize("seed", range(40))
def test_first_rows_equal_a_full_sorts_head(seed):
    """Only rows reaching the top-th largest value are sorted; ties at it, missing values
    (which sort last) and lists shorter than ``top`` give what the full sort gives."""
    rng = np.random.default_rng(seed)
    for _ in range(25):
        n, top = int(rng.integers(0, 80)), int(rng.integers(0, 20))
        frame = pd.DataFrame({"value": rng.integers(0, 6, n).astype(float),
                              "a": rng.integers(0, 10, n), "b": rng.integers(0, 3, n)})
        if seed % 2 and n:
            frame.loc[rng.integers(0, n, int(rng.integers(1, 20))), "value"] = np.nan
        order = ["value", "a", "b"]
        want = frame.sort_values(order, ascending=[False, True, True]).head(top)
        got = first_rows(frame, order, top)
        pd.testing.assert_frame_equal(got, want)


def test_first_rows_sort_only_the_candidates(monkeypatch):
    frame = pd.DataFrame({"value": np.arange(100_000) % 1000, "a": np.arange(100_000)})
    sorted_rows = []
    sort_values = pd.DataFrame.sort_values

    def recorded(self, *args, **kwargs):
        sorted_rows.append(len(self))
        return sort_values(self, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "sort_values", recorded)
    assert first_rows(frame, ["value", "a"], 3)["a"].tolist() == [999, 1999, 2999]
    assert sorted_rows == [100]  # the rows of value 999, not all 100,000
