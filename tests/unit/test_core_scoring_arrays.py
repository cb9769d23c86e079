"""``hybrid_rank_arrays`` must rank exactly as ``hybrid_rank``: SqliteStore uses the first,
every other store the second, and recall answers (scores to the last bit, tie order, the
list gate, ``core``, and with ``keep_cut`` the cut rows listed in their places through the
k-th kept row) must not depend on which one ran."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest

from memorywire.core.scoring import DEMOTE_FACTOR, Scored, hybrid_rank, hybrid_rank_arrays


def _both(rng: random.Random, **forced: object) -> tuple[
        list[Scored], list[Scored], list[list[str]], list[list[str]]]:
    n = rng.choice([0, 1, 3, 40, 300])
    # few distinct cosines and symmetric list ranks: many exact (score, cosine) ties, which
    # only the id decides
    cos = [rng.choice([-0.2, 0.0, 0.25, 0.3, 0.31, 0.36, 0.5, 0.9]) for _ in range(n)]
    ids = [f"m{v:04d}" for v in rng.sample(range(10_000), n)]
    demoted = [rng.random() < 0.2 for _ in range(n)]
    slots = list(range(n))
    vec = rng.sample(slots, rng.randint(0, n))
    lex = list(reversed(vec[: rng.randint(0, len(vec))])) + rng.sample(
        slots, rng.randint(0, n // 3))
    lex = list(dict.fromkeys(lex))
    fed = rng.sample(slots, rng.randint(0, n // 2)) if rng.random() < 0.6 else []
    kw = {
        "k": rng.choice([0, 1, 5, 10, 100, 1000]),
        "floor": rng.choice([-1.0, 0.3, 0.36, 0.95]),
        "lexical_floor": rng.choice([-1.0, 0.25, 0.32]),
        "min_relevance": rng.choice([None, None, 0.2, 0.5]),
        "tail_gap": rng.choice([None, 0.05, 0.2]),
        "lexical_weight": rng.choice([1.0, 0.5, 2.0]),
        "feedback_weight": rng.choice([0.0, 0.3, 1.0]),
        "keep_cut": rng.choice([False, True]),
    }
    kw.update(forced)
    verdict = rng.choice([None, True, False])
    asked_dict: list[list[str]] = []
    asked_arrays: list[list[str]] = []

    def agreement(log: list[list[str]]) -> object:
        def agree(got: Sequence[str]) -> bool:
            log.append(list(got))
            return bool(verdict)
        return None if verdict is None else agree

    by_dict = hybrid_rank(
        {ids[i]: cos[i] for i in slots}, [ids[i] for i in vec], [ids[i] for i in lex],
        factors={ids[i]: DEMOTE_FACTOR for i in slots if demoted[i]},
        agreement=agreement(asked_dict),  # type: ignore[arg-type]
        feedback_ranked=[ids[i] for i in fed], **kw)  # type: ignore[arg-type]
    by_arrays = hybrid_rank_arrays(
        np.asarray(cos, dtype=np.float64), ids, vec, lex,
        demoted=np.asarray(demoted, dtype=bool),
        agreement=agreement(asked_arrays),  # type: ignore[arg-type]
        feedback_ranked=fed, **kw)  # type: ignore[arg-type]
    return by_dict, by_arrays, asked_dict, asked_arrays


@pytest.mark.parametrize("seed", range(400))
def test_arrays_rank_as_the_dictionary_fusion(seed: int) -> None:
    by_dict, by_arrays, asked_dict, asked_arrays = _both(random.Random(seed))
    assert by_arrays == by_dict
    assert asked_arrays == asked_dict


@pytest.mark.parametrize("seed", range(400))
def test_arrays_keep_the_cut_rows_as_the_dictionary_fusion(seed: int) -> None:
    # SqliteStore's default floors (gate19b): a tail gap, no min_relevance, keep_cut
    rng = random.Random(10_000 + seed)
    by_dict, by_arrays, asked_dict, asked_arrays = _both(
        rng, keep_cut=True, min_relevance=None, tail_gap=rng.choice([0.05, 0.2]),
        k=rng.choice([1, 3, 5, 10, 100]))
    assert by_arrays == by_dict
    assert asked_arrays == asked_dict


def test_the_keep_cut_cases_list_cut_rows_before_kept_ones() -> None:
    # the equivalence above is not vacuous: many of its cases list cut rows in their places
    # between kept ones (a list longer than its kept rows, ending at a kept row)
    lists = [d for d, *_ in (
        _both(rng, keep_cut=True, min_relevance=None, tail_gap=rng.choice([0.05, 0.2]),
              k=rng.choice([1, 3, 5, 10, 100]))
        for rng in (random.Random(10_000 + seed) for seed in range(400)))]
    assert sum(any(s.cut for s in d) for d in lists) > 50
    assert sum(any(s.cut for s in d[:-1]) and not d[-1].cut for d in lists) > 20


def test_a_cut_row_tied_with_a_kept_one_is_placed_by_id() -> None:
    # b (vector rank 0, cosine 0.3: below the 0.45 tail floor, cut) and a (full-text rank 0,
    # the same score and cosine, kept by the lexical tail floor 0.27) tie; the id puts a
    # first, so at k=1 the list ends at a and b is not listed
    ids = ["b", "a", "c"]
    cos = np.asarray([0.3, 0.3, 0.9])
    kw: dict[str, float] = {"floor": 0.5, "lexical_floor": 0.32, "tail_gap": 0.05}
    for k, want in ((1, [("a", False)]), (2, [("a", False), ("b", True), ("c", False)])):
        out = hybrid_rank_arrays(cos, ids, [0, 2], [1], k=k, keep_cut=True, **kw)
        assert [(s.id, s.cut) for s in out] == want
        assert not any(s.core for s in out if s.cut)  # a cut row never counts as recalled
        assert out == hybrid_rank({"b": 0.3, "a": 0.3, "c": 0.9}, ["b", "c"], ["a"], k=k,
                                  keep_cut=True, **kw)


def test_ties_are_settled_by_id_beyond_the_kth_row() -> None:
    # a at vector rank 0 / lexical rank 1 and b the reverse: the same RRF score and cosine;
    # the arrays' order puts b (slot 0) first, the id sort must put a first
    ids = ["b", "a", "c"]
    cos = np.asarray([0.5, 0.5, 0.9])
    out = hybrid_rank_arrays(cos, ids, [0, 1], [1, 0], k=1, floor=-1.0, lexical_floor=-1.0)
    assert [s.id for s in out] == ["a"]
    assert out == hybrid_rank({"b": 0.5, "a": 0.5, "c": 0.9}, ["b", "a"], ["a", "b"], k=1,
                              floor=-1.0, lexical_floor=-1.0)
