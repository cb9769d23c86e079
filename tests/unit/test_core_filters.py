from typing import Any

import pytest

from memorywire.core.filters import json_equal, matches_filter


@pytest.mark.parametrize(
    ("metadata", "flt", "expected"),
    [
        ({"a": 1}, None, True),
        ({"a": 1}, {}, True),
        (None, {"a": 1}, False),
        ({}, {"a": 1}, False),
        ({"a": 1}, {"a": 1}, True),
        ({"a": 1.0}, {"a": 1}, True),
        ({"a": True}, {"a": 1}, False),
        ({"a": 1}, {"a": True}, False),
        ({"a": "1"}, {"a": 1}, False),
        ({"a": None}, {"a": None}, True),
        ({"b": None}, {"a": None}, False),
        ({"a": 1, "b": "x"}, {"a": 1, "b": "x"}, True),
        ({"a": 1, "b": "y"}, {"a": 1, "b": "x"}, False),
        ({"a": [1, 2]}, {"a": [1, 2]}, True),
        ({"a": [1, 2]}, {"a": [2, 1]}, False),
        ({"a": {"x": [True]}}, {"a": {"x": [True]}}, True),
        ({"a": {"x": [True]}}, {"a": {"x": [1]}}, False),
        ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1}}, False),
    ],
)
def test_matches_filter(metadata: Any, flt: Any, expected: bool) -> None:
    assert matches_filter(metadata, flt) is expected


def test_json_equal_is_symmetric_for_bools() -> None:
    assert not json_equal(0, False)
    assert not json_equal(False, 0)
    assert json_equal(False, False)
