"""``benchmarks/reference_latency.py``: the literal reading of issue 19's latency goal, the
store of an old commit against today's, each in a subprocess of its own. The child protocol
is run here end to end on the tiny LoCoMo / LongMemEval files, both sides on this checkout's
sources (an old tree is the same protocol with another ``PYTHONPATH``); the ratio arithmetic
and the argument checks are pure. Timings are printed, never asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memorywire.embed.hashing import HashingEmbedder

from .test_retrieval_bench import _lme_file, _load, _locomo_file

REF = _load("reference_latency")
SRC = Path(__file__).resolve().parents[2] / "src"


def _side(p50: float, mean: float, rate: float, cpu: float) -> dict[str, object]:
    row = {"p50_ms": p50, "mean_ms": mean, "write_turns_per_s": rate,
           "write_cpu_us_per_turn": cpu}
    return {"rows": {"store": row, "store-floor": {**row, "p50_ms": p50 * 2}},
            "ingest_all_rows": {"write_turns_per_s": rate, "write_cpu_us_per_turn": cpu}}


def test_round_ratios_are_today_over_the_reference_and_medians_judge_the_goals() -> None:
    ref = _side(2.0, 2.5, 1000.0, 100.0)
    rounds = [REF.round_ratios(ref, _side(p50, 2.5, rate, 125.0))
              for p50, rate in ((2.0, 900.0), (4.0, 700.0), (3.2, 850.0))]
    assert rounds[0]["store/store"] == {"recall_p50": 1.0, "recall_mean": 1.0,
                                        "ingest_wall": 0.9, "ingest_cpu": 0.8}
    assert rounds[1]["store-floor/store"]["recall_p50"] == 4.0  # today's defaults / old row
    assert rounds[1]["store-floor/store-floor"]["recall_p50"] == 2.0
    assert rounds[1]["all rows (ingest)"] == {"ingest_wall": 0.7, "ingest_cpu": 0.8}
    med = REF.median_ratios(rounds)["store/store"]
    assert med["recall_p50"] == {"median": 1.6, "min": 1.0, "max": 2.0, "met": False}
    assert med["ingest_wall"]["median"] == 0.85 and med["ingest_wall"]["met"] is True
    assert med["ingest_cpu"] == {"median": 0.8, "min": 0.8, "max": 0.8, "met": True}
    assert REF.median_ratios(rounds)["all rows (ingest)"]["ingest_wall"]["met"] is True
    with pytest.raises(ValueError):
        REF.median_ratios([])


def test_sides_alternate_who_goes_first() -> None:
    assert [REF.side_order(n) for n in range(4)] == [
        ("reference", "main"), ("main", "reference")] * 2


def test_both_sides_run_as_children_and_rank(tmp_path: Path) -> None:
    result = REF.run(_locomo_file(tmp_path), _lme_file(tmp_path), ref="unused",
                     ref_src=SRC, main_src=SRC, rounds=2, repeat=1, stride=1, limit=10,
                     work=tmp_path / "w", embedder=HashingEmbedder(64),
                     embedder_spec="hashing:64", cache_root=tmp_path / "c")
    locomo, lme = result["results"]["locomo"], result["results"]["longmemeval_s"]
    assert locomo["timed_questions"] == 4 and lme["timed_questions"] == 2
    for res in (locomo, lme):
        assert [r["order"] for r in res["rounds"]] == [["reference", "main"],
                                                        ["main", "reference"]]
        for rd in res["rounds"]:
            for side in ("reference", "main"):
                assert set(rd[side]["rows"]) == {"store", "store-floor"}
                assert all(v["write_turns_per_s"] > 0 and v["p50_ms"] > 0
                           for v in rd[side]["rows"].values())
            assert set(rd["ratios"]) == {"store/store", "store-floor/store-floor",
                                         "store-floor/store", "all rows (ingest)"}
            calls = rd["main"]["model_calls"]  # today's entity gate may embed; counted apart
            assert set(calls) == {"untimed", "timed"} and min(calls.values()) >= 0
        assert res["rankings_stable_across_rounds"] is True
        for side in ("reference", "main"):  # the stores rank: the evidence is found
            assert res["quality"][side]["store"]["r@10"] == 1.0
    # today's side wrote its context keys, the reference's requests had none
    plan = json.loads((tmp_path / "w" / "plan-lme" / "plan.json").read_text())
    assert any("context" in t["metadata"] for b in plan["requests"]["main"]["turns"] for t in b)
    assert not any("context" in t["metadata"] or "valid_from" in t
                   for b in plan["requests"]["reference"]["turns"] for t in b)
    assert "today/reference" in REF.table(result)


def test_no_time_leaves_the_time_of_asking_out_of_todays_requests(tmp_path: Path) -> None:
    for time_aware in (True, False):
        folder = tmp_path / f"plan-{time_aware}"
        REF.longmemeval_plan(_lme_file(tmp_path), folder, HashingEmbedder(64), "hashing:64",
                             None, tmp_path / "c", time_aware)
        main = json.loads((folder / "plan.json").read_text())["requests"]["main"]
        assert all(("asked_at" in a) is time_aware for a in main["asks"])
        assert all(("valid_from" in t) is time_aware for b in main["turns"] for t in b)


def test_a_child_importing_another_package_is_refused(tmp_path: Path) -> None:
    REF.locomo_plan(_locomo_file(tmp_path), tmp_path / "plan", HashingEmbedder(64),
                    "hashing:64", 1, tmp_path / "c")
    fake = tmp_path / "src"
    fake.mkdir()  # no package there: the child would time whichever memorywire it finds
    with pytest.raises(RuntimeError, match="not the package under"):
        REF.run_child(fake, tmp_path / "plan", "main", 1, False, python=sys.executable)


@pytest.mark.parametrize(("argv", "message"), [
    (["--rounds", "1"], "at least one of --locomo"),
    (["--locomo", "{missing}"], "no such file"),
    (["--locomo", "{file}", "--rounds", "0"], "--rounds must be at least 1"),
    (["--locomo", "{file}", "--repeat", "0"], "--repeat must be at least 1"),
    (["--locomo", "{file}", "--ref-src", "{tmp}"], "no memorywire package"),
])
def test_main_refuses_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    argv: list[str], message: str) -> None:
    file = _locomo_file(tmp_path)
    args = [a.format(missing=tmp_path / "nope.json", file=file, tmp=tmp_path) for a in argv]
    with pytest.raises(SystemExit) as exc:
        REF.main(args)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
