"""A loopback OpenAI-compatible ``/v1/embeddings`` endpoint serving real MiniLM vectors.

Letta and Cognee only know how to embed through a provider's HTTP API; this lets both use
memorywire's own MiniLM (``memorywire.embed.default_embedder``) offline, so the vectors the
backend stores are the very vectors memorywire computes for a query. Run it with
``python backends/embed_server.py PORT`` from an environment that has memorywire installed.
"""

from __future__ import annotations

import base64
import sys
from typing import Any

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from memorywire.embed import default_embedder

MODEL = "all-MiniLM-L6-v2"


def _inputs(raw: Any) -> list[str]:
    """OpenAI clients send a string or a list of strings; token-id lists are refused."""
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        return list(raw)
    raise ValueError("input must be a string or a list of strings")


async def embeddings(request: Request) -> JSONResponse:
    body = await request.json()
    try:
        texts = _inputs(body.get("input"))
    except ValueError as exc:
        return JSONResponse({"error": {"message": str(exc), "type": "invalid_request_error"}}, 400)
    vectors = default_embedder().embed([t if t else " " for t in texts]) if texts else []
    b64 = body.get("encoding_format") == "base64"
    data = []
    for i, vec in enumerate(vectors):
        arr = np.asarray(vec, dtype="<f4")
        emb: Any = base64.b64encode(arr.tobytes()).decode("ascii") if b64 else arr.tolist()
        data.append({"object": "embedding", "index": i, "embedding": emb})
    tokens = sum(len(t.split()) for t in texts)
    return JSONResponse({"object": "list", "data": data, "model": body.get("model", MODEL),
                         "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


async def models(request: Request) -> JSONResponse:
    return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model",
                                                     "owned_by": "memorywire"}]})


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


app = Starlette(routes=[
    Route("/v1/embeddings", embeddings, methods=["POST"]),
    Route("/embeddings", embeddings, methods=["POST"]),
    Route("/v1/models", models),
    Route("/health", health),
])


if __name__ == "__main__":
    default_embedder().embed(["warm up"])
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
