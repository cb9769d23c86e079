"""A write's conflict and duplicate checks read each candidate's parse and digests from
caches that must hold a whole 100k-memory scope (issue 35, flat35): a write's candidates are
spread over the scope, so with room for fewer texts than the scope holds, every batch reparsed
what earlier batches had read and a write cost more the more the agent remembered.

A scope of 70,000 distinct texts (past the former room for 65,536) is read once; the next
write over the same texts must find every one of them cached (no parse, no digest).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memorywire.core import contradiction, duplicates
from memorywire.core.text_lru import TextLru
from memorywire.wire.models import MemoryType

#: Past the old bound of 65,536 and short texts, so reading them all stays cheap.
SCOPE = 70_000


@pytest.fixture
def scope() -> Iterator[list[tuple[str, str]]]:
    contradiction._parts.cache_clear()
    duplicates._keys.cache_clear()
    yield [(f"m{i}", f"note {i}") for i in range(SCOPE)]
    contradiction._parts.cache_clear()
    duplicates._keys.cache_clear()


def test_a_100k_scope_fits_both_caches() -> None:
    assert contradiction.STATEMENTS_CACHED >= 100_000
    assert duplicates.TEXTS_CACHED >= 100_000


def test_conflict_rules_reparse_nothing_of_a_scope_already_read(
        scope: list[tuple[str, str]]) -> None:
    first = contradiction.find_conflicts("note 1 changed", scope)
    misses = contradiction._parts.cache_info().misses
    assert misses >= SCOPE
    assert contradiction.find_conflicts("note 1 changed", scope) == first
    assert contradiction._parts.cache_info().misses == misses


def test_duplicate_check_redigests_nothing_of_a_scope_already_read(
        scope: list[tuple[str, str]]) -> None:
    first = duplicates.likeness(MemoryType.SEMANTIC, "note 7", scope)
    assert first.identical == ["m7"]
    misses = duplicates._keys.cache_info().misses
    assert misses >= SCOPE
    assert duplicates.likeness(MemoryType.SEMANTIC, "note 7", scope) == first
    assert duplicates._keys.cache_info().misses == misses


def test_long_texts_are_bounded_by_their_characters() -> None:
    """A scope of long replies must not take an entry bound's worth of them: the cache keeps
    at most ``max_chars`` characters of text, least recently used out first."""
    calls: list[str] = []

    def reading(text: str) -> int:
        calls.append(text)
        return len(text)

    cache = TextLru(reading, max_items=1000, max_chars=5_000)
    texts = [f"{i:04d}" + "x" * 996 for i in range(8)]  # 1,000 characters each
    for text in texts:
        assert cache(text) == 1000
    info = cache.cache_info()
    assert (info.items, info.chars, info.misses) == (5, 5_000, 8)
    assert cache(texts[-1]) == 1000 and len(calls) == 8  # kept: no second reading
    assert cache(texts[0]) == 1000 and len(calls) == 9  # first in, first out: read again


def test_entries_bound_evicts_the_least_recently_used() -> None:
    cache = TextLru(str.upper, max_items=2, max_chars=1_000)
    cache("a")
    cache("b")
    cache("a")  # "b" is now the least recently used
    cache("c")
    before = cache.cache_info().misses
    assert cache("a") == "A" and cache.cache_info().misses == before
    assert cache("b") == "B" and cache.cache_info().misses == before + 1


def test_a_text_larger_than_the_bound_is_still_answered() -> None:
    cache = TextLru(len, max_items=4, max_chars=10)
    assert cache("x" * 50) == 50
    assert cache.cache_info().items == 1  # kept alone; the next text pushes it out
    assert cache("y") == 1
    assert cache.cache_info().items == 1


def test_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_items"):
        TextLru(len, max_items=0, max_chars=10)


def test_threads_sharing_a_cache_keep_its_bounds_and_answers() -> None:
    """A store's worker thread and the event loop's read the same caches without a lock:
    every answer stays the function's, the entry bound is passed by at most one entry per
    inserting thread, and only between an insert and its eviction, and the character count
    is exact once the threads are done and one more insert recounts it."""
    import threading

    calls: list[int] = []
    def upper(text: str) -> str:
        calls.append(1)
        return text.upper()

    cache: TextLru[str] = TextLru(upper, 500, 40_000)
    errors: list[BaseException] = []
    seen_over: list[int] = []

    def work(seed: int) -> None:
        try:
            for i in range(20_000):
                text = f"text {(i * 7 + seed) % 3_000}"
                assert cache(text) == text.upper()
                if len(cache._items) > 500 + len(threads):
                    seen_over.append(len(cache._items))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert not seen_over
    assert calls  # the function ran: misses were computed, not invented
    info = cache.cache_info()
    assert info.items <= 500
    cache._inserts = cache._recount_every - 1  # the next insert recounts
    cache("a text never seen")
    assert cache.cache_info().chars == sum(len(t) for t in cache._items)
    assert cache.cache_info().chars <= 40_000
