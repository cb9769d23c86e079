"""The ``conflicts`` policy key: what governance does with a remember that contradicts a stored
memory (report, auto-supersede, stage for review, or not look), over real stores, and the key
read from a configuration file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.governance import GovernedStore, PolicySet
from memorywire.server.config import load_config
from memorywire.store import timeline
from memorywire.store.memory import InMemoryStore
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio

KLM = "The user's favourite airline is KLM."
RYANAIR = "The user's favourite airline is Ryanair."
GYM = "The user trains at McFit gym."
NEW_GYM = "The user changed to Basic-Fit gym."  # a weaker candidate than KLM → Ryanair


@pytest.fixture(params=["memory", "sqlite"])
async def make(request: pytest.FixtureRequest,
               tmp_path: Path) -> AsyncIterator[Any]:
    opened: list[GovernedStore] = []

    def build(conflicts: Any) -> GovernedStore:
        clock = FakeClock(1_000_000)
        inner = (InMemoryStore(embedder=HashingEmbedder(), clock=clock)
                 if request.param == "memory" else
                 SqliteStore(tmp_path / f"m{len(opened)}.db", embedder=HashingEmbedder(),
                             clock=clock))
        g = GovernedStore(inner, tmp_path / f"gov{len(opened)}.db", clock=clock,
                          policies={"conflicts": conflicts})
        opened.append(g)
        return g

    yield build
    for g in opened:
        await g.aclose()


async def _put(g: GovernedStore, text: str) -> Any:
    g._clock.advance(1000)  # type: ignore[attr-defined]
    return await g.remember(RememberRequest(agent_id="a", user_id="u", type=MemoryType.SEMANTIC,
                                            content=text))


async def _current(g: GovernedStore, query: str = "favourite airline") -> list[str]:
    resp = await g.recall(RecallRequest(agent_id="a", user_id="u", query=query, k=5))
    return sorted(str(h.content) for h in resp.results)


async def test_report_is_the_default_and_changes_nothing(make: Any) -> None:
    g = make("report")
    assert g.policies.conflicts.action == "report"
    klm = await _put(g, KLM)
    resp = await _put(g, RYANAIR)
    assert [c.id for c in resp.conflicts] == [klm.id]
    assert await _current(g) == sorted([KLM, RYANAIR])


async def test_auto_supersedes_the_contradicted_memory_and_audits_it(make: Any) -> None:
    g = make("auto")
    klm = await _put(g, KLM)
    resp = await _put(g, RYANAIR)
    assert [c.id for c in resp.conflicts] == [klm.id]
    assert await _current(g) == [RYANAIR]
    old = await g.get("a", klm.id, "u")
    assert old is not None and old.metadata["_validity"]["superseded_by"] == resp.id
    closes = [e for e in g.audit_log.entries() if e.action == "update"
              and list(e.memory_ids) == [klm.id] and e.details.get("phase") == "done"]
    assert closes and closes[0].details["reason"] == f"superseded by {resp.id}"


async def test_auto_leaves_candidates_below_the_threshold_alone(make: Any) -> None:
    g = make({"action": "auto", "min_similarity": 0.9})
    gym = await _put(g, GYM)
    resp = await _put(g, NEW_GYM)
    assert [c.id for c in resp.conflicts] == [gym.id]  # still reported
    assert resp.conflicts[0].similarity < 0.9
    old = await g.get("a", gym.id, "u")
    assert old is not None and "_validity" not in old.metadata


async def test_review_stages_a_contradicting_write_proposing_supersedes(make: Any) -> None:
    g = make("review")
    klm = await _put(g, KLM)
    resp = await _put(g, RYANAIR)
    assert resp.pending_approval and [c.id for c in resp.conflicts] == [klm.id]
    assert await _current(g) == [KLM]  # nothing written yet
    item = (await g.alist_pending())[0]
    assert item["request"]["supersedes"] == [klm.id]
    assert "contradicts stored memories" in item["reasoning"]
    review = await g.get_review(item["id"], with_diff=True)
    assert [(m["id"], m["relation"]) for m in review["diff"]["modified"]] == \
        [(klm.id, "supersedes")]
    await g.approve(item["id"], "reviewer", None)
    assert await _current(g) == [RYANAIR]


async def test_review_writes_at_once_what_contradicts_nothing(make: Any) -> None:
    g = make("review")
    await _put(g, KLM)
    resp = await _put(g, GYM)
    assert not resp.pending_approval and resp.conflicts is None
    assert await g.get("a", resp.id, "u") is not None


async def test_off_skips_the_scan(make: Any) -> None:
    g = make("off")
    await _put(g, KLM)
    resp = await _put(g, RYANAIR)
    assert resp.conflicts is None
    assert await _current(g) == sorted([KLM, RYANAIR])


def test_the_key_is_checked_and_round_trips() -> None:
    assert PolicySet.from_dict({"conflicts": "auto"}).conflicts.action == "auto"
    ps = PolicySet.from_dict({"conflicts": {"action": "review", "min_similarity": 0.5}})
    assert PolicySet.from_dict(ps.to_dict()).conflicts == ps.conflicts
    assert "conflicts" not in PolicySet().to_dict()  # old policies keep their hash
    with pytest.raises(InvalidRequest) as bad:
        PolicySet.from_dict({"conflicts": "sometimes"})
    assert bad.value.details[0].path == "/conflicts/action"
    with pytest.raises(InvalidRequest):
        PolicySet.from_dict({"conflicts": {"action": "auto", "min_similarity": 2}})


def test_config_file_sets_the_key(tmp_path: Path) -> None:
    path = tmp_path / "mw.toml"
    path.write_text(f'[governance]\ndatabase = "{tmp_path / "gov.db"}"\n'
                    'conflicts = { action = "auto", min_similarity = 0.6 }\n', encoding="utf-8")
    cfg = load_config(path, env={})
    assert PolicySet.from_dict(cfg.policies).conflicts.min_similarity == 0.6  # type: ignore[arg-type]
    path.write_text('[governance]\nconflicts = { action = "never" }\n', encoding="utf-8")
    with pytest.raises(InvalidRequest, match=r"governance\.conflicts\.action"):
        load_config(path, env={})


async def test_approving_a_staged_write_does_not_scan_it(make: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The write an approve applies reports its conflicts to no one (the decision's answer
    has none; ``review`` looked before staging), so it must not pay for the scan again."""
    g = make("report")
    klm = await _put(g, KLM)
    scanned: list[str] = []
    real = timeline.find_conflicts

    def spy(new: str, *args: Any, **kwargs: Any) -> Any:
        scanned.append(new)
        return real(new, *args, **kwargs)

    monkeypatch.setattr(timeline, "find_conflicts", spy)
    staged = await g.remember(RememberRequest(agent_id="a", user_id="u", content=RYANAIR,
                                              type=MemoryType.SEMANTIC, approval_required=True))
    assert staged.pending_approval
    item = (await g.alist_pending())[0]
    await g.approve(item["id"], "reviewer", None)
    assert await _current(g) == sorted([KLM, RYANAIR])
    assert scanned == []
    later = await _put(g, "The user's favourite airline is Delta.")  # still scanned, and
    assert scanned and klm.id in [c.id for c in later.conflicts]  # the approved one is there
    assert len(later.conflicts) == 2
