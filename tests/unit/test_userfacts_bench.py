"""The per-user fact corpus stays honest, and ``benchmarks/facts.py`` scores what it says.

The corpus files must be exactly what ``userfacts_corpus.py`` writes, and no answerable
question may share a content word with its memory but the scope's subject; the metrics are
checked on hand-made answers (the hashing embedder stands in for MiniLM).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from memorywire.embed.hashing import HashingEmbedder

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    if str(BENCH) not in sys.path:  # the scripts import their siblings
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"memorywire_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


CORPUS = _load("userfacts_corpus")
FACTS = _load("facts")


def test_committed_corpus_is_what_the_generator_writes_and_nothing_leaks() -> None:
    assert CORPUS.main(["--check"]) == 0


def test_corpus_meets_the_sizes_issue_31_asks_for() -> None:
    memories, questions = CORPUS.build()
    stats = CORPUS.stats(memories, questions)
    assert stats["facts"] >= 300 and stats["meaning_questions"] >= 150
    assert stats["no_match_probes"] >= 50
    assert set(stats["meaning_by_type"]) == {"semantic", "episodic", "procedural", "emotional"}
    ids = {(m["phrasing"], m["id"]) for m in memories}
    assert len(ids) == len(memories), "a memory id repeats within a phrasing"
    for q in questions:
        assert all((q["phrasing"], g) in ids for g in q["relevant"]), q["id"]


def test_split_is_by_person_and_even() -> None:
    memories, questions = CORPUS.build()
    split: dict[str, set[str]] = {}
    for row in [*memories, *questions]:
        split.setdefault(row["user"], set()).add(row["split"])
    assert all(len(s) == 1 for s in split.values()), "a person straddles the split"
    halves = [next(iter(s)) for s in split.values()]
    assert halves.count("dev") == halves.count("heldout")


def test_leak_check_names_a_shared_stem_but_not_the_subject() -> None:
    memories = [{"id": "m", "user": "marta", "phrasing": "name", "type": "semantic",
                 "content": "Marta works as a carpenter."}]
    leaking = {"id": "q", "user": "marta", "phrasing": "name", "relevant": ["m"],
               "query": "Which carpenters does Marta know?"}
    clean = {**leaking, "query": "What is Marta's trade?"}
    found = list(CORPUS.leaks(memories, [leaking, clean]))
    assert [(q["query"], shared) for q, shared in found] == [
        ("Which carpenters does Marta know?", {"carpent"})]


def _q(qid: str, relevant: list[str], split: str = "dev", **kw: Any) -> dict[str, Any]:
    return {"id": qid, "user": "u", "phrasing": "name", "split": split, "type": "semantic",
            "relevant": relevant, "query": qid, **kw}


def test_metrics_count_first_place_top_five_and_empty_answers() -> None:
    questions = [_q("a", ["m1"]), _q("b", ["m2"]), _q("c", ["m3"]), _q("d", ["m4"]),
                 _q("p", [], type=None), _q("r", [], type=None)]
    answers = {"name/a": (["m1", "x"], [0.9, 0.1]), "name/b": (["x", "m2"], [0.8, 0.7]),
               "name/c": ([], []), "name/d": (["x", "y", "z", "w", "v", "m4"], [None] * 6),
               "name/p": ([], []), "name/r": (["x"], [0.6])}
    got = FACTS._metrics(questions, answers)
    assert got == {"r_at_1": 0.25, "r_at_5": 0.5, "answerable_empty": 0.25,
                   "no_match_empty": 0.5, "answerable": 4, "no_match": 2}
    cal = FACTS._calibration(questions, answers)
    by_band = {(b["from"], b["to"]): (b["hits"], b["correct"]) for b in cal["bands"]}
    assert by_band[(0.75, 1.0)] == (2, 1)  # m1 right, x (0.8) wrong
    assert by_band[(0.5, 0.75)] == (2, 1)  # m2 right, the probe's hit wrong
    assert by_band[(0.0, 0.25)] == (1, 0)


def test_bm25_returns_nothing_without_a_shared_stem_and_vector_always_answers() -> None:
    mine = [{"id": "m1", "type": "semantic", "content": "Marta works as a carpenter."},
            {"id": "m2", "type": "semantic", "content": "Rui teaches chemistry."}]
    asked = [{"query": "Who is a carpenter?"}, {"query": "What is the weather?"}]
    assert FACTS.bm25_rank(mine, asked) == [["m1"], []]
    ranked = FACTS.vector_ranker(HashingEmbedder(64))(mine, asked)
    assert [sorted(r) for r in ranked] == [["m1", "m2"], ["m1", "m2"]]
