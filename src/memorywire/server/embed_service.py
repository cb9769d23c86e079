"""``memorywire embed serve``: the embedding model as an OpenAI-compatible HTTP service.

The model costs an API server more CPU per operation than everything else it does, and it
runs inside the request. Served from its own process (or machine), any number of API
servers share it through the ``openai:BASE_URL#MODEL`` embedder spec
(:class:`~memorywire.embed.openai_compat.OpenAICompatibleEmbedder`), and concurrent requests
from all of them are embedded together (:mod:`memorywire.server.embed_batcher`).

The API is the subset of OpenAI's ``POST /v1/embeddings`` that embedding clients use:
``input`` (a string or a list of strings), ``model``, ``encoding_format`` (``float`` or
``base64``: little-endian float32), ``dimensions`` (only the model's own) and ``user``
(accepted, unused: it only labels the caller). Anything else is refused with status 400 and
an OpenAI-style error naming the field (``error.param``); token arrays are refused too. The
vectors are the in-process embedder's, float32 values written exactly. ``usage`` counts
whitespace-separated words, not model tokens (a tokenizer-independent approximation).
``GET /v1/stats`` reports requests, texts, model calls (``batches``) and the process's CPU
seconds, so capacity can be planned per core; ``GET /health`` answers ``ok``.
"""

from __future__ import annotations

import base64
import hmac
import json
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memorywire.embed.base import Embedder
from memorywire.server.embed_batcher import AsyncBatcher

__all__ = ["MAX_BODY_BYTES", "MAX_INPUTS", "MAX_TEXT_CHARS", "create_embed_app", "serve_embed"]

#: Most texts in one request (OpenAI's limit).
MAX_INPUTS = 2048
#: Longest text accepted (the model reads at most its first 256 tokens anyway).
MAX_TEXT_CHARS = 32_768
#: Largest request body read.
MAX_BODY_BYTES = 16 * 2**20
_FIELDS = frozenset({"input", "model", "encoding_format", "dimensions", "user"})


class _Refused(Exception):
    def __init__(self, status: int, message: str, param: str | None = None,
                 kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.kind = status, message, param, kind


def _error(exc: _Refused) -> JSONResponse:
    return JSONResponse({"error": {"message": exc.message, "type": exc.kind,
                                   "param": exc.param, "code": None}}, status_code=exc.status)


def _texts(body: Any) -> list[str]:
    """The request's texts, or a refusal naming the field at fault."""
    if not isinstance(body, dict):
        raise _Refused(400, "the request body must be a JSON object")
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise _Refused(400, f"unknown field {unknown[0]!r} (accepted: "
                       f"{', '.join(sorted(_FIELDS))})", unknown[0])
    if "input" not in body:
        raise _Refused(400, "input is required: a string or a list of strings", "input")
    raw = body["input"]
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list):
        raise _Refused(400, "input must be a string or a list of strings", "input")
    if not items:
        raise _Refused(400, "input must not be an empty list", "input")
    if len(items) > MAX_INPUTS:
        raise _Refused(400, f"input holds {len(items)} texts; at most {MAX_INPUTS}", "input")
    for i, text in enumerate(items):
        where = "input" if isinstance(raw, str) else f"input[{i}]"
        if not isinstance(text, str):
            raise _Refused(400, f"{where} must be a string (token arrays are not supported), "
                           f"not {type(text).__name__}", where)
        if not text.strip():
            raise _Refused(400, f"{where} must not be empty", where)
        if len(text) > MAX_TEXT_CHARS:
            raise _Refused(400, f"{where} is {len(text)} characters; at most "
                           f"{MAX_TEXT_CHARS}", where)
    return items


class _Service:
    def __init__(self, embedder: Embedder, batcher: AsyncBatcher, names: frozenset[str],
                 api_key: str | None) -> None:
        self.embedder, self.batcher, self.names, self.api_key = embedder, batcher, names, api_key
        self.model = sorted(names)[0]

    def check(self, body: dict[str, Any]) -> str:
        """The encoding asked for; refuses a model, size or encoding this service lacks."""
        model = body.get("model")
        if model is not None and (not isinstance(model, str) or model not in self.names):
            raise _Refused(400, f"model {model!r} is not served here (serving: "
                           f"{', '.join(sorted(self.names))})", "model")
        dims = body.get("dimensions")
        if dims is not None and (type(dims) is not int or dims != self.embedder.dim):
            raise _Refused(400, f"dimensions {dims!r}: this model gives {self.embedder.dim}",
                           "dimensions")
        encoding = body.get("encoding_format", "float")
        if encoding not in ("float", "base64"):
            raise _Refused(400, f"encoding_format must be 'float' or 'base64', not "
                           f"{encoding!r}", "encoding_format")
        user = body.get("user")
        if user is not None and not isinstance(user, str):
            raise _Refused(400, "user must be a string", "user")
        return str(encoding)

    def authorised(self, request: Request) -> bool:
        if self.api_key is None:
            return True
        given = request.headers.get("authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self.api_key}".encode())

    async def embeddings(self, request: Request) -> Response:
        try:
            if not self.authorised(request):
                raise _Refused(401, "missing or wrong bearer token", None, "authentication_error")
            raw = await request.body()
            if len(raw) > MAX_BODY_BYTES:
                raise _Refused(413, f"request body over {MAX_BODY_BYTES} bytes")
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                raise _Refused(400, f"the request body is not JSON: {exc}") from None
            texts = _texts(body)
            encoding = self.check(body)
        except _Refused as exc:
            return _error(exc)
        vectors = np.asarray(await self.batcher.embed(texts), dtype=np.float32)
        data = [{"object": "embedding", "index": i,
                 "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode("ascii")
                 if encoding == "base64" else v.tolist()}
                for i, v in enumerate(vectors)]
        words = sum(len(t.split()) for t in texts)
        return JSONResponse({"object": "list", "data": data,
                             "model": body.get("model") or self.model,
                             "usage": {"prompt_tokens": words, "total_tokens": words}})

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [
            {"id": name, "object": "model", "owned_by": "memorywire"}
            for name in sorted(self.names)]})

    async def stats(self, request: Request) -> Response:
        return JSONResponse({**self.batcher.stats.to_json(), "model": self.embedder.name,
                             "dim": self.embedder.dim, "cpu_s": round(time.process_time(), 3)})

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "model": self.embedder.name})


async def _not_found(request: Request, exc: Exception) -> Response:
    return _error(_Refused(404, f"no route {request.method} {request.url.path}"))


def create_embed_app(embedder: Embedder, *, names: frozenset[str] = frozenset(),
                     max_batch: int = 64, max_wait_ms: float = 2.0, lanes: int = 1,
                     api_key: str | None = None) -> Starlette:
    """The service for ``embedder``; ``names`` are the ``model`` values it answers to
    (the embedder's own name always)."""
    batcher = AsyncBatcher(lambda texts: embedder.embed(texts), max_batch=max_batch,
                           max_wait_s=max_wait_ms / 1000, lanes=lanes)
    service = _Service(embedder, batcher, frozenset({embedder.name, *names}), api_key)
    app = Starlette(routes=[
        Route("/v1/embeddings", service.embeddings, methods=["POST"]),
        Route("/v1/models", service.models, methods=["GET"]),
        Route("/v1/stats", service.stats, methods=["GET"]),
        Route("/health", service.health, methods=["GET"]),
    ], exception_handlers={404: _not_found, 405: _not_found})
    app.state.batcher = batcher
    return app


def serve_embed(embedder: Embedder, host: str, port: int, *,
                names: frozenset[str] = frozenset(), max_batch: int = 64,
                max_wait_ms: float = 2.0, lanes: int = 1, api_key: str | None = None,
                announce: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted. The model answers one warm-up text first, then the bound
    address is announced (``port`` 0 picks a free one): ``serving MODEL on URL``."""
    import uvicorn

    embedder.embed(["warm-up"])
    app = create_embed_app(embedder, names=names, max_batch=max_batch,
                           max_wait_ms=max_wait_ms, lanes=lanes, api_key=api_key)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    url = f"http://{shown}:{bound}/v1"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    (announce or (lambda line: print(line, file=sys.stderr, flush=True)))(
        f"serving {embedder.name} on {url}")
    server.run(sockets=[sock])
