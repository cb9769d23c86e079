"""The subject gate's trade on the per-user fact corpus: answers withheld against no-match
probes left empty, as its two thresholds move (``core.subject_gate``).

For each (``SUBJECT_MIN_COSINE``, ``SUBJECT_MIN_GAP``) point the store row of
``facts.py`` is run again with those thresholds (the module's constants, set for the run:
a benchmark knob, not a setting) and reports, per split, ``answerable_empty``,
``no_match_empty``, ``r_at_1`` and ``r_at_5``. The defaults were chosen on the dev half only:
the point that leaves the most no-match probes empty while at most 1% of the answerable
dev questions come back empty (docs/benchmarks.md, "rank31b"). The held-out half is
reported, never used to choose.

    python benchmarks/facts_curve.py [--json] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from _retrieval import format_table, machine_info
from facts import MEMORIES, QUESTIONS, SPLITS, _load, _metrics, _store_answers

from memorywire.core import subject_gate
from memorywire.embed import default_embedder

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "facts_curve.json"
#: (min cosine, min gap): the defaults, stricter and looser points around them, and the
#: gate off by cosine (1.0: only the lead counts) or by lead (1.0: only the cosine counts).
POINTS = ((0.22, 0.04), (0.22, 0.06), (0.22, 0.08), (0.22, 0.10), (0.22, 0.12),
          (0.22, 0.15), (0.22, 0.20), (0.16, 0.08), (0.30, 0.08), (1.0, 0.08),
          (0.12, 1.0), (0.16, 1.0), (0.20, 1.0))


async def run() -> dict[str, Any]:
    memories, questions = _load(MEMORIES), _load(QUESTIONS)
    embedder = default_embedder()
    defaults = (subject_gate.SUBJECT_MIN_COSINE, subject_gate.SUBJECT_MIN_GAP)
    points = []
    try:
        for cosine, gap in POINTS:
            subject_gate.SUBJECT_MIN_COSINE, subject_gate.SUBJECT_MIN_GAP = cosine, gap
            with tempfile.TemporaryDirectory() as tmp:
                answers = await _store_answers(memories, questions, embedder, Path(tmp))
            points.append({"min_cosine": cosine, "min_gap": gap,
                           "default": (cosine, gap) == defaults,
                           **{split: _metrics([q for q in questions if q["split"] == split],
                                              answers) for split in SPLITS}})
    finally:
        subject_gate.SUBJECT_MIN_COSINE, subject_gate.SUBJECT_MIN_GAP = defaults
    return {"embedder": embedder.name, "machine": machine_info(), "points": points}


def _table(result: dict[str, Any]) -> str:
    head = ["min cosine", "min gap", "split", "answerable empty", "no-match empty", "R@1", "R@5"]
    rows = [[f"{p['min_cosine']}{' (default)' if p['default'] else ''}", p["min_gap"], split,
             p[split]["answerable_empty"], p[split]["no_match_empty"], p[split]["r_at_1"],
             p[split]["r_at_5"]] for p in result["points"] for split in SPLITS]
    return format_table(head, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help=f"result file (default {RESULTS.relative_to(HERE.parent)})")
    args = parser.parse_args(argv)
    result = anyio.run(run)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    print(json.dumps(result) if args.json else _table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
