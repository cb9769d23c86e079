"""The coarse clusters behind SQLite's conflict search find a vector's nearest row, and keep
finding it as the scope grows."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from memorywire.store._coarse_index import CoarseIndex, probe_rounds

_CENTRES = np.random.default_rng(1).standard_normal((60, 48)).astype(np.float32)


def _clustered(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    """Rows around a few dozen directions, as sentence vectors of a few topics are."""
    rows = _CENTRES[rng.integers(len(_CENTRES), size=n)] + 0.6 * rng.standard_normal((n, 48))
    out: npt.NDArray[np.float32] = (rows / np.linalg.norm(rows, axis=1, keepdims=True)
                                    ).astype(np.float32)
    return out


def _found_rate(index: CoarseIndex, matrix: npt.NDArray[np.float32],
                queries: npt.NDArray[np.float32]) -> float:
    hits = 0
    for q in queries:
        order = index.probe_order(index.centroids @ q)
        probed = index.positions(order[:probe_rounds(order.shape[0])[0]])
        hits += int(np.argmax(matrix @ q)) in set(probed.tolist())
    return hits / len(queries)


def test_probing_a_few_lists_finds_the_nearest_row() -> None:
    rng = np.random.default_rng(5)
    matrix = _clustered(rng, 20_000)
    index = CoarseIndex(matrix)
    assert index.centroids.shape[0] == 141  # about sqrt(n) lists
    queries = _clustered(np.random.default_rng(6), 200)
    assert _found_rate(index, matrix, queries) >= 0.9
    # every row is filed exactly once
    everything = index.positions(np.arange(index.centroids.shape[0]))
    assert sorted(everything.tolist()) == list(range(20_000))


def test_appended_rows_are_filed_and_found() -> None:
    rng = np.random.default_rng(8)
    matrix = _clustered(rng, 5000)
    index = CoarseIndex(matrix)
    more = _clustered(np.random.default_rng(9), 3000)
    for start in range(0, 3000, 500):  # batches, as a store appends them
        index.add(more[start:start + 500])
    assert index.n == 8000 and not index.stale(8000) and index.stale(10_000)
    whole = np.concatenate([matrix, more])
    everything = index.positions(np.arange(index.centroids.shape[0]))
    assert sorted(everything.tolist()) == list(range(8000))
    for row in rng.choice(np.arange(5000, 8000), size=50, replace=False):
        order = index.probe_order(index.centroids @ whole[row])
        assert row in set(index.positions(order[:8]).tolist())  # a row finds itself
    assert _found_rate(index, whole, _clustered(np.random.default_rng(10), 200)) >= 0.85
