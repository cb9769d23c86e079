"""Embeddings from any server speaking the OpenAI ``POST /embeddings`` API.

That covers OpenAI itself and local servers (llama.cpp, vLLM, Ollama, LM Studio, TEI). The
server's vectors are re-normalised here because not all of them return unit vectors.

Vectors are asked for as ``encoding_format: "base64"`` (little-endian float32, what OpenAI's
own client asks for): decoding them costs a fraction of parsing a JSON number per dimension,
which on an API server embedding every request through ``memorywire embed serve`` was a
visible share of its CPU. A server that answers with JSON numbers anyway is read as before;
one that refuses the field (status 400 naming ``encoding_format``) is asked again without
it, and this client asks it for JSON numbers from then on.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from memorywire.embed.base import Vectors
from memorywire.errors import (
    BackendUnavailable,
    Forbidden,
    InvalidRequest,
    MemorywireError,
    RateLimited,
    Unauthorized,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAICompatibleEmbedder"]


class OpenAICompatibleEmbedder:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        client: httpx.Client | None = None,
    ) -> None:
        """Give ``dim`` to skip one probing request; ``client`` allows custom transports."""
        import httpx

        if not base_url.startswith(("http://", "https://")):
            raise InvalidRequest(f"base_url must be an http(s) URL, not {base_url!r}")
        if batch_size < 1:
            raise InvalidRequest("batch_size must be at least 1")
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._batch_size = batch_size
        self._dim = dim
        #: Whether to ask for base64 vectors (off once the server refused the field).
        self._base64 = True
        self._lock = threading.Lock()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=timeout)
        self._headers = headers

    @property
    def name(self) -> str:
        return f"openai-compatible:{self._model}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            probe = self._request(["dimension probe"])
            with self._lock:
                self._dim = int(probe.shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise InvalidRequest("embed() takes a sequence of texts, not a single string")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._request(list(texts[i : i + self._batch_size]))
            for i in range(0, len(texts), self._batch_size)
        ]
        out = np.concatenate(parts, axis=0)
        with self._lock:
            if self._dim is None:
                self._dim = int(out.shape[1])
        if out.shape[1] != self._dim:
            raise BackendUnavailable(
                f"embedding server returned {out.shape[1]}-d vectors, expected {self._dim}"
            )
        return out

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAICompatibleEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, texts: list[str]) -> Vectors:
        import httpx

        asked_base64 = self._base64
        payload: dict[str, object] = {"model": self._model, "input": texts}
        if asked_base64:
            payload["encoding_format"] = "base64"
        try:
            response = self._client.post(self._url, json=payload, headers=self._headers)
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"embedding server at {self._url} unreachable: {exc}") from exc
        if response.status_code != 200:
            if (asked_base64 and response.status_code == 400
                    and "encoding_format" in response.text):
                with self._lock:
                    self._base64 = False
                return self._request(texts)
            raise _status_error(response.status_code, response.text[:200], self._url)
        try:
            body = response.json()
            items = sorted(body["data"], key=lambda item: int(item["index"]))
            vectors = _matrix([item["embedding"] for item in items])
        except (ValueError, KeyError, TypeError) as exc:
            raise BackendUnavailable(f"malformed response from {self._url}: {exc}") from exc
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise BackendUnavailable(
                f"{self._url} returned {vectors.shape[0] if vectors.ndim else 0} vectors "
                f"for {len(texts)} texts"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(norms > 0):
            raise BackendUnavailable(f"{self._url} returned a zero vector")
        result: Vectors = (vectors / norms).astype(np.float32)
        return result


def _matrix(embeddings: list[object]) -> np.ndarray:
    """The rows as float32: base64 strings (little-endian float32) or lists of numbers."""
    if embeddings and all(isinstance(e, str) for e in embeddings):
        rows = [np.frombuffer(base64.b64decode(str(e), validate=True), dtype="<f4")
                for e in embeddings]
        return np.stack(rows).astype(np.float32, copy=False)
    return np.asarray(embeddings, dtype=np.float32)


def _status_error(status: int, text: str, url: str) -> MemorywireError:
    message = f"embedding server at {url} answered {status}: {text}"
    errors: dict[int, type[MemorywireError]] = {
        400: InvalidRequest,
        401: Unauthorized,
        403: Forbidden,
        429: RateLimited,
    }
    return errors.get(status, BackendUnavailable)(message)
