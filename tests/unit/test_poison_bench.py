"""The poison benchmark end to end at a small size: recovery removes every tainted memory
(taint judged by the payload in the text, not by the plan) and nothing clean."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "poison.py"


def test_small_poison_run_recovers_everything(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("memorywire_bench_poison", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--json", "--no-write", "--benign", "300", "--agents", "6",
                     "--poison", "12"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tainted_before"] > out["poison"]  # the poison did propagate
    assert out["completeness"] == 1.0
    assert out["collateral"] <= 0.01
    assert out["attack_success_before"] > 0.5 and out["attack_success_after"] == 0.0
    assert out["receipt_verifies"] is True
    # Directives planted in trusted memories (the held-out half of the corpus): the goal is
    # at most 1% of clean memories quarantined; recall and precision well above 0.5's rules
    # (0.09 and 0.23 on the same half, docs/benchmarks.md).
    assert out["false_quarantine"] <= 0.01
    assert out["detector_recall"] >= 0.8 and out["detector_precision"] >= 0.9
    assert out["detector"]["heldout"]["clean"] >= 900
