"""The substance prior's rule: a hit long enough to state something moves up a little."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from memorywire.errors import InvalidRequest
from memorywire.recall.substance_prior import (
    SUBSTANCE_WORDS,
    substance_ranked,
    substantive,
)
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import MemoryType, RecallHit

LONG = " ".join(f"word{i}" for i in range(SUBSTANCE_WORDS))


def _hit(id: str, content: str | dict[str, Any]) -> RecallHit:
    return RecallHit(id=id, type=MemoryType.EPISODIC, content=content, score=1.0,
                     created_at=1)


def _ids(hits: list[RecallHit]) -> list[str]:
    return [h.id for h in hits]


def test_a_substantive_hit_moves_up_past_short_remarks_just_above_it() -> None:
    hits = [_hit("wow", "Wow, thanks!"), _hit("cool", "Cool, books!"), _hit("fact", LONG)]
    assert _ids(substance_ranked(hits)) == ["fact", "wow", "cool"]


def test_the_prior_is_soft_a_long_hit_far_down_the_list_stays_below() -> None:
    hits = [_hit(f"s{i}", "short remark") for i in range(30)] + [_hit("fact", LONG)]
    assert _ids(substance_ranked(hits))[0] == "s0"


def test_order_is_kept_when_lengths_are_not_mixed_or_the_weight_is_zero() -> None:
    short = [_hit("a", "Alice likes tea"), _hit("b", "Bob likes coffee")]
    long = [_hit("a", LONG), _hit("b", LONG + " more")]
    assert _ids(substance_ranked(short)) == ["a", "b"]
    assert _ids(substance_ranked(long)) == ["a", "b"]
    assert _ids(substance_ranked([short[0], long[1]], weight=0)) == ["a", "b"]


def test_words_are_what_whitespace_separates() -> None:
    just = " ".join(["w"] * SUBSTANCE_WORDS)
    assert substantive(_hit("a", just))
    assert not substantive(_hit("b", "\n".join(["w"] * (SUBSTANCE_WORDS - 1))))
    assert not substantive(_hit("c", "没有空格的文字" * SUBSTANCE_WORDS))
    # Counted up to the threshold only: runs of whitespace at either end are no words.
    short = "  \t" + " \n ".join(["w"] * (SUBSTANCE_WORDS - 1)) + " \n  "
    assert not substantive(_hit("d", short))
    assert substantive(_hit("e", short + "w"))
    assert substantive(_hit("f", "  " + just + " tail " * 500))


def test_a_structured_content_counts_the_words_of_its_values_not_its_keys() -> None:
    keys_only = {f"key{i}": "x" for i in range(SUBSTANCE_WORDS // 2)}
    assert not substantive(_hit("a", keys_only))
    assert substantive(_hit("b", {"steps": [LONG]}))


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), True])
def test_a_weight_that_cannot_work_is_refused_naming_the_setting(bad: float) -> None:
    with pytest.raises(InvalidRequest, match="substance_weight"):
        InMemoryStore(recall=replace(InMemoryStore.DEFAULT_RECALL, substance_weight=bad))
