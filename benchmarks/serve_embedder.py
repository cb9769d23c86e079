"""Serve one of memorywire's embedders as an OpenAI-compatible ``/embeddings`` endpoint.

For checking the benchmarks' ``--embedder openai:BASE_URL#MODEL`` path end to end on this
machine (the model served is the one the in-process row uses, so every number must match),
and for lending the local model to another process. Loopback only, one model, no auth:

    .venv/bin/python benchmarks/serve_embedder.py --port 18099 [--spec minilm]
    .venv/bin/python benchmarks/locomo.py --data PATH --embedder 'openai:http://127.0.0.1:18099/v1#minilm'
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memorywire.embed import embedder_from_spec
from memorywire.embed.base import Embedder


class EmbeddingServer(ThreadingHTTPServer):
    """A loopback HTTP server answering ``POST <anything>/embeddings`` with ``embedder``."""

    daemon_threads = True

    def __init__(self, port: int, embedder: Embedder) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.embedder = embedder


class _Handler(BaseHTTPRequestHandler):
    server: EmbeddingServer

    def do_POST(self) -> None:
        if not self.path.rstrip("/").endswith("/embeddings"):
            self._reply(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            texts = body["input"]
            texts = [texts] if isinstance(texts, str) else list(texts)
        except (ValueError, KeyError, TypeError) as exc:
            self._reply(400, {"error": {"message": f"bad request: {exc}"}})
            return
        vectors = self.server.embedder.embed(texts)
        self._reply(200, {"object": "list", "model": body.get("model"), "data": [
            {"object": "embedding", "index": i, "embedding": v.tolist()}
            for i, v in enumerate(vectors)]})

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        out = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--port", type=int, default=18099)
    parser.add_argument("--spec", default="minilm", help="embedder spec (default minilm)")
    args = parser.parse_args(argv)
    server = EmbeddingServer(args.port, embedder_from_spec(args.spec))
    print(f"serving {server.embedder.name} on http://127.0.0.1:{server.server_port}/v1",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
