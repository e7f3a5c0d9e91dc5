"""Tests of the in-memory inputs (pandas, NumPy, Dask): ids that are missing or do not fit
int64 are named, with their row, instead of being read as negative ids."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dtri
from dtri.errors import InputError

TRIANGLE = [(0, 1), (1, 2), (2, 0)]


def nullable_frame(missing_in: str) -> pd.DataFrame:
    """The triangle with its second row's ``missing_in`` id missing (NA), as pandas Int64."""
    columns = {name: pd.array([edge[k] for edge in TRIANGLE], dtype="Int64")
               for k, name in enumerate(("src", "dst"))}
    columns[missing_in][1] = pd.NA
    return pd.DataFrame(columns, index=[10, 11, 12])


@pytest.mark.parametrize(("column", "end"), [("src", "source"), ("dst", "target")])
@pytest.mark.parametrize("wrap", ["pandas", "dask"])
def test_a_missing_id_names_its_row_and_end(column, end, wrap):
    edges = nullable_frame(column)
    if wrap == "dask":
        edges = dd.from_pandas(edges, npartitions=2)
    with pytest.raises(InputError, match=rf"^row 11 has no {end} id \(null\)$"):
        dtri.count(edges, scheduler="synchronous")


def test_nullable_ids_without_a_missing_one_are_counted():
    edges = pd.DataFrame({"src": pd.array([0, 1, 2], dtype="Int64"),
                          "dst": pd.array([1, 2, 0], dtype="UInt64")})
    assert dtri.count_triangles(edges, scheduler="synchronous") == 1


@pytest.mark.parametrize("value", [2**63, 2**63 + 1, 2**64 - 1])
@pytest.mark.parametrize("wrap", ["numpy", "pandas", "dask"])
def test_an_unsigned_id_above_int64_is_named_not_read_as_negative(value, wrap):
    ids = np.array([*TRIANGLE, (2, value)], dtype=np.uint64)
    edges = {"numpy": lambda: ids,
             "pandas": lambda: pd.DataFrame({"src": ids[:, 0], "dst": ids[:, 1]}),
             "dask": lambda: dd.from_pandas(pd.DataFrame({"src": ids[:, 0], "dst": ids[:, 1]}),
                                            npartitions=2)}[wrap]()
    message = rf"^target id {value} in row 3 is larger than 2\*\*63-1$"
    with pytest.raises(InputError, match=message):
        dtri.count(edges, scheduler="synchronous")


def test_unsigned_ids_up_to_int64_max_are_counted():
    ids = np.array([(0, 1), (1, 2**63 - 1), (2**63 - 1, 0)], dtype=np.uint64)
    assert dtri.count_triangles(ids, scheduler="synchronous") == 1



def test_colour_sampling_drops_no_row_with_a_missing_id():
    """Colourful sampling keeps a row by its ends' colours: a missing id is refused before
    its row could be dropped, the estimate silently made without it."""
    from dtri.input.colours import monochromatic

    edges = pd.DataFrame({"src": pd.array(range(64), dtype="Int64"),
                          "dst": pd.array([*range(1, 64), pd.NA], dtype="Int64")})
    for key in range(8):
        with pytest.raises(InputError, match=r"^row 63 has no target id"):
            monochromatic(edges, key, 1 << 20)
