"""benchmarks/load_ab.py end to end at a tiny size: both arms run, the ratio is theirs, the
open loop runs at the asked share of this tree's rate, and the baseline tree is removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

AB = Path(__file__).resolve().parents[2] / "benchmarks" / "load_ab.py"


def test_ab_report_pairs_rounds_and_cleans_up(tmp_path: Path) -> None:
    out = tmp_path / "ab.json"
    proc = subprocess.run(
        [sys.executable, str(AB), "--baseline", "HEAD~1", "--rounds", "2", "--duration", "1",
         "--clients", "2", "--embedder", "hashing", "--open-seconds", "1", "--open-share",
         "0.5", "--json", "--out", str(out)],
        capture_output=True, text=True, timeout=400, env={**os.environ},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report == json.loads(out.read_text(encoding="utf-8"))
    rounds = report["rounds"]
    assert [r["order"] for r in rounds] == [["baseline", "current"], ["current", "baseline"]]
    for r in rounds:
        got = r["current"]["throughput_ops_s"] / r["baseline"]["throughput_ops_s"]
        assert abs(r["ratio"] - got) < 0.01
        assert r["baseline"]["lost"] == 0 and r["current"]["duplicated"] == 0
    ratios = sorted(r["ratio"] for r in rounds)
    assert report["ratio"]["min"] == ratios[0] and report["ratio"]["max"] == ratios[-1]
    median_tp = sum(r["current"]["throughput_ops_s"] for r in rounds) / 2
    assert abs(report["open_loop"]["rate_ops_s"] - round(median_tp * 0.5, 1)) < 0.11
    assert report["open_loop"]["mode"].startswith("open loop")
    assert report["setup"]["governance"] and report["setup"]["auth"]
    listed = subprocess.run(["git", "-C", str(AB.parent), "worktree", "list"],
                            capture_output=True, text=True, check=True).stdout
    for arm in ("baseline", "current"):
        tree = Path(report[arm]["src"])
        assert not tree.exists() and str(tree) not in listed  # the temporary worktree is gone
