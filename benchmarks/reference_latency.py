r"""Issue 19's latency and ingest goals against the store the issue was written about.

Issue 19 asks for "recall p50 of the store (vectors given) at most 1.5x today's on both
benchmarks; ingest rate at least 0.8x today's". It was filed against c4f7d5a (its LoCoMo
store R@5 0.474 is that tree's). ``recall_latency.py`` measures a same-code proxy (today's
store with context keys and feedback off); this script measures the literal reading: the
store built from the sources of that commit, as that commit's benchmarks configured it,
against today's store as today's benchmarks build it.

Two versions of ``memorywire`` cannot be imported into one process, so each side runs in a
subprocess of its own (``_reference_child.py``) with ``PYTHONPATH`` naming its ``src``:
the reference from ``git archive REF src`` (default c4f7d5a) or ``--ref-src``, today's from
this checkout's ``src`` (or ``--main-src``). The sides alternate for ``--rounds`` rounds, the
first side swapped every round (R M, M R, R M, ...), so drifting machine load reaches both;
each round's ratios are reported, and their median.

The parent builds one plan per benchmark from the benchmarks' own loaders and vector caches
(``locomo.load``, ``longmemeval.load``, ``_retrieval.embed_cached``; nothing is embedded when
the cache holds the vectors) and writes each side's requests as that side's benchmark wrote
them:

* ``reference`` (c4f7d5a's ``locomo.py`` / ``longmemeval.py``): LoCoMo turns with metadata
  ``dia_id``, ``session``, ``date``, ``speaker``; LongMemEval user turns with ``session_id``,
  ``key``, ``date``; no context keys, no ``valid_from``, no ``asked_at``;
* ``main`` (today's): LoCoMo with ``metadata.context`` (the neighbouring turns); LongMemEval
  with the assistant reply as ``metadata.context``, ``valid_from`` = the session date and
  ``asked_at`` = the question date.

Rows on both sides: ``store`` (floors off: the benchmarks' ``store`` row, whose R@5 the issue
quotes) and ``store-floor`` (the constructor's defaults). Timed questions are those of
``recall_latency.py``: every ``--locomo-stride``-th LoCoMo question (k=10) and every scored
LongMemEval S question (k = the haystack). The first round's children also recall every
LoCoMo question once, untimed, so each side's R@5 over all categories 1-4 questions shows
that the store ranks as its era's benchmark said (c4f7d5a: 0.474), not that it is empty.

    nice -n 10 python benchmarks/reference_latency.py \
        --locomo ../shared/datasets/locomo/locomo10.json \
        --longmemeval ../shared/datasets/longmemeval/longmemeval_s_dev120.json.gz \
        [--ref c4f7d5a] [--rounds 4] [--repeat 3] [--json] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import locomo
import longmemeval
import numpy as np
from _retrieval import (
    default_cache,
    embed_cached,
    format_table,
    machine_info,
    stderr,
    write_result,
)

from memorywire.embed import default_embedder
from memorywire.embed.base import Embedder

HERE = Path(__file__).resolve().parent
CHILD = HERE / "_reference_child.py"
ROOT = HERE.parent
DEFAULT_REF = "c4f7d5a"
SIDES = ("reference", "main")
ROWS = ("store", "store-floor")
#: (today's row, the reference's row) pairs whose ratios are reported.
PAIRS = (("store", "store"), ("store-floor", "store-floor"), ("store-floor", "store"))
GOAL_RECALL = 1.5
GOAL_INGEST = 0.8
DEFAULT_OUT = Path(tempfile.gettempdir()) / "memorywire-bench" / "reference_latency.json"


# --- plans: what each side writes and asks ----------------------------------------------------

def _write_plan(folder: Path, embedder: str, batches: list[dict[str, Any]],
                requests: dict[str, dict[str, Any]], timed: list[int],
                turn_vecs: np.ndarray[Any, Any], q_vecs: np.ndarray[Any, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "turns.npy", np.asarray(turn_vecs, dtype=np.float32))
    np.save(folder / "questions.npy", np.asarray(q_vecs, dtype=np.float32))
    (folder / "plan.json").write_text(json.dumps(
        {"embedder": embedder, "batches": batches, "requests": requests, "timed": timed}),
        encoding="utf-8")


def locomo_plan(path: Path, folder: Path, embedder: Embedder, spec: str, stride: int,
                cache: Path | None) -> Callable[[dict[str, list[str]], int], float | None]:
    """Write LoCoMo's plan; return ``r_at(ids by question index, k)``: mean evidence recall
    over the categories 1-4 questions in ``ids``."""
    convs, _ = locomo.load(path)
    turn_vecs, _ = embed_cached(embedder, [t.content for c in convs for t in c.turns], cache)
    questions = [(c.sample_id, q) for c in convs for q in c.questions]
    q_vecs, _ = embed_cached(embedder, [q.text for _, q in questions], cache)
    batches: list[dict[str, Any]] = []
    flavours: dict[str, dict[str, Any]] = {s: {"turns": [], "asks": []} for s in SIDES}
    at = 0
    for conv in convs:
        batches.append({"agent_id": conv.sample_id, "start": at, "end": at + len(conv.turns)})
        at += len(conv.turns)
        for side, context in (("reference", False), ("main", True)):
            flavours[side]["turns"].append(
                [{"id": t.dia_id, "content": t.content,
                  "metadata": locomo._metadata(conv.turns, i, context)}
                 for i, t in enumerate(conv.turns)])
    for side in SIDES:
        flavours[side]["asks"] = [{"agent_id": agent, "query": q.text, "k": 10}
                                  for agent, q in questions]
    timed = [i for i in range(len(questions)) if i % stride == 0]
    _write_plan(folder, spec, batches, flavours, timed, turn_vecs, q_vecs)

    def r_at(ids: dict[str, list[str]], k: int) -> float | None:
        got = [(questions[int(i)][1], ranked) for i, ranked in ids.items()]
        if not any(q.category != 5 for q, _ in got):
            return None
        return float(locomo.score([q for q, _ in got], [r for _, r in got], k)["overall_1_4"])

    return r_at


def longmemeval_plan(path: Path, folder: Path, embedder: Embedder, spec: str,
                     limit: int | None, cache: Path | None, time_aware: bool = True,
                     ) -> Callable[[dict[str, list[str]], int], float | None]:
    """Write LongMemEval's plan; return ``r_at(ids, k)``: session recall_all@k.
    ``time_aware`` False leaves today's ``valid_from`` / ``asked_at`` out (``longmemeval.py
    --no-time``), to see what the time of asking costs."""
    questions, _ = longmemeval.load(path, limit)
    vecs, _ = embed_cached(embedder, [t.content for q in questions for t in q.turns], cache)
    q_vecs, _ = embed_cached(embedder, [q.text for q in questions], cache)
    batches: list[dict[str, Any]] = []
    flavours: dict[str, dict[str, Any]] = {s: {"turns": [], "asks": []} for s in SIDES}
    at = 0
    for q in questions:
        batches.append({"agent_id": q.qid, "start": at, "end": at + len(q.turns)})
        at += len(q.turns)
        depth = min(len(q.turns), 1000)
        flavours["reference"]["turns"].append(
            [{"id": f"t{i}", "content": t.content,
              "metadata": {"session_id": t.session, "key": t.key, "date": t.date}}
             for i, t in enumerate(q.turns)])
        flavours["reference"]["asks"].append({"agent_id": q.qid, "query": q.text, "k": depth})
        flavours["main"]["turns"].append(
            [{"id": f"t{i}", "content": t.content,
              "metadata": {"session": t.session, "key": t.key, "date": t.date,
                           **({"context": t.reply[:longmemeval.REPLY_CHARS]}
                              if t.reply.strip() else {})},
              **({"valid_from": longmemeval.date_ms(t.date)} if time_aware else {})}
             for i, t in enumerate(q.turns)])
        flavours["main"]["asks"].append({"agent_id": q.qid, "query": q.text, "k": depth,
                                         **({"asked_at": longmemeval.date_ms(q.date)}
                                            if time_aware else {})})
    _write_plan(folder, spec, batches, flavours, list(range(len(questions))), vecs, q_vecs)

    def r_at(ids: dict[str, list[str]], k: int) -> float | None:
        got = [(questions[int(i)], ranked) for i, ranked in ids.items()]
        if not got:
            return None
        keyed = [[q.turns[int(h[1:])].key for h in ranked] for q, ranked in got]
        scored = longmemeval.score([q for q, _ in got], keyed, [k])
        return float(scored["overall"][f"session_recall_all@{k}"])

    return r_at


# --- children ------------------------------------------------------------------------------

def extract(commit: str, dest: Path) -> Path:
    """``git archive COMMIT src`` unpacked under ``dest``; its ``src`` folder."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


def run_child(src: Path, plan: Path, flavour: str, repeat: int, warm_all: bool,
              python: str = sys.executable) -> dict[str, Any]:
    """One side, one round: the child's JSON, refused unless it imported ``src``'s package."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [python, str(CHILD), "--plan", str(plan), "--flavour", flavour,
           "--repeat", str(repeat), "--warm", "all" if warm_all else "timed"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"child for {src} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    out: dict[str, Any] = json.loads(done.stdout)
    if not Path(out["memorywire"]).resolve().is_relative_to(src.resolve()):
        raise RuntimeError(f"child imported {out['memorywire']}, not the package under {src}")
    return out


# --- numbers -------------------------------------------------------------------------------

def side_summary(child: dict[str, Any]) -> dict[str, Any]:
    """Per row: recall p50 / mean (ms), write rate (turns/s) and CPU per turn (us)."""
    turns = child["turns"]
    rows = {}
    for row, r in child["rows"].items():
        ms = r["recall_ms"]
        rows[row] = {"p50_ms": round(float(np.percentile(ms, 50)), 3),
                     "mean_ms": round(float(np.mean(ms)), 3),
                     "write_turns_per_s": round(turns / r["write_s"], 1),
                     "write_cpu_us_per_turn": round(r["write_cpu_s"] / turns * 1e6, 1),
                     "mean_hits": round(float(np.mean([len(v) for v in r["ids"].values()])), 1)
                     if r["ids"] else None}
    # Both rows' writes together: CPU time is the whole process's, so work one row's write
    # leaves to a thread can be charged to the other row's; their sum is charged right.
    n_rows = len(child["rows"])
    both = {"write_turns_per_s": round(n_rows * turns / sum(
                r["write_s"] for r in child["rows"].values()), 1),
            "write_cpu_us_per_turn": round(sum(
                r["write_cpu_s"] for r in child["rows"].values()) / (n_rows * turns) * 1e6, 1)}
    return {"rows": rows, "ingest_all_rows": both, "turns": turns,
            "model_calls": child["model_calls"],
            "load_avg_1m": [round(child["load_avg_1m_start"], 2),
                            round(child["load_avg_1m_end"], 2)]}


def round_ratios(ref: dict[str, Any], main: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Today's over the reference's, per (today's row, reference row) pair of ``PAIRS``:
    recall p50 and mean (goal <= 1.5), ingest rate by wall clock and by CPU (goal >= 0.8)."""
    out = {}
    for mine, theirs in PAIRS:
        m, r = main["rows"][mine], ref["rows"][theirs]
        out[f"{mine}/{theirs}"] = {
            "recall_p50": round(m["p50_ms"] / r["p50_ms"], 3),
            "recall_mean": round(m["mean_ms"] / r["mean_ms"], 3),
            "ingest_wall": round(m["write_turns_per_s"] / r["write_turns_per_s"], 3),
            "ingest_cpu": round(r["write_cpu_us_per_turn"] / m["write_cpu_us_per_turn"], 3)}
    m, r = main["ingest_all_rows"], ref["ingest_all_rows"]
    out["all rows (ingest)"] = {
        "ingest_wall": round(m["write_turns_per_s"] / r["write_turns_per_s"], 3),
        "ingest_cpu": round(r["write_cpu_us_per_turn"] / m["write_cpu_us_per_turn"], 3)}
    return out


def median_ratios(rounds: Sequence[dict[str, dict[str, float]]]) -> dict[str, dict[str, Any]]:
    """The median of each ratio over the rounds, with its range and the goal's verdict."""
    if not rounds:
        raise ValueError("no rounds to summarise")
    out: dict[str, dict[str, Any]] = {}
    for pair in rounds[0]:
        out[pair] = {}
        for metric in rounds[0][pair]:
            vals = [r[pair][metric] for r in rounds]
            med = round(float(np.median(vals)), 3)
            goal_met = (med <= GOAL_RECALL) if metric.startswith("recall") else \
                (med >= GOAL_INGEST)
            out[pair][metric] = {"median": med, "min": min(vals), "max": max(vals),
                                 "met": goal_met}
    return out


def side_order(round_no: int) -> tuple[str, str]:
    """Who goes first: the reference in even rounds, today's in odd ones."""
    return SIDES if round_no % 2 == 0 else (SIDES[1], SIDES[0])


def bench_one(name: str, plan: Path, r_at: Callable[[dict[str, list[str]], int], float | None],
              srcs: dict[str, Path], rounds: int, repeat: int) -> dict[str, Any]:
    per_round: list[dict[str, Any]] = []
    quality: dict[str, dict[str, Any]] = {}
    first_ids: dict[str, dict[str, Any]] = {}
    stable = True
    for n in range(rounds):
        got: dict[str, dict[str, Any]] = {}
        for side in side_order(n):
            load = machine_info()["load_avg_1m"]
            stderr(f"{name}: round {n + 1}/{rounds}, {side} (load {load})")
            child = run_child(srcs[side], plan, side, repeat, warm_all=n == 0)
            got[side] = {**side_summary(child), "load_avg_1m_parent": load}
            ids = {row: child["rows"][row]["ids"] for row in ROWS}
            if n == 0:
                first_ids[side] = ids
                quality[side] = {row: {f"r@{k}": r_at(ids[row], k) for k in (5, 10)}
                                 for row in ROWS}
            else:
                stable &= all(first_ids[side][row][i] == ids[row][i]
                              for row in ROWS for i in ids[row])
        per_round.append({"order": list(side_order(n)), **got,
                          "ratios": round_ratios(got["reference"], got["main"])})
    return {"rounds": per_round, "median": median_ratios([r["ratios"] for r in per_round]),
            "quality": quality, "rankings_stable_across_rounds": stable,
            "timed_questions": len(json.loads((plan / "plan.json").read_text())["timed"])}


def run(locomo_path: Path | None, lme_path: Path | None, *, ref: str, ref_src: Path | None,
        main_src: Path, rounds: int, repeat: int, stride: int, limit: int | None,
        work: Path, embedder: Embedder | None = None, embedder_spec: str = "minilm",
        cache_root: Path | None = None, time_aware: bool = True) -> dict[str, Any]:
    started = time.perf_counter()
    machine = machine_info()
    embedder = embedder or default_embedder()
    srcs = {"reference": ref_src or extract(ref, work / ref), "main": main_src}

    def cache(path: Path) -> Path:
        return default_cache(path) if cache_root is None else cache_root / path.name

    results: dict[str, Any] = {}
    if locomo_path is not None:
        r_at = locomo_plan(locomo_path, work / "plan-locomo", embedder, embedder_spec, stride,
                           cache(locomo_path))
        results["locomo"] = bench_one("locomo", work / "plan-locomo", r_at, srcs, rounds,
                                      repeat)
    if lme_path is not None:
        r_at = longmemeval_plan(lme_path, work / "plan-lme", embedder, embedder_spec, limit,
                                cache(lme_path), time_aware)
        results["longmemeval_s"] = bench_one("longmemeval_s", work / "plan-lme", r_at, srcs,
                                             rounds, repeat)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False).stdout.strip()
    return {
        "benchmark": "reference_latency", "date": date.today().isoformat(),
        "reference": {"commit": ref if ref_src is None else None, "src": str(srcs["reference"])},
        "main": {"head": head, "src": str(main_src)},
        "embedder": embedder.name, "rounds": rounds, "repeat": repeat,
        "locomo_stride": stride, "longmemeval_limit": limit, "time_aware": time_aware,
        "rows": {"store": "relevance_floor=lexical_floor=-1 (the benchmarks' store row)",
                 "store-floor": "the constructor's defaults"},
        "goals": {"recall_p50_at_most": GOAL_RECALL, "ingest_at_least": GOAL_INGEST},
        "results": results, "wall_s": round(time.perf_counter() - started, 1),
        "machine": {**machine, "load_avg_1m_end": machine_info()["load_avg_1m"]},
    }


def table(r: dict[str, Any]) -> str:
    lines = [f"today's store ({r['main']['head']}) over the reference "
             f"({r['reference']['commit'] or r['reference']['src']}), vectors given; "
             f"{r['rounds']} alternated rounds, embedder {r['embedder']}", ""]
    for bench, res in r["results"].items():
        rows = []
        for n, rd in enumerate(res["rounds"]):
            for side in SIDES:
                for row in ROWS:
                    v = rd[side]["rows"][row]
                    rows.append([f"{bench} r{n + 1}", side, row, v["p50_ms"], v["mean_ms"],
                                 v["write_turns_per_s"], v["write_cpu_us_per_turn"],
                                 f"{rd[side]['load_avg_1m'][0]} -> {rd[side]['load_avg_1m'][1]}"])
        lines += [format_table(["round", "side", "row", "p50 ms", "mean ms", "writes turns/s",
                                "CPU us/turn", "load 1m"], rows), ""]
        ratio_rows = []
        for pair, med in res["median"].items():
            recall = "recall_p50" in med
            per = [rd["ratios"][pair]["recall_p50" if recall else "ingest_wall"]
                   for rd in res["rounds"]]
            ratio_rows.append([
                f"{bench} {pair}", " ".join(f"{x:.2f}" for x in per),
                med["recall_p50"]["median"] if recall else None,
                med["recall_mean"]["median"] if recall else None,
                med["ingest_wall"]["median"], med["ingest_cpu"]["median"],
                ("met" if med["recall_p50"]["met"] else "not met") if recall else None,
                "met" if med["ingest_wall"]["met"] else "not met"])
        lines += [format_table(["today/reference", "p50 (ingest) per round", "p50 median",
                                "mean median", "ingest median", "ingest CPU median",
                                f"recall <= {GOAL_RECALL}x", f"ingest >= {GOAL_INGEST}x"],
                               ratio_rows), ""]
        q = res["quality"]
        lines.append(f"{bench} R@5 / R@10 (round 1): " + "; ".join(
            f"{side} {row} {q[side][row]['r@5']:.3f} / {q[side][row]['r@10']:.3f}"
            for side in SIDES for row in ROWS if q[side][row]["r@5"] is not None)
            + f"; rankings stable across rounds: {res['rankings_stable_across_rounds']}")
        lines.append("")
    m = r["machine"]
    lines.append(f"wall {r['wall_s']} s; load {m['load_avg_1m']} -> {m['load_avg_1m_end']} "
                 f"on {m['cpus']} CPUs")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=None, help="path to locomo10.json")
    parser.add_argument("--longmemeval", type=Path, default=None,
                        help="path to longmemeval_s_dev120.json.gz")
    parser.add_argument("--ref", default=DEFAULT_REF,
                        help=f"commit of the reference store (default {DEFAULT_REF})")
    parser.add_argument("--ref-src", type=Path, default=None,
                        help="an unpacked src folder to use instead of --ref")
    parser.add_argument("--main-src", type=Path, default=ROOT / "src",
                        help="today's src folder (default: this checkout's)")
    parser.add_argument("--rounds", type=int, default=4, help="alternated rounds (default 4)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed passes over the questions per child (default 3)")
    parser.add_argument("--locomo-stride", type=int, default=5,
                        help="time every N-th LoCoMo question (default 5)")
    parser.add_argument("--longmemeval-limit", type=int, default=None,
                        help="the first N LongMemEval questions (default: all)")
    parser.add_argument("--no-time", action="store_true",
                        help="today's LongMemEval requests without valid_from / asked_at "
                             "(as longmemeval.py --no-time)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"result file (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if args.locomo is None and args.longmemeval is None:
        parser.error("name at least one of --locomo, --longmemeval")
    for flag, path in (("--locomo", args.locomo), ("--longmemeval", args.longmemeval)):
        if path is not None and not path.is_file():
            parser.error(f"{flag} {path}: no such file")
    for flag, src in (("--ref-src", args.ref_src), ("--main-src", args.main_src)):
        if src is not None and not (src / "memorywire" / "__init__.py").is_file():
            parser.error(f"{flag} {src}: no memorywire package in it")
    for flag, n in (("--rounds", args.rounds), ("--repeat", args.repeat),
                    ("--locomo-stride", args.locomo_stride),
                    ("--longmemeval-limit", args.longmemeval_limit or 1)):
        if n < 1:
            parser.error(f"{flag} must be at least 1, got {n}")
    with tempfile.TemporaryDirectory(prefix="mw-reference-latency-") as tmp:
        result = run(args.locomo, args.longmemeval, ref=args.ref, ref_src=args.ref_src,
                     main_src=args.main_src, rounds=args.rounds, repeat=args.repeat,
                     stride=args.locomo_stride, limit=args.longmemeval_limit, work=Path(tmp),
                     time_aware=not args.no_time)
    return write_result(result, args.out or DEFAULT_OUT, "reference_latency.json",
                        as_json=args.json, table=table)


if __name__ == "__main__":
    sys.exit(main())
