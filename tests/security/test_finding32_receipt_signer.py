"""Finding 32 (medium): a receipt re-signed with a fresh key passed ``memorywire receipt
verify`` with ``{"ok": true}``: the key travels inside the receipt, so anyone can sign one.
Only ``--trusted-key`` rejected it, and nothing printed the deployment's key to pin. Now
``receipt key`` and ``GET /v0/receipts/key`` publish the key, and ``verify`` is ``ok`` only
for a pinned key or this deployment's; a valid signature by anyone else says "signer not
pinned" (``"ok": false, "signer": "unpinned"``, exit 3). The receipt is produced by a hard
forget over REST, JSON-RPC and MCP alike; checking it is the CLI's (offline) and the key's
publication is REST's."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.cli.main import main
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance.receipts import dump_receipt, sign_receipt
from memorywire.governance.signing import SigningKeySource
from memorywire.server.auth import TokenStore
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, str, Path]]:
    key = tmp_path / "signing-key.pem"
    store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder())
    tokens = TokenStore()
    admin, _ = tokens.create(role="admin", name="admin")
    app = create_app(Dispatcher(store, signing_key=SigningKeySource(key, create=True)),
                     tokens=tokens)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://127.0.0.1") as http:
        yield http, admin, key
    tokens.close()
    await store.aclose()


async def _erase_one(http: httpx.AsyncClient, admin: str) -> dict[str, Any]:
    auth = {"authorization": f"Bearer {admin}"}
    r = await http.post("/v0/remember", headers=auth, json={
        "agent_id": "A", "type": "semantic", "content": "the PIN is 4711", "id": "m1"})
    assert r.status_code == 200, r.text
    r = await http.post("/v0/forget", headers=auth, json={
        "agent_id": "A", "ids": ["m1"], "hard_delete": True})
    assert r.status_code == 200, r.text
    receipt: dict[str, Any] = r.json()["receipt"]
    return receipt


def _verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    status = main(["receipt", "verify", *argv])
    return status, json.loads(capsys.readouterr().out)


async def test_a_receipt_resigned_with_a_fresh_key_is_not_ok(
    server: tuple[httpx.AsyncClient, str, Path], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    http, admin, key = server
    genuine = await _erase_one(http, admin)
    forged = sign_receipt(Ed25519PrivateKey.generate(),
                          {k: v for k, v in genuine.items()
                           if k not in ("signature", "public_key")}
                          | {"erased": {"memory": ["m1", "someone-elses-memory"]}})
    (tmp_path / "genuine.json").write_bytes(dump_receipt(genuine))
    (tmp_path / "forged.json").write_bytes(dump_receipt(forged))
    forged_file, genuine_file = str(tmp_path / "forged.json"), str(tmp_path / "genuine.json")

    status, out = _verify(capsys, forged_file)
    assert status == 3 and out["ok"] is False, out
    assert out["signature"] == "valid" and out["signer"] == "unpinned"
    assert "signer not pinned" in out["reason"]

    # The deployment publishes its key, over REST (no token needed) and the CLI.
    published = (await http.get("/v0/receipts/key")).json()
    assert published["algorithm"] == "Ed25519"
    assert published["public_key"] == genuine["public_key"]
    assert main(["receipt", "key", "--signing-key", str(key)]) == 0
    assert json.loads(capsys.readouterr().out)["public_key"] == genuine["public_key"]

    pin = published["public_key"]
    status, out = _verify(capsys, forged_file, "--trusted-key", pin)
    assert status == 1 and out["ok"] is False
    status, out = _verify(capsys, forged_file, "--signing-key", str(key))
    assert status == 3 and out["signer"] == "unpinned"

    status, out = _verify(capsys, genuine_file, "--trusted-key", pin)
    assert (status, out["ok"], out["signer"]) == (0, True, "pinned")
    status, out = _verify(capsys, genuine_file, "--signing-key", str(key))
    assert (status, out["ok"], out["signer"]) == (0, True, "deployment")
    status, out = _verify(capsys, genuine_file)  # no pin, and not this machine's default key
    assert (status, out["ok"], out["signer"]) == (3, False, "unpinned")


async def test_a_server_without_a_key_says_it_signs_no_receipts(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder())
    app = create_app(Dispatcher(store), tokens=TokenStore())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://127.0.0.1") as http:
        r = await http.get("/v0/receipts/key")
    await store.aclose()
    assert r.status_code == 422 and r.json()["code"] == "capability_missing", r.text
