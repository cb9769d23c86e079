"""``memorywire embed serve``: the embedding model as its own OpenAI-compatible service.

API servers then name it with the ``openai:`` embedder spec (``openai:http://H:P/v1#minilm``)
and no longer run the model inside their requests; see :mod:`memorywire.server.embed_service`.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["register_embed"]


def _serve(args: argparse.Namespace) -> int:
    from memorywire.server.embed_service import serve_embed

    if args.max_batch < 1 or args.lanes < 1 or not 0 <= args.max_wait_ms <= 100:
        print("memorywire embed serve: --max-batch and --lanes must be at least 1, "
              "--max-wait-ms between 0 and 100", file=sys.stderr)
        return 2
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            print(f"memorywire embed serve: --api-key-env {args.api_key_env}: the variable "
                  "is not set or empty", file=sys.stderr)
            return 2
    elif args.host not in ("127.0.0.1", "::1", "localhost"):
        print(f"memorywire embed serve: warning: {args.host} is not loopback and no "
              "--api-key-env is set: anyone who reaches the port can use the model",
              file=sys.stderr)
    from memorywire.embed import embedder_from_spec  # numpy and the model: only when run

    embedder = embedder_from_spec(args.spec)
    serve_embed(embedder, args.host, args.port, names=frozenset({args.spec.strip()}),
                max_batch=args.max_batch, max_wait_ms=args.max_wait_ms, lanes=args.lanes,
                api_key=api_key)
    return 0


def register_embed(sub: Any) -> None:
    p = sub.add_parser("embed", help="the embedding model as a service")
    actions = p.add_subparsers(dest="embed_command", metavar="ACTION", required=True)
    s = actions.add_parser(
        "serve", help="serve OpenAI-compatible /v1/embeddings with micro-batching",
        description="Serve the model at http://HOST:PORT/v1 (POST /v1/embeddings, GET "
        "/v1/models, /v1/stats, /health). API servers use it with the embedder spec "
        "openai:http://HOST:PORT/v1#SPEC. Prints 'serving MODEL on URL' to stderr when ready.")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8099, help="port (default 8099; 0 picks one)")
    s.add_argument("--spec", default="minilm",
                   help="the embedder to serve (default minilm); clients send it as model")
    s.add_argument("--max-batch", type=int, default=64,
                   help="most texts in one model call (default 64)")
    s.add_argument("--max-wait-ms", type=float, default=2.0,
                   help="longest a call waits for concurrent requests (default 2; 0: never)")
    s.add_argument("--lanes", type=int, default=1,
                   help="model calls that may run at once (default 1)")
    s.add_argument("--api-key-env", default=None, metavar="VAR",
                   help="require 'Authorization: Bearer $VAR' on every embedding request")
    s.set_defaults(handler=_serve)
