"""The recall path's text memos: bounded, emptied when full, never a wrong value."""

from __future__ import annotations

import pytest

from memorywire.core import textsearch
from memorywire.core.memo import ClearingMemo


def test_memo_returns_what_was_put_and_misses_what_was_not() -> None:
    memo: ClearingMemo[str, int] = ClearingMemo(4)
    assert memo.get("a") is None
    assert memo.put("a", 1) == 1
    assert memo.get("a") == 1
    assert len(memo) == 1


def test_memo_empties_itself_when_full_instead_of_growing() -> None:
    memo: ClearingMemo[int, int] = ClearingMemo(3)
    for i in range(3):
        memo.put(i, i * 10)
    assert len(memo) == 3
    memo.put(99, 990)
    assert len(memo) == 1
    assert memo.get(0) is None
    assert memo.get(99) == 990
    for i in range(1000):
        memo.put(i, i)
    assert len(memo) <= 3


def test_memo_refuses_a_bound_below_one() -> None:
    with pytest.raises(ValueError, match="max_items"):
        ClearingMemo(0)


def test_query_terms_hands_out_a_fresh_list_each_time() -> None:
    first = textsearch.query_terms("Where does Marta work as a carpenter?")
    first.append("mutated")
    again = textsearch.query_terms("Where does Marta work as a carpenter?")
    assert "mutated" not in again
    assert again == ["marta", "work", "carpenter"]
