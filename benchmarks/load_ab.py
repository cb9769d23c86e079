"""A/B load test: a baseline commit against this tree, interleaved, on one machine.

On a shared machine one setup's throughput moves by 2x between runs as neighbours come and
go (and the disk's fsync time with them), so two runs made minutes apart compare the
neighbours, not the code. This script runs ``benchmarks/load.py``'s closed loop on the
baseline and on this tree alternately, in several rounds (the first arm of each round
alternates too), and reports each round's ratio, their median and spread, and server CPU
seconds per operation (which neighbours move far less than throughput). Then it holds an
open loop at ``--open-share`` (80%) of this tree's median closed-loop rate for
``--open-seconds`` (60), with the p99 of that run.

Both arms are commits (``--baseline``, default the last one before issue 20's throughput work,
and ``--current``, default ``HEAD``), each checked out into a temporary worktree under the
system temp folder (``git worktree add --detach``; removed afterwards unless
``--keep-trees``), so an edit made during the run cannot leak into it. Both servers start with
``PYTHONPATH`` naming their own ``src``: the same load generator, the same setup (SQLite,
MiniLM, governance, tokens) and the same venv, only the server's code differs.

    .venv/bin/python benchmarks/load_ab.py --json --out benchmarks/results/load-ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _load_server import ServerSetup
from load import _machine, run_setup

ROOT = Path(__file__).resolve().parents[1]
#: The last commit before issue 20's throughput work (what its filer measured against).
BASELINE = "c4f7d5a"


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def checkout(commit: str) -> tuple[Path, str]:
    """A detached worktree of ``commit`` in a fresh temp folder (one per run, so two runs
    never share or remove each other's), and the commit's full hash."""
    sha = _git("rev-parse", "--verify", f"{commit}^{{commit}}")
    where = Path(tempfile.mkdtemp(prefix=f"memorywire-ab-{sha[:9]}-")) / "tree"
    _git("worktree", "add", "--detach", str(where), sha)
    return where, sha


def _arm(src: Path, args: argparse.Namespace) -> ServerSetup:
    """Governance and tokens on, the server importing memorywire from ``src``."""
    return ServerSetup(args.store, args.embedder, True, True, {"PYTHONPATH": str(src)})


def _summary(xs: list[float]) -> dict[str, float]:
    a = np.array(xs, dtype=float)
    return {"median": round(float(np.median(a)), 4), "min": round(float(a.min()), 4),
            "max": round(float(a.max()), 4)}


def _short(run: dict[str, Any]) -> dict[str, Any]:
    keep = ("throughput_ops_s", "p50_ms", "p95_ms", "p99_ms", "errors", "throttled", "lost",
            "duplicated", "server_cpu_s_per_op", "client_cpu_s_per_op", "embed_batching",
            "seconds", "mode", "open_loop")
    out = {k: run.get(k) for k in keep}
    out["op_p99_ms"] = {op: o["p99_ms"] for op, o in run["operations"].items()}
    out["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--baseline", default=BASELINE, help=f"git commit (default {BASELINE})")
    ap.add_argument("--current", default="HEAD", help="git commit (default HEAD)")
    ap.add_argument("--rounds", type=int, default=4, help="alternating rounds (max 10)")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per closed-loop run")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--store", default="sqlite")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--open-seconds", type=float, default=60.0,
                    help="open loop on this tree afterwards; 0 skips it")
    ap.add_argument("--open-share", type=float, default=0.8,
                    help="open-loop rate as a share of this tree's median closed-loop rate")
    ap.add_argument("--keep-trees", action="store_true")
    ap.add_argument("--note", default="")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", help="also write the JSON report to this file")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    machine = _machine()
    trees: list[Path] = []
    load_args = argparse.Namespace(duration=args.duration, clients=max(1, min(args.clients, 64)),
                                   rate=None, max_requests=200_000, anon_health=0,
                                   anon_seconds=0.0)
    rounds: list[dict[str, Any]] = []
    try:
        base_src, sha = checkout(args.baseline)
        trees.append(base_src)
        cur_src, head = checkout(args.current)
        trees.append(cur_src)
        arms = {"baseline": _arm(base_src / "src", args),
                "current": _arm(cur_src / "src", args)}
        for n in range(max(1, min(args.rounds, 10))):
            order = ["baseline", "current"] if n % 2 == 0 else ["current", "baseline"]
            got: dict[str, Any] = {name: _short(run_setup(arms[name], load_args)) for name in order}
            got["order"] = order
            got["ratio"] = round(got["current"]["throughput_ops_s"]
                                 / max(got["baseline"]["throughput_ops_s"], 1e-9), 3)
            got["cpu_ratio"] = round(got["current"]["server_cpu_s_per_op"]
                                     / got["baseline"]["server_cpu_s_per_op"], 3)
            rounds.append(got)
            print(f"round {n + 1}: baseline {got['baseline']['throughput_ops_s']} ops/s, "
                  f"current {got['current']['throughput_ops_s']} ops/s, x{got['ratio']}",
                  file=sys.stderr)
        open_loop = None
        cur_tp = float(np.median([r["current"]["throughput_ops_s"] for r in rounds]))
        if args.open_seconds > 0:
            rate = round(cur_tp * args.open_share, 1)
            open_args = argparse.Namespace(**{**vars(load_args), "rate": rate,
                                              "duration": args.open_seconds})
            open_loop = {"rate_ops_s": rate, "share_of_closed_loop": args.open_share,
                         **_short(run_setup(arms["current"], open_args))}
    finally:
        if not args.keep_trees:
            for tree in trees:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(tree)], capture_output=True, check=False)
                shutil.rmtree(tree.parent, ignore_errors=True)

    def series(arm: str, key: str) -> list[float]:
        return [float(r[arm][key]) for r in rounds]

    keys = ("throughput_ops_s", "p99_ms", "server_cpu_s_per_op")
    report = {
        "baseline": {"commit": sha, "src": str(base_src),
                     **{k: _summary(series("baseline", k)) for k in keys}},
        "current": {"commit": head, "src": str(cur_src),
                    **{k: _summary(series("current", k)) for k in keys}},
        "ratio": _summary([r["ratio"] for r in rounds]),
        "cpu_per_op_ratio": _summary([r["cpu_ratio"] for r in rounds]),
        "lost": sum(r[a]["lost"] for r in rounds for a in ("baseline", "current")),
        "duplicated": sum(r[a]["duplicated"] for r in rounds for a in ("baseline", "current")),
        "open_loop": open_loop,
        "setup": arms["current"].describe() | {"server_env": {}},
        "load": f"{load_args.clients} closed-loop REST clients, {args.duration} s per run, "
                "remember 50% / recall 35% / forget 7% / gated remember + approve 8%",
        "machine": machine, "note": args.note, "rounds": rounds,
    }
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    if args.json:
        print(text)
    else:
        r = report
        print(f"baseline {sha[:9]} vs current {head[:9]}: throughput x{r['ratio']['median']} "
              f"(rounds {r['ratio']['min']}-{r['ratio']['max']}), server CPU per op "
              f"x{r['cpu_per_op_ratio']['median']}; p99 {r['baseline']['p99_ms']['median']} -> "
              f"{r['current']['p99_ms']['median']} ms")
        if open_loop:
            print(f"open loop {open_loop['rate_ops_s']}/s for {args.open_seconds} s: "
                  f"{open_loop['throughput_ops_s']} ops/s, p99 {open_loop['p99_ms']} ms, "
                  f"errors {open_loop['errors']}, lost {open_loop['lost']}")
    return 0 if report["lost"] == 0 and report["duplicated"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
