from typing import Any

import pytest

from memorywire.core.content import Edge, content_to_storage
from memorywire.core.merge import (
    MergeOutcome,
    MergeRow,
    plan_links,
    plan_merge,
    plan_row_merge,
    remap_edges,
    resolve_canonical,
    resolve_duplicates,
    resolve_merge,
)
from memorywire.core.records import Row
from memorywire.errors import NotFound
from memorywire.wire.models import MemoryType, MergeRequest, MergeStrategy

A = MergeRow("a", "Alice likes tea", 100, 0.6, {"entity_name": "alice", "k": 1, "x": "a"})
B = MergeRow("b", "Alice likes green tea", 200, 0.9, {"k": 2, "y": "b"})
C = MergeRow("c", "Alice drinks tea daily", 50, 0.9, {"entity_name": "alice", "k": 3})
ROWS = [A, B, C]


def test_keep_canonical_keeps_row_verbatim() -> None:
    out = plan_merge(A, [B, C], MergeStrategy.KEEP_CANONICAL)
    assert (out.canonical_id, out.content, out.confidence) == ("a", A.content, 0.6)
    assert out.metadata == dict(A.metadata)
    assert set(out.absorbed_ids) == {"b", "c"}


def test_merge_content_unions_metadata_by_age_and_takes_max_confidence() -> None:
    out = plan_merge(A, [B, C], MergeStrategy.MERGE_CONTENT)
    assert out.canonical_id == "a"
    # created_at ascending: c(50), a(100), b(200): later writes win
    assert out.metadata == {"entity_name": "alice", "k": 2, "x": "a", "y": "b"}
    assert out.content == "Alice drinks tea daily\nAlice likes tea\nAlice likes green tea"
    assert out.confidence == 0.9


def test_merge_content_drops_repeated_text_and_keeps_a_procedure_whole() -> None:
    twin = MergeRow("t", "Alice likes tea", 300)
    assert plan_merge(A, [twin], MergeStrategy.MERGE_CONTENT).content == "Alice likes tea"
    proc = MergeRow("p", {"name": "n", "initial": "s", "states": ["s"]}, 10)
    assert plan_merge(proc, [A], MergeStrategy.MERGE_CONTENT).content == proc.content


@pytest.mark.parametrize(
    ("canonical", "dups", "winner", "absorbed"),
    [
        (A, [B], "b", {"a"}),
        (A, [B, C], "c", {"a", "b"}),  # b and c tie at 0.9; c is older
        (B, [A], "b", {"a"}),
    ],
)
def test_keep_highest_confidence(
    canonical: MergeRow, dups: list[MergeRow], winner: str, absorbed: set[str]
) -> None:
    out = plan_merge(canonical, dups, MergeStrategy.KEEP_HIGHEST_CONFIDENCE)
    assert out.canonical_id == winner
    assert set(out.absorbed_ids) == absorbed


def test_resolution_by_id_and_entity_name() -> None:
    assert resolve_canonical("b", ROWS) == B
    assert resolve_canonical("alice", ROWS) == C  # oldest row carrying the name
    assert resolve_canonical("nobody", ROWS) is None
    assert [r.id for r in resolve_duplicates(["alice", "b"], ROWS, "b")] == ["c", "a"]
    assert resolve_duplicates(["missing"], ROWS, "a") == []
    assert resolve_duplicates(["a"], ROWS, "a") == []


def test_remap_edges() -> None:
    edges = {("x", "b"), ("b", "y"), ("a", "b"), ("c", "z")}
    assert remap_edges(edges, ["b", "c"], "a") == {("x", "a"), ("a", "y"), ("a", "z")}


def test_keep_highest_confidence_takes_the_winner_s_content_metadata_and_confidence() -> None:
    out = plan_merge(A, [B], MergeStrategy.KEEP_HIGHEST_CONFIDENCE)
    assert (out.canonical_id, out.content, out.confidence) == ("b", B.content, 0.9)
    assert out.metadata == {"k": 2, "y": "b"}  # the winner's own, nothing of the loser's
    assert out.metadata is not B.metadata  # a copy: the plan never aliases a row
    assert out.absorbed_ids == ("a",) and out.merged_into == {"a": "b"}
    tie = plan_merge(A, [B, C], MergeStrategy.KEEP_HIGHEST_CONFIDENCE)
    assert (tie.canonical_id, tie.content, tie.metadata) == ("c", C.content, dict(C.metadata))
    assert tie.absorbed_ids == ("a", "b")  # in the order the merge named them
    same_age = MergeRow("a2", "x", 50, 0.9)
    assert plan_merge(same_age, [C], MergeStrategy.KEEP_HIGHEST_CONFIDENCE).canonical_id == "a2"
    bare = plan_merge(MergeRow("n", "t", 1, 0.2, {}), [MergeRow("m", "u", 2, 0.1)],
                      MergeStrategy.KEEP_HIGHEST_CONFIDENCE)
    assert (bare.canonical_id, bare.metadata, bare.confidence) == ("n", {}, 0.2)


def test_the_canonical_named_among_the_duplicates_is_not_absorbed() -> None:
    for strategy in MergeStrategy:
        out = plan_merge(A, [A, B], strategy)
        assert "a" not in out.absorbed_ids or out.canonical_id != "a", strategy
        assert sorted([out.canonical_id, *out.absorbed_ids]) == ["a", "b"], strategy
    assert plan_merge(A, [B], MergeStrategy.KEEP_CANONICAL).merged_into == {"b": "a"}


def test_merge_content_keeps_the_canonical_id_and_copies_metadata() -> None:
    out = plan_merge(B, [A], MergeStrategy.MERGE_CONTENT)
    assert out.canonical_id == "b" and out.absorbed_ids == ("a",)
    assert out.content == "Alice likes tea\nAlice likes green tea"
    assert out.confidence == 0.9
    low = plan_merge(MergeRow("l", "x", 1, 0.1), [MergeRow("h", "y", 2, 0.3)],
                     MergeStrategy.MERGE_CONTENT)
    assert low.confidence == 0.3 and low.metadata == {}
    kept = plan_merge(A, [B], MergeStrategy.KEEP_CANONICAL)
    assert kept.metadata is not A.metadata


def test_resolve_merge_names_a_missing_canonical() -> None:
    with pytest.raises(NotFound) as exc:
        resolve_merge("ghost", ["a"], ROWS)
    assert exc.value.message == "canonical memory 'ghost' not found"
    canonical, dups = resolve_merge("alice", ["b", "a"], ROWS)
    assert canonical == C and dups == [A, B]
    assert resolve_merge("a", [], ROWS) == (A, [])


def test_resolution_prefers_an_id_and_takes_every_row_of_a_name() -> None:
    named_b = MergeRow("z", "other", 10, 1.0, {"entity_name": "b"})
    assert resolve_canonical("b", [named_b, B]) == B  # an id wins over a name
    rows = [A, B, C, named_b]
    assert [r.id for r in resolve_duplicates(["alice"], rows, "b")] == ["c", "a"]
    assert [r.id for r in resolve_duplicates(["b", "b", "c"], rows, "a")] == ["c", "b"]
    assert resolve_duplicates([], rows, "a") == []
    no_meta = MergeRow("q", "t", 1, 1.0, {})
    assert resolve_canonical("alice", [no_meta]) is None


def test_remap_edges_keeps_untouched_edges_and_drops_self_loops() -> None:
    assert remap_edges([("x", "y")], ["b"], "a") == {("x", "y")}
    assert remap_edges([("b", "a"), ("a", "b"), ("b", "b")], ["b"], "a") == set()
    assert remap_edges([("b", "c")], ["b", "c"], "a") == set()


def _row(id: str, created: int, text: str, **kw: Any) -> Row:
    fields: dict[str, Any] = {"id": id, "agent_id": "a", "user_id": None,
                              "type": MemoryType.SEMANTIC, "stored": text, "metadata": {},
                              "confidence": 0.5, "source": None, "created_at": created}
    fields.update(kw)
    return Row(**fields)


def test_plan_row_merge_writes_the_survivor_the_absorbed_and_the_relinked() -> None:
    a = _row("a", 1, "tea", metadata={"links": ["x"]}, source="chat")
    b = _row("b", 2, "green tea", metadata={"k": 1}, confidence=0.9, source="mail")
    c = _row("c", 3, "notes", metadata={"links": ["b"]})
    req = MergeRequest(agent_id="a", canonical="a", duplicates=["b"],
                       strategy=MergeStrategy.MERGE_CONTENT)
    plan = plan_row_merge([a, b, c], req, now=99)
    assert (plan.canonical_id, plan.absorbed_ids) == ("a", ("b",))
    (old_a, new_a, changed_a), (old_b, new_b, changed_b), (old_c, new_c, changed_c) = (
        plan.changes)
    assert (old_a, old_b, old_c) == (a, b, c)
    assert changed_a is True and changed_b is False and changed_c is False
    assert new_a.stored == "tea\ngreen tea" and new_a.confidence == 0.9
    assert new_a.updated_at == 99 and new_a.deleted_at is None
    assert new_a.metadata["k"] == 1
    assert new_a.metadata["links"] == ["x", {"id": "b", "type": "derived_from"}]
    assert new_a.metadata["derived_sources"] == ["mail"]
    assert (new_b.deleted_at, new_b.merged_into) == (99, "a")
    assert new_b.metadata == {"k": 1, "links": [{"id": "a", "type": "merged_into"}]}
    assert new_b.stored == b.stored and new_b.updated_at is None
    assert new_c.metadata == {"links": ["a"]} and new_c.deleted_at is None


def test_plan_row_merge_without_a_text_change_records_no_derivation() -> None:
    a = _row("a", 1, "tea")
    b = _row("b", 2, "tea", metadata={"k": 2})
    req = MergeRequest(agent_id="a", canonical="a", duplicates=["b"],
                       strategy=MergeStrategy.KEEP_CANONICAL)
    plan = plan_row_merge([a, b], req, now=7)
    [(_, new_a, changed), (_, new_b, _)] = plan.changes
    assert changed is False and new_a.stored == "tea" and new_a.metadata == {}
    assert new_a.updated_at == 7 and new_b.merged_into == "a"
    nothing = plan_row_merge([a, b], req.model_copy(update={"duplicates": ["ghost"]}), now=7)
    assert (nothing.canonical_id, nothing.absorbed_ids, nothing.changes) == ("a", (), [])
    with pytest.raises(NotFound):
        plan_row_merge([a, b], req.model_copy(update={"canonical": "ghost"}), now=7)


def test_merge_outcome_maps_each_absorbed_id_to_the_survivor() -> None:
    out = MergeOutcome("s", "t", {}, 1.0, ("x", "y"))
    assert out.merged_into == {"x": "s", "y": "s"}


def test_the_canonical_named_again_among_the_duplicates_stays_canonical() -> None:
    canonical, dups = resolve_merge("a", ["a", "b"], ROWS)
    assert canonical == A and dups == [B]


def test_plan_links_tolerates_rows_it_has_no_edges_for() -> None:
    plan = plan_links(MergeOutcome("a", "t", {}, 1.0, ("b",)), {})
    assert plan.survivor_links is None and plan.relinked == {}
    kept_empty = plan_links(MergeOutcome("a", "t", {"links": []}, 1.0, ("b",)), {"a": []})
    assert kept_empty.survivor_links == []  # it had a links key: it keeps one
    assert kept_empty.survivor_metadata({"k": 1}) == {"k": 1, "links": []}
    linked = plan_links(MergeOutcome("a", "t", {}, 1.0, ("b",)), {"b": [Edge("x")]})
    assert linked.survivor_metadata({"k": 1}) == {"k": 1, "links": ["x"]}


def test_only_edges_to_absorbed_rows_move_to_the_survivor() -> None:
    plan = plan_links(MergeOutcome("a", "t", {}, 1.0, ("b",)),
                      {"a": [], "b": [], "c": [Edge("b"), Edge("d", "supersedes")]})
    assert plan.relinked == {"c": ["a", {"id": "d", "type": "supersedes"}]}


def test_plan_row_merge_joins_by_age_not_by_id() -> None:
    a = _row("a", 5, "newer text")
    b = _row("b", 1, "older text")
    req = MergeRequest(agent_id="a", canonical="a", duplicates=["b"],
                       strategy=MergeStrategy.MERGE_CONTENT)
    [(_, new_a, changed), _] = plan_row_merge([a, b], req, now=9).changes
    assert changed and new_a.stored == "older text\nnewer text"


def test_plan_row_merge_keeps_a_procedure_s_stored_form() -> None:
    proc = {"name": "n", "initial": "s", "states": ["s"]}
    stored = content_to_storage(MemoryType.PROCEDURAL, proc)
    p1 = _row("p1", 1, stored, type=MemoryType.PROCEDURAL)
    p2 = _row("p2", 2, stored, type=MemoryType.PROCEDURAL)
    req = MergeRequest(agent_id="a", canonical="p1", duplicates=["p2"],
                       strategy=MergeStrategy.MERGE_CONTENT)
    [(_, new_p1, changed), _] = plan_row_merge([p1, p2], req, now=9).changes
    assert changed is False and new_p1.stored == stored
    assert "derived_from" not in repr(new_p1.metadata)
