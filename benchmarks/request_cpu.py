"""CPU of one request through the server's layers, in process, with no network and no model.

``load.py`` measures ``serve`` from outside, where the neighbours of a shared machine move every
number. This times the layers one at a time inside one process with ``time.process_time``
(every thread of the process counts: the store's and governance's workers included), over
many calls, on the setup ``load.py`` defaults to minus the model: SQLite, governance, token
auth, the browser rules ``serve`` installs, and the ``hashing`` embedder so the ~3 ms MiniLM
call per text does not hide the rest. Layers:

* ``validate``: the JSON Schema check of a remember body (the pre-check when installed);
* ``validate_reference``: the same by ``jsonschema`` alone (``validate_recall*``: a recall);
* ``authenticate``: one token lookup;
* ``http_layers_noop``: the Starlette app in front of a dispatcher that answers at once (every
  HTTP layer: routing, middleware, body, token lookup, JSON in and out), remember and recall;
* ``dispatch_remember`` / ``dispatch_recall``: the dispatcher (validation, governance, store);
* ``asgi_remember`` / ``asgi_recall``: the whole Starlette app, called as uvicorn calls it;
* ``governed_*`` / ``ungoverned_*``: the dispatcher with and without governance (a second
  server on its own SQLite file).

``asgi - dispatch`` is what the HTTP layers (routing, middleware, body, auth, response) cost,
``governed - ungoverned`` what governance (intent and done entries, the queue check) costs.
Each pair is timed alternately, call by call.

    .venv/bin/python benchmarks/request_cpu.py --json --out /tmp/x.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from _asgi import json_post_scope

from memorywire.server.app import build_server
from memorywire.server.auth import TokenStore
from memorywire.server.config import ServerConfig
from memorywire.server.dispatch import DispatchResult
from memorywire.wire.validate import reference_issues, validate

#: Writes spread over this many agents, so the conflict scan of issue 17 (which reads the
#: scope's memories, and belongs to the store) stays small and the layers above it show.
_AGENTS = 64


async def _asgi(app: Any, path: str, token: str, doc: dict[str, Any]) -> int:
    body = json.dumps(doc).encode()
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])

    await app(json_post_scope(path, token, body), receive, send)
    return status


def _sync_cost(fn: Callable[[], Any], n: int) -> float:
    for _ in range(min(n, 50)):
        fn()
    t = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t) / n * 1e6


async def _paired_cost(
    a: Callable[[int], Awaitable[Any]], b: Callable[[int], Awaitable[Any]], n: int
) -> tuple[float, float]:
    """Alternate the two, so both see the same store (a remember's cost grows with the
    memories already in its scope: the conflict scan reads them), and swap which goes first
    every call: work a call leaves to other threads is counted in the next one's window."""
    for i in range(min(n, 20)):
        await a(-1 - i)
        await b(-1 - i)
    spent = [0.0, 0.0]
    for i in range(n):
        order = ((0, a), (1, b)) if i % 2 == 0 else ((1, b), (0, a))
        for k, fn in order:
            t = time.process_time()
            await fn(i)
            spent[k] += time.process_time() - t
    return spent[0] / n * 1e6, spent[1] / n * 1e6


def _agent(i: int) -> str:
    return f"bench-{i % _AGENTS}"


def _avg(pair: tuple[float, float]) -> float:
    return (pair[0] + pair[1]) / 2


def _remember_doc(tag: str, i: int) -> dict[str, Any]:
    return {"agent_id": _agent(i), "type": "semantic", "id": f"{tag}-{i}",
            "content": f"load note {tag}{i} about topic{i % 50}"}


def _recall_doc(i: int) -> dict[str, Any]:
    return {"agent_id": _agent(i), "query": f"what about topic{i % 50}", "k": 10}


async def _measure(home: Path, n: int) -> dict[str, float]:
    tokens = TokenStore(home / "tokens.db")
    secret, _ = tokens.create(role="admin", name="bench")
    config = ServerConfig(store=f"sqlite:///{home / 'mem.db'}", embedder="hashing",
                          governance_db=str(home / "gov.db"), tokens_db=str(home / "tokens.db"),
                          rate_limits="off")
    server = build_server(config, tokens=tokens)
    bare = build_server(replace(config, store=f"sqlite:///{home / 'bare.db'}",
                                governance_db=""), tokens=TokenStore())
    out: dict[str, float] = {}
    try:
        doc = _remember_doc("v", 0)
        out["validate"] = _sync_cost(lambda: validate("remember", doc), n * 4)
        out["validate_reference"] = _sync_cost(lambda: reference_issues("remember", doc), n)
        query = _recall_doc(0)
        out["validate_recall"] = _sync_cost(lambda: validate("recall", query), n * 4)
        out["validate_recall_reference"] = _sync_cost(
            lambda: reference_issues("recall", query), n)
        out["authenticate"] = _sync_cost(lambda: tokens.authenticate(secret), n * 4)
        principal = tokens.authenticate(secret)
        disp = server.dispatcher
        app = server.app

        async def rest(path: str, doc: dict[str, Any]) -> None:
            status = await _asgi(app, path, secret, doc)
            if status != 200:
                raise SystemExit(f"{path} answered {status}")

        real = disp.dispatch

        async def noop(op: str, doc: Any, p: Any) -> DispatchResult:
            return DispatchResult({"id": "x", "stored_at": 1, "stores": ["sqlite"]})

        disp.dispatch = noop  # type: ignore[method-assign,assignment]
        out["http_layers_noop"] = _avg(
            await _paired_cost(lambda i: rest("/v0/remember", _remember_doc("n", i)),
                               lambda i: rest("/v0/recall", _recall_doc(i)), n * 4))
        disp.dispatch = real  # type: ignore[method-assign]
        out["dispatch_remember"], out["asgi_remember"] = await _paired_cost(
            lambda i: disp.dispatch("remember", _remember_doc("d", i), principal),
            lambda i: rest("/v0/remember", _remember_doc("a", i)), n)
        out["dispatch_recall"], out["asgi_recall"] = await _paired_cost(
            lambda i: disp.dispatch("recall", _recall_doc(i), principal),
            lambda i: rest("/v0/recall", _recall_doc(i)), n)
        plain = bare.dispatcher
        out["ungoverned_remember"], out["governed_remember"] = await _paired_cost(
            lambda i: plain.dispatch("remember", _remember_doc("u", i), principal),
            lambda i: disp.dispatch("remember", _remember_doc("g", i), principal), n)
        out["ungoverned_recall"], out["governed_recall"] = await _paired_cost(
            lambda i: plain.dispatch("recall", _recall_doc(i), principal),
            lambda i: disp.dispatch("recall", _recall_doc(i), principal), n)
    finally:
        await server.aclose()
        await bare.aclose()
    out["http_layers_remember"] = out["asgi_remember"] - out["dispatch_remember"]
    out["http_layers_recall"] = out["asgi_recall"] - out["dispatch_recall"]
    out["governance_remember"] = out["governed_remember"] - out["ungoverned_remember"]
    out["governance_recall"] = out["governed_recall"] - out["ungoverned_recall"]
    return {k: round(v, 1) for k, v in out.items()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("-n", type=int, default=400, help="calls per layer (max 20000)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    n = max(1, min(args.n, 20000))
    with tempfile.TemporaryDirectory(prefix="mw-reqcpu-") as tmp:
        us = anyio.run(_measure, Path(tmp), n)
    report = {
        "cpu_us_per_call": us, "calls": n,
        "fast_validation": os.environ.get("MEMORYWIRE_FAST_VALIDATION", "1") != "0",
        "machine": {"cpus": os.cpu_count(), "load_avg_1m_at_end": os.getloadavg()[0],
                    "python": platform.python_version()},
    }
    text = json.dumps(report, indent=2)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    if args.json:
        print(text)
    else:
        for k, v in us.items():
            print(f"{k:24} {v:10.1f} us")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
