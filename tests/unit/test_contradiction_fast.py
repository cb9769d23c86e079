"""The write path's scorer (``_score_parts``, read from a stored statement's cached tuples)
must say what the reference rule (``_score`` on both sides' sets) says, to the bit: every
write's conflict hint depends on its similarity, its order and its why string (issue 35,
ingest35c). A divergence on any pair of these corpora fails here, and a real SQLite store
fed the same batches through either scorer must answer every write the same.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from memorywire.core import contradiction
from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RememberRequest

pytestmark = pytest.mark.anyio

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus"

NAMES = ["Ada", "Bruno", "Chen", "Dara", "Emeka", "Farah"]
FACTS = ["prefers aisle seats on long flights", "is allergic to cats", "is learning Portuguese",
         "works night shifts at a hospital", "writes Go at a logistics firm", "is vegetarian"]
WHEN = ["since last spring", "every morning", "since moving to Lyon", "as of this week"]
#: Statements that reach each rule: frame, value, negation, change cues, tails, additions.
SLOTS = [
    "The user's favourite airline is KLM.", "The user's favourite airline is Lufthansa now.",
    "The user now flies with Delta.", "The user's favourite hotel chain is Hilton.",
    "The user switched to Marriott hotels.", "The user lives in Berlin.",
    "The user moved to Lisbon.", "The user does not live in Berlin.",
    "The user's job title is principal architect.", "The user's job title is team lead.",
    "The user was promoted to director.", "The user works at Acme.",
    "The user doesn't work at Acme anymore.", "The user also plays the guitar.",
    "The user plays the piano.", "The user has 3 cats.", "The user has 2 cats.",
    "Radiohead is the user's top artist now.", "The user's top artist is Blur.",
    "The user never drinks coffee.", "The user drinks coffee every morning.",
    "The user's car is a red Volvo.", "The user's car is a blue Tesla Model 3.",
]


def _texts() -> list[str]:
    out = [f"{n} {f} {w}. (#{i})" for i, (n, f, w) in
           enumerate(itertools.product(NAMES, FACTS, WHEN))] + SLOTS
    for name in ("updates_dev.jsonl", "updates_dev_paraphrase.jsonl"):
        for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
            slot = json.loads(line)
            out.extend(t.format(v) for t in slot["templates"] for v in slot["values"])
            out.append(slot["question"])
    return out


def _reference(p: contradiction._Parts,
               b: contradiction._Parsed) -> tuple[float, tuple[str, str, str] | None] | None:
    return contradiction._score(contradiction._reading(p), b)


def test_the_fast_scorer_gives_the_reference_verdict_on_every_pair() -> None:
    texts = _texts()
    rng = random.Random(35)
    pairs = [(rng.choice(texts), rng.choice(texts)) for _ in range(20_000)]
    pairs += list(itertools.product(SLOTS, SLOTS))
    seen: Counter[str] = Counter()
    for old, new in pairs:
        parts, b = contradiction._parts(old), contradiction._parse(new)
        want = _reference(parts, b)
        assert contradiction._score_parts(parts, b) == want, (old, new)
        if want is None:
            seen["none"] += 1
        elif want[1] is not None:
            seen["frame"] += 1
        elif contradiction._parse(old).negated != b.negated:
            seen["negation"] += 1
        else:
            seen["value"] += 1
    # the pairs reach every outcome, or the comparison above proves little
    assert min(seen[k] for k in ("none", "frame", "negation", "value")) >= 10, seen


async def _answers(tmp_path: Path, name: str) -> list[dict[str, object]]:
    """Every write's answer when scale.py-like batches (look-alike notes whose candidates
    all relate, among slot facts) go into one scope of a real SQLite store."""
    store = SqliteStore(tmp_path / f"{name}.db", embedder=HashingEmbedder(dim=64),
                        clock=FakeClock(1_000_000))
    texts = _texts()
    rng = random.Random(7)
    vectors = np.random.default_rng(7)
    out: list[dict[str, object]] = []
    try:
        for batch in range(4):
            reqs = [RememberRequest(id=f"m{batch:02d}{i:04d}", agent_id="a",
                                    type=MemoryType.SEMANTIC,
                                    content=f"{rng.choice(texts)} ({batch}.{i % 7})")
                    for i in range(250)]
            m = vectors.standard_normal((len(reqs), 64)).astype(np.float32)
            m /= np.linalg.norm(m, axis=1, keepdims=True)
            out.extend(r.model_dump() for r in await store.remember_many(reqs, vectors=m))
    finally:
        await store.aclose()
    return out


async def test_a_sqlite_store_answers_every_write_as_the_reference_scorer_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = await _answers(tmp_path, "fast")
    calls = Counter[str]()

    def counted(p: contradiction._Parts,
                b: contradiction._Parsed) -> tuple[float, tuple[str, str, str] | None] | None:
        calls["reference"] += 1
        return _reference(p, b)

    monkeypatch.setattr(contradiction, "_score_parts", counted)
    reference = await _answers(tmp_path, "reference")
    assert calls["reference"] > 5_000  # the write path scored through the patched rule
    assert sum(1 for a in fast if a["conflicts"]) > 300
    assert fast == reference
