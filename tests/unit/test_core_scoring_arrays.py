"""Every store's fusion (``hybrid_rank_arrays``, and ``hybrid_rank`` over it for candidates
named by id) must rank as the rule says, which :func:`_reference` spells out one candidate
at a time: scores to the last bit, ties by id, the list gate, ``core``, and with
``keep_cut`` the cut rows listed in their places through the k-th kept row. The random
cases are built to tie, so a broken tie or cut rule changes some of them."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from memorywire.core import scoring
from memorywire.core.relevance import relevance
from memorywire.core.scoring import (
    AGREEMENT_DEPTH,
    DEMOTE_FACTOR,
    RRF_K,
    Scored,
    hybrid_rank,
    hybrid_rank_arrays,
)


def _reference(cos: dict[str, float], vec: list[str], lex: list[str], *, demoted: set[str],
               feedback_ranked: list[str], agreement: Callable[[Sequence[str]], bool] | None,
               k: int, floor: float, lexical_floor: float, min_relevance: float | None,
               tail_gap: float | None, lexical_weight: float, feedback_weight: float,
               keep_cut: bool) -> list[Scored]:
    """The fusion written plainly: a dictionary of RRF sums, a full sort by (score, cosine,
    id), and the list's end found by walking it."""
    fused: dict[str, float] = {}
    for weight, ranked in ((1.0, vec), (lexical_weight, lex)):
        for rank, mid in enumerate(ranked):
            fused[mid] = fused.get(mid, 0.0) + weight / (RRF_K + rank)
    lexical = set(lex)

    def clears(mid: str, gap: float) -> bool:
        return cos[mid] >= floor - gap or (mid in lexical and cos[mid] >= lexical_floor - gap)

    gap = 0.0
    if min_relevance is None and tail_gap is not None:
        if not any(clears(m, 0.0) for m in fused) and (
                agreement is None or not agreement(vec[:AGREEMENT_DEPTH])):
            return []
        gap = tail_gap
    for rank, mid in enumerate(feedback_ranked):
        fused[mid] = fused.get(mid, 0.0) + feedback_weight / (RRF_K + rank)
    lists_cut = keep_cut and gap > 0.0
    rows: list[tuple[float, float, str, bool]] = []
    for mid, score in fused.items():
        if min_relevance is not None:
            if relevance(cos[mid], lexical=mid in lexical) < min_relevance:
                continue
            cut = False
        else:
            cut = not clears(mid, gap)
            if cut and not lists_cut:
                continue
        rows.append((-(score * DEMOTE_FACTOR if mid in demoted else score), -cos[mid], mid, cut))
    rows.sort()
    listed: list[tuple[float, float, str, bool]] = []
    kept = 0
    for row in rows:
        if len(listed) >= k and (not lists_cut or kept >= k):
            break
        listed.append(row)
        kept += not row[3]
    return [Scored(mid, -neg_score, -neg_cos, relevance(-neg_cos, lexical=mid in lexical),
                   core=not cut and (gap == 0.0 or clears(mid, 0.0)), cut=cut)
            for neg_score, neg_cos, mid, cut in listed]


def _all_three(rng: random.Random, **forced: object) -> tuple[
        list[Scored], list[Scored], list[Scored], list[list[list[str]]]]:
    """One random case ranked by the reference, the arrays and the by-id adapter, with what
    each asked its agreement callback."""
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
    kw: dict[str, Any] = {
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
    asked: list[list[list[str]]] = [[], [], []]

    def agreement(log: list[list[str]]) -> Callable[[Sequence[str]], bool] | None:
        def agree(got: Sequence[str]) -> bool:
            log.append(list(got))
            return bool(verdict)
        return None if verdict is None else agree

    by_id = {ids[i]: cos[i] for i in slots}
    named_down = {ids[i] for i in slots if demoted[i]}
    reference = _reference(
        by_id, [ids[i] for i in vec], [ids[i] for i in lex], demoted=named_down,
        feedback_ranked=[ids[i] for i in fed], agreement=agreement(asked[0]), **kw)
    by_arrays = hybrid_rank_arrays(
        np.asarray(cos, dtype=np.float64), ids, vec, lex,
        demoted=np.asarray(demoted, dtype=bool), agreement=agreement(asked[1]),
        feedback_ranked=fed, **kw)
    by_names = hybrid_rank(
        by_id, [ids[i] for i in vec], [ids[i] for i in lex], demoted=named_down,
        agreement=agreement(asked[2]), feedback_ranked=[ids[i] for i in fed], **kw)
    return reference, by_arrays, by_names, asked


@pytest.mark.parametrize("seed", range(400))
def test_the_fusion_ranks_as_the_reference(seed: int) -> None:
    reference, by_arrays, by_names, asked = _all_three(random.Random(seed))
    assert by_arrays == reference
    assert by_names == reference
    assert asked[1] == asked[0] and asked[2] == asked[0]


@pytest.mark.parametrize("seed", range(400))
def test_the_fusion_keeps_the_cut_rows_as_the_reference(seed: int) -> None:
    # SqliteStore's default floors (gate19b): a tail gap, no min_relevance, keep_cut
    rng = random.Random(10_000 + seed)
    reference, by_arrays, by_names, asked = _all_three(
        rng, keep_cut=True, min_relevance=None, tail_gap=rng.choice([0.05, 0.2]),
        k=rng.choice([1, 3, 5, 10, 100]))
    assert by_arrays == reference
    assert by_names == reference
    assert asked[1] == asked[0] and asked[2] == asked[0]


def test_the_keep_cut_cases_list_cut_rows_before_kept_ones() -> None:
    # the comparison above is not vacuous: many of its cases list cut rows in their places
    # between kept ones (a list longer than its kept rows, ending at a kept row)
    lists = [ref for ref, *_ in (
        _all_three(rng, keep_cut=True, min_relevance=None, tail_gap=rng.choice([0.05, 0.2]),
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
    kw: dict[str, Any] = {"floor": 0.5, "lexical_floor": 0.32, "tail_gap": 0.05}
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


def test_a_candidate_without_a_cosine_counts_as_minus_one() -> None:
    # the by-id adapter's translation: an id a list names but the mapping lacks is a
    # candidate with cosine -1.0 (below every floor but the "off" one)
    out = hybrid_rank({"a": 0.9}, ["a", "x"], [], k=5, floor=-1.0, lexical_floor=-1.0)
    assert [(s.id, s.cosine) for s in out] == [("a", 0.9), ("x", -1.0)]
    assert [s.id for s in hybrid_rank({"a": 0.9}, ["a", "x"], [], k=5, floor=0.0,
                                      lexical_floor=0.0)] == ["a"]


@pytest.mark.parametrize("seed", range(200))
@pytest.mark.parametrize("path", ["numpy", "python"])
def test_both_fusion_paths_rank_as_the_reference(seed: int, path: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # a small scope's candidates are fused in plain Python, a large pool with numpy: each
    # path, forced, must give the reference's answer (the random cases have few candidates)
    monkeypatch.setattr(scoring, "SMALL_FUSION", 0 if path == "numpy" else 10_000)
    rng = random.Random(20_000 + seed)
    forced: dict[str, Any] = ({} if seed % 2 else {
        "keep_cut": True, "min_relevance": None, "tail_gap": rng.choice([0.05, 0.2])})
    reference, by_arrays, by_names, asked = _all_three(rng, **forced)
    assert by_arrays == reference
    assert by_names == reference
    assert asked[1] == asked[0] and asked[2] == asked[0]
