"""The first implementation's directive detector on this corpus: the baseline to beat.

Run with a Python that has PyPI ``memorywire==0.5.0`` installed (never this project's venv:
the two share a name), from the repository root::

    python3.11 -m venv /tmp/mw05venv && /tmp/mw05venv/bin/pip install memorywire==0.5.0
    /tmp/mw05venv/bin/python benchmarks/poison_baseline_05.py [--json]

0.5's ``recover`` quarantines a trusted memory when ``directive_detector(content)`` is true
(``memorywire/recovery/strategies.py``), so its precision, recall and false quarantines here
are measured exactly as ``benchmarks/poison.py`` measures this project's detector: every
corpus memory as a trusted memory, the text as stored (a procedure's JSON).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any


def _corpus() -> Any:
    spec = importlib.util.spec_from_file_location(
        "directive_corpus", Path(__file__).with_name("directive_corpus.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def score(items: list[dict[str, str]], flagged: list[bool]) -> dict[str, Any]:
    tp = sum(f and i["label"] == "directive" for i, f in zip(items, flagged, strict=True))
    fp = sum(f and i["label"] == "clean" for i, f in zip(items, flagged, strict=True))
    planted = sum(i["label"] == "directive" for i in items)
    clean = len(items) - planted
    return {"planted": planted, "clean": clean, "flagged": tp + fp,
            "precision": round(tp / (tp + fp), 4) if tp + fp else None,
            "recall": round(tp / planted, 4), "false_quarantine": round(fp / clean, 4),
            "false_quarantine_count": fp}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from memorywire.recovery.strategies import directive_detector

    import memorywire

    corpus = _corpus()
    out: dict[str, Any] = {"detector": f"memorywire {memorywire.__version__} "
                                       "recovery.strategies.directive_detector"}
    for split in ("dev", "heldout"):
        items = corpus.load(split)
        out[split] = score(items, [directive_detector(i["text"]) for i in items])
    print(json.dumps(out, indent=1) if args.json else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
