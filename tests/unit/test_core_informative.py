"""The shared rule of the full-text leg (``core.informative``): which query units rank a
recall's scope, and how much their list weighs in the fusion. Every store reads its own
counts through it, so these are the numbers all three stores rank by."""

from __future__ import annotations

import math

import pytest

from memorywire.core.informative import (
    COMMON_SHARE,
    INFORMATIVE_SHARE,
    SHARE_MIN_SCOPE,
    is_common,
    unit_weight,
    weigh_units,
)


def test_a_rare_unit_weighs_fully_and_a_common_one_is_left_out() -> None:
    df = {"carpenter": 1, "river": 3, "ines": 10, "bread": 0}
    kept, weight = weigh_units(list(df), df.__getitem__, 10)
    assert kept == ["carpenter", "river"]  # in the query's order; no-match and common out
    assert weight == 1.0


def test_the_list_weighs_its_best_unit() -> None:
    df = {"river": 3, "walk": 4}
    kept, weight = weigh_units(list(df), df.__getitem__, 10)
    assert kept == ["river", "walk"]
    assert weight == pytest.approx(math.log(10 / 3) / math.log(10))


def test_weight_falls_from_the_informative_share_to_the_common_share() -> None:
    n = 1000
    assert unit_weight(int(INFORMATIVE_SHARE * n), n) == 1.0
    assert unit_weight(1, n) == 1.0  # capped
    at_half = unit_weight(int(COMMON_SHARE * n), n)
    assert at_half == pytest.approx(math.log(2) / math.log(10))
    weights = [unit_weight(df, n) for df in range(100, 501, 50)]
    assert weights == sorted(weights, reverse=True) and len(set(weights)) == len(weights)


def test_common_means_more_than_the_share() -> None:
    assert not is_common(5, 10)
    assert is_common(6, 10)
    df = {"half": 5, "more": 6}
    assert weigh_units(list(df), df.__getitem__, 10)[0] == ["half"]


def test_a_small_scope_keeps_every_unit_without_counting() -> None:
    def never(unit: str) -> int:
        raise AssertionError(f"counted {unit} in a scope too small to share")

    assert weigh_units(["ines", "trade"], never, SHARE_MIN_SCOPE - 1) == (["ines", "trade"],
                                                                          1.0)


def test_nothing_kept_weighs_nothing() -> None:
    assert weigh_units(["ines"], lambda _: 10, 10) == ([], 0.0)
    assert weigh_units([], lambda _: 0, 10) == ([], 0.0)
