"""``POST /v0/admin/import`` on the server ``serve`` builds: a streamed NDJSON dump (gzip or
not) in, the fidelity report out, with the CLI's conflict and loss rules, admin only, the
browser rule admitting NDJSON on this route only, and the import size limit."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance.actor import acting_as
from memorywire.governance.store import GovernedStore
from memorywire.portability import export_dump
from memorywire.server.app import Server, build_server
from memorywire.server.config import ServerConfig
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, MemoryType, RememberRequest

NDJSON = {"content-type": "application/x-ndjson"}


def _make_dump(tmp: Path, *, governed: bool) -> bytes:
    """Five memories of a1 (one forgotten); governed: with history and one pending write."""

    async def run() -> bytes:
        clock = FakeClock()
        inner = SqliteStore(tmp / "src.db", embedder=HashingEmbedder(), clock=clock)
        store: Any = GovernedStore(inner, tmp / "src.gov.db", clock=clock) if governed else inner
        try:
            with acting_as("alice"):
                for i in range(5):
                    clock.advance(1000)
                    await store.remember(RememberRequest(agent_id="a1", id=f"m{i}",
                                                         type=MemoryType.SEMANTIC,
                                                         content=f"fact {i}"))
                await store.forget(ForgetRequest(agent_id="a1", ids=["m4"]))
                if governed:
                    await store.remember(RememberRequest(agent_id="a1", id="p1",
                                                         type=MemoryType.SEMANTIC,
                                                         content="staged",
                                                         approval_required=True))
            path = tmp / "dump.jsonl"
            with open(path, "wb") as out:
                await export_dump(store, out, url="sqlite:///src.db", include_forgotten=True,
                                  include_history=governed, include_pending=governed)
            return path.read_bytes()
        finally:
            await store.aclose()

    return anyio.run(run)


def _server(tmp: Path, *, governed: bool, **limits: Any) -> Server:
    cfg = ServerConfig(store=f"sqlite:///{tmp / 'dst.db'}", tokens_db=str(tmp / "tokens.db"),
                       governance_db=str(tmp / "dst.gov.db") if governed else None,
                       embedder="hashing", **limits)
    return build_server(cfg)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str], dict[str, str]]]:
    server = _server(tmp_path, governed=True)
    assert server.tokens is not None
    admin, _ = server.tokens.create(role="admin", name="ops")
    agent, _ = server.tokens.create(role="agent", name="bot", agent_ids=["a1"])
    with TestClient(server.app, base_url="http://127.0.0.1") as client:
        yield (client, {"authorization": f"Bearer {admin}"},
               {"authorization": f"Bearer {agent}"})
        client.portal.call(server.aclose)


def test_admin_imports_a_dump_and_gets_the_fidelity_report(
        served: tuple[TestClient, dict[str, str], dict[str, str]], tmp_path: Path) -> None:
    client, admin, agent = served
    dump = _make_dump(tmp_path, governed=True)
    refused = client.post("/v0/admin/import", content=dump, headers={**agent, **NDJSON})
    assert refused.status_code == 403
    got = client.post("/v0/admin/import", content=dump, headers={**admin, **NDJSON})
    assert got.status_code == 200, got.text
    report = got.json()
    assert report["inserted"] == 5 and report["pending"] == 1 and report["history"] >= 5
    fates = {f["field"]: f["fate"] for f in report["plan"]["fields"]}
    assert fates["history"] == fates["pending"] == "kept"
    read = client.post("/v0/get", json={"agent_id": "a1", "id": "m2"}, headers=admin)
    assert read.status_code == 200 and read.json()["memory"]["content"] == "fact 2"
    staged = client.get("/v0/approvals", headers=admin).json()
    assert [i["id"] for i in staged["approvals"]] == ["p1"]
    history = client.post("/v0/history", json={"agent_id": "a1", "id": "m2"}, headers=admin)
    assert [r["operation"] for r in history.json()["revisions"]][-1] == "import"
    # What came in goes out again with its history and the staged write, over HTTP too.
    out = client.get("/v0/admin/export?include_history=true&include_pending=true"
                     "&include_forgotten=true", headers=admin)
    assert out.status_code == 200
    docs = [json.loads(x) for x in out.content.splitlines()]
    assert [d["pending"]["id"] for d in docs if d["kind"] == "pending"] == ["p1"]
    assert all(d.get("history") for d in docs if d["kind"] == "record")
    # The same dump gzipped, again: idempotent by id (skip is the default, as on the CLI).
    again = client.post("/v0/admin/import", content=gzip.compress(dump),
                        headers={**admin, **NDJSON, "content-encoding": "gzip"})
    assert again.status_code == 200, again.text
    assert again.json()["skipped"] == 5 and again.json()["inserted"] == 0
    fail = client.post("/v0/admin/import?on_conflict=fail", content=dump,
                       headers={**admin, **NDJSON})
    assert fail.status_code == 409 and fail.json()["code"] == "conflict"


def test_bad_requests_are_refused_before_anything_is_written(
        served: tuple[TestClient, dict[str, str], dict[str, str]], tmp_path: Path) -> None:
    client, admin, _ = served
    dump = _make_dump(tmp_path, governed=False)
    lines = dump.decode().splitlines()
    changed = json.loads(lines[3])
    changed["record"]["content"] = "forged"
    tampered = "\n".join([*lines[:3], json.dumps(changed), *lines[4:]]) + "\n"
    bad = client.post("/v0/admin/import", content=tampered, headers={**admin, **NDJSON})
    assert bad.status_code == 400 and "dump line 4" in bad.json()["message"]
    cut = client.post("/v0/admin/import", content="\n".join(lines[:-1]),
                      headers={**admin, **NDJSON})
    assert cut.status_code == 400 and "truncated" in cut.json()["message"]
    assert client.post("/v0/get", json={"agent_id": "a1", "id": "m1"},
                       headers=admin).status_code == 404
    plain = client.post("/v0/admin/import", content=dump,
                        headers={**admin, "content-type": "text/plain"})
    assert plain.status_code == 415  # the browser rule: only this route's NDJSON gets past
    ndjson_elsewhere = client.post("/v0/remember", content=b'{"agent_id":"a1"}',
                                   headers={**admin, **NDJSON})
    assert ndjson_elsewhere.status_code == 415
    as_json = client.post("/v0/admin/import", content=dump,
                          headers={**admin, "content-type": "application/json"})
    assert as_json.status_code == 400 and "x-ndjson" in as_json.json()["message"]
    unknown = client.post("/v0/admin/import?colour=red", content=dump,
                          headers={**admin, **NDJSON})
    assert unknown.status_code == 400 and "colour" in unknown.json()["message"]
    brotli = client.post("/v0/admin/import", content=dump,
                         headers={**admin, **NDJSON, "content-encoding": "br"})
    assert brotli.status_code == 400 and "br" in brotli.json()["message"]


def test_an_ungoverned_server_refuses_to_lose_history_unless_allowed(tmp_path: Path) -> None:
    dump = _make_dump(tmp_path, governed=True)
    server = _server(tmp_path, governed=False)
    assert server.tokens is not None
    admin = {"authorization": f"Bearer {server.tokens.create(role='admin', name='ops')[0]}",
             **NDJSON}
    with TestClient(server.app, base_url="http://127.0.0.1") as client:
        lossy = client.post("/v0/admin/import", content=dump, headers=admin)
        assert lossy.status_code == 400
        assert "history" in lossy.json()["message"] and "pending" in lossy.json()["message"]
        allowed = client.post("/v0/admin/import?allow_loss=history,pending", content=dump,
                              headers=admin)
        assert allowed.status_code == 200, allowed.text
        lost = {f["field"]: f["records"] for f in allowed.json()["plan"]["fields"]
                if f["fate"] == "lost"}
        assert lost == {"history": 5, "pending": 1} and allowed.json()["inserted"] == 5
        client.portal.call(server.aclose)


def test_a_dump_over_the_import_limit_is_refused_with_413(tmp_path: Path) -> None:
    dump = _make_dump(tmp_path, governed=False)
    server = _server(tmp_path, governed=False, max_import_bytes=len(dump) - 1)
    assert server.tokens is not None
    admin = {"authorization": f"Bearer {server.tokens.create(role='admin', name='ops')[0]}",
             **NDJSON}
    with TestClient(server.app, base_url="http://127.0.0.1") as client:
        declared = client.post("/v0/admin/import", content=dump, headers=admin)
        assert declared.status_code == 413 and "max_import_bytes" in declared.json()["message"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted while streaming
            for i in range(0, len(dump), 1000):
                yield dump[i:i + 1000]

        streamed = client.post("/v0/admin/import", content=chunks(), headers=admin)
        assert streamed.status_code == 413
        auth = {"authorization": admin["authorization"]}
        assert client.post("/v0/get", json={"agent_id": "a1", "id": "m1"},
                           headers=auth).status_code == 404
        client.portal.call(server.aclose)
