"""One memorywire client per test, in process or over HTTP, optionally governed.

``client`` is parametrised over ``local`` (``SyncMemory`` over the store in this process) and
``remote`` (``SyncMemory`` over ``RemoteMemory`` speaking REST to the real app, through an
ASGI transport), so every integration test runs against both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.client import Memory, RemoteMemory, SyncMemory
from memorywire.embed import default_embedder
from memorywire.embed.base import Embedder
from memorywire.governance import GovernedStore
from memorywire.governance.receipts import dump_receipt, verify_receipt
from memorywire.governance.recover import RecoveryPlan, RecoveryResult
from memorywire.governance.signing import SigningKeySource
from memorywire.server.approvals import GovernanceApprovals
from memorywire.server.dispatch import Dispatcher
from memorywire.server.http import create_app
from memorywire.store.base import MemoryStore
from memorywire.store.memory import InMemoryStore

#: Stage every remember whose provenance is a tool result, as a cautious deployment would.
REVIEW_TOOL_RESULTS = {
    "rules": [{"name": "untrusted", "match": {"source": "tool_result"}, "decision": "review"}]
}


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return default_embedder()


class _Served(RemoteMemory):
    """A RemoteMemory talking to the server's app; closing it closes the server's store."""

    def __init__(self, store: MemoryStore, key_path: Path) -> None:
        approvals = GovernanceApprovals(store) if isinstance(store, GovernedStore) else None
        keys = SigningKeySource(key_path, create=True)  # the server signs recover receipts
        app = create_app(Dispatcher(store, approvals=approvals, signing_key=keys), tokens=None)
        super().__init__("http://127.0.0.1", transport=httpx.ASGITransport(app=app))
        self._store = store

    async def aclose(self) -> None:
        await super().aclose()
        await self._store.aclose()


MakeClient = Callable[..., SyncMemory[Any]]


@pytest.fixture(params=["local", "remote"])
def make_client(
    request: pytest.FixtureRequest, embedder: Embedder, tmp_path: Path
) -> Iterator[MakeClient]:
    made: list[SyncMemory[Any]] = []

    def make(
        *, policies: dict[str, Any] | None = None, gate: tuple[str, ...] = ()
    ) -> SyncMemory[Any]:
        def build() -> Any:
            store: MemoryStore = InMemoryStore(embedder)
            if policies is not None or gate:
                store = GovernedStore(
                    store, tmp_path / f"gov{len(made)}.db", policies=policies,
                    require_approval_for=gate, approval_base_url="http://127.0.0.1",
                )
            if request.param == "local":
                return Memory(store, own_store=True)
            return _Served(store, tmp_path / f"key{len(made)}.pem")

        client: SyncMemory[Any] = SyncMemory(build)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def client(make_client: MakeClient) -> SyncMemory[Any]:
    return make_client()


def recover_by_source(client: SyncMemory[Any], source: str) -> RecoveryResult:
    """Recovery by provenance, run as a deployment would: the in-process client's
    ``recover`` with the operator's key; the remote client asks the server's admin route
    (``POST /v0/admin/recover``), which signs with the server's key. Checks the signed
    receipt before returning the result."""
    if isinstance(client._mem, _Served):  # the async client behind the facade (tests only)
        out = client.recover(source=source)
        assert isinstance(out, dict)
        result = RecoveryResult(RecoveryPlan.from_dict(out["plan"]),
                                receipts=list(out.get("part_receipts") or []),
                                pending_approval=bool(out.get("pending_approval")),
                                receipt=out.get("receipt"))
    else:
        got = client.recover(source=source, key=Ed25519PrivateKey.generate())
        assert isinstance(got, RecoveryResult)
        result = got
    assert result.receipt is not None
    ok, why = verify_receipt(dump_receipt(result.receipt))
    assert ok, why
    return result
