"""In-store ranking: exact top-m selection, hybrid RRF of vector and BM25 lists, the
relevance floor and the demote factor.

The relevance floor is what lets a store answer "nothing" to a question about something it
never stored: RRF only ranks, so without a floor every query returns k rows. The floor is a
cosine threshold; a row that only the lexical list found must still clear a lower
``lexical_floor``, so a shared stop-word-like term cannot drag in an unrelated memory.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Required, TypedDict, Unpack

import numpy as np
import numpy.typing as npt

from memorywire.core.relevance import ordered, relevance

__all__ = [
    "AGREEMENT_DEPTH",
    "AGREEMENT_WORDS",
    "DEMOTE_FACTOR",
    "RRF_K",
    "FusionOptions",
    "Scored",
    "candidate_pool",
    "exact_top",
    "hybrid_rank",
    "hybrid_rank_arrays",
    "in_relevance_order",
    "through_kth_kept",
]

#: v0: a demoted memory keeps existing but its recall score is multiplied by this.
DEMOTE_FACTOR = 0.25
#: v0 RRF constant: an item at rank r (from 0) scores 1 / (RRF_K + r).
RRF_K = 60
#: The agreement rescue of the list gate looks at this many best vector hits ...
AGREEMENT_DEPTH = 20
#: Up to this many candidates :func:`hybrid_rank_arrays` fuses in plain Python (a small
#: scope's recall: about 50 to 100), above it with numpy (a re-ranker's pool: ~1,200).
SMALL_FUSION = 256
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
    #: A row the floors cut, listed (with ``keep_cut``) only so that a rank-based re-ranking
    #: after the search (session evidence, the time and subject boosts) sees the list the
    #: floors-off store ranks; the store leaves it out of the answer afterwards.
    cut: bool = False


def exact_top(scores: npt.NDArray[np.float32], m: int) -> npt.NDArray[np.intp]:
    """Indices of the ``m`` highest scores, best first, ties by lower index (deterministic)."""
    n = int(scores.shape[0])
    if m <= 0 or n == 0:
        return np.empty(0, dtype=np.intp)
    if m < n:
        part = _narrowed(scores, m)
        if part is not None:
            order = np.lexsort((part, -scores[part].astype(np.float64)))
            return part[order][:m].astype(np.intp)
        # The m highest without negating a copy of every score first (argpartition puts
        # NaN last, so a NaN score lands here and takes the negated path, whose cut
        # leaves NaN out as it always did).
        cut = scores[np.argpartition(scores, n - m)[n - m:]].min()
        if np.isnan(cut):
            cut = scores[np.argpartition(-scores, m - 1)[:m]].min()
        # Rows tied with the m-th score may sit outside the partition; pull them all in so
        # the final cut is decided by the stable tie rule rather than by argpartition's whims.
        part = np.flatnonzero(scores >= cut)
    else:
        part = np.arange(n)
    order = np.lexsort((part, -scores[part].astype(np.float64)))
    return part[order][:m].astype(np.intp)


#: From this many scores on, :func:`exact_top` first narrows them with a sample ...
NARROW_FROM = 8192
#: ... of every ``SAMPLE_STRIDE``-th score.
SAMPLE_STRIDE = 32


def _narrowed(scores: npt.NDArray[np.floating[Any]], m: int) -> npt.NDArray[np.intp] | None:
    """The indices of every score at least the ``m``-th highest (NaN never counts), in
    ascending order, or None when the shortcut does not apply (the caller then partitions
    all scores, as it would anyway).

    A partition of 100k scores costs several times a pass that compares them with one
    number. So a strided sample's score about ``6m / SAMPLE_STRIDE`` from its top is taken
    as a threshold, expected to leave about six times ``m`` scores at or above it (fewer
    than ``m`` is then rare unless the sample is unlike the rest, and a sample rank four
    times deeper is tried); when at least ``m`` are, the ``m``-th highest of all is among
    them, and only they are partitioned. The answer is the one a full partition gives,
    whatever the sample holds: a sample that leaves too few (or is NaN) only sends the
    caller the long way."""
    n = int(scores.shape[0])
    if n < NARROW_FROM:
        return None
    sample = scores[::SAMPLE_STRIDE]
    s = int(sample.shape[0])
    j = -(-6 * m // SAMPLE_STRIDE) + 2
    while True:
        if 4 * j > s:
            return None
        threshold = np.partition(sample, s - j)[s - j]
        if np.isnan(threshold):
            return None
        above = np.flatnonzero(scores >= threshold)
        if above.size >= m:
            break
        j *= 4  # a sample unlike the rest (a cluster of near-duplicates it missed): lower
    held = scores[above]
    cut = np.partition(held, held.size - m)[held.size - m]
    part: npt.NDArray[np.intp] = above[held >= cut]
    return part


def _scored(mid: str, score: float, cos: float, lexical: bool, cut: bool, gap: float,
            floor: float, lexical_floor: float) -> Scored:
    """A kept (or, with ``keep_cut``, cut) row: its relevance, and whether it counts as
    recalled (``core``: the per-row floors hold it, and the tail floor did not cut it)."""
    core = not cut and (gap == 0.0 or _clears(cos, lexical, floor, lexical_floor))
    return Scored(mid, score, cos, relevance(cos, lexical=lexical), core, cut)


def in_relevance_order(ranked: Sequence[Scored],
                       min_relevance: float | None = None) -> list[Scored]:
    """The final answer's rows with :func:`memorywire.core.relevance.ordered` relevances
    (non-increasing down the list, whatever the re-ranking rules moved); with a caller's
    ``min_relevance``, the rows whose capped relevance still reaches it (a prefix)."""
    capped = ordered([s.relevance for s in ranked])
    out = [s if c == s.relevance else replace(s, relevance=float(c or 0.0))
           for s, c in zip(ranked, capped, strict=True)]
    if min_relevance is not None:
        out = [s for s in out if s.relevance >= min_relevance]
    return out


def through_kth_kept(ranked: Sequence[Scored], k: int) -> list[Scored]:
    """The first ``k`` rows, and further through the ``k``-th row not ``cut``: the rows a
    floors-off search at ``k`` ranks (so a re-ranking sees the same places) and the ``k``
    kept rows the floored answer needs. Without cut rows, the first ``k``."""
    return list(ranked[:_kth_kept_end([s.cut for s in ranked], k)])


def _kth_kept_end(cuts: Sequence[bool], k: int) -> int:
    """How many of a ranked list's rows :func:`through_kth_kept` keeps, from their ``cut``
    flags (shared with the fusion, so the two cannot disagree on where the list ends)."""
    kept = 0
    for i, cut in enumerate(cuts):
        if i >= k and kept >= k:
            return i
        kept += not cut
    return len(cuts)


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
    keep_cut: bool = False,
) -> list[Scored]:
    """Fuse the two ranked lists with RRF, keep rows that clear the floor, best ``k`` first.

    ``cosines``, ``ids`` and ``demoted`` (the rows demoted by ``DEMOTE_FACTOR``) describe the
    candidates; the ranked lists hold indices into them (each list names a candidate at most
    once). Every store fuses here: the candidates are fused with a few vector operations
    instead of a dictionary entry each (a re-ranker's pool, k=100, fuses ~1,200 of them).
    A score is the IEEE sum of its RRF terms in one order (vector, full text, feedback); ties
    on (score, cosine) are settled by id, so the answer does not depend on the candidates'
    order.

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

    ``keep_cut`` (with ``tail_gap``, once the list is relevant): the rows below the tail floor
    stay in their places, marked ``cut``, through the ``k``-th kept row
    (:func:`through_kth_kept`). The floors then decide *which* rows a recall returns and never
    *how* the kept ones rank: a re-ranking by rank (session evidence counts a session's
    places) would otherwise order the kept rows differently from the floors-off store. It
    cost LongMemEval S dev120 one multi-session question (docs/benchmarks.md, "gate19b").
    """
    n = len(ids)
    if n <= SMALL_FUSION and cosines.dtype == np.float64:
        return _fuse_small(
            cosines.tolist(), ids, vector_ranked, lexical_ranked, k=k, floor=floor,
            lexical_floor=lexical_floor, demoted=None if demoted is None else demoted.tolist(),
            rrf_k=rrf_k, min_relevance=min_relevance, tail_gap=tail_gap, agreement=agreement,
            lexical_weight=lexical_weight, feedback_ranked=feedback_ranked,
            feedback_weight=feedback_weight, keep_cut=keep_cut)
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
    keeps_cut = keep_cut and gap > 0.0
    cut = np.zeros(n, dtype=bool)
    if min_relevance is not None:
        keep = first & np.array([relevance(c, lexical=x) >= min_relevance for c, x in zip(
            cosines.tolist(), lexical.tolist(), strict=True)], dtype=bool)
    else:
        keep = first & ((cosines >= floor - gap)
                        | (lexical & (cosines >= lexical_floor - gap)))
        if keeps_cut:
            cut = first & ~keep
            keep = first
    if demoted is not None:
        score = np.where(demoted, score * DEMOTE_FACTOR, score)
    rows = np.flatnonzero(keep)
    order = rows[np.lexsort((-cosines[rows], -score[rows]))]
    # The rows to hand to the id sort: the first k (with keep_cut: through the k-th row not
    # cut), then every row tied on (score, cosine) with the last of them, since the id
    # decides a tie and may move a tied row across the end.
    end = _kth_kept_end(cut[order].tolist(), k) if keeps_cut else min(k, order.size)
    if 0 < end < order.size:
        last = order[end - 1]
        tied = (score[order[end:]] == score[last]) & (cosines[order[end:]] == cosines[last])
        end += int(np.argmin(tied)) if not tied.all() else int(tied.size)
    head = order[:end].tolist() if k > 0 else []
    best = sorted((-float(score[i]), -float(cosines[i]), ids[i], bool(cut[i]), i)
                  for i in head)
    best = best[:_kth_kept_end([c for *_, c, _ in best], k)] if keeps_cut else best[:k]
    return [_scored(mid, -neg_score, -neg_cos, bool(lexical[i]), c, gap, floor, lexical_floor)
            for neg_score, neg_cos, mid, c, i in best]


def _fuse_small(
    cos: list[float],
    ids: Sequence[str],
    vector_ranked: Sequence[int],
    lexical_ranked: Sequence[int],
    *,
    k: int,
    floor: float,
    lexical_floor: float,
    demoted: list[bool] | None,
    rrf_k: int,
    min_relevance: float | None,
    tail_gap: float | None,
    agreement: Callable[[Sequence[str]], bool] | None,
    lexical_weight: float,
    feedback_ranked: Sequence[int],
    feedback_weight: float,
    keep_cut: bool,
) -> list[Scored]:
    """:func:`hybrid_rank_arrays` over Python lists, step for step: for the few dozen
    candidates of a small scope's recall, each numpy call on so short an array costs more
    than the loop it replaces. The same IEEE operations in the same order (each term added
    to 0.0 in the order vector, full text, feedback; the demotion one multiply; the sort
    keys negated), so every score, cosine and order is the numpy path's, bit for bit
    (``tests/unit/test_core_scoring_arrays.py`` compares the two)."""
    lexical_weight, feedback_weight = float(lexical_weight), float(feedback_weight)
    n = len(ids)
    score = [0.0] * n
    first = [False] * n
    lexical = [False] * n
    for r, i in enumerate(vector_ranked):
        score[i] += 1.0 / (rrf_k + r)
        first[i] = True
    for r, i in enumerate(lexical_ranked):
        score[i] += lexical_weight / (rrf_k + r)
        first[i] = True
        lexical[i] = True
    gap = 0.0
    if min_relevance is None and tail_gap is not None:
        clears = any(f and (c >= floor or (x and c >= lexical_floor))
                     for f, c, x in zip(first, cos, lexical, strict=True))
        if not clears and (agreement is None or not agreement(
                [ids[i] for i in vector_ranked[:AGREEMENT_DEPTH]])):
            return []
        gap = tail_gap
    for r, i in enumerate(feedback_ranked):
        score[i] += feedback_weight / (rrf_k + r)
        first[i] = True
    keeps_cut = keep_cut and gap > 0.0
    cut = [False] * n
    if min_relevance is not None:
        keep = [f and relevance(c, lexical=x) >= min_relevance
                for f, c, x in zip(first, cos, lexical, strict=True)]
    else:
        low, lexical_low = floor - gap, lexical_floor - gap
        keep = [f and (c >= low or (x and c >= lexical_low))
                for f, c, x in zip(first, cos, lexical, strict=True)]
        if keeps_cut:
            cut = [f and not kept for f, kept in zip(first, keep, strict=True)]
            keep = first
    if demoted is not None:
        score = [s * DEMOTE_FACTOR if d else s for s, d in zip(score, demoted, strict=True)]
    # a stable sort of the kept rows (ascending) by (-score, -cosine), as np.lexsort
    order = [i for _, _, i in sorted((-s, -c, i) for i, (s, c, kept)
                                     in enumerate(zip(score, cos, keep, strict=True)) if kept)]
    end = _kth_kept_end([cut[i] for i in order], k) if keeps_cut else min(k, len(order))
    if 0 < end < len(order):
        last = order[end - 1]
        while end < len(order) and score[order[end]] == score[last] \
                and cos[order[end]] == cos[last]:
            end += 1
    head = order[:end] if k > 0 else []
    best = sorted((-score[i], -cos[i], ids[i], cut[i], i) for i in head)
    best = best[:_kth_kept_end([c for *_, c, _ in best], k)] if keeps_cut else best[:k]
    return [_scored(mid, -neg_score, -neg_cos, lexical[i], c, gap, floor, lexical_floor)
            for neg_score, neg_cos, mid, c, i in best]


class FusionOptions(TypedDict, total=False):
    """The settings :func:`hybrid_rank` hands to :func:`hybrid_rank_arrays` as they are."""

    k: Required[int]
    floor: Required[float]
    lexical_floor: Required[float]
    rrf_k: int
    min_relevance: float | None
    tail_gap: float | None
    agreement: Callable[[Sequence[str]], bool] | None
    lexical_weight: float
    feedback_weight: float
    keep_cut: bool


def hybrid_rank(
    cosines: Mapping[str, float],
    vector_ranked: Sequence[str],
    lexical_ranked: Sequence[str],
    *,
    demoted: Collection[str] = (),
    feedback_ranked: Sequence[str] = (),
    **options: Unpack[FusionOptions],
) -> list[Scored]:
    """:func:`hybrid_rank_arrays` for candidates named by id (the Letta and Cognee stores,
    whose candidates come back from a service by id, and the tables of tests). Only a
    translation: the candidates are the ids the lists name, a candidate without a cosine has
    -1.0, and ``demoted`` names the demoted ones."""
    ids = list(dict.fromkeys((*vector_ranked, *lexical_ranked, *feedback_ranked)))
    slot = {mid: i for i, mid in enumerate(ids)}
    down = set(demoted)
    return hybrid_rank_arrays(
        np.array([cosines.get(mid, -1.0) for mid in ids], dtype=np.float64), ids,
        [slot[mid] for mid in vector_ranked], [slot[mid] for mid in lexical_ranked],
        demoted=np.array([mid in down for mid in ids], dtype=bool) if down else None,
        feedback_ranked=[slot[mid] for mid in feedback_ranked], **options)


def _clears(cos: float, lexical: bool, floor: float, lexical_floor: float) -> bool:
    return cos >= floor or (lexical and cos >= lexical_floor)


def candidate_pool(k: int) -> int:
    """How deep each ranked list goes before fusion: deep enough that RRF can reorder."""
    return max(4 * k, 50)
