"""The record rules every backend runs: remember actions, update plans, listing, link planning."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.core.content import Edge
from memorywire.core.expiry import ExpiryFacts
from memorywire.core.merge import MergeOutcome, plan_links
from memorywire.core.records import (
    ListQuery,
    RememberAction,
    Row,
    UpdateRequest,
    expire_marks,
    forget_selects,
    list_page,
    new_row,
    patch_metadata,
    plan_update,
    remember_action,
)
from memorywire.errors import Conflict, InvalidRequest
from memorywire.wire.models import ExpireAction, ForgetRequest, MemoryType, RememberRequest


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


def test_a_row_is_live_until_deleted_archived_or_its_expiry_moment() -> None:
    assert _row("m").live(10) and _row("m", expires_at=11).live(10)
    assert not _row("m", expires_at=10).live(10)  # expires_at is the first dead moment
    assert not _row("m", deleted_at=1).live(10) and not _row("m", archived_at=1).live(10)


def test_scope_is_the_agent_and_optionally_the_user() -> None:
    row = _row("m", user_id="u1")
    assert row.in_scope("a", None) and row.in_scope("a", "u1") and row.in_scope(None, None)
    assert not row.in_scope("b", None) and not row.in_scope("a", "u2")
    assert not row.in_scope(None, "u2") and not _row("m").in_scope("a", "u1")


def test_a_live_row_with_another_type_is_a_conflict_not_a_replay() -> None:
    live = _row("m")
    episodic = RememberRequest(agent_id="a", type=MemoryType.EPISODIC, content="text m", id="m")
    with pytest.raises(Conflict) as exc:
        remember_action(live, episodic, "text m", now=10)
    assert exc.value.message == "id 'm' already holds a different memory"


def test_new_row_carries_the_request_and_the_write_time() -> None:
    req = RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, content="c", user_id="u",
                          metadata={"k": 1}, confidence=0.4, source="chat", expires_at=99)
    row = new_row(req, "m1", "c", now=7)
    assert row == Row(id="m1", agent_id="a", user_id="u", type=MemoryType.SEMANTIC, stored="c",
                      metadata={"k": 1}, confidence=0.4, source="chat", created_at=7,
                      expires_at=99)
    assert row.metadata is not req.metadata
    bare = new_row(_req("x"), "m2", "x", now=1)
    assert bare.metadata == {} and bare.updated_at is None and bare.deleted_at is None


def test_the_wire_record_has_the_row_s_fields_and_recall_stats_on_request() -> None:
    row = _row("m", user_id="u", metadata={"links": ["n"]}, confidence=0.5, source="s",
               created_at=3, updated_at=4, expires_at=99, recall_count=2, last_recalled_at=5)
    rec = row.record()
    assert (rec.id, rec.agent_id, rec.user_id, rec.content, rec.confidence, rec.source) == (
        "m", "a", "u", "text m", 0.5, "s")
    assert (rec.created_at, rec.updated_at, rec.expires_at) == (3, 4, 99)
    assert rec.metadata == {"links": ["n"]} and rec.metadata is not row.metadata
    assert "recall_count" not in rec.model_dump() and "last_recalled_at" not in rec.model_dump()
    stats = row.record(recall_stats=True).model_dump()
    assert (stats["recall_count"], stats["last_recalled_at"]) == (2, 5)
    assert row.links() == ["n"] and [e.id for e in row.edges()] == ["n"]
    assert row.expiry_facts() == ExpiryFacts(MemoryType.SEMANTIC, 3, 0.5, 5)


def _forget(**kw: Any) -> ForgetRequest:
    return ForgetRequest(agent_id="a", **({"ids": ["m"]} | kw))


def test_forget_selects_in_scope_named_rows_and_hard_forgets_soft_deleted_ones() -> None:
    row = _row("m", user_id="u", metadata={"k": 1})
    assert forget_selects(row, _forget())
    assert not forget_selects(row, _forget(ids=["n"]))
    assert not forget_selects(row, ForgetRequest(agent_id="b", ids=["m"]))
    assert not forget_selects(row, _forget(user_id="v"))
    assert forget_selects(row, _forget(user_id="u", filter={"k": 1}))
    assert not forget_selects(row, _forget(filter={"k": 2}))
    assert forget_selects(row, ForgetRequest(agent_id="a", filter={"k": 1}))
    gone = _row("m", deleted_at=3)
    assert not forget_selects(gone, _forget())
    assert forget_selects(gone, _forget(hard_delete=True))


def test_expire_marks_per_action() -> None:
    assert expire_marks(ExpireAction.FORGET, 5) == {"deleted_at": 5}
    assert expire_marks(ExpireAction.ARCHIVE, 5) == {"archived_at": 5}
    assert expire_marks(ExpireAction.DEMOTE, 5) == {"demoted": True}


def test_patch_metadata_removes_on_none_and_never_touches_its_input() -> None:
    base = {"a": 1, "b": 2}
    assert patch_metadata(base, {"a": None, "c": 3, "zz": None}) == {"b": 2, "c": 3}
    assert patch_metadata(base, {"a": 0, "b": False}) == {"a": 0, "b": False}
    assert base == {"a": 1, "b": 2}
    with pytest.raises(InvalidRequest):
        patch_metadata(base, {"links": 5})


def test_update_plans_confidence_links_and_typed_fields() -> None:
    row = _row("m", metadata={"links": ["x"]})
    plan = plan_update(row, UpdateRequest(agent_id="a", id="m", confidence=0.2), now=4)
    assert plan.confidence == 0.2 and plan.changes == {"updated_at": 4, "confidence": 0.2}
    assert plan.metadata is None and plan.stored is None and plan.links_changed is False
    relink = plan_update(row, UpdateRequest(agent_id="a", id="m",
                                            metadata_patch={"links": ["y"]}), now=4)
    assert relink.links_changed is True and relink.metadata == {"links": ["y"]}
    other = plan_update(row, UpdateRequest(agent_id="a", id="m", metadata_patch={"k": 1}),
                        now=4)
    assert other.links_changed is False and other.metadata == {"links": ["x"], "k": 1}
    nothing = plan_update(row, UpdateRequest(agent_id="a", id="m"), now=4)
    assert nothing.changes == {"updated_at": 4} and nothing.confidence is None
    emotional = _row("e", type=MemoryType.EMOTIONAL)
    with pytest.raises(InvalidRequest):
        plan_update(emotional, UpdateRequest(agent_id="a", id="e",
                                             metadata_patch={"valence": 7}), now=4)
    semantic = plan_update(_row("s"), UpdateRequest(agent_id="a", id="s",
                                                    metadata_patch={"valence": 7}), now=4)
    assert semantic.metadata == {"valence": 7}


def test_list_page_filters_types_users_expiry_and_limit() -> None:
    rows = [_row("a", 1, user_id="u"), _row("b", 2, type=MemoryType.EPISODIC),
            _row("c", 3, expires_at=10), _row("d", 4, expires_at=11, metadata={"k": 1}),
            _row("e", 5, agent_id="z"), _row("f", 6)]
    ids = lambda q: [r.id for r in list_page(rows, q, now=10)]  # noqa: E731
    assert ids(ListQuery(agent_id="a")) == ["a", "b", "d", "f"]
    assert ids(ListQuery(agent_id=None)) == ["a", "b", "d", "e", "f"]
    assert ids(ListQuery(agent_id="a", user_id="u")) == ["a"]
    assert ids(ListQuery(agent_id="a", types=[MemoryType.EPISODIC])) == ["b"]
    assert ids(ListQuery(agent_id="a", filter={"k": 1})) == ["d"]
    assert ids(ListQuery(agent_id="a", limit=2)) == ["a", "b"]
    assert ids(ListQuery(agent_id="a", limit=1, after_id="b")) == ["d"]
    assert ids(ListQuery(agent_id="a", after_id="unknown")) == ["a", "b", "d", "f"]
    # an anchor in another agent's scope does not move this agent's page
    assert ids(ListQuery(agent_id="a", after_id="e")) == ["a", "b", "d", "f"]
    same_time = [_row("y", 1), _row("x", 1), _row("w", 2)]
    assert [r.id for r in list_page(same_time, ListQuery(agent_id="a", after_id="x"), 5)] == [
        "y", "w"]


def test_a_procedure_is_stored_canonical_and_read_back_as_an_object() -> None:
    from memorywire.core.content import content_to_storage

    proc = {"name": "n", "initial": "s", "states": ["s", "t"]}
    row = _row("p", type=MemoryType.PROCEDURAL,
               stored=content_to_storage(MemoryType.PROCEDURAL, {**proc, "states": ["s"]}))
    assert row.content() == {"name": "n", "initial": "s", "states": ["s"], "transitions": []}
    plan = plan_update(row, UpdateRequest(agent_id="a", id="p", content=proc), now=2)
    assert plan.stored == content_to_storage(MemoryType.PROCEDURAL, proc)
    assert plan.changes["stored"] == plan.stored and plan.stored.startswith("{")
    text = plan_update(_row("m"), UpdateRequest(agent_id="a", id="m", content="new"), now=2)
    assert text.changes == {"updated_at": 2, "stored": "new"}
