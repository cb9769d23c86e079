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


def _reference_top(scores: np.ndarray, m: int) -> list[int]:
    """Best first, ties by lower index, NaN never ahead of a number (a full sort)."""
    keyed = [(np.isnan(v), -float(v) if not np.isnan(v) else 0.0, i)
             for i, v in enumerate(scores.tolist())]
    return [i for _, _, i in sorted(keyed)][:m]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("m", [1, 10, 50, 400])
@pytest.mark.parametrize("shape", ["random", "ties", "ascending", "sample_high", "nan"])
def test_exact_top_large_scopes_match_full_sort(seed: int, m: int, shape: str) -> None:
    # Above NARROW_FROM the top is found from a strided sample's threshold; whatever the
    # sample holds (its rows the best, the worst, NaN, or ties at the cut) the answer must be
    # the full sort's.
    rng = np.random.default_rng(seed)
    n = 20_000
    scores = rng.standard_normal(n).astype(np.float32)
    if shape == "ties":
        scores = rng.integers(0, 30, size=n).astype(np.float32)
    elif shape == "ascending":
        scores = np.sort(scores)
    elif shape == "sample_high":
        scores[::32] += 10.0  # the sample is the top: too few rows reach its threshold
    elif shape == "nan":
        scores[rng.choice(n, size=300, replace=False)] = np.nan
        scores[::64] = np.nan
    assert exact_top(scores, m).tolist() == _reference_top(scores, m)


def test_exact_top_narrowing_is_taken_on_a_plain_large_scope() -> None:
    from memorywire.core.scoring import _narrowed

    scores = np.random.default_rng(7).standard_normal(100_000).astype(np.float32)
    part = _narrowed(scores, 50)
    assert part is not None and 50 <= part.size < 1_000
