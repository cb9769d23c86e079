"""OpenAICompatibleEmbedder against a real HTTP server on the loopback interface."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memorywire.embed import HashingEmbedder, OpenAICompatibleEmbedder, embedder_from_spec
from memorywire.embed.spec import API_KEY_ENV
from memorywire.errors import BackendUnavailable, InvalidRequest, RateLimited, Unauthorized

DIM = 32


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]
    status: int
    reply: Any
    #: What the server does with ``encoding_format: base64``: "ignore" it (JSON numbers
    #: anyway), "honour" it, or "refuse" it (status 400 naming the field).
    base64_mode: str


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        status = self.server.status
        wants_b64 = body.get("encoding_format") == "base64"
        if self.server.base64_mode == "refuse" and "encoding_format" in body:
            status = 400
            payload = (b'{"error": {"message": "unknown field encoding_format",'
                       b' "param": "encoding_format"}}')
        elif status != 200:
            payload = b'{"error": {"message": "nope"}}'
        elif self.server.reply is not None:
            payload = json.dumps(self.server.reply).encode()
        else:
            vectors = HashingEmbedder(DIM).embed(body["input"]) * 3.0  # not unit length
            honour = wants_b64 and self.server.base64_mode == "honour"
            data = [
                {"object": "embedding", "index": i,
                 "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
                 if honour else v.tolist()}
                for i, v in enumerate(vectors)
            ]
            # Out of order on purpose: clients must sort by "index".
            payload = json.dumps({"object": "list", "data": data[::-1]}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.requests, srv.status, srv.reply, srv.base64_mode = [], 200, None, "ignore"
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join()


def _url(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_embeds_in_batches_and_normalises(server: _Server) -> None:
    texts = ["remember the milk", "recall", "forget it", "merge notes", "expire soon"]
    with OpenAICompatibleEmbedder(_url(server), "tiny", api_key="k-123", batch_size=2) as emb:
        vectors = emb.embed(texts)
        assert emb.name == "openai-compatible:tiny"
        assert emb.dim == DIM
    np.testing.assert_allclose(vectors, HashingEmbedder(DIM).embed(texts), atol=1e-6)
    assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1]
    assert {r["path"] for r in server.requests} == {"/v1/embeddings"}
    assert {r["auth"] for r in server.requests} == {"Bearer k-123"}
    assert server.requests[0]["body"]["model"] == "tiny"


def test_asks_for_base64_and_decodes_it_exactly(server: _Server) -> None:
    server.base64_mode = "honour"
    texts = ["remember the milk", "recall", "forget it"]
    with OpenAICompatibleEmbedder(_url(server), "tiny", batch_size=2) as emb:
        vectors = emb.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (3, DIM)
    np.testing.assert_allclose(vectors, HashingEmbedder(DIM).embed(texts), atol=1e-6)
    assert {r["body"]["encoding_format"] for r in server.requests} == {"base64"}


def test_reads_json_numbers_from_a_server_that_ignores_base64(server: _Server) -> None:
    texts = ["remember the milk", "recall"]
    with OpenAICompatibleEmbedder(_url(server), "tiny") as emb:
        vectors = emb.embed(texts)
    np.testing.assert_allclose(vectors, HashingEmbedder(DIM).embed(texts), atol=1e-6)
    assert server.requests[0]["body"]["encoding_format"] == "base64"


def test_a_server_refusing_base64_is_asked_for_numbers_from_then_on(server: _Server) -> None:
    server.base64_mode = "refuse"
    with OpenAICompatibleEmbedder(_url(server), "tiny", dim=DIM) as emb:
        first = emb.embed(["remember the milk"])
        second = emb.embed(["recall"])
    np.testing.assert_allclose(np.vstack([first, second]),
                               HashingEmbedder(DIM).embed(["remember the milk", "recall"]),
                               atol=1e-6)
    sent = [r["body"].get("encoding_format") for r in server.requests]
    assert sent == ["base64", None, None]


def test_bad_base64_is_backend_unavailable(server: _Server) -> None:
    server.reply = {"data": [{"index": 0, "embedding": "not base64!"}]}
    with OpenAICompatibleEmbedder(_url(server), "tiny", dim=DIM) as emb:
        with pytest.raises(BackendUnavailable, match="malformed"):
            emb.embed(["x"])
        server.reply = {"data": [{"index": 0, "embedding": base64.b64encode(b"abc").decode()}]}
        with pytest.raises(BackendUnavailable, match="malformed"):
            emb.embed(["x"])


def test_dim_is_probed_once_when_not_given(server: _Server) -> None:
    with OpenAICompatibleEmbedder(_url(server) + "/", "tiny") as emb:
        assert emb.dim == DIM
        assert emb.dim == DIM
        assert emb.embed([]).shape == (0, DIM)
    assert len(server.requests) == 1
    assert server.requests[0]["auth"] is None


@pytest.mark.parametrize(
    ("status", "error"), [(401, Unauthorized), (429, RateLimited), (500, BackendUnavailable)]
)
def test_http_errors_map_to_the_error_tree(
    server: _Server, status: int, error: type[Exception]
) -> None:
    server.status = status
    with OpenAICompatibleEmbedder(_url(server), "tiny", dim=DIM) as emb, pytest.raises(error):
        emb.embed(["x"])


def test_malformed_reply_is_backend_unavailable(server: _Server) -> None:
    server.reply = {"data": [{"index": 0}]}
    with OpenAICompatibleEmbedder(_url(server), "tiny", dim=DIM) as emb:
        with pytest.raises(BackendUnavailable, match="malformed"):
            emb.embed(["x"])
        server.reply = {"data": []}
        with pytest.raises(BackendUnavailable, match="0 vectors"):
            emb.embed(["x"])


def test_unreachable_server_is_backend_unavailable(server: _Server) -> None:
    url = _url(server)
    server.shutdown()
    server.server_close()
    with (
        OpenAICompatibleEmbedder(url, "tiny", dim=DIM, timeout=2.0) as emb,
        pytest.raises(BackendUnavailable, match="unreachable"),
    ):
        emb.embed(["x"])


def test_spec_builds_a_client_with_the_key_from_the_environment(
    server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(API_KEY_ENV, "from-env")
    emb = embedder_from_spec(f"openai:{_url(server)}#tiny-model")
    assert isinstance(emb, OpenAICompatibleEmbedder)
    with emb:
        assert emb.name == "openai-compatible:tiny-model"
        emb.embed(["hello"])
    assert server.requests[0]["auth"] == "Bearer from-env"


def test_rejects_non_http_urls() -> None:
    with pytest.raises(InvalidRequest):
        OpenAICompatibleEmbedder("ftp://example.invalid", "m")
