r"""Build a LongMemEval S-like held-out file from the oracle file and the S dev120 file.

Why: the project's only full S haystacks are the 120 dev questions, and every ranking rule
was tuned on them. The other 380 questions exist only in the oracle file, whose haystack is
the evidence sessions alone (one to six), which measures almost nothing. This script gives
each of those questions an S-shaped haystack so the defaults can be *reported* on questions
nobody tuned on; the file it writes is read by ``benchmarks/longmemeval.py --data`` like any
S file. The held-out file is for reporting only: tuning on it would turn it into a second
dev set (docs/benchmarks.md, "LongMemEval S held-out").

Construction (deterministic for a given ``--seed``; every question draws from its own
generator, seeded by the seed and its question id, so a subset builds the same haystacks):

* questions: the oracle's questions whose id is not in the dev file, less any whose evidence
  session also sits in a dev haystack (tuning has seen that evidence);
* haystack size: drawn from the dev file's haystack sizes (41 to 56 sessions, ~48);
* evidence: the question's own oracle sessions with their own dates, unchanged (the oracle's
  copies are byte-identical to the S haystacks' for the dev questions);
* distractors: drawn without replacement from the dev haystacks' sessions that are evidence
  for no question of the oracle (real S filler: ShareGPT, UltraChat and simulated user
  chats, in S's proportions), so the same filler recurs across held-out questions;
* dates: each distractor gets a minute drawn uniformly from the question's window, from the
  earlier of its first evidence session and ten days before the question (S haystacks span
  ten days before the question unless the evidence reaches further back) to the question
  date; the haystack is then ordered by date, as S's are.

    python benchmarks/longmemeval_heldout.py \
        --oracle ../shared/datasets/longmemeval/longmemeval_oracle.json.gz \
        --s-dev ../shared/datasets/longmemeval/longmemeval_s_dev120.json.gz \
        --out /tmp/longmemeval_heldout.json.gz [--seed 31] [--sample N] [--rebuild-dev] \
        [--half all|dev|heldout]

``--half`` splits the held-out questions once more, because their numbers have been seen
(docs/benchmarks.md, "lme31c"): ``dev`` (dev-b, may be tuned on) and ``heldout``
(held-out-b, reported only). The rule is fixed before any result, does not depend on the
seed, and is balanced by question type: within each type, questions are ordered by the
sha256 of their ``question_id`` and alternate, dev-b first. A half holds the same haystacks
as the whole file (each question draws its own), so it needs no rebuild of the other.

``--rebuild-dev`` builds the 120 dev questions the same way (their oracle evidence plus drawn
filler), so a run on it beside the real dev120 file shows how far the construction itself
moves the numbers.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

#: S dates look like ``2023/05/20 (Sat) 00:29``.
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
#: How far before the question an S haystack reaches when its evidence does not reach further
#: (the dev file's median span from the first session to the question).
WINDOW = timedelta(days=10)
DEFAULT_SEED = 31
HALVES = ("all", "dev", "heldout")

Entry = dict[str, Any]
Session = tuple[str, list[dict[str, Any]]]


def read(path: Path) -> list[Entry]:
    """A LongMemEval file, gzipped or not."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of questions")
    return data


def parse_date(text: str) -> datetime:
    """The naive datetime of an S date (the day name is ignored: it follows from the date)."""
    day, _, clock = text.split(" ")
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M")


def format_date(when: datetime) -> str:
    return when.strftime(DATE_FORMAT)


def evidence_ids(entries: list[Entry]) -> set[str]:
    return {sid for e in entries for sid in e["answer_session_ids"]}


def filler_pool(dev: list[Entry], evidence: set[str]) -> list[Session]:
    """The dev haystacks' sessions that answer no question, one copy each, ordered by id so
    the pool (and every draw from it) does not depend on the dev file's order."""
    pool: dict[str, list[dict[str, Any]]] = {}
    for e in dev:
        for sid, session in zip(e["haystack_session_ids"], e["haystack_sessions"], strict=True):
            if sid in evidence or sid.startswith("answer_"):
                continue
            if any(turn.get("has_answer") for turn in session):
                continue  # never seen in S filler; refuse it rather than plant a gold turn
            pool.setdefault(sid, session)
    return sorted(pool.items())


def held_out_questions(oracle: list[Entry], dev: list[Entry]) -> tuple[list[Entry], list[str]]:
    """The oracle questions outside the dev file, and those left out because a dev haystack
    holds one of their evidence sessions."""
    dev_ids = {e["question_id"] for e in dev}
    dev_sessions = {sid for e in dev for sid in e["haystack_session_ids"]}
    kept: list[Entry] = []
    shared: list[str] = []
    for e in oracle:
        if e["question_id"] in dev_ids:
            continue
        if set(e["haystack_session_ids"]) & dev_sessions:
            shared.append(e["question_id"])
        else:
            kept.append(e)
    return kept, shared


def build_entry(entry: Entry, pool: list[Session], sizes: list[int], seed: int) -> Entry:
    """One held-out question with an S-like haystack (see the module docstring)."""
    rng = random.Random(f"{seed}:{entry['question_id']}")
    asked = parse_date(entry["question_date"])
    own = list(zip(entry["haystack_session_ids"], entry["haystack_sessions"],
                   entry["haystack_dates"], strict=True))
    first = min([parse_date(d) for _, _, d in own], default=asked)
    start = min(first, asked - WINDOW)
    minutes = max(1, int((asked - start).total_seconds() // 60))
    size = rng.choice(sizes)
    fillers = rng.sample(pool, max(0, size - len(own)))
    rows = [(parse_date(d), sid, session, d) for sid, session, d in own]
    for sid, session in fillers:
        when = start + timedelta(minutes=rng.randrange(minutes))
        rows.append((when, sid, session, format_date(when)))
    rows.sort(key=lambda r: r[0])  # stable: evidence dated alike keeps the oracle's order
    return {
        **{k: v for k, v in entry.items() if not k.startswith("haystack_")},
        "haystack_dates": [r[3] for r in rows],
        "haystack_session_ids": [r[1] for r in rows],
        "haystack_sessions": [r[2] for r in rows],
    }


def half_of(entries: list[Entry]) -> dict[str, str]:
    """Each question id's half, ``dev`` or ``heldout``: within a question type, ordered by
    the sha256 of the id, the first, third, ... go to ``dev`` (so each type splits evenly,
    dev-b taking the odd one out, and no question moves when another is added to a type)."""
    by_type: dict[str, list[str]] = {}
    for e in entries:
        by_type.setdefault(e["question_type"], []).append(e["question_id"])
    halves: dict[str, str] = {}
    for ids in by_type.values():
        ranked = sorted(ids, key=lambda qid: hashlib.sha256(qid.encode("utf-8")).hexdigest())
        for i, qid in enumerate(ranked):
            halves[qid] = "dev" if i % 2 == 0 else "heldout"
    return halves


def sample_questions(entries: list[Entry], n: int, seed: int) -> list[Entry]:
    """``n`` questions in proportion to the question types (largest remainders), seeded, in
    the source order."""
    by_type: dict[str, list[Entry]] = {}
    for e in entries:
        by_type.setdefault(e["question_type"], []).append(e)
    shares = {t: n * len(group) / len(entries) for t, group in by_type.items()}
    counts = {t: int(s) for t, s in shares.items()}
    for t in sorted(shares, key=lambda t: (counts[t] - shares[t], t))[:n - sum(counts.values())]:
        counts[t] += 1
    rng = random.Random(f"{seed}:sample:{n}")
    picked = {id(e) for t, group in sorted(by_type.items()) for e in rng.sample(group, counts[t])}
    return [e for e in entries if id(e) in picked]


def build(oracle: list[Entry], dev: list[Entry], seed: int = DEFAULT_SEED,
          sample: int | None = None, rebuild_dev: bool = False, half: str = "all",
          ) -> tuple[list[Entry], dict[str, Any]]:
    """The held-out file's questions and a summary of how they were built; ``rebuild_dev``
    builds the *dev* questions the same way instead, to compare the construction with their
    real S haystacks (a check of the method, not a second held-out set). ``half`` keeps
    one half of the held-out questions (:func:`half_of`); ``all`` keeps both."""
    if half not in HALVES:
        raise ValueError(f"--half {half!r}: must be one of {', '.join(HALVES)}")
    if half != "all" and rebuild_dev:
        raise ValueError("--half splits the held-out questions; it cannot go with "
                         "--rebuild-dev")
    questions, shared = held_out_questions(oracle, dev)
    if half != "all":
        halves = half_of(questions)
        questions = [e for e in questions if halves[e["question_id"]] == half]
    if rebuild_dev:
        dev_ids = {e["question_id"] for e in dev}
        questions, shared = [e for e in oracle if e["question_id"] in dev_ids], []
    if sample is not None:
        if not 0 < sample <= len(questions):
            raise ValueError(f"--sample {sample}: must be between 1 and {len(questions)}")
        questions = sample_questions(questions, sample, seed)
    pool = filler_pool(dev, evidence_ids(oracle) | evidence_ids(dev))
    sizes = sorted(len(e["haystack_session_ids"]) for e in dev)
    if not pool or not sizes:
        raise ValueError("the dev file holds no filler sessions to draw distractors from")
    built = [build_entry(e, pool, sizes, seed) for e in questions]
    uses = Counter(sid for e in built for sid in e["haystack_session_ids"]
                   if sid not in set(e["answer_session_ids"]))
    summary = {
        "seed": seed,
        "questions_from": "dev (rebuilt, a check of the construction)" if rebuild_dev
                          else "held-out",
        "half": half,
        "questions": len(built),
        "abstention": sum(e["question_id"].endswith("_abs") for e in built),
        "by_type": dict(sorted(Counter(e["question_type"] for e in built).items())),
        "left_out_sharing_dev_evidence": shared,
        "filler_pool_sessions": len(pool),
        "filler_sessions_used": len(uses),
        "filler_uses_per_session_max": max(uses.values(), default=0),
        "filler_uses_per_session_mean": round(sum(uses.values()) / max(1, len(uses)), 2),
        "haystack_sessions_mean": round(sum(len(e["haystack_session_ids"]) for e in built)
                                        / max(1, len(built)), 2),
    }
    return built, summary


def write(entries: list[Entry], out: Path) -> str:
    """Write ``entries`` (gzipped when ``out`` ends in .gz, with no timestamp in the header,
    so a rebuild is byte-identical); its sha256."""
    payload = json.dumps(entries, ensure_ascii=False).encode("utf-8")
    if out.suffix == ".gz":
        payload = gzip.compress(payload, mtime=0)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(payload)
    return hashlib.sha256(payload).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--oracle", type=Path, required=True,
                        help="longmemeval_oracle.json[.gz] (all 500 questions)")
    parser.add_argument("--s-dev", type=Path, required=True,
                        help="longmemeval_s_dev120.json[.gz] (the dev questions and the "
                             "filler the distractors come from)")
    parser.add_argument("--out", type=Path, required=True,
                        help="the held-out file to write (.json or .json.gz); keep it out "
                             "of the repository")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--sample", type=int, default=None, metavar="N",
                        help="only N held-out questions, drawn (seeded) in proportion to "
                             "the question types")
    parser.add_argument("--rebuild-dev", action="store_true",
                        help="build the dev questions' haystacks this way instead, to set "
                             "beside their real S haystacks (checks the construction)")
    parser.add_argument("--half", choices=HALVES, default="all",
                        help="only one half of the held-out questions: dev (dev-b, may be "
                             "tuned on) or heldout (held-out-b, reported only); within each "
                             "question type, ordered by sha256 of the question id, "
                             "alternating, dev first (default: all)")
    args = parser.parse_args(argv)
    for flag, path in (("--oracle", args.oracle), ("--s-dev", args.s_dev)):
        if not path.is_file():
            parser.error(f"{flag} {path}: no such file")
    try:
        entries, summary = build(read(args.oracle), read(args.s_dev), args.seed, args.sample,
                                 args.rebuild_dev, args.half)
    except (ValueError, KeyError) as exc:
        parser.error(f"cannot build the held-out file: {exc}")
    summary["sha256"] = write(entries, args.out)
    summary["out"] = str(args.out)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
