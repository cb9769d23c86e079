"""The record rules every backend runs: remember actions, update plans, listing, link planning."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.core.content import Edge
from memorywire.core.merge import MergeOutcome, plan_links
from memorywire.core.records import (
    ListQuery,
    RememberAction,
    Row,
    UpdateRequest,
    list_page,
    plan_update,
    remember_action,
)
from memorywire.errors import Conflict, InvalidRequest
from memorywire.wire.models import MemoryType, RememberRequest


def _row(id: str, created: int = 0, **kw: Any) -> Row:
    fields: dict[str, object] = {"id": id, "agent_id": "a", "user_id": None,
                                 "type": MemoryType.SEMANTIC, "stored": f"text {id}",
                                 "metadata": {}, "confidence": 1.0, "source": None,
                                 "created_at": created}
    fields.update(kw)
    return Row(**fields)  # type: ignore[arg-type]


def _req(content: str) -> RememberRequest:
    return RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, content=content, id="m")


@pytest.mark.parametrize("marks", [{"deleted_at": 5}, {"archived_at": 5}, {"expires_at": 9},
                                   {"deleted_at": 5, "merged_into": "x"}])
def test_a_dead_row_is_revived_whatever_the_content(marks: dict[str, Any]) -> None:
    dead = _row("m", **marks)
    assert remember_action(dead, _req("text m"), "text m", now=10) is RememberAction.REVIVE
    assert remember_action(dead, _req("other"), "other", now=10) is RememberAction.REVIVE


def test_a_live_row_replays_the_same_content_and_refuses_another() -> None:
    live = _row("m", expires_at=11)
    assert remember_action(live, _req("text m"), "text m", now=10) is RememberAction.REPLAY
    with pytest.raises(Conflict):
        remember_action(live, _req("other"), "other", now=10)
    assert remember_action(None, _req("x"), "x", now=10) is RememberAction.INSERT


def test_update_re_embeds_only_when_the_stored_text_changes() -> None:
    row = _row("m", metadata={"keep": 1, "drop": 2})
    same = plan_update(row, UpdateRequest(agent_id="a", id="m", content="text m"), now=3)
    assert same.stored is None and "stored" not in same.changes
    new = plan_update(row, UpdateRequest(agent_id="a", id="m", content="new text",
                                         metadata_patch={"drop": None, "add": 3}), now=3)
    assert new.stored == "new text"
    assert new.changes["metadata"] == {"keep": 1, "add": 3} and new.changes["updated_at"] == 3
    with pytest.raises(InvalidRequest):
        plan_update(row, UpdateRequest(agent_id="a", id="m", metadata_patch={"links": "x"}),
                    now=3)


def test_list_pages_oldest_first_after_the_anchor() -> None:
    rows = [_row("c", 3), _row("a", 1), _row("b", 2, archived_at=5), _row("d", 4,
                                                                          deleted_at=5)]
    assert [r.id for r in list_page(rows, ListQuery(agent_id="a"), now=10)] == ["a", "c"]
    with_archived = ListQuery(agent_id="a", include_archived=True, after_id="a", limit=1)
    assert [r.id for r in list_page(rows, with_archived, now=10)] == ["b"]
    assert list_page(rows, ListQuery(agent_id="someone-else"), now=10) == []


def test_merge_links_unite_and_move_to_the_survivor() -> None:
    outcome = MergeOutcome("a", "text", {}, 1.0, ("b",))
    links = {"a": ["x", "b"], "b": ["y", "a", "x"], "c": ["b", "a"], "d": ["x"]}
    plan = plan_links(outcome, {k: [Edge(x) for x in v] for k, v in links.items()})
    assert plan.survivor_links == ["x", "y"]
    assert plan.relinked == {"c": ["a"]}


def test_merge_keeps_each_edge_type_when_it_moves() -> None:
    outcome = MergeOutcome("a", "text", {}, 1.0, ("b",))
    plan = plan_links(outcome, {
        "a": [Edge("x", "supersedes")],
        "b": [Edge("y", "derived_from"), Edge("x", "supersedes")],
        "c": [Edge("b", "derived_from"), Edge("a")],
    })
    assert plan.survivor_links == [{"id": "x", "type": "supersedes"},
                                   {"id": "y", "type": "derived_from"}]
    assert plan.relinked == {"c": [{"id": "a", "type": "derived_from"}, "a"]}
    bare = plan_links(MergeOutcome("a", "t", {}, 1.0, ("b",)), {"a": [], "b": []})
    assert bare.survivor_links is None and bare.survivor_metadata({"k": 1}) == {"k": 1}
