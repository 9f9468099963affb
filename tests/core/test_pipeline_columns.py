"""A pipeline's column names given as one string: a new user's ``RelativeError(key="category", value="revenue")``
crashed `ftops drill job` after its fault with ``internal error: KeyError: 'c'`` (exit 70): the string was taken as
a sequence of one-letter columns. One name is one column; anything else is refused when the pipeline is loaded."""

from __future__ import annotations

import pytest

from ft_core.errors import InputError
from spark_jobs.pipeline.accuracy import RelativeError, SetOverlap
from spark_jobs.pipeline.definition import Output

ACCURATE = [{"window_start": 0, "window_end": 10, "category": "books", "revenue": 10.0},
            {"window_start": 0, "window_end": 10, "category": "toys", "revenue": 20.0}]


def test_one_column_name_is_one_column():
    tentative = [dict(ACCURATE[0], revenue=5.0)]  # books half right, toys missing
    assert RelativeError(key="category", value="revenue")(tentative, ACCURATE) == {(0, 10): 0.25}
    assert RelativeError(key="category", value="revenue") == RelativeError(key=("category",), value="revenue")
    assert Output(key="category").key == ("category",) and SetOverlap(columns="category").columns == ("category",)
    assert SetOverlap(columns="category")([ACCURATE[0]], ACCURATE) == {(0, 10): 0.5}


@pytest.mark.parametrize("make, named", [
    (lambda: RelativeError(key=3, value="revenue"), "RelativeError(key)"),
    (lambda: RelativeError(key=("category", ""), value="revenue"), "RelativeError(key)"),
    (lambda: RelativeError(key="category", value=["revenue"]), "RelativeError(value)"),
    (lambda: Output(key=None), "Output(key)"),
    (lambda: SetOverlap(columns=[1]), "SetOverlap(columns)"),
])
def test_anything_else_is_refused_naming_the_argument(make, named):
    with pytest.raises(InputError, match=rf"^{named.replace('(', '[(]').replace(')', '[)]')}: "):
        make()
