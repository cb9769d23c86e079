"""Latency, throughput, cold start and int8 agreement of the default MiniLM embedder.

Measures, on this machine:

* single-sentence latency (p50/p95, LRU disabled) for fp32 with 1 and 2 intra-op threads and
  int8 with 1 thread; short sentences of 11-16 tokens (and a 5-token one), several rounds,
  p50 of the round p50s;
* batch throughput (sentences/s) over 256 texts of mixed length, batch size 32;
* cold start in a fresh interpreter, from before ``import memorywire.embed`` to the first
  vector, with the model cache warm and with an empty cache (which builds the fp32 graph);
* int8 vs fp32 agreement: for each query, the overlap of the top-5 neighbours in a corpus.
  With ``--locomo PATH`` (locomo10.json) the corpus is the turns of the first conversation and
  the queries its questions; otherwise a small built-in corpus.

Other processes share the CPUs, so every figure is the median over rounds; compare runs taken
under similar load. Writes benchmarks/results/embedder.json; ``--json`` prints it too.

    .venv/bin/python benchmarks/embedder.py [--json] [--rounds 5] [--locomo PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from memorywire.embed import MiniLMEmbedder
from memorywire.embed.model_cache import cache_root

RESULTS = Path(__file__).parent / "results" / "embedder.json"

SHORT = [
    "The user prefers dark mode in every application.",
    "What did I say about the budget meeting last Tuesday?",
    "Remember that my daughter's birthday is on the 14th of March.",
    "I felt anxious before the interview but relieved afterwards.",
    "Merge the two notes about the project kickoff into one.",
    "Forget everything I told you about my old address.",
    "The quick brown fox jumps over the lazy dog again.",
    "My favourite coffee shop closes at six on Sundays.",
]

# [CLS] hello world . [SEP]: the kind of input behind the often-quoted "~2 ms" figures.
TINY = ["Hello world."]

_SUBJECTS = ["Alice", "the user", "my manager", "our team", "the landlord", "Grandma", "Sam"]
_FACTS = [
    "likes green tea in the morning",
    "moved to Lisbon last spring",
    "is allergic to peanuts",
    "asked for the report by Friday",
    "plays the cello on weekends",
    "forgot the meeting about the new office",
    "prefers email over phone calls",
    "booked a flight to Tokyo in October",
    "was nervous about the job interview",
    "keeps the spare key under the blue pot",
]


def _builtin_corpus() -> tuple[list[str], list[str]]:
    corpus = [f"{s.capitalize()} {f}." for s in _SUBJECTS for f in _FACTS]
    queries = [f"Who {f.split(' ', 1)[1]}?" for f in _FACTS] + [
        f"What do we know about {s}?" for s in _SUBJECTS
    ]
    return corpus, queries


def _locomo_corpus(path: Path) -> tuple[list[str], list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    conv = data[0]["conversation"]
    corpus = [
        f"{turn['speaker']}: {turn['text']}"
        for key, turns in conv.items()
        if key.startswith("session_") and isinstance(turns, list)
        for turn in turns
    ]
    queries = [qa["question"] for qa in data[0]["qa"]]
    return corpus, queries


def _latency(
    embedder: MiniLMEmbedder, rounds: int, calls: int, texts: list[str] = SHORT
) -> dict[str, float]:
    for text in texts:
        embedder.embed([text])
    p50s, samples = [], []
    for _ in range(rounds):
        times = []
        for i in range(calls):
            text = texts[i % len(texts)]
            t = time.perf_counter()
            embedder.embed([text])
            times.append(time.perf_counter() - t)
        p50s.append(float(np.percentile(times, 50)))
        samples.extend(times)
    return {
        "p50_ms": round(statistics.median(p50s) * 1e3, 3),
        "p95_ms": round(float(np.percentile(samples, 95)) * 1e3, 3),
        "min_ms": round(min(samples) * 1e3, 3),
    }


def _throughput(embedder: MiniLMEmbedder, texts: list[str], rounds: int) -> dict[str, float]:
    rates = []
    for _ in range(rounds):
        t = time.perf_counter()
        embedder.embed(texts)
        rates.append(len(texts) / (time.perf_counter() - t))
    return {"sentences_per_s": round(statistics.median(rates), 1)}


_COLD = """
import time, sys
t0 = time.perf_counter()
from pathlib import Path
from memorywire.embed import MiniLMEmbedder
e = MiniLMEmbedder(precision=sys.argv[2], cache_dir=Path(sys.argv[1]), cache_entries=0)
e.embed(["hello world"])
print(time.perf_counter() - t0)
"""


def _cold(cache_dir: Path, precision: str) -> tuple[float, float]:
    """(seconds inside the interpreter to the first vector, wall seconds of the process)."""
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _COLD, str(cache_dir), precision],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(out.strip().splitlines()[-1]), time.perf_counter() - t


def _cold_start(rounds: int) -> dict[str, Any]:
    warm_dir = cache_root()
    MiniLMEmbedder(cache_dir=warm_dir, precision="int8")  # ensure both models are cached
    result: dict[str, Any] = {}
    for precision in ("fp32", "int8"):
        runs = [_cold(warm_dir, precision) for _ in range(rounds)]
        result[f"warm_cache_{precision}_s"] = round(statistics.median(r[0] for r in runs), 3)
        result[f"warm_cache_{precision}_process_s"] = round(
            statistics.median(r[1] for r in runs), 3
        )
    builds = []
    for _ in range(max(1, rounds // 2)):
        with tempfile.TemporaryDirectory() as tmp:
            builds.append(_cold(Path(tmp), "fp32")[0])
    result["empty_cache_fp32_s"] = round(statistics.median(builds), 3)
    with tempfile.TemporaryDirectory() as tmp:
        result["empty_cache_int8_s"] = round(_cold(Path(tmp), "int8")[0], 3)
    return result


def _agreement(fp32: MiniLMEmbedder, int8: MiniLMEmbedder, locomo: Path | None) -> dict[str, Any]:
    corpus, queries = _locomo_corpus(locomo) if locomo else _builtin_corpus()
    k = 5
    overlaps = []
    c32, c8 = fp32.embed(corpus), int8.embed(corpus)
    q32, q8 = fp32.embed(queries), int8.embed(queries)
    top32 = np.argsort(-(q32 @ c32.T), axis=1)[:, :k]
    top8 = np.argsort(-(q8 @ c8.T), axis=1)[:, :k]
    for a, b in zip(top32, top8, strict=True):
        overlaps.append(len(set(a.tolist()) & set(b.tolist())) / k)
    cos = np.sum(c32 * c8, axis=1)
    return {
        "corpus": "locomo conversation 0" if locomo else "built-in",
        "corpus_size": len(corpus),
        "queries": len(queries),
        "top5_overlap_mean": round(float(np.mean(overlaps)), 4),
        "top1_same": round(float(np.mean(top32[:, 0] == top8[:, 0])), 4),
        "cosine_fp32_int8_mean": round(float(np.mean(cos)), 4),
        "cosine_fp32_int8_min": round(float(np.min(cos)), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", action="store_true", help="print the JSON result")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200, help="calls per latency round")
    parser.add_argument("--locomo", type=Path, default=None, help="path to locomo10.json")
    args = parser.parse_args()

    fp32 = MiniLMEmbedder(cache_entries=0)
    fp32_2 = MiniLMEmbedder(cache_entries=0, threads=2)
    int8 = MiniLMEmbedder(cache_entries=0, precision="int8")
    mixed = [SHORT[i % len(SHORT)] * (1 + i % 5) + f" #{i}" for i in range(256)]
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)},
        "latency_single": {
            "fp32_1_thread": _latency(fp32, args.rounds, args.calls),
            "fp32_2_threads": _latency(fp32_2, args.rounds, args.calls),
            "int8_1_thread": _latency(int8, args.rounds, args.calls),
            "fp32_1_thread_5_tokens": _latency(fp32, args.rounds, args.calls, TINY),
            "int8_1_thread_5_tokens": _latency(int8, args.rounds, args.calls, TINY),
        },
        "throughput_batch32": {
            "fp32_1_thread": _throughput(fp32, mixed, args.rounds),
            "fp32_2_threads": _throughput(fp32_2, mixed, args.rounds),
            "int8_1_thread": _throughput(int8, mixed, args.rounds),
        },
        "cold_start": _cold_start(args.rounds),
        "int8_agreement": _agreement(fp32, int8, args.locomo),
    }
    result["machine"]["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print_table(result)


def _print_table(result: dict[str, Any]) -> None:
    print(f"{'single sentence':<28}{'p50 ms':>10}{'p95 ms':>10}")
    for name, row in result["latency_single"].items():
        print(f"  {name:<26}{row['p50_ms']:>10.2f}{row['p95_ms']:>10.2f}")
    print(f"{'batch of 256, size 32':<28}{'sent/s':>10}")
    for name, row in result["throughput_batch32"].items():
        print(f"  {name:<26}{row['sentences_per_s']:>10.1f}")
    print("cold start (import + load + first vector), seconds")
    for name, value in result["cold_start"].items():
        print(f"  {name:<36}{value:>8.3f}")
    print("int8 vs fp32")
    for name, value in result["int8_agreement"].items():
        print(f"  {name:<36}{value!s:>24}")
    machine = result["machine"]
    print(
        f"{machine['cpus']} CPUs, 1-min load {machine['load_avg_1m']} at start, "
        f"{machine['load_avg_1m_end']} at end"
    )
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
