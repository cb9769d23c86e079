"""A question that names a person ranks that person's memories higher, on every store.

The other speaker's turn repeats the question's words ("which shelter did you adopt the
puppy from?") and wins both the full-text and the vector list; the named speaker's answer
shares only a few of them. With the subject boost (``metadata.speaker`` or
``metadata.entity_name`` named by the question) the answer comes first; with
``subject_weight=0`` and ``subject_lexical_weight=0`` (the other rule that reads the named
subject, ``recall.subject_lexical``), or when the memories carry no subject, the store's own
order stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from memorywire.errors import InvalidRequest
from memorywire.store.base import MemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.testing import postgres as _pg
from memorywire.wire.models import MemoryType, RememberRequest
from tests.integration import boost_stores
from tests.integration.boost_stores import EMB, make_store, ranked_ids

pytestmark = pytest.mark.anyio
pg_server = _pg.pg_server
kind = boost_stores.kind  # each store kind in turn

QUESTION = "Which shelter did Caroline adopt the puppy from?"
TURNS = (
    ("t1", "Melanie", "Caroline, which shelter did you adopt the puppy from?"),
    ("t2", "Caroline", "The Elm street shelter, we named him Biscuit."),
    ("t3", "Melanie", "My kids want a puppy too."),
    ("t4", "Caroline", "He sleeps all day."),
)


def _turns(key: str | None) -> list[RememberRequest]:
    return [RememberRequest(agent_id="a", type=MemoryType.EPISODIC, id=mid,
                            content=f"{who}: {text}",
                            metadata={key: who} if key else {"turn": mid})
            for mid, who, text in TURNS]


async def _ids(store: MemoryStore, reqs: Sequence[RememberRequest]) -> list[str]:
    return await ranked_ids(store, reqs, QUESTION, k=2)


@pytest.mark.parametrize("key", ["speaker", "entity_name"])
async def test_the_named_speakers_turn_comes_first(kind: str, key: str, tmp_path: Path,
                                                   request: pytest.FixtureRequest) -> None:
    ids = await _ids(await make_store(kind, tmp_path, request), _turns(key))
    assert ids[0] == "t2"


async def test_without_subjects_the_store_order_stands(kind: str, tmp_path: Path,
                                                       request: pytest.FixtureRequest) -> None:
    ids = await _ids(await make_store(kind, tmp_path, request), _turns(None))
    assert ids[0] == "t1"


async def test_subject_weight_zero_turns_the_boost_off(kind: str, tmp_path: Path,
                                                       request: pytest.FixtureRequest) -> None:
    ids = await _ids(await make_store(kind, tmp_path, request, subject_weight=0.0,
                                      subject_lexical_weight=0.0), _turns("speaker"))
    assert ids[0] == "t1"


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf")])
def test_a_weight_that_cannot_work_is_refused_naming_the_setting(bad: float,
                                                                  tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="subject_weight"):
        SqliteStore(tmp_path / "bad.db", EMB,
                    recall=replace(SqliteStore.DEFAULT_RECALL, subject_weight=bad))
