"""Shared pieces of the long-conversation retrieval benchmarks (LoCoMo, LongMemEval).

Everything here is plain data in, plain data out, so the unit tests can check each metric on
hand-made tables: a BM25 baseline in numpy, the ranking metrics, a text-keyed vector cache,
the machine's load, table formatting, and the command-line pieces the scripts share.

Metric definitions (``ranked`` is a list of ids, best first; ``gold`` the relevant ids):

* ``recall_at_k``: the fraction of gold ids in the top k (LoCoMo's "fraction of evidence
  dialogue ids retrieved").
* ``recall_all_at_k`` / ``recall_any_at_k``: 1.0 when all / any gold ids are in the top k
  (LongMemEval's ``recall_all@k`` / ``recall_any@k``).
* ``ndcg_any_at_k``: binary-relevance NDCG with LongMemEval's DCG, whose first two positions
  both weigh 1 (``rel_1 + sum_{i>=2} rel_i / log2(i)``), so numbers compare with its scripts.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memorywire.core.scoring import exact_top
from memorywire.embed.base import Embedder

__all__ = [
    "BM25",
    "DEFAULT_CACHE_ROOT",
    "EmbedStats",
    "add_ablation_arguments",
    "add_embedder_argument",
    "add_hits_argument",
    "add_out_argument",
    "add_vector_cache_argument",
    "bootstrap_ci",
    "calibration",
    "dedupe",
    "default_cache",
    "embed_cached",
    "embedder_of",
    "format_table",
    "given",
    "machine_info",
    "mean",
    "ndcg_any_at_k",
    "out_name",
    "percentile",
    "recall_all_at_k",
    "recall_any_at_k",
    "recall_at_k",
    "stderr",
    "stemmed_tokenize",
    "store_settings",
    "tokenize",
    "top_indices",
    "write_hits",
    "write_result",
]

_WORD = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens; punctuation never sticks to a word (unlike ``str.split``)."""
    return _WORD.findall(text.lower())


def stemmed_tokenize(text: str) -> list[str]:
    """The standard BM25 analysis: stop words dropped, Porter stems (as Lucene/Pyserini's
    English analyzer does), so a baseline row is what an IR reader expects, not a strawman."""
    import snowballstemmer  # benchmark-only dependency (the dev extra)

    words = [w for w in tokenize(text) if w not in BM25_STOP_WORDS]
    return list(snowballstemmer.stemmer("porter").stemWords(words))


#: Lucene's classic English stop list (what the ``english`` analyzers of BM25 toolkits use).
BM25_STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
})


class BM25:
    """Okapi BM25 over a fixed list of documents (k1=1.5, b=0.75, as in ``rank_bm25``).

    IDF is ``log(1 + (N - df + 0.5) / (df + 0.5))`` (Lucene's), which stays positive, so a
    term in most documents adds a little rather than subtracting. A term repeated in the
    query counts once per occurrence, as in ``rank_bm25``.
    """

    def __init__(self, docs: Sequence[str], *, k1: float = 1.5, b: float = 0.75,
                 analyzer: Callable[[str], list[str]] = tokenize) -> None:
        self.n = len(docs)
        self._analyze = analyzer
        postings: dict[str, dict[int, int]] = {}
        lengths = np.zeros(self.n, dtype=np.float64)
        for i, doc in enumerate(docs):
            tokens = analyzer(doc)
            lengths[i] = len(tokens)
            for tok in tokens:
                row = postings.setdefault(tok, {})
                row[i] = row.get(i, 0) + 1
        avg = float(lengths.mean()) if self.n and lengths.mean() > 0 else 1.0
        norm = k1 * (1.0 - b + b * lengths / avg)
        self._terms: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]] = {}
        for tok, row in postings.items():
            idx = np.fromiter(row.keys(), dtype=np.intp, count=len(row))
            tf = np.fromiter(row.values(), dtype=np.float64, count=len(row))
            idf = math.log(1.0 + (self.n - len(row) + 0.5) / (len(row) + 0.5))
            self._terms[tok] = (idx, idf * tf * (k1 + 1.0) / (tf + norm[idx]))

    def scores(self, query: str) -> npt.NDArray[np.float64]:
        out = np.zeros(self.n, dtype=np.float64)
        for tok in self._analyze(query):
            hit = self._terms.get(tok)
            if hit is not None:
                out[hit[0]] += hit[1]
        return out

    def top(self, query: str, k: int) -> list[int]:
        return top_indices(self.scores(query), k)


def top_indices(scores: npt.NDArray[Any], k: int) -> list[int]:
    """The ``k`` best indices, best first; ties go to the lower index (deterministic)."""
    picked: list[int] = exact_top(np.asarray(scores, dtype=np.float32), k).tolist()
    return picked


def dedupe(ids: Iterable[str]) -> list[str]:
    """First occurrence order: a turn ranking becomes a session ranking by its best turn."""
    return list(dict.fromkeys(ids))


def recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    if not gold:
        raise ValueError("recall of an empty gold set is undefined")
    top = set(ranked[:k])
    return sum(1 for g in set(gold) if g in top) / len(set(gold))


def recall_all_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    if not gold:
        raise ValueError("recall of an empty gold set is undefined")
    top = set(ranked[:k])
    return float(all(g in top for g in gold))


def recall_any_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    if not gold:
        raise ValueError("recall of an empty gold set is undefined")
    top = set(ranked[:k])
    return float(any(g in top for g in gold))


def _dcg(relevances: Sequence[float]) -> float:
    if not relevances:
        return 0.0
    return relevances[0] + sum(r / math.log2(i) for i, r in enumerate(relevances[1:], start=2))


def ndcg_any_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    if not gold:
        raise ValueError("NDCG of an empty gold set is undefined")
    wanted = set(gold)
    actual = _dcg([1.0 if r in wanted else 0.0 for r in ranked[:k]])
    ideal = _dcg([1.0] * min(k, len(wanted)))
    return actual / ideal


def mean(values: Sequence[float]) -> float | None:
    """``None`` for an empty group, so a table shows a gap instead of a fake zero."""
    return round(sum(values) / len(values), 4) if values else None


#: Relevance bands of a calibration table.
CALIBRATION_BANDS = (0.0, 0.25, 0.5, 0.75, 1.0)


def calibration(returned: Sequence[Sequence[tuple[str, float, float | None]]],
                relevant: Sequence[Collection[str]], k: int = 5) -> dict[str, Any]:
    """What a store's ``relevance`` means on a corpus: the first ``k`` hits of each answer
    (``[id, score, relevance]`` rows, best first, as the store returned them) by relevance
    band, how many of them are relevant, and the share of hits at relevance >= 0.5 that
    are. Questions with nothing relevant are left out (every hit would count as wrong)."""
    bands = [{"from": lo, "to": hi, "hits": 0, "relevant": 0}
             for lo, hi in itertools.pairwise(CALIBRATION_BANDS)]
    for rows, wanted in zip(returned, relevant, strict=True):
        if not wanted:
            continue
        for mid, _, rel in rows[:k]:
            if rel is None:
                continue
            band = bands[min(int(rel / 0.25), len(bands) - 1)]
            band["hits"] += 1
            band["relevant"] += mid in wanted
    for band in bands:
        band["precision"] = round(band["relevant"] / band["hits"], 4) if band["hits"] else None
    high = [b for b in bands if b["from"] >= 0.5]
    hits = sum(b["hits"] for b in high)
    return {"k": k, "bands": bands, "precision_at_relevance_0_5":
            round(sum(b["relevant"] for b in high) / hits, 4) if hits else None}


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile in milliseconds to 3 places; ``None`` when nothing was timed."""
    return round(float(np.percentile(values, q)), 3) if values else None


def bootstrap_ci(values: Sequence[float], *, rounds: int = 1000,
                 seed: int = 0) -> tuple[float, float] | None:
    """A percentile bootstrap 95% interval of the mean (questions resampled with
    replacement, fixed seed so a rerun prints the same interval)."""
    if not values:
        return None
    arr = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, arr.size, size=(rounds, arr.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return round(float(lo), 4), round(float(hi), 4)


@dataclass
class EmbedStats:
    texts: int
    embedded: int
    seconds: float

    @property
    def per_s(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


def _key(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


#: Where the benchmarks keep their vectors unless told otherwise: outside the repository, so
#: an embedding of a dataset (tens of minutes on a small machine) is paid once per machine.
DEFAULT_CACHE_ROOT = Path(os.environ.get(
    "MEMORYWIRE_BENCH_CACHE", str(Path.home() / ".cache" / "memorywire" / "bench")))


def default_cache(dataset: Path) -> Path:
    """The cache folder of one dataset file (by name: the same file anywhere shares it)."""
    return DEFAULT_CACHE_ROOT / dataset.name.split(".")[0]


def _shard_dir(cache: Path, model: str) -> Path:
    return cache / hashlib.sha1(model.encode()).hexdigest()[:16]


def _load_shards(cache: Path, model: str) -> dict[str, npt.NDArray[np.float32]]:
    known: dict[str, npt.NDArray[np.float32]] = {}
    folder = _shard_dir(cache, model)
    if not folder.is_dir():
        return known
    for shard in sorted(folder.glob("*.npz")):
        try:
            with np.load(shard) as saved:
                if str(saved["model"]) != model:
                    continue
                known.update(zip(saved["keys"].tolist(), saved["vectors"], strict=True))
        except (OSError, ValueError, KeyError, EOFError):
            continue  # a shard cut short by a kill: its texts are embedded again
    return known


def _save_shard(cache: Path, model: str, keys: list[str],
                vectors: npt.NDArray[np.float32]) -> None:
    folder = _shard_dir(cache, model)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns()}-{os.getpid()}"
    tmp = folder / f"{name}.part"
    with tmp.open("wb") as fh:
        np.savez(fh, model=np.asarray(model), keys=np.asarray(keys), vectors=vectors)
    tmp.replace(folder / f"{name}.npz")  # atomic: a reader sees a whole shard or none


def embed_cached(
    embedder: Embedder,
    texts: Sequence[str],
    cache: Path | None = None,
    *,
    chunk: int = 256,
    log: Callable[[str], None] | None = None,
) -> tuple[npt.NDArray[np.float32], EmbedStats]:
    """Embed each distinct text once; with ``cache`` (a folder), reuse vectors across runs.

    Every ``chunk`` of new vectors is written at once as its own shard (atomically renamed),
    so an interrupted run keeps all it embedded and the next run starts where it stopped.
    Shards live under a sub-folder per embedder ``name``: another model's vectors are never
    reused.
    """
    keys = [_key(t) for t in texts]
    known = _load_shards(cache, embedder.name) if cache is not None else {}
    todo = dedupe(k for k in keys if k not in known)
    text_of = dict(zip(keys, texts, strict=True))
    started = time.perf_counter()
    for lo in range(0, len(todo), chunk):
        part = todo[lo:lo + chunk]
        vecs = np.asarray(embedder.embed([text_of[k] for k in part]), dtype=np.float32)
        known.update(zip(part, vecs, strict=True))
        if cache is not None:
            _save_shard(cache, embedder.name, part, vecs)
        if log is not None:
            done = min(lo + chunk, len(todo))
            rate = done / max(time.perf_counter() - started, 1e-9)
            log(f"embedded {done}/{len(todo)} ({rate:.0f}/s)")
    seconds = time.perf_counter() - started
    out = np.stack([known[k] for k in keys]) if keys else np.zeros((0, embedder.dim), np.float32)
    return out.astype(np.float32, copy=False), EmbedStats(len(texts), len(todo), seconds)


def machine_info() -> dict[str, Any]:
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "load_avg_1m": round(load[0], 2),
            "load_avg_5m": round(load[1], 2), "python": sys.version.split()[0]}


def stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned first column, right-aligned numbers; ``None`` prints as ``-``."""
    def cell(v: Any) -> str:
        if v is None:
            return "-"
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    body = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, body)])


def add_vector_cache_argument(parser: argparse.ArgumentParser) -> None:
    """``--vector-cache``: one folder rule for every script that embeds a dataset."""
    parser.add_argument("--vector-cache", type=Path, default=None,
                        help="vector cache folder, saved as it embeds (default "
                             "~/.cache/memorywire/bench/<data name>, or $MEMORYWIRE_BENCH_CACHE)")


def add_out_argument(parser: argparse.ArgumentParser, default_name: str) -> None:
    """``--out``: results go to the cache's results folder unless a file is named, so a run
    never overwrites a tracked result by accident (see ``write_result``)."""
    parser.add_argument("--out", type=Path, default=None,
                        help=f"result file (default ~/.cache/memorywire/results/{default_name})")


def add_embedder_argument(parser: argparse.ArgumentParser) -> None:
    """``--embedder``: run every row with another model (the issue-19 "stronger embedder"
    row), e.g. a local text-embeddings server behind ``openai:BASE_URL#MODEL``. Vectors are
    cached per model name, so a second model never reads the first one's vectors."""
    parser.add_argument("--embedder", default=None, metavar="SPEC",
                        help="embedder spec for every row and question (minilm, minilm-int8, "
                             "openai:BASE_URL#MODEL, sentence-transformers:PATH, hashing:DIM; "
                             "default: the store's MiniLM)")


def embedder_of(parser: argparse.ArgumentParser, spec: str | None) -> Embedder | None:
    """The embedder ``--embedder`` names (``None``: the script's default), or the parser's
    error naming the flag when the spec is not one ``embedder_from_spec`` knows."""
    if spec is None:
        return None
    from memorywire.embed import embedder_from_spec
    from memorywire.errors import MemorywireError

    try:
        return embedder_from_spec(spec)
    except MemorywireError as exc:
        parser.error(f"--embedder {spec}: {exc}")


def out_name(default_name: str, embedder: Embedder | None) -> str:
    """The default result file's name: another model's run gets its own file
    (``locomo.json`` -> ``locomo-<model>.json``), so it never overwrites the default's."""
    if embedder is None:
        return default_name
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", embedder.name).strip("-")
    stem, dot, ext = default_name.rpartition(".")
    return f"{stem}-{slug}{dot}{ext}" if dot else f"{default_name}-{slug}"


def add_ablation_arguments(parser: argparse.ArgumentParser) -> None:
    """The store-row knobs LoCoMo and LongMemEval both take, so an ablation reads the same in
    each; ``None`` leaves the store's own default."""
    parser.add_argument("--lexical-weight", type=float, default=1.0,
                        help="SqliteStore lexical_weight for every store row (ablation)")
    parser.add_argument("--feedback-weight", type=float, default=None,
                        help="SqliteStore feedback_weight for every store row (ablation; "
                             "0 = no pseudo-relevance feedback; default: the store's)")
    for setting, rule in (("session", "session evidence"), ("substance", "substance prior"),
                          ("turn", "turn focus"), ("subject-lexical", "subject lexical list")):
        parser.add_argument(f"--{setting}-weight", type=float, default=None,
                            help=f"the stores' {setting.replace('-', '_')}_weight for every "
                                 "store row (ablation; "
                                 f"0 = no {rule}; default: the store's)")
    parser.add_argument("--duplicate-share", type=float, default=None,
                        help="the stores' duplicate_share for every store row (ablation; a "
                             "turn sharing that share of its word 5-grams with a higher hit of "
                             "its session moves behind the next distinct hit; 0 = off; "
                             "default: the store's)")

def store_settings(args: argparse.Namespace, names: Sequence[str]) -> dict[str, float | None]:
    """The re-ranking settings ``names`` (``session_weight``, ...) as the flags gave them, in
    that order; ``None`` where a flag was not given, so the store keeps its own default (the
    result JSON records them as given)."""
    return {name: getattr(args, name) for name in names}


def given(settings: dict[str, float | None]) -> dict[str, float]:
    """The settings a flag gave: the store's keywords for them (the rest stay its defaults)."""
    return {name: value for name, value in settings.items() if value is not None}


def add_hits_argument(parser: argparse.ArgumentParser) -> None:
    """``--hits``: every ranking the run produced, so two versions of the store can be compared
    byte for byte (a refactor that claims to change no behaviour shows it with ``cmp``)."""
    parser.add_argument("--hits", type=Path, default=None, metavar="FILE",
                        help="also write every retriever's ranking per question, and the store "
                             "rows' scores and relevance, to FILE (compare two versions with cmp)")


def write_hits(path: Path | None, hits: dict[str, Any]) -> None:
    """``hits`` as one JSON line at ``path`` (nothing when no ``--hits`` was given); floats
    are written by ``repr``, so equal files mean equal scores to the last bit."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(hits) + "\n", encoding="utf-8")


def write_result(result: dict[str, Any], out: Path | None, default_name: str, *,
                 as_json: bool, table: Callable[[dict[str, Any]], str]) -> int:
    """Write ``result`` to ``out`` (or ``default_name`` in the cache's results folder), then
    print it as one JSON object or as the script's table; the script's exit status."""
    path = out or DEFAULT_CACHE_ROOT.parent / "results" / default_name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    print(json.dumps(result) if as_json else table(result))
    return 0
