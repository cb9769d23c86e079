"""The long-conversation retrieval benchmarks' metrics, BM25 and loaders, on hand-made data.

The real datasets never enter the tests: tiny LoCoMo- and LongMemEval-shaped files are written
here, and the hashing embedder stands in for MiniLM so the end-to-end runs take milliseconds.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from memorywire.embed.hashing import HashingEmbedder

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    if str(BENCH) not in sys.path:  # the scripts import their sibling ``_retrieval``
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"memorywire_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


R = _load("_retrieval")
LOCOMO = _load("locomo")
LME = _load("longmemeval")


# --- metrics -------------------------------------------------------------------------------

@pytest.mark.parametrize(("ranked", "gold", "k", "frac", "all_", "any_"), [
    (["a", "b", "c"], {"a"}, 1, 1.0, 1.0, 1.0),
    (["a", "b", "c"], {"c"}, 2, 0.0, 0.0, 0.0),
    (["a", "b", "c"], {"a", "c"}, 2, 0.5, 0.0, 1.0),
    (["a", "b", "c"], {"a", "c"}, 3, 1.0, 1.0, 1.0),
    (["a", "b"], {"a", "z"}, 10, 0.5, 0.0, 1.0),
    ([], {"a"}, 5, 0.0, 0.0, 0.0),
])
def test_recall_family(ranked: list[str], gold: set[str], k: int, frac: float, all_: float,
                       any_: float) -> None:
    assert R.recall_at_k(ranked, gold, k) == frac
    assert R.recall_all_at_k(ranked, gold, k) == all_
    assert R.recall_any_at_k(ranked, gold, k) == any_


def test_recall_counts_a_repeated_gold_id_once() -> None:
    assert R.recall_at_k(["a"], ["a", "a", "b"], 5) == 0.5


@pytest.mark.parametrize(("ranked", "gold", "k", "expected"), [
    (["a", "b", "c"], {"a"}, 5, 1.0),
    # LongMemEval's DCG weighs positions 1 and 2 alike: a hit at rank 2 is still perfect.
    (["x", "a", "c"], {"a"}, 5, 1.0),
    (["x", "y", "a"], {"a"}, 5, 1 / math.log2(3)),
    (["x", "b", "c"], {"b", "c"}, 5, (1 + 1 / math.log2(3)) / 2),
    (["x", "y", "a"], {"a"}, 2, 0.0),
    (["a", "x", "y"], {"a", "b", "c"}, 2, 1 / 2),
])
def test_ndcg_any(ranked: list[str], gold: set[str], k: int, expected: float) -> None:
    assert R.ndcg_any_at_k(ranked, gold, k) == pytest.approx(expected)


@pytest.mark.parametrize("fn", ["recall_at_k", "recall_all_at_k", "recall_any_at_k",
                                "ndcg_any_at_k"])
def test_empty_gold_is_refused_not_scored(fn: str) -> None:
    with pytest.raises(ValueError, match="empty gold"):
        getattr(R, fn)(["a"], set(), 5)


def test_dedupe_keeps_first_occurrence_order() -> None:
    assert R.dedupe(["s2", "s1", "s2", "s3", "s1"]) == ["s2", "s1", "s3"]


def test_mean_of_nothing_is_none() -> None:
    assert R.mean([]) is None
    assert R.mean([1.0, 0.0, 0.5]) == 0.5


def test_format_table_prints_gaps_for_none() -> None:
    text = R.format_table(["name", "x"], [["a", 0.5], ["bb", None]])
    assert text.splitlines()[2].split() == ["a", "0.500"]
    assert text.splitlines()[3].split() == ["bb", "-"]


# --- BM25 ----------------------------------------------------------------------------------

def test_tokenize_lowercases_and_drops_punctuation() -> None:
    assert R.tokenize("Hello, World! It's 2023.") == ["hello", "world", "it", "s", "2023"]


def test_bm25_matches_the_formula_on_one_document() -> None:
    docs = ["cat sat on the mat", "dog sat", "the dog and the cat"]
    bm = R.BM25(docs)
    lengths = [5, 2, 5]
    avg = sum(lengths) / 3
    idf_cat = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    idf_mat = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    norm = 1.5 * (1 - 0.75 + 0.75 * lengths[0] / avg)
    want = idf_cat * 2.5 / (1 + norm) + idf_mat * 2.5 / (1 + norm)
    assert bm.scores("Cat mat?")[0] == pytest.approx(want)


def test_bm25_prefers_rare_terms_and_short_documents() -> None:
    assert R.BM25(["the cat", "the dog", "the bird", "a parrot"]).top("the parrot", 2) == [3, 0]
    long_doc = "parrot " + "other words " * 10
    assert R.BM25([long_doc, "a parrot", "no match"]).top("parrot", 3) == [1, 0, 2]
    assert R.BM25(["a b", "c"]).scores("zebra").tolist() == [0.0, 0.0]


def test_bm25_ties_go_to_the_lower_index() -> None:
    bm = R.BM25(["apple pie", "banana", "apple pie"])
    assert bm.top("apple", 3) == [0, 2, 1]
    assert R.BM25([]).top("apple", 3) == []


# --- vector cache --------------------------------------------------------------------------

def test_embed_cached_embeds_each_text_once_and_reuses_the_cache(tmp_path: Path) -> None:
    emb = HashingEmbedder(32)
    cache = tmp_path / "v"
    texts = ["alpha beta", "gamma", "alpha beta"]
    first, stats = R.embed_cached(emb, texts, cache)
    assert stats.embedded == 2 and cache.is_dir()
    np.testing.assert_array_equal(first, emb.embed(texts))
    again, stats2 = R.embed_cached(emb, [*texts, "delta"], cache)
    assert stats2.embedded == 1
    np.testing.assert_array_equal(again[:3], first)
    # Another model's vectors are never reused; the file then holds the new model's.
    _, other = R.embed_cached(HashingEmbedder(16), texts, cache)
    assert other.embedded == 2
    assert R.embed_cached(HashingEmbedder(16), texts, cache)[1].embedded == 0


def test_embed_cached_keeps_what_an_interrupted_run_embedded(tmp_path: Path) -> None:
    class Dies(HashingEmbedder):
        calls = 0

        def embed(self, texts: Sequence[str]) -> Any:
            Dies.calls += 1
            if Dies.calls == 2:
                raise KeyboardInterrupt
            return super().embed(texts)

    texts = [f"text {i}" for i in range(5)]
    with pytest.raises(KeyboardInterrupt):
        R.embed_cached(Dies(8), texts, tmp_path / "c", chunk=2)
    _, stats = R.embed_cached(HashingEmbedder(8), texts, tmp_path / "c", chunk=2)
    assert stats.embedded == 3  # the first chunk of 2 survived the interruption


# --- LoCoMo --------------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "kept", "dropped"), [
    (["D1:3"], ["D1:3"], []),
    (["D8:6; D9:17"], ["D8:6", "D9:17"], []),
    (["D9:1 D4:4 D4:6"], ["D9:1", "D4:4", "D4:6"], []),
    (["D:11:26"], ["D11:26"], []),
    (["D30:05"], ["D30:5"], []),
    (["D1:18", "D", "D1:20"], ["D1:18", "D1:20"], ["D"]),
    (["D10:19", "D1:3"], ["D1:3"], ["D10:19"]),
    (["D1:3", "D1:03"], ["D1:3"], []),
    ([], [], []),
])
def test_normalise_evidence(raw: list[str], kept: list[str], dropped: list[str]) -> None:
    known = {"D1:3", "D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D11:26", "D30:5", "D1:18",
             "D1:20"}
    assert LOCOMO.normalise_evidence(raw, known) == (kept, dropped)


def _locomo_file(tmp: Path) -> Path:
    def conv(sid: str, turns: list[tuple[str, str]], qa: list[dict[str, Any]]) -> dict[str, Any]:
        s1 = [{"speaker": sp, "dia_id": f"D1:{i + 1}", "text": tx}
              for i, (sp, tx) in enumerate(turns[:3])]
        s2 = [{"speaker": sp, "dia_id": f"D2:{i + 1}", "text": tx}
              for i, (sp, tx) in enumerate(turns[3:])]
        return {"sample_id": sid, "qa": qa, "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_2_date_time": "2 pm on 9 May, 2023", "session_2": s2,
            "session_1_date_time": "1 pm on 8 May, 2023", "session_1": s1,
            "session_3_date_time": "no session 3 turns"}}

    data = [
        conv("conv-a", [("Ann", "I adopted a greyhound called Rocket"),
                        ("Bob", "Lovely, how old is Rocket"), ("Ann", "He is four years old"),
                        ("Bob", "I started learning the violin"),
                        ("Ann", "Violin is hard, good luck"), ("Bob", "Thanks")],
             [{"question": "Which greyhound called Rocket did Ann adopt?", "answer": "Rocket",
               "evidence": ["D1:1"], "category": 4},
              {"question": "Which instrument is Bob learning, violin?", "answer": "violin",
               "evidence": ["D2:01"], "category": 1},
              {"question": "Is Ann an ally?", "answer": "yes", "evidence": [], "category": 3},
              {"question": "What did Bob adopt?", "adversarial_answer": "a greyhound",
               "evidence": ["D1:1; D9:9"], "category": 5}]),
        conv("conv-b", [("Cy", "My sister lives in Lisbon"), ("Di", "Portugal is sunny"),
                        ("Cy", "We go surfing in Lisbon every summer")],
             [{"question": "Where does Cy's sister live, Lisbon?", "answer": "Lisbon",
               "evidence": ["D1:1", "D1:3"], "category": 2},
              {"question": "Bogus", "answer": "x", "evidence": ["D"], "category": 4}]),
    ]
    path = tmp / "locomo_tiny.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_locomo_load_orders_sessions_and_reports_every_repair(tmp_path: Path) -> None:
    convs, notes = LOCOMO.load(_locomo_file(tmp_path))
    assert [t.dia_id for t in convs[0].turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    assert convs[0].turns[0].content == "Ann: I adopted a greyhound called Rocket"
    assert convs[0].turns[3].date == "2 pm on 9 May, 2023"
    assert [q.evidence for q in convs[0].questions] == [["D1:1"], ["D2:1"], ["D1:1"]]
    assert [(s["conversation"], s["reason"]) for s in notes["skipped"]] == [
        ("conv-a", "empty evidence"), ("conv-b", "no evidence id names a turn")]
    assert [(n["evidence"], n["used"], n["dropped"]) for n in notes["normalised"]] == [
        (["D2:01"], ["D2:1"], []), (["D1:1; D9:9"], ["D1:1"], ["D9:9"])]
    limited, _ = LOCOMO.load(_locomo_file(tmp_path), limit=1)
    assert [c.sample_id for c in limited] == ["conv-a"]


@pytest.mark.anyio
async def test_locomo_run_scores_every_retriever_on_the_real_store(tmp_path: Path) -> None:
    result = await LOCOMO.run(_locomo_file(tmp_path), [1, 5], None, None,
                              HashingEmbedder(256))
    assert result["questions_scored"] == 4 and result["turns"] == 9
    assert result["questions_by_category"] == {"1": 1, "2": 1, "3": 0, "4": 1, "5": 1}
    for name in LOCOMO.RETRIEVERS:
        k5 = result["results"][name]["k5"]
        # 5 of 6 (or 3 of 3) turns are returned: every evidence turn is found at k=5
        # except where the default floor refuses a row.
        if name != "store-floor":
            assert k5["overall_1_4"] == 1.0, name
        assert k5["by_category"]["3"] is None
    k1 = result["results"]["store"]["k1"]
    assert k1["by_category"]["4"] == 1.0  # the Rocket turn shares the most words
    assert k1["by_category"]["2"] == 0.5  # two evidence turns, one slot
    assert result["results"]["bm25"]["k1"]["by_category"]["4"] == 1.0
    assert result["timing"]["turns_embedded"] == 9


def test_locomo_main_writes_the_result_and_prints_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LOCOMO, "default_embedder", lambda: HashingEmbedder(64))
    out = tmp_path / "r.json"
    assert LOCOMO.main(["--data", str(_locomo_file(tmp_path)), "--k", "5", "--json",
                        "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text(encoding="utf-8"))
    assert printed["ks"] == [5]
    assert "DRAGON" in LOCOMO.table(printed)


def test_embedder_flag_runs_every_row_on_the_named_model_and_keeps_its_own_cache(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LOCOMO, "default_embedder", lambda: pytest.fail("default model used"))
    cache = tmp_path / "cache"
    monkeypatch.setattr(LOCOMO, "default_cache", lambda _data: cache)
    names = _OutName(LOCOMO.write_result)
    monkeypatch.setattr(LOCOMO, "write_result", names)
    assert LOCOMO.main(["--data", str(_locomo_file(tmp_path)), "--k", "5", "--json",
                        "--embedder", "hashing:48", "--out", str(tmp_path / "r.json")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["embedder"] == "hashing-bow-48"
    assert printed["timing"]["turns_embedded"] == 9
    # the default result name carries the model: a run without --out keeps the default run's file
    assert names.names == ["locomo-hashing-bow-48.json"]
    # the vectors were cached under the model's own name: a MiniLM run would not read them
    assert any(path.is_file() for path in cache.rglob("*"))
    assert LME.out_name("longmemeval_s_dev120.json", None) == "longmemeval_s_dev120.json"


class _OutName:
    """Records the default result name each ``write_result`` call was given."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.names: list[str] = []

    def __call__(self, result: Any, out: Any, default_name: str, **kw: Any) -> int:
        self.names.append(default_name)
        return int(self.inner(result, out, default_name, **kw))


@pytest.mark.parametrize("script", ["locomo", "longmemeval"])
def test_embedder_flag_refuses_an_unknown_spec_naming_the_flag(
        script: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = LOCOMO if script == "locomo" else LME
    data = _locomo_file(tmp_path) if script == "locomo" else _lme_file(tmp_path)
    with pytest.raises(SystemExit) as exc:
        module.main(["--data", str(data), "--embedder", "word2vec", "--out",
                     str(tmp_path / "r.json")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--embedder word2vec" in err and "unknown embedder spec" in err
    assert not (tmp_path / "r.json").exists()


def test_a_served_embedder_gives_the_in_process_vectors() -> None:
    import threading

    from memorywire.embed import OpenAICompatibleEmbedder

    serve = _load("serve_embedder")
    server = serve.EmbeddingServer(0, HashingEmbedder(48))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        texts = ["Caroline went to a pride parade", "Melanie paints sunsets", "x"]
        with OpenAICompatibleEmbedder(f"http://127.0.0.1:{server.server_port}/v1",
                                      "hashing") as remote:
            np.testing.assert_allclose(remote.embed(texts), HashingEmbedder(48).embed(texts),
                                       rtol=1e-6)
    finally:
        server.shutdown()
        server.server_close()


# --- LongMemEval ---------------------------------------------------------------------------

def _lme_entry(qid: str, qtype: str, question: str, sessions: dict[str, list[dict[str, Any]]],
               answers: list[str]) -> dict[str, Any]:
    return {"question_id": qid, "question_type": qtype, "question": question, "answer": "x",
            "question_date": "2023/05/30 (Tue) 16:40", "answer_session_ids": answers,
            "haystack_session_ids": list(sessions),
            "haystack_dates": ["2023/05/20 (Sat) 00:29"] * len(sessions),
            "haystack_sessions": list(sessions.values())}


def _u(text: str, gold: bool = False) -> dict[str, Any]:
    return {"role": "user", "content": text, "has_answer": gold}


def _a(text: str, gold: bool = False) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "has_answer": gold}


def _lme_file(tmp: Path) -> Path:
    filler = {f"sharegpt_{i}": [_u(f"tell me about topic {i} please"), _a("sure")]
              for i in range(6)}
    data = [
        _lme_entry("q1", "single-session-user", "What breed is my dog Rocket?",
                   {**filler, "answer_1": [_u("hi"), _a("hello"),
                                           _u("my dog Rocket is a greyhound", True)]},
                   ["answer_1"]),
        _lme_entry("q2", "multi-session", "How many violin and piano lessons did I take?",
                   {"answer_2": [_u("I took three violin lessons", True)], **filler,
                    "answer_3": [_a("you like piano"), _u("piano lessons twice", True)]},
                   ["answer_2", "answer_3"]),
        _lme_entry("q3_abs", "single-session-user", "What breed is my cat?", filler, []),
        _lme_entry("q4", "single-session-assistant", "What did you recommend?",
                   {**filler, "answer_4": [_u("any tips?"), _a("try yoga", True)]},
                   ["answer_4"]),
    ]
    path = tmp / "lme_tiny.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(data, fh)
    return path


def test_longmemeval_parse_uses_official_keys_and_user_gold_only(tmp_path: Path) -> None:
    questions, notes = LME.load(_lme_file(tmp_path))
    assert [q.qid for q in questions] == ["q1", "q2"]
    assert notes["abstention"] == 1
    assert notes["no_gold_in_user_turns"] == [
        {"question_id": "q4", "question_type": "single-session-assistant"}]
    q1 = questions[0]
    assert q1.gold_sessions == {"answer_1"} and q1.gold_turns == {"answer_1_3"}
    assert [t.key for t in q1.turns][-2:] == ["answer_1_1", "answer_1_3"]
    assert all(not t.content.startswith("sure") for t in q1.turns)  # assistant turns unindexed
    assert questions[1].gold_turns == {"answer_2_1", "answer_3_2"}


def test_longmemeval_limit_interleaves_question_types(tmp_path: Path) -> None:
    questions, _ = LME.load(_lme_file(tmp_path), limit=2)
    assert [q.qtype for q in questions] == ["single-session-user", "multi-session"]


def test_longmemeval_session_score_collapses_turns_to_their_best() -> None:
    q = LME.Question("q", "t", "?", [LME.Turn(f"s{s}_{i}", f"s{s}", "x", "d")
                                     for s in range(4) for i in (1, 2)],
                     gold_sessions={"s2", "s3"}, gold_turns={"s2_1", "s3_2"})
    ranked = ["s1_1", "s1_2", "s2_2", "s0_1", "s3_2", "s2_1", "s0_2", "s1_2"]
    m = LME.score([q], [ranked], [2, 3])["overall"]
    # sessions in order: s1, s2, s0, s3
    assert m["session_recall_all@2"] == 0.0 and m["session_recall_any@2"] == 1.0
    assert m["session_recall_all@3"] == 0.0
    assert m["session_ndcg_any@2"] == pytest.approx(1 / 2)
    assert m["turn_recall_all@50"] == 1.0
    assert m["turn_ndcg_any@3"] == 0.0


def test_longmemeval_dates_are_read_as_utc_and_questions_keep_theirs() -> None:
    assert LME.date_ms("2023/03/09 (Thu) 15:47") == 1_678_376_820_000
    assert LME.date_ms("") is None and LME.date_ms("9 March") is None
    entry = {"question_id": "q", "question_type": "t", "question": "?",
             "question_date": "2023/03/09 (Thu) 15:47", "answer_session_ids": [],
             "haystack_session_ids": [], "haystack_sessions": [], "haystack_dates": []}
    assert LME.parse(entry).date == "2023/03/09 (Thu) 15:47"


@pytest.mark.anyio
async def test_longmemeval_run_ranks_gold_first_on_the_real_store(tmp_path: Path) -> None:
    result = await LME.run(_lme_file(tmp_path), [1, 5], None, None, HashingEmbedder(256))
    assert result["questions_scored"] == 2
    store = result["results"]["store"]["overall"]
    assert store["session_recall_all@5"] == 1.0
    assert store["turn_recall_all@5"] == 1.0
    assert result["results"]["bm25"]["overall"]["session_recall_any@1"] == 1.0
    assert set(result["results"]["vector"]["by_type"]) == {"multi-session", "single-session-user"}
    assert "Stella" in LME.table(result)


def test_calibration_counts_the_first_k_hits_by_relevance_band() -> None:
    returned = [[("a", 0.1, 0.9), ("b", 0.1, 0.6), ("c", 0.1, 0.3), ("d", 0.1, 0.1)],
                [("x", 0.1, 0.8), ("y", 0.1, None)],
                [("z", 0.1, 0.99)]]
    table = R.calibration(returned, [{"a", "c"}, {"y"}, set()], k=3)
    assert [(b["hits"], b["relevant"]) for b in table["bands"]] == [(0, 0), (1, 1), (1, 0),
                                                                  (2, 1)]
    # at relevance >= 0.5: a (right), b and x (wrong); the third question has nothing to find
    assert table["precision_at_relevance_0_5"] == round(1 / 3, 4)
    assert R.calibration([], [])["precision_at_relevance_0_5"] is None
