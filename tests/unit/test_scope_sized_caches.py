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
