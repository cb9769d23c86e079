"""The HNSW search width the PostgreSQL store asks for, by pgvector version."""

from __future__ import annotations

from memorywire.store.postgres.knn import SINGLE_PASS_FLOOR, ann_ef, graph_rows


def test_without_iterative_scans_the_width_grows_with_the_agents_rarity() -> None:
    # an agent owning a tenth of the table needs ten times the candidates to keep its pool
    assert ann_ef(10, 100_000, 1_000_000, (0, 6, 2)) == 400
    assert ann_ef(10, 1_000, 1_000_000, (0, 6, 2)) == 1000  # capped
    assert ann_ef(10, 1_000_000, 1_000_000, (0, 6, 2)) == SINGLE_PASS_FLOOR == 250  # floor


def test_with_iterative_scans_the_width_is_the_pools_alone() -> None:
    # pgvector 0.8 walks on until the LIMIT is met: no share scaling (which also kept the
    # planner off the index of an agent's own partition)
    assert ann_ef(10, 100_000, 1_000_000, (0, 8, 5)) == 100
    assert ann_ef(10, 1_000, 1_000_000, (0, 8, 0)) == 100
    assert ann_ef(60, 1_000, 1_000_000, (0, 8, 0)) == 240
    assert ann_ef(10, 100_000, 1_000_000, None) == 400  # version not known yet: scale


def test_the_graph_is_the_partitions_when_the_table_is_partitioned() -> None:
    # pgshare35: an agent alone in its partition owns all of that graph, not a tenth of the
    # table, so it asks the floor (400 before, from the table's share)
    graph = graph_rows(100_000, 1_000_000, 100_000.0)
    assert graph == 100_000
    assert ann_ef(10, 100_000, graph, (0, 6, 2)) == SINGLE_PASS_FLOOR
    assert ann_ef(40, 100_000, graph_rows(100_000, 1_000_000, 200_000.0), (0, 6, 2)) == 320
    assert ann_ef(10, 1_000, graph_rows(1_000, 1_000_000, 31_250.0), (0, 6, 2)) == 1000


def test_a_stale_partition_estimate_is_bounded_by_the_scope_and_the_table() -> None:
    assert graph_rows(5_000, 1_000_000, None) == 1_000_000  # unpartitioned: the table
    assert graph_rows(5_000, 1_000_000, 3_000.0) == 5_000  # analysed before the last writes
    assert graph_rows(5_000, 40_000, 90_000.0) == 40_000  # analysed before deletes
    assert graph_rows(5_000, 0, None) == 5_000
