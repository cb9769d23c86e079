"""The LongMemEval held-out builder on hand-made oracle- and S-shaped files.

The held-out numbers in docs/benchmarks.md are only as honest as this construction: no dev
question or dev evidence may leak in, every question keeps its own evidence and dates, the
distractors are filler only, and the same seed builds the same file.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

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


HO = _load("longmemeval_heldout")
LME = _load("longmemeval")

TYPES = ("multi-session", "temporal-reasoning", "single-session-user")


def _session(text: str, gold: bool = False) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text, "has_answer": gold},
            {"role": "assistant", "content": f"reply to {text}"}]


def _entry(qid: str, qtype: str, asked: str, sessions: list[tuple[str, str, bool]],
           answers: list[str]) -> dict[str, Any]:
    """``sessions``: (id, date, holds the answer)."""
    return {"question_id": qid, "question_type": qtype, "question": f"question {qid}?",
            "answer": "a", "question_date": asked,
            "haystack_session_ids": [sid for sid, _, _ in sessions],
            "haystack_dates": [d for _, d, _ in sessions],
            "haystack_sessions": [_session(f"text of {sid}", gold) for sid, _, gold in sessions],
            "answer_session_ids": answers}


def _files() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An oracle of 2 dev + 13 held-out questions, and a dev file whose haystacks hold 40
    filler sessions, the dev evidence, and ``answer_h12`` (evidence of held-out h12)."""
    oracle = [_entry("d0", "multi-session", "2023/05/30 (Tue) 16:40",
                     [("answer_d0", "2023/05/25 (Thu) 10:00", True)], ["answer_d0"]),
              _entry("d1", "single-session-user", "2023/06/30 (Fri) 16:40",
                     [("answer_d1", "2023/06/28 (Wed) 10:00", True)], ["answer_d1"])]
    for i in range(13):
        qid = f"h{i}" if i != 3 else "h3_abs"
        evidence = [(f"answer_h{i}_1", "2023/02/01 (Wed) 09:00", True),
                    (f"answer_h{i}_2", "2023/03/05 (Sun) 08:30", True)]
        oracle.append(_entry(qid, TYPES[i % 3], "2023/03/10 (Fri) 12:00", evidence,
                             [sid for sid, _, _ in evidence]))
    filler = [(f"sharegpt_{i}", f"2023/05/{20 + i % 5} (Sat) 0{i % 10}:00", False)
              for i in range(40)]
    dev = [_entry("d0", "multi-session", "2023/05/30 (Tue) 16:40",
                  [*filler[:20], ("answer_d0", "2023/05/25 (Thu) 10:00", True),
                   ("answer_h12_1", "2023/05/25 (Thu) 11:00", False)], ["answer_d0"]),
           _entry("d1", "single-session-user", "2023/06/30 (Fri) 16:40",
                  [*filler[20:], ("answer_d1", "2023/06/28 (Wed) 10:00", True)], ["answer_d1"])]
    return oracle, dev


def test_held_out_questions_keep_their_evidence_and_take_only_dev_filler() -> None:
    oracle, dev = _files()
    built, summary = HO.build(oracle, dev, seed=7)
    assert [e["question_id"] for e in built] == [f"h{i}" if i != 3 else "h3_abs"
                                                for i in range(12)]
    assert summary["left_out_sharing_dev_evidence"] == ["h12"]
    assert summary["filler_pool_sessions"] == 40
    sizes = {len(e["haystack_session_ids"]) for e in dev}
    filler_ids = {f"sharegpt_{i}" for i in range(40)}
    for e, source in zip(built, [o for o in oracle if o["question_id"].startswith("h")],
                         strict=False):
        ids = e["haystack_session_ids"]
        assert len(ids) in sizes and len(ids) == len(set(ids))
        own = dict(zip(source["haystack_session_ids"], zip(source["haystack_sessions"],
                                                           source["haystack_dates"],
                                                           strict=True), strict=True))
        mine = dict(zip(ids, zip(e["haystack_sessions"], e["haystack_dates"], strict=True),
                        strict=True))
        assert all(mine[sid] == own[sid] for sid in own)  # evidence and its dates unchanged
        assert set(ids) - set(own) <= filler_ids
        assert e["answer_session_ids"] == source["answer_session_ids"]
        assert e["question_date"] == source["question_date"]


def test_distractor_dates_fall_in_the_question_window_and_haystacks_are_in_date_order() -> None:
    oracle, dev = _files()
    built, _ = HO.build(oracle, dev, seed=7)
    start = HO.parse_date("2023/02/01 (Wed) 09:00")  # first evidence, before asked - 10 days
    asked = HO.parse_date("2023/03/10 (Fri) 12:00")
    for e in built:
        dates = [HO.parse_date(d) for d in e["haystack_dates"]]
        assert dates == sorted(dates)
        assert all(start <= d < asked for d in dates)
        # the weekday printed is the date's own, as in S
        assert all(d.split(" ")[1] == HO.parse_date(d).strftime("(%a)")
                   for d in e["haystack_dates"])


def test_the_window_reaches_ten_days_back_when_the_evidence_is_recent() -> None:
    _, dev = _files()
    entry = _entry("r", "multi-session", "2023/03/10 (Fri) 12:00",
                   [("answer_r", "2023/03/09 (Thu) 09:00", True)], ["answer_r"])
    built = HO.build_entry(entry, HO.filler_pool(dev, {"answer_d0", "answer_d1", "answer_r"}),
                           [41], seed=1)
    dates = [HO.parse_date(d) for d in built["haystack_dates"]]
    assert len(dates) == 41
    assert min(dates) < HO.parse_date("2023/03/08 (Wed) 00:00")
    assert min(dates) >= HO.parse_date("2023/02/28 (Tue) 12:00")


def test_the_same_seed_builds_the_same_bytes_and_a_sample_the_same_haystacks(
        tmp_path: Path) -> None:
    oracle, dev = _files()
    full, _ = HO.build(oracle, dev, seed=7)
    again, _ = HO.build(oracle, dev, seed=7)
    assert HO.write(full, tmp_path / "a.json.gz") == HO.write(again, tmp_path / "b.json.gz")
    other, _ = HO.build(oracle, dev, seed=8)
    assert other != full
    sampled, summary = HO.build(oracle, dev, seed=7, sample=6)
    by_id = {e["question_id"]: e for e in full}
    assert all(e == by_id[e["question_id"]] for e in sampled)
    assert Counter(e["question_type"] for e in sampled) == Counter(
        {"multi-session": 2, "temporal-reasoning": 2, "single-session-user": 2})
    assert summary["questions"] == 6


def test_the_built_file_is_read_by_the_benchmark_with_its_gold(tmp_path: Path) -> None:
    oracle, dev = _files()
    oracle_path = tmp_path / "oracle.json.gz"
    with gzip.open(oracle_path, "wt", encoding="utf-8") as fh:
        json.dump(oracle, fh)
    dev_path = tmp_path / "dev.json"
    dev_path.write_text(json.dumps(dev), encoding="utf-8")
    out = tmp_path / "held" / "longmemeval_heldout.json.gz"
    assert HO.main(["--oracle", str(oracle_path), "--s-dev", str(dev_path),
                    "--out", str(out)]) == 0
    questions, notes = LME.load(out)
    assert notes["total"] == 12 and notes["abstention"] == 1
    assert len(questions) == 11
    assert all(q.gold_sessions == {f"answer_{q.qid}_1", f"answer_{q.qid}_2"}
               for q in questions)
    assert all(len({t.session for t in q.turns}) > 2 for q in questions)


def test_bad_arguments_name_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    oracle, dev = _files()
    dev_path = tmp_path / "dev.json"
    dev_path.write_text(json.dumps(dev), encoding="utf-8")
    with pytest.raises(SystemExit):
        HO.main(["--oracle", str(tmp_path / "missing.json"), "--s-dev", str(dev_path),
                 "--out", str(tmp_path / "o.json")])
    assert "--oracle" in capsys.readouterr().err
    oracle_path = tmp_path / "oracle.json"
    oracle_path.write_text(json.dumps(oracle), encoding="utf-8")
    with pytest.raises(SystemExit):
        HO.main(["--oracle", str(oracle_path), "--s-dev", str(dev_path),
                 "--out", str(tmp_path / "o.json"), "--sample", "99"])
    assert "--sample 99" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()


def test_rebuild_dev_builds_the_dev_questions_the_same_way_for_a_check() -> None:
    oracle, dev = _files()
    built, summary = HO.build(oracle, dev, seed=7, rebuild_dev=True)
    assert [e["question_id"] for e in built] == ["d0", "d1"]
    assert summary["questions_from"].startswith("dev")
    for e in built:
        ids = e["haystack_session_ids"]
        assert ids.count(f"answer_{e['question_id']}") == 1
        assert all(sid.startswith("sharegpt_") for sid in ids
                   if sid != f"answer_{e['question_id']}")


def test_the_halves_split_each_type_evenly_by_id_hash_and_keep_the_whole_files_haystacks(
        ) -> None:
    oracle, dev = _files()
    full, _ = HO.build(oracle, dev, seed=7)
    dev_b, dev_summary = HO.build(oracle, dev, seed=7, half="dev")
    held_b, held_summary = HO.build(oracle, dev, seed=7, half="heldout")
    dev_ids = {e["question_id"] for e in dev_b}
    held_ids = {e["question_id"] for e in held_b}
    assert not dev_ids & held_ids
    assert dev_ids | held_ids == {e["question_id"] for e in full}
    # four questions of each type: two go to each half
    assert Counter(e["question_type"] for e in dev_b) == Counter({t: 2 for t in TYPES})
    assert Counter(e["question_type"] for e in held_b) == Counter({t: 2 for t in TYPES})
    by_id = {e["question_id"]: e for e in full}
    assert all(e == by_id[e["question_id"]] for e in [*dev_b, *held_b])
    assert (dev_summary["half"], held_summary["half"]) == ("dev", "heldout")
    # the rule does not depend on the seed
    assert {e["question_id"] for e in HO.build(oracle, dev, seed=8, half="dev")[0]} == dev_ids


def test_half_of_alternates_within_a_type_in_sha256_order() -> None:
    entries = [{"question_id": f"q{i}", "question_type": "t"} for i in range(5)]
    ranked = sorted((e["question_id"] for e in entries),
                    key=lambda qid: hashlib.sha256(qid.encode()).hexdigest())
    halves = HO.half_of(entries)
    assert [halves[qid] for qid in ranked] == ["dev", "heldout", "dev", "heldout", "dev"]
    # adding a question of another type moves nobody
    assert {k: v for k, v in HO.half_of([*entries, {"question_id": "z", "question_type": "u"}])
            .items() if k != "z"} == halves


def test_half_is_refused_with_rebuild_dev_and_an_unknown_half_names_the_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    oracle, dev = _files()
    with pytest.raises(ValueError, match="--half"):
        HO.build(oracle, dev, seed=7, rebuild_dev=True, half="dev")
    with pytest.raises(ValueError, match="--half"):
        HO.build(oracle, dev, seed=7, half="train")
    oracle_path, dev_path = tmp_path / "oracle.json", tmp_path / "dev.json"
    oracle_path.write_text(json.dumps(oracle), encoding="utf-8")
    dev_path.write_text(json.dumps(dev), encoding="utf-8")
    with pytest.raises(SystemExit):
        HO.main(["--oracle", str(oracle_path), "--s-dev", str(dev_path),
                 "--out", str(tmp_path / "o.json"), "--half", "train"])
    assert "--half" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        HO.main(["--oracle", str(oracle_path), "--s-dev", str(dev_path),
                 "--out", str(tmp_path / "o.json"), "--half", "dev", "--rebuild-dev"])
    assert "--half" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()
    assert HO.main(["--oracle", str(oracle_path), "--s-dev", str(dev_path),
                    "--out", str(tmp_path / "o.json"), "--half", "heldout"]) == 0
    assert len(HO.read(tmp_path / "o.json")) == 6
