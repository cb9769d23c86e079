"""Batch planning and the vector LRU: pure logic, no model."""

from __future__ import annotations

import numpy as np
import pytest

from memorywire.embed.lru import VectorCache, text_key
from memorywire.embed.minilm import plan_batches


def test_batches_are_sorted_by_length_and_cover_every_index() -> None:
    lengths = [12, 3, 40, 7, 7, 20]
    batches = plan_batches(lengths, batch_size=32)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)


def test_batch_size_is_respected() -> None:
    batches = plan_batches([5] * 70, batch_size=32)
    assert [len(b) for b in batches] == [32, 32, 6]


def test_one_long_text_does_not_pad_the_short_ones() -> None:
    lengths = [8] * 20 + [256]
    batches = plan_batches(lengths, batch_size=32)
    assert batches[-1] == [20]
    assert all(lengths[i] == 8 for b in batches[:-1] for i in b)


def test_similar_lengths_share_a_batch() -> None:
    assert len(plan_batches([10, 11, 12, 14, 16, 18, 20], batch_size=32)) == 1


def test_empty_input_plans_nothing() -> None:
    assert plan_batches([], batch_size=8) == []


def test_lru_evicts_least_recently_used_and_freezes_rows() -> None:
    cache = VectorCache(2)
    a, b, c = (np.full(3, v, dtype=np.float32) for v in (1, 2, 3))
    cache.put(text_key("a"), a)
    cache.put(text_key("b"), b)
    assert cache.get(text_key("a")) is not None  # "b" is now the oldest
    cache.put(text_key("c"), c)
    assert cache.get(text_key("b")) is None
    row = cache.get(text_key("c"))
    assert row is not None
    with pytest.raises(ValueError):
        row[0] = 9.0
    c[0] = 9.0  # the caller's array is not aliased
    assert cache.get(text_key("c"))[0] == 3.0  # type: ignore[index]


def test_lru_of_size_zero_stores_nothing() -> None:
    cache = VectorCache(0)
    cache.put(text_key("a"), np.ones(3, dtype=np.float32))
    assert len(cache) == 0
    with pytest.raises(ValueError):
        VectorCache(-1)


def test_text_key_handles_lone_surrogates() -> None:
    assert text_key("\ud800") != text_key("\ud801")
