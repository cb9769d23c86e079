import numpy as np
import pytest

from memorywire.core.scoring import DEMOTE_FACTOR, RRF_K, exact_top, hybrid_rank


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("m", [1, 5, 50, 2000])
def test_exact_top_matches_full_sort(seed: int, m: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 20, size=1000).astype(np.float32)  # many ties
    want = sorted(range(1000), key=lambda i: (-scores[i], i))[:m]
    assert exact_top(scores, m).tolist() == want


def test_exact_top_empty() -> None:
    assert exact_top(np.zeros(0, dtype=np.float32), 3).tolist() == []
    assert exact_top(np.ones(3, dtype=np.float32), 0).tolist() == []


def test_demote_factor_is_v0_default() -> None:
    assert DEMOTE_FACTOR == 0.25


def test_hybrid_rank_rrf_floor_and_demote() -> None:
    cos = {"a": 0.9, "b": 0.5, "c": 0.3, "d": 0.1}
    out = hybrid_rank(cos, ["a", "b", "c", "d"], ["c", "d", "b"], k=10, floor=0.45,
                      lexical_floor=0.25)
    ids = [s.id for s in out]
    # d is below both floors; c only clears the lexical floor because FTS found it
    assert set(ids) == {"a", "b", "c"}
    score = {s.id: s.score for s in out}
    assert score["b"] == pytest.approx(1 / (RRF_K + 1) + 1 / (RRF_K + 2))
    assert score["a"] == pytest.approx(1 / RRF_K)
    demoted = hybrid_rank(cos, ["a", "b"], [], k=10, floor=0.45, lexical_floor=0.25,
                          demoted={"a"})
    assert [s.id for s in demoted] == ["b", "a"]
    assert demoted[1].score == pytest.approx(DEMOTE_FACTOR / RRF_K)


def test_hybrid_rank_returns_nothing_below_floor_and_caps_k() -> None:
    cos = {"a": 0.1, "b": 0.2}
    assert hybrid_rank(cos, ["b", "a"], [], k=5, floor=0.4, lexical_floor=0.3) == []
    many = {str(i): 0.9 for i in range(10)}
    assert len(hybrid_rank(many, list(many), [], k=3, floor=0.4, lexical_floor=0.3)) == 3
