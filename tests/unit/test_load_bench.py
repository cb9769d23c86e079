"""benchmarks/load.py end to end at a tiny size: its JSON contract and its write ledger."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "load.py"


def test_load_json_keeps_its_contract_and_loses_no_write(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    proc = subprocess.run(
        [sys.executable, str(LOAD), "--duration", "1.5", "--clients", "2", "--store", "sqlite",
         "--embedder", "hashing", "--anon-health", "1", "--anon-seconds", "0.5", "--json",
         "--out", str(out)],
        capture_output=True, text=True, timeout=240, env={**os.environ},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report == json.loads(out.read_text(encoding="utf-8"))
    for key in ("throughput_ops_s", "p50_ms", "p99_ms", "lost", "duplicated", "setup"):
        assert key in report, key
    assert report["setup"] == {"store": "sqlite", "embedder": "hashing-bow-64", "governance": True,
                               "auth": True, "tracing": False, "server_env": {}}
    run = report["runs"][0]
    assert report["lost"] == 0 and report["duplicated"] == 0
    assert run["errors"] == 0 and run["acknowledged_writes"] > 0
    assert run["throughput_ops_s"] > 0 and run["server_cpu_s_per_op"] > 0
    assert {"remember", "recall"} <= set(run["operations"])
    assert run["anon_health"]["flooded"]["health_calls"] > 0


@pytest.mark.parametrize(("flag", "value"), [
    ("--clients", "65"), ("--open-workers", "0"), ("--duration", "601"), ("--rounds", "11"),
    ("--rate", "0")])
def test_an_out_of_range_flag_is_refused_by_name(flag: str, value: str) -> None:
    # before: quietly clamped into range, so the report described a run nobody asked for
    proc = subprocess.run([sys.executable, str(LOAD), flag, value, "--json"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert flag in proc.stderr and "between" in proc.stderr
