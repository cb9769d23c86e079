"""Adversarial fusion: how far can one lying store push its ids into a fused top-k?

Reproduces the published experiment and extends it, using memorywire's pure fusion functions
(the same ones the router calls).

World. N = 3 child stores, M = 50 memories (``m00``..``m49``), Q = 20 queries, each with 2 gold
ids; k = 5; fixed seed. Every store returns a list of L = 20 items, best first.

Score model (what each list reports; it decides how ``max`` and ``weighted`` behave):

* A benign store reports ``1 - rank / L``: its best match scores exactly 1.0 (a normalised
  top score), then 0.95, 0.90, ... down to 0.05.
* The adversary reports 1.0 for each of its K attack ids (ranks 0..K-1), then a
  benign-looking tail: an independent draw of what an honest store of the scenario returns
  (gold included, pushed down by K), scored ``1 - (j + 1) / L`` for tail position j. An
  adversary that hides among honest stores has to look like one after its attack block.

Under this model gold #1 ties the attack ids at 1.0 under ``max``; the tie rule (more lists
first, then best rank) keeps gold #1 and the first four attack ids, which is exactly the
published collapse (recall@5 0.5, leak 0.8 from K = 5). ``weighted`` with equal weights sums
to 2.95 for gold #1 against 1.0 for an attack id, so it holds like ``rrf``; an adversary free
to report scores above 1.0 would break it, which ``rrf`` never allows.

Scenarios:

* ``published`` — benign stores put the two gold ids at ranks 0 and 1 (same order) and fill
  the rest with an independent random sample of distractors; the adversary's K ids are
  fabricated (never stored anywhere).
* ``noisy`` — benign stores rank all 50 memories by relevance plus Gaussian noise (gold 1.0,
  distractors 0.0, sigma 0.45), so gold is not always on top; each benign store's own
  recall@5 is reported (``benign_recall_at_5``, 0.8 with the fixed seed).
* ``id_collision`` — as ``published``, but the adversary's attack block is K real non-gold
  ids (capped at M - 2 = 48). Those ids also appear in benign lists, so quorum cannot
  filter them: quorum only stops ids that no other store vouches for.
* ``two_adversaries`` — 2 of 3 stores are adversarial and collude: the same fabricated attack
  ids at the same ranks, independent tails.

Every scenario runs with quorum 1 and quorum 2, for fusion ``rrf``, ``max`` and ``weighted``
(equal weights), K in 0, 5, ..., 50.

Metrics (means over the Q queries):

* ``recall_at_5`` — share of the 2 gold ids in the fused top-5.
* ``leak_rate`` — share of returned ids that come from the adversary's attack block and were
  not in the same query's fused top-5 at K = 0 (for fabricated ids: every attack id returned).
* ``gold_displacement`` — mean positions a gold id moved down in the full fused list compared
  with K = 0 (a gold id that is absent counts as one past the end).

Usage: ``python benchmarks/adversarial.py [--json] [--no-write]``. Writes
``benchmarks/results/adversarial.json`` and ``benchmarks/results/adversarial.png``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memorywire.core.fusion import Ranked, fuse

SCENARIOS = ("published", "noisy", "id_collision", "two_adversaries")
FUSIONS = ("rrf", "max", "weighted")
QUORUMS = (1, 2)
KS = tuple(range(0, 51, 5))
N_STORES = 3
M = 50
Q = 20
GOLD_PER_QUERY = 2
TOP_K = 5
LIST_LEN = 20
NOISE_SIGMA = 0.45
SEED = 20240611
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Row:
    scenario: str
    fusion: str
    quorum: int
    K: int
    recall_at_5: float
    leak_rate: float
    gold_displacement: float
    benign_recall_at_5: float


@dataclass(frozen=True)
class _Query:
    gold: tuple[str, ...]
    benign: tuple[Ranked, ...]
    adversary_tails: tuple[tuple[str, ...], ...]
    collision_pool: tuple[str, ...]


def _benign_score(rank: int) -> float:
    return 1.0 - rank / LIST_LEN


def _benign_order(rng: random.Random, scenario: str, gold: Sequence[str]) -> list[str]:
    ids = [f"m{i:02d}" for i in range(M)]
    if scenario == "noisy":
        noisy = {i: (1.0 if i in gold else 0.0) + rng.gauss(0.0, NOISE_SIGMA) for i in ids}
        return sorted(ids, key=lambda i: (-noisy[i], i))[:LIST_LEN]
    others = [i for i in ids if i not in gold]
    return list(gold) + rng.sample(others, LIST_LEN - len(gold))


def _make_query(rng: random.Random, scenario: str) -> _Query:
    ids = [f"m{i:02d}" for i in range(M)]
    gold = tuple(rng.sample(ids, GOLD_PER_QUERY))
    n_adv = 2 if scenario == "two_adversaries" else 1
    benign: list[Ranked] = []
    for _ in range(N_STORES - n_adv):
        order = _benign_order(rng, scenario, gold)
        benign.append([(i, _benign_score(r)) for r, i in enumerate(order)])
    tails = tuple(tuple(_benign_order(rng, scenario, gold)) for _ in range(n_adv))
    pool = [i for i in ids if i not in gold]
    rng.shuffle(pool)
    return _Query(gold, tuple(benign), tails, tuple(pool))


def _adversary_list(query: _Query, scenario: str, q: int, K: int, tail: Sequence[str]) -> Ranked:
    if scenario == "id_collision":
        block = list(query.collision_pool[: min(K, M - GOLD_PER_QUERY)])
    else:
        block = [f"atk-q{q:02d}-{i:02d}" for i in range(K)]
    rest = [i for i in tail if i not in block]
    return [(i, 1.0) for i in block] + [
        (i, 1.0 - (j + 1) / LIST_LEN) for j, i in enumerate(rest)
    ]


def _lists(query: _Query, scenario: str, q: int, K: int) -> dict[str, Ranked]:
    lists: dict[str, Ranked] = {f"benign{i}": b for i, b in enumerate(query.benign)}
    for i, tail in enumerate(query.adversary_tails):
        lists[f"adversary{i}"] = _adversary_list(query, scenario, q, K, tail)
    return lists


def _attack_ids(query: _Query, scenario: str, q: int, K: int) -> set[str]:
    lst = _adversary_list(query, scenario, q, K, query.adversary_tails[0])
    return {i for i, _ in lst[:K]}


def _rank_of(order: Sequence[str], item: str) -> int:
    try:
        return order.index(item)
    except ValueError:
        return len(order)


def run(seed: int = SEED) -> list[Row]:
    """Every (scenario, fusion, quorum, K) row; deterministic for a given seed."""
    rows: list[Row] = []
    for scenario in SCENARIOS:
        rng = random.Random(f"{seed}:{scenario}")
        queries = [_make_query(rng, scenario) for _ in range(Q)]
        benign_recall = sum(
            len(set(query.gold) & {i for i, _ in b[:TOP_K]}) / GOLD_PER_QUERY
            for query in queries
            for b in query.benign
        ) / sum(len(query.benign) for query in queries)
        for fusion in FUSIONS:
            for quorum in QUORUMS:
                clean = [
                    [f.id for f in fuse(_lists(qu, scenario, q, 0), fusion, quorum=quorum)]
                    for q, qu in enumerate(queries)
                ]
                for K in KS:
                    recall = leak = disp = 0.0
                    for q, qu in enumerate(queries):
                        order = [f.id for f in fuse(_lists(qu, scenario, q, K), fusion,
                                                    quorum=quorum)]
                        top = order[:TOP_K]
                        recall += len(set(qu.gold) & set(top)) / GOLD_PER_QUERY
                        attack = _attack_ids(qu, scenario, q, K) - set(clean[q][:TOP_K])
                        leak += (sum(1 for i in top if i in attack) / len(top)) if top else 0.0
                        disp += sum(
                            _rank_of(order, g) - _rank_of(clean[q], g) for g in qu.gold
                        ) / GOLD_PER_QUERY
                    rows.append(
                        Row(scenario, fusion, quorum, K, round(recall / Q, 4), round(leak / Q, 4),
                            round(disp / Q, 4), round(benign_recall, 4))
                    )
    return rows


def table(rows: Sequence[Row]) -> str:
    head = f"{'scenario':<16}{'fusion':<10}{'q':>2}{'K':>4}{'recall@5':>10}{'leak':>8}{'disp':>8}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.scenario:<16}{r.fusion:<10}{r.quorum:>2}{r.K:>4}"
            f"{r.recall_at_5:>10.3f}{r.leak_rate:>8.3f}{r.gold_displacement:>8.2f}"
        )
    return "\n".join(lines)


def plot(rows: Sequence[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(SCENARIOS), figsize=(4.2 * len(SCENARIOS), 7), sharex=True,
                             sharey=True)
    colours = {"rrf": "tab:blue", "max": "tab:red", "weighted": "tab:green"}
    for col, scenario in enumerate(SCENARIOS):
        for row_i, metric in enumerate(("recall_at_5", "leak_rate")):
            ax = axes[row_i][col]
            for fusion in FUSIONS:
                for quorum in QUORUMS:
                    sel = [r for r in rows
                           if (r.scenario, r.fusion, r.quorum) == (scenario, fusion, quorum)]
                    ax.plot([r.K for r in sel], [getattr(r, metric) for r in sel],
                            color=colours[fusion], linestyle="-" if quorum == 1 else "--",
                            marker="o" if quorum == 1 else "x", markersize=3,
                            label=f"{fusion} q={quorum}")
            ax.set_ylim(-0.05, 1.05)
            ax.grid(alpha=0.3)
            if row_i == 0:
                ax.set_title(scenario)
            else:
                ax.set_xlabel("K (attack ids)")
            if col == 0:
                ax.set_ylabel("recall@5" if metric == "recall_at_5" else "leak rate")
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.suptitle(f"Adversarial fusion: N={N_STORES}, M={M}, Q={Q}, k={TOP_K}, seed={SEED}")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print rows as a JSON list")
    parser.add_argument("--no-write", action="store_true", help="do not write results/")
    args = parser.parse_args(argv)
    rows = run()
    dicts: list[dict[str, Any]] = [asdict(r) for r in rows]
    if args.json:
        print(json.dumps(dicts, indent=1))
    else:
        print(table(rows))
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        with open(RESULTS / "adversarial.json", "w", encoding="utf-8") as fh:
            json.dump(dicts, fh, indent=1)
            fh.write("\n")
        plot(rows, RESULTS / "adversarial.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
