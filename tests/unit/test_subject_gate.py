"""The subject gate's model-free parts (``core.subject_gate``)."""

from __future__ import annotations

import numpy as np

from memorywire.core.subject_gate import (
    SUBJECT_MIN_COSINE,
    SUBJECT_MIN_GAP,
    SUBJECT_MIN_ROWS,
    SUBJECT_RELEVANCE_MIDPOINT,
    lexical_evidence,
    masked_stands_out,
    subject_of,
    subject_relevance,
)


def test_the_subject_is_a_known_name_or_a_word_most_of_the_scope_holds() -> None:
    named = subject_of("What is Marta's trade?", known={"marta"}, common=())
    assert named is not None
    assert named.words == {"marta"} and named.rest == ("trade",)
    assert named.masked == "What is trade?"
    user = subject_of("What is the user's trade?", known=(), common={"user"})
    assert user is not None and user.words == {"user"} and "user" not in user.masked
    # a capitalised word the scope does not hold is no subject; neither is a stop word
    assert subject_of("What is Marta's trade?", known={"lena"}, common=()) is None
    assert subject_of("What does the user do?", known=(), common=()) is None


def test_nothing_asked_beyond_the_subject_is_not_judged() -> None:
    assert subject_of("Tell me about Marta", known={"marta"}, common=()) is None
    assert subject_of("Marta?", known={"marta"}, common=()) is None


def test_lexical_evidence_needs_the_subject_and_another_word_on_one_hit() -> None:
    subject = subject_of("Which cabinets did Marta build?", known={"marta"}, common=())
    assert subject is not None
    assert lexical_evidence(subject, ["Marta builds kitchen cabinets."])  # build ~ builds
    assert not lexical_evidence(subject, ["Marta likes tea.", "Lena builds cabinets."])


def test_the_masked_question_stands_out_by_cosine_or_by_its_lead_over_the_median() -> None:
    low = np.full(SUBJECT_MIN_ROWS, 0.0, dtype=np.float32)
    assert not masked_stands_out(low)
    assert not masked_stands_out(np.empty(0, dtype=np.float32))
    close = low.copy()
    close[0] = SUBJECT_MIN_COSINE
    assert masked_stands_out(close)
    ahead = low.copy()
    ahead[0] = SUBJECT_MIN_GAP + 0.001
    assert masked_stands_out(ahead)
    # too few memories for a median to mean anything: only the cosine counts
    assert not masked_stands_out(ahead[: SUBJECT_MIN_ROWS - 1])


def test_relevance_is_one_half_at_the_midpoint_and_grows_with_the_lead() -> None:
    assert abs(subject_relevance(0.1 + SUBJECT_RELEVANCE_MIDPOINT, 0.1) - 0.5) < 1e-9
    assert subject_relevance(0.6, 0.1) > subject_relevance(0.4, 0.1) > subject_relevance(0.2, 0.1)
    assert 0.0 < subject_relevance(-1.0, 1.0) < 0.01
