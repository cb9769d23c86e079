"""The HNSW search width the PostgreSQL store asks for, by pgvector version."""

from __future__ import annotations

from memorywire.store.postgres.knn import ann_ef


def test_without_iterative_scans_the_width_grows_with_the_agents_rarity() -> None:
    # an agent owning a tenth of the table needs ten times the candidates to keep its pool
    assert ann_ef(10, 100_000, 1_000_000, (0, 6, 2)) == 400
    assert ann_ef(10, 1_000, 1_000_000, (0, 6, 2)) == 1000  # capped
    assert ann_ef(10, 1_000_000, 1_000_000, (0, 6, 2)) == 100  # floor


def test_with_iterative_scans_the_width_is_the_pools_alone() -> None:
    # pgvector 0.8 walks on until the LIMIT is met: no share scaling (which also kept the
    # planner off the index of an agent's own partition)
    assert ann_ef(10, 100_000, 1_000_000, (0, 8, 5)) == 100
    assert ann_ef(10, 1_000, 1_000_000, (0, 8, 0)) == 100
    assert ann_ef(60, 1_000, 1_000_000, (0, 8, 0)) == 240
    assert ann_ef(10, 100_000, 1_000_000, None) == 400  # version not known yet: scale
