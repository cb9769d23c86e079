"""What ``serve`` shows a newcomer: /docs offline, every endpoint at start-up, an access log."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

import memorywire.server.app as app_module
from memorywire.embed.hashing import HashingEmbedder
from memorywire.server import apidocs
from memorywire.server.apidocs import redoc_script
from memorywire.server.app import build_server, endpoints
from memorywire.server.config import ServerConfig
from memorywire.store.memory import InMemoryStore


def _server(tmp_path: Path) -> TestClient:
    config = ServerConfig(store="memory://", no_auth=True, tokens_db=str(tmp_path / "t.db"))
    server = build_server(config, store=InMemoryStore(embedder=HashingEmbedder(16)))
    return TestClient(server.app, base_url="http://127.0.0.1")


def test_docs_are_swagger_ui_served_from_this_server_only(tmp_path: Path) -> None:
    with _server(tmp_path) as client:
        page = client.get("/docs")
        assert page.status_code == 200 and "<script>" not in page.text  # no inline script
        for ref in ("/docs/swagger-ui.css", "/docs/swagger-ui-bundle.js", "/docs/init.js"):
            assert ref in page.text
            got = client.get(ref)
            assert got.status_code == 200 and len(got.content) > 30, ref
        assert "https://" not in page.text
        assert '"/openapi.json"' in client.get("/docs/init.js").text


def test_redoc_is_served_from_the_redoc_extra_only(tmp_path: Path) -> None:
    if redoc_script() is None:
        pytest.skip("the redoc extra is not installed: pip install 'memorywire[redoc]'")
    with _server(tmp_path) as client:
        page = client.get("/redoc")
        assert page.status_code == 200 and "<script>" not in page.text  # no inline script
        assert '<redoc spec-url="/openapi.json">' in page.text
        assert "https://" not in page.text and "http://" not in page.text
        script = client.get("/redoc/redoc.standalone.js")
        assert script.status_code == 200
        assert script.headers["content-type"].startswith("text/javascript")
        assert b"Redoc" in script.content and len(script.content) > 500_000
    where = dict(endpoints(_server(tmp_path).app, ServerConfig().resolved()))
    assert where["ReDoc"] == "http://127.0.0.1:8765/redoc"


def test_without_the_redoc_extra_the_page_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(apidocs, "redoc_script", lambda: None)
    monkeypatch.setattr(app_module, "redoc_script", lambda: None)
    with _server(tmp_path) as client:
        page = client.get("/redoc")
        assert page.status_code == 404
        assert "pip install &#39;memorywire[redoc]&#39;" in page.text or (
            "pip install 'memorywire[redoc]'" in page.text)
        assert 'href="/docs"' in page.text
        assert client.get("/redoc/redoc.standalone.js").status_code == 404
        where = dict(endpoints(client.app, ServerConfig().resolved()))  # type: ignore[arg-type]
    assert where["ReDoc"] == "not installed: pip install 'memorywire[redoc]'"


def test_start_up_lists_every_endpoint_the_app_serves(tmp_path: Path) -> None:
    plain = ServerConfig(store="memory://", no_auth=True, tokens_db=str(tmp_path / "t.db"))
    server = build_server(plain, store=InMemoryStore(embedder=HashingEmbedder(16)))
    where = dict(endpoints(server.app, server.config.resolved()))
    assert where["REST"] == "http://127.0.0.1:8765/v0/"
    assert where["JSON-RPC"] == "http://127.0.0.1:8765/v0/rpc"
    assert where["MCP"] == "http://127.0.0.1:8765/mcp"
    assert where["review UI"].startswith("off: start with --governance-db")
    assert where["API docs"] == "http://127.0.0.1:8765/docs"
    assert where["OpenAPI"] == "http://127.0.0.1:8765/openapi.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_serve_log_level_info_writes_an_access_log(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "MEMORYWIRE_HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memorywire.cli", "serve", "--embedder", "hashing", "--no-auth",
         "--port", str(port), "--log-level", "info", "--governance-db", str(tmp_path / "g.db")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.communicate()
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/v0/health", timeout=1).status_code == 200
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "serve did not come up"
                time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert '"GET /v0/health HTTP/1.1" 200' in out + err
    for line in ("REST", "JSON-RPC", "MCP", "review UI", "API docs", "OpenAPI"):
        assert f"  {line}" in err, err
    assert f"http://127.0.0.1:{port}/ui/" in err
    # the default store is not created by a server that nobody wrote to
    assert not (tmp_path / "mem.db").exists()
