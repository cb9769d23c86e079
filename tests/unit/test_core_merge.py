import pytest

from memorywire.core.merge import (
    MergeRow,
    plan_merge,
    remap_edges,
    resolve_canonical,
    resolve_duplicates,
)
from memorywire.wire.models import MergeStrategy

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
