"""The reviewer UI over a real GovernedStore in Starlette's TestClient, as the UI tests set
it up: one governed in-memory store on a fake clock, the UI mounted at ``/ui``, and writes
staged the way an agent would stage them."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.governance import GovernedStore, acting_as
from memorywire.server.ui import review_app
from memorywire.store.memory import InMemoryStore
from memorywire.wire.models import RememberRequest, RememberResponse

#: The agent whose writes are staged.
A = "agent-1"


def governed(tmp_path: Path) -> GovernedStore:
    clock = FakeClock()
    return GovernedStore(InMemoryStore(embedder=HashingEmbedder(), clock=clock),
                         tmp_path / "gov.db", clock=clock,
                         approval_base_url="http://testserver")


@contextmanager
def ui_client(gov: GovernedStore, tokens: Mapping[str, str],
              **options: Any) -> Iterator[TestClient]:
    """The UI signed in by ``tokens`` (token -> reviewer), with ``review_app``'s
    ``options``; not following redirects, so a test sees where each one points. Closes
    ``gov`` on the client's event loop."""
    app = Starlette(routes=[Mount("/ui", app=review_app(gov, tokens.get, secret_key="k" * 32,
                                                        **options))])
    with TestClient(app, follow_redirects=False) as c:
        yield c
        c.portal.call(gov.aclose)


def stage(c: TestClient, gov: GovernedStore, content: str, gated: bool = True) -> RememberResponse:
    """Remember ``content`` for :data:`A` as the writer, waiting for approval if ``gated``."""

    async def run() -> RememberResponse:
        with acting_as("writer"):
            return await gov.remember(RememberRequest(agent_id=A, type="semantic",
                                                      content=content, approval_required=gated))

    return c.portal.call(run)


def csrf_of(html: str) -> str:
    """The CSRF token of the page's form."""
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, html
    return m.group(1)
