"""In-store ranking: exact top-m selection, hybrid RRF of vector and BM25 lists, the
relevance floor and the demote factor.

The relevance floor is what lets a store answer "nothing" to a question about something it
never stored: RRF only ranks, so without a floor every query returns k rows. The floor is a
cosine threshold; a row that only the lexical list found must still clear a lower
``lexical_floor``, so a shared stop-word-like term cannot drag in an unrelated memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from memorywire.core.relevance import relevance

__all__ = [
    "AGREEMENT_DEPTH",
    "AGREEMENT_WORDS",
    "DEMOTE_FACTOR",
    "RRF_K",
    "Scored",
    "candidate_pool",
    "exact_top",
    "hybrid_rank",
    "hybrid_rank_arrays",
]

#: v0: a demoted memory keeps existing but its recall score is multiplied by this.
DEMOTE_FACTOR = 0.25
#: v0 RRF constant: an item at rank r (from 0) scores 1 / (RRF_K + r).
RRF_K = 60
#: The agreement rescue of the list gate looks at this many best vector hits ...
AGREEMENT_DEPTH = 20
#: ... and accepts the list when one of them shares this many distinct query words.
#: Fitted on LongMemEval S dev120 (default floors, metadata.context = the reply): of the 8
#: questions whose best hit clears no floor, depth 10 rescues 6, 20 and 30 rescue 7; none of
#: the 36 calibration and 8 no-match questions of benchmarks/corpus shares two words with
#: any of its 30 best vector hits (SqliteStore's full-text words: stop words out, porter
#: stems, six-letter prefixes).
AGREEMENT_WORDS = 2


@dataclass(frozen=True)
class Scored:
    id: str
    score: float
    cosine: float
    #: Calibrated 0..1 (see :mod:`memorywire.core.relevance`).
    relevance: float = 0.0
    #: Whether the row clears the floors on its own. A row the list gate admits only as the
    #: tail of a relevant list is returned but not counted as recalled, so what
    #: ``expire(no_recall_in_days)`` removes does not depend on the gate.
    core: bool = True


def exact_top(scores: npt.NDArray[np.float32], m: int) -> npt.NDArray[np.intp]:
    """Indices of the ``m`` highest scores, best first, ties by lower index (deterministic)."""
    n = int(scores.shape[0])
    if m <= 0 or n == 0:
        return np.empty(0, dtype=np.intp)
    if m < n:
        part = np.argpartition(-scores, m - 1)[:m]
        # Rows tied with the m-th score may sit outside ``part``; pull them all in so the
        # final cut is decided by the stable tie rule rather than by argpartition's whims.
        cut = scores[part].min()
        part = np.flatnonzero(scores >= cut)
    else:
        part = np.arange(n)
    order = np.lexsort((part, -scores[part].astype(np.float64)))
    return part[order][:m].astype(np.intp)


def hybrid_rank(
    cosines: Mapping[str, float],
    vector_ranked: Sequence[str],
    lexical_ranked: Sequence[str],
    *,
    k: int,
    floor: float,
    lexical_floor: float,
    factors: Mapping[str, float] | None = None,
    rrf_k: int = RRF_K,
    min_relevance: float | None = None,
    tail_gap: float | None = None,
    agreement: Callable[[Sequence[str]], bool] | None = None,
    lexical_weight: float = 1.0,
    feedback_ranked: Sequence[str] = (),
    feedback_weight: float = 0.0,
) -> list[Scored]:
    """Fuse the two ranked lists with RRF, keep rows that clear the floor, best ``k`` first.

    With ``min_relevance`` (a caller's per-recall choice) a row is kept when its calibrated
    relevance reaches it, and the store's cosine floors do not apply.

    With ``tail_gap`` the floors judge the *list*, not each row: when no row clears them the
    answer is "nothing relevant"; when one does, the other rows need only come within
    ``tail_gap`` of the floors. A conversational turn that answers a question often sits well
    below the cosine of a short stated fact, so a per-row floor tuned on facts cuts it (it
    cost LongMemEval 20+ points), while "is anything here about the question" is still
    decided by the best hit.

    ``agreement`` (with ``tail_gap``) is asked only when no row clears the floors: given the
    ``AGREEMENT_DEPTH`` best vector hits it says whether one of them also shares at least
    ``AGREEMENT_WORDS`` distinct content words with the query. Semantic and lexical
    agreement on one row marks the list relevant even when its cosines are low, as a long
    conversational turn's are; an off-topic question shares at most one word with any
    memory (36 calibration and 8 no-match questions: none shares two with its 30 best hits).

    ``lexical_weight`` scales the full-text list's RRF terms (weighted RRF; 1.0 is plain RRF).

    ``feedback_ranked`` (a second, expanded full-text round, see
    :mod:`memorywire.store.sqlite.feedback`) joins the fusion with ``feedback_weight`` after
    the list gate: it never makes a list relevant, and a row only it found is not a lexical
    match of the question, so the floors judge that row by its cosine.
    """
    fused: dict[str, float] = {}
    for rank, mid in enumerate(vector_ranked):
        fused[mid] = fused.get(mid, 0.0) + 1.0 / (rrf_k + rank)
    lexical = set(lexical_ranked)
    for rank, mid in enumerate(lexical_ranked):
        fused[mid] = fused.get(mid, 0.0) + lexical_weight / (rrf_k + rank)
    gap = 0.0
    if min_relevance is None and tail_gap is not None:
        if not any(_clears(cosines.get(m, -1.0), m in lexical, floor, lexical_floor)
                   for m in fused) and (
                agreement is None or not agreement(list(vector_ranked[:AGREEMENT_DEPTH]))):
            return []
        gap = tail_gap
    for rank, mid in enumerate(feedback_ranked):
        fused[mid] = fused.get(mid, 0.0) + feedback_weight / (rrf_k + rank)
    # Rank plain tuples (the sort key itself) and build a Scored, with its relevance, only
    # for the ``k`` kept: at a re-ranker's pool depth (k=100) most of ~1,200 candidates are
    # cut, and their objects were a third of the fusion's cost. Ids are unique, so the key
    # orders every candidate as the Scored's own key did.
    keys: list[tuple[float, float, str]] = []
    lower, lexical_lower = floor - gap, lexical_floor - gap
    for mid, score in fused.items():
        cos = cosines.get(mid, -1.0)
        if min_relevance is not None:
            if relevance(cos, lexical=mid in lexical) < min_relevance:
                continue
        elif not (cos >= lower or (cos >= lexical_lower and mid in lexical)):
            continue
        factor = 1.0 if factors is None else factors.get(mid, 1.0)
        keys.append((-(score * factor), -cos, mid))
    best = sorted(keys)[:k]
    return [Scored(mid, -neg_score, -neg_cos, relevance(-neg_cos, lexical=mid in lexical),
                   gap == 0.0 or _clears(-neg_cos, mid in lexical, floor, lexical_floor))
            for neg_score, neg_cos, mid in best]


def hybrid_rank_arrays(
    cosines: npt.NDArray[np.float64],
    ids: Sequence[str],
    vector_ranked: Sequence[int],
    lexical_ranked: Sequence[int],
    *,
    k: int,
    floor: float,
    lexical_floor: float,
    demoted: npt.NDArray[np.bool_] | None = None,
    rrf_k: int = RRF_K,
    min_relevance: float | None = None,
    tail_gap: float | None = None,
    agreement: Callable[[Sequence[str]], bool] | None = None,
    lexical_weight: float = 1.0,
    feedback_ranked: Sequence[int] = (),
    feedback_weight: float = 0.0,
) -> list[Scored]:
    """:func:`hybrid_rank` over candidate arrays: the same rows, scores and order.

    ``cosines``, ``ids`` and ``demoted`` (the rows demoted by ``DEMOTE_FACTOR``) describe the
    candidates; the ranked lists hold indices into them. A store that already holds its
    candidates as arrays (SqliteStore) fuses them with a few vector operations instead of a
    dictionary entry per candidate: a re-ranker's pool (k=100) fuses ~1,200 of them, and the
    dictionaries were most of its fusion cost. Every score is the same IEEE sum, added in the
    same order (vector, full text, feedback), so it is bit-identical; ties on (score, cosine)
    are settled by id in Python, as :func:`hybrid_rank` settles them.
    """
    n = len(ids)
    score = np.zeros(n, dtype=np.float64)
    first = np.zeros(n, dtype=bool)
    lexical = np.zeros(n, dtype=bool)
    vec = np.asarray(vector_ranked, dtype=np.intp)
    lex = np.asarray(lexical_ranked, dtype=np.intp)
    score[vec] += 1.0 / (rrf_k + np.arange(vec.size))
    score[lex] += lexical_weight / (rrf_k + np.arange(lex.size))
    first[vec] = True
    first[lex] = True
    lexical[lex] = True
    gap = 0.0
    if min_relevance is None and tail_gap is not None:
        clears = (cosines >= floor) | (lexical & (cosines >= lexical_floor))
        if not bool(clears[first].any()) and (agreement is None or not agreement(
                [ids[i] for i in vector_ranked[:AGREEMENT_DEPTH]])):
            return []
        gap = tail_gap
    fed = np.asarray(feedback_ranked, dtype=np.intp)
    score[fed] += feedback_weight / (rrf_k + np.arange(fed.size))
    first[fed] = True  # from here: every fused candidate
    if min_relevance is not None:
        keep = first & np.array([relevance(c, lexical=x) >= min_relevance for c, x in zip(
            cosines.tolist(), lexical.tolist(), strict=True)], dtype=bool)
    else:
        keep = first & ((cosines >= floor - gap)
                        | (lexical & (cosines >= lexical_floor - gap)))
    if demoted is not None:
        score = np.where(demoted, score * DEMOTE_FACTOR, score)
    rows = np.flatnonzero(keep)
    order = rows[np.lexsort((-cosines[rows], -score[rows]))]
    end = min(k, order.size)
    if 0 < end < order.size:  # the k-th row's (score, cosine) ties go to the id sort too
        last = order[end - 1]
        tied = (score[order[end:]] == score[last]) & (cosines[order[end:]] == cosines[last])
        end += int(np.argmin(tied)) if not tied.all() else int(tied.size)
    head = order[:end].tolist() if k > 0 else []
    best = sorted((-float(score[i]), -float(cosines[i]), ids[i], i) for i in head)[:k]
    return [Scored(mid, -neg_score, -neg_cos,
                   relevance(-neg_cos, lexical=bool(lexical[i])),
                   gap == 0.0 or _clears(-neg_cos, bool(lexical[i]), floor, lexical_floor))
            for neg_score, neg_cos, mid, i in best]


def _clears(cos: float, lexical: bool, floor: float, lexical_floor: float) -> bool:
    return cos >= floor or (lexical and cos >= lexical_floor)


def candidate_pool(k: int) -> int:
    """How deep each ranked list goes before fusion: deep enough that RRF can reorder."""
    return max(4 * k, 50)
