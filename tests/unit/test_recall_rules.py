"""The ranking rules have one home: one ordered list the plan runs through one interface, one
settings value every store takes. These tests pin what a contributor relies on when adding a
rule: the list is the only place the plan learns of it, its settings are ``RecallSettings``
fields, and a store's constructor stays small."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import pytest

from memorywire.core.timeline import HitT, HitView
from memorywire.recall import plan as plan_module
from memorywire.recall.plan import RecallPlan, recall_in_time
from memorywire.recall.rule import RankingRule, RecallContext
from memorywire.recall.rules import RULES, UNRANKED
from memorywire.recall.settings import PORTABLE_RECALL, RecallSettings
from memorywire.store.memory import InMemoryStore
from memorywire.store.postgres import PostgresStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import Fusion, MemoryType, RecallHit, RecallRequest, RecallResponse

#: The settings of a store's own search, not of a ranking rule.
SEARCH_SETTINGS = {"relevance_floor", "lexical_floor", "tail_gap", "lexical_weight",
                   "feedback_weight", "entity_gate"}


def _hit(id: str) -> RecallHit:
    return RecallHit(id=id, type=MemoryType.EPISODIC, content=id, score=1.0, created_at=1)


def test_the_rules_run_in_their_documented_order() -> None:
    assert [r.name for r in RULES] == ["time_boost", "subject_boost", "session_evidence",
                                       "substance_prior", "turn_focus", "subject_lexical",
                                       "restatement"]
    rules: tuple[RankingRule, ...] = RULES  # the interface, checked by mypy
    assert len({r.name for r in rules}) == len(rules)


def test_every_rule_setting_is_a_settings_field_owned_by_one_rule() -> None:
    """A rule's setting is a ``RecallSettings`` field (so it is a URL key and checked once),
    and every field is either a search setting or exactly one rule's."""
    owned = [name for rule in RULES for name in rule.settings]
    assert len(owned) == len(set(owned))
    names = {f.name for f in fields(RecallSettings)}
    assert set(owned) <= names
    assert names == set(owned) | SEARCH_SETTINGS


def test_unranked_turns_every_rule_setting_off_and_nothing_else() -> None:
    for rule in RULES:
        for name in rule.settings:
            assert getattr(UNRANKED, name) == 0.0
    for name in SEARCH_SETTINGS:
        assert getattr(UNRANKED, name) == getattr(PORTABLE_RECALL, name)


@dataclass(frozen=True)
class _Reverse:
    """A rule added for the test: asks for a pool of 7 and reverses the hits."""

    name: str = "reverse"
    settings: tuple[str, ...] = ()

    def pool(self, context: RecallContext, found: Sequence[HitView] | None, asked: int) -> int:
        return 7 if found is not None else 0

    def apply(self, hits: Sequence[HitT], context: RecallContext) -> list[HitT]:
        return list(reversed(hits))


@pytest.mark.anyio
async def test_a_rule_added_to_the_list_is_run_by_the_plan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan knows rules only through the list: one more entry is asked for its pool and
    applied, with no change to the plan or a store."""
    asked: list[int] = []

    async def search(req: RecallRequest) -> RecallResponse:
        asked.append(req.k)
        return RecallResponse(results=[_hit(f"h{i}") for i in range(req.k)],
                              fusion_used=Fusion.RRF, stores_queried=["t"], latency_ms=0)

    req = RecallRequest(agent_id="a", query="plain words", k=3)
    before = await recall_in_time(req, search, 10)
    assert [h.id for h in before.results] == ["h0", "h1", "h2"] and asked == [3]
    asked.clear()
    monkeypatch.setattr(plan_module, "RULES", (*RULES, _Reverse()))
    after = await recall_in_time(req, search, 10)
    assert asked == [3, 7]
    assert [h.id for h in after.results] == ["h6", "h5", "h4"]


def test_a_recall_derives_what_its_rules_share_once() -> None:
    made: list[int] = []
    context = RecallContext(RecallRequest(agent_id="a", query="q"), 0, UNRANKED)
    for _ in range(3):
        assert context.derived("k", lambda: made.append(1) or 42) == 42
    assert made == [1]
    # a new recall starts empty
    assert RecallPlan(RecallRequest(agent_id="a", query="q"), 0).request().k == 5


@pytest.mark.parametrize("store", [SqliteStore, PostgresStore, InMemoryStore])
def test_a_store_constructor_takes_one_recall_value_not_a_keyword_per_rule(store: type) -> None:
    params = inspect.signature(store.__init__).parameters
    assert len(params) <= 12, list(params)
    assert "recall" in params
    assert not {f.name for f in fields(RecallSettings)} & set(params)


def test_each_store_keeps_its_defaults() -> None:
    """Identical to the keyword defaults before ``RecallSettings``: SQLite's calibrated
    full-text floor, list gate and feedback round; the others' per-row floors."""
    from memorywire.store.sqlite.feedback import FEEDBACK_WEIGHT
    from memorywire.store.sqlite.search import SQLITE_LEXICAL_FLOOR

    assert replace(
        PORTABLE_RECALL, lexical_floor=SQLITE_LEXICAL_FLOOR, tail_gap=0.3,
        feedback_weight=FEEDBACK_WEIGHT) == SqliteStore.DEFAULT_RECALL
    assert PostgresStore.DEFAULT_RECALL == InMemoryStore.DEFAULT_RECALL == PORTABLE_RECALL
    assert (PORTABLE_RECALL.relevance_floor, PORTABLE_RECALL.lexical_floor,
            PORTABLE_RECALL.tail_gap, PORTABLE_RECALL.entity_gate) == (0.36, 0.36, None, True)
    assert (PORTABLE_RECALL.session_weight, PORTABLE_RECALL.subject_weight,
            PORTABLE_RECALL.substance_weight, PORTABLE_RECALL.turn_weight,
            PORTABLE_RECALL.duplicate_share, PORTABLE_RECALL.subject_lexical_weight) == (
        0.5, 0.12, 0.07, 2.0, 0.0, 0.0)
