"""The default local embedder: all-MiniLM-L6-v2 run by onnxruntime, without torch.

The ONNX graph is built from the packaged safetensors weights on first use and cached per user
(see :mod:`memorywire.embed.model_cache`), so later processes reach their first embedding in a
few hundred milliseconds. Constructing the embedder reads only the model's configuration (its
name and dimension are what a store checks at open); the graph, the onnxruntime session and
the tokenizer load on the first :meth:`MiniLMEmbedder.embed`, so a server or an MCP handshake
that never embeds never loads them. One intra-op thread with spinning off is the default: memorywire
usually shares the machine with an agent and its model, and a single short sentence gains
little from a second thread while a spinning pool burns a core.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from memorywire.embed.base import Vectors
from memorywire.embed.batching import MicroBatcher
from memorywire.embed.lru import VectorCache, text_key
from memorywire.embed.model_cache import (
    Precision,
    check_model_dir,
    ensure_onnx_model,
    minilm_model_dir,
)
from memorywire.errors import InvalidRequest

__all__ = ["MiniLMEmbedder", "plan_batches"]

MODEL_ID = "all-MiniLM-L6-v2"
_PRECISIONS: tuple[Precision, ...] = ("fp32", "int8")
_PAD_SLACK = 64


class _Loaded(NamedTuple):
    """What the first embedding loads: the cached graph, its session and the tokenizer."""

    model_path: Path
    session: Any
    tokenizer: Any


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d, unit length), matching sentence-transformers.

    ``precision="int8"`` (dynamic quantisation) is about twice as fast but its vectors differ
    slightly, so it carries another :attr:`name` and cannot share an index with fp32.
    """

    def __init__(
        self,
        *,
        precision: Precision = "fp32",
        threads: int = 1,
        batch_size: int = 32,
        cache_entries: int = 4096,
        batch_wait_ms: float = 2.0,
        lanes: int = 1,
        model_dir: Path | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        if precision not in _PRECISIONS:
            raise InvalidRequest(f"precision must be one of {_PRECISIONS}, not {precision!r}")
        if threads < 1 or batch_size < 1:
            raise InvalidRequest("threads and batch_size must be at least 1")
        if lanes < 1:
            raise InvalidRequest("lanes must be at least 1")
        if not 0 <= batch_wait_ms <= 100:
            raise InvalidRequest("batch_wait_ms must be between 0 and 100")
        folder = model_dir if model_dir is not None else minilm_model_dir()
        check_model_dir(folder)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self._folder = folder
        self._cache_dir = cache_dir
        self._precision = precision
        self._threads = threads
        self._dim = int(config["hidden_size"])
        self._max_tokens = _max_tokens(folder, config)
        self._batch_size = batch_size
        self._cache = VectorCache(cache_entries)
        self._loaded: _Loaded | None = None
        self._load_lock = threading.Lock()
        # Concurrent callers (server worker threads) share model calls; see embed.batching.
        self._batcher = MicroBatcher(
            self._run, max_wait_s=batch_wait_ms / 1000, max_batch=batch_size, lanes=lanes
        )

    @property
    def name(self) -> str:
        return f"{MODEL_ID}/onnx-{self._precision}"

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_tokens(self) -> int:
        """Longer inputs are truncated, exactly as sentence-transformers truncates them."""
        return self._max_tokens

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def model_path(self) -> Path:
        """The ONNX graph in the cache (building it if this process has not embedded yet)."""
        return self._model().model_path

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (it loads on the first embedding)."""
        return self._loaded is not None

    def _model(self) -> _Loaded:
        loaded = self._loaded
        if loaded is None:
            with self._load_lock:  # concurrent first callers load it once
                loaded = self._loaded
                if loaded is None:
                    path = ensure_onnx_model(self._folder, self._precision, self._cache_dir)
                    loaded = _Loaded(path, _session(path, self._threads),
                                     _tokenizer(self._folder / "tokenizer.json",
                                                self._max_tokens))
                    self._loaded = loaded
        return loaded

    @property
    def cache(self) -> VectorCache:
        return self._cache

    @property
    def batcher(self) -> MicroBatcher:
        return self._batcher

    def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise InvalidRequest("embed() takes a sequence of texts, not a single string")
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        # Identical texts within one call are embedded once.
        pending: dict[bytes, list[int]] = {}
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidRequest(f"texts[{i}] is {type(text).__name__}, not str")
            key = text_key(text)
            if key in pending:
                pending[key].append(i)
                continue
            row = self._cache.get(key)
            if row is None:
                pending[key] = [i]
            else:
                out[i] = row
        if pending:
            self._model()  # a first load's error is this caller's, not the batcher thread's
            unique = [texts[rows[0]] for rows in pending.values()]
            vectors = self._batcher.embed(unique)
            for (key, rows), vec in zip(pending.items(), vectors, strict=True):
                out[rows] = vec
                self._cache.put(key, vec)
        return out

    def _run(self, texts: list[str]) -> Vectors:
        model = self._model()
        if len(texts) == 1:
            encodings = [model.tokenizer.encode(texts[0])]
        else:
            encodings = model.tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encodings]
        result = np.empty((len(texts), self._dim), dtype=np.float32)
        for chunk in plan_batches(lengths, self._batch_size):
            width = max(lengths[i] for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            (vectors,) = model.session.run(
                ["sentence_embedding"], {"input_ids": ids, "attention_mask": mask}
            )
            result[chunk] = vectors
        return result


def plan_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Group indices into model runs: sorted by length, so padding wastes little compute.

    A batch is closed early when padding its next (longer) member would waste more than a
    quarter of the real tokens and more than ``_PAD_SLACK`` tokens, so one long text does not
    make every short one in its batch pay for 256 positions.
    """
    batches: list[list[int]] = []
    current: list[int] = []
    real = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        n = lengths[i]
        waste = n * (len(current) + 1) - (real + n)
        if current and (len(current) >= batch_size or waste > max(_PAD_SLACK, (real + n) // 4)):
            batches.append(current)
            current, real = [], 0
        current.append(i)
        real += n
    if current:
        batches.append(current)
    return batches


def _max_tokens(folder: Path, config: dict[str, Any]) -> int:
    # sentence-transformers truncates at sentence_bert_config's max_seq_length (256 for this
    # model), not at the 128 the packaged tokenizer.json was saved with.
    limit = int(config.get("max_position_embeddings", 512))
    st_config = folder / "sentence_bert_config.json"
    if st_config.is_file():
        value = json.loads(st_config.read_text(encoding="utf-8")).get("max_seq_length")
        if isinstance(value, int) and value > 0:
            return min(value, limit)
    return limit


def _tokenizer(path: Path, max_tokens: int) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    # The packaged file pads everything to 128; we pad per batch ourselves, to the longest.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


def _session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
