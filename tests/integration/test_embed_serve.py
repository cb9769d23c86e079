"""``memorywire embed serve`` as a real process: the in-process model's vectors over
OpenAI's ``/v1/embeddings``, concurrent requests sharing model calls, bad input refused with
400 naming the field, and a store embedding through it with the ``openai:`` spec."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from memorywire.embed import MiniLMEmbedder, embedder_from_spec
from memorywire.embed.openai_compat import OpenAICompatibleEmbedder
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import MemoryType, RecallRequest, RememberRequest

SRC = str(Path(__file__).resolve().parents[2] / "src")
TEXTS = ["The user's favourite airline is KLM.", "Booked a window seat to Lisbon.",
         "what does the user drink in the morning?"]
#: The service's batching window: long enough that concurrent requests of a loaded test
#: machine meet in one model call.
WAIT_MS = 25


def start_embed_service(log: Path, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    """``memorywire embed serve --port 0 ARGS`` of this checkout; its URL once it serves."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = open(log, "wb")  # noqa: SIM115  the process owns it; closed below
    proc = subprocess.Popen([sys.executable, "-m", "memorywire.cli", "embed", "serve",
                             "--port", "0", *args], env=env, stdout=out, stderr=out)
    out.close()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("serving ") and " on " in line:
                return proc, line.rsplit(" on ", 1)[1].strip()
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"embed serve did not start:\n{log.read_text(errors='replace')}")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc, url = start_embed_service(tmp_path_factory.mktemp("embed") / "serve.log",
                                    "--max-wait-ms", str(WAIT_MS))
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> MiniLMEmbedder:
    return MiniLMEmbedder(cache_dir=tmp_path_factory.mktemp("mw-cache"), cache_entries=0)


def _post(url: str, body: Any, **kw: Any) -> httpx.Response:
    return httpx.post(url + "/embeddings", json=body, timeout=60, **kw)


def test_vectors_through_the_service_are_the_in_process_ones(
        service: str, local: MiniLMEmbedder) -> None:
    want = np.asarray(local.embed(TEXTS), dtype=np.float32)
    raw = _post(service, {"input": TEXTS, "model": "minilm"})
    assert raw.status_code == 200, raw.text
    body = raw.json()
    got = np.asarray([d["embedding"] for d in body["data"]], dtype=np.float32)
    assert [d["index"] for d in body["data"]] == [0, 1, 2]
    assert np.array_equal(got, want)  # float32 values written exactly
    b64 = _post(service, {"input": TEXTS, "encoding_format": "base64"}).json()
    packed = np.stack([np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4")
                       for d in b64["data"]])
    assert np.array_equal(packed, want)
    with OpenAICompatibleEmbedder(service, "minilm") as client:  # the openai: spec's client
        assert client.dim == 384
        assert np.abs(client.embed(TEXTS) - want).max() < 1e-6
    single = _post(service, {"input": TEXTS[0]}).json()  # a plain string
    assert np.array_equal(np.asarray(single["data"][0]["embedding"], np.float32), want[0])


def test_concurrent_requests_share_model_calls(service: str, local: MiniLMEmbedder) -> None:
    before = httpx.get(service + "/stats").json()
    texts = [f"note number {i} about the user's {w}" for i, w in
             enumerate(["garden", "piano", "chess", "bread", "bikes", "hotel"] * 4)]
    gate = threading.Barrier(len(texts))
    answers: dict[int, list[float]] = {}

    def ask(i: int) -> None:
        gate.wait()
        answers[i] = _post(service, {"input": [texts[i]]}).json()["data"][0]["embedding"]

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    after = httpx.get(service + "/stats").json()
    requests, batches = after["requests"] - before["requests"], after["batches"] - before["batches"]
    assert requests == len(texts) and len(answers) == len(texts)
    assert batches < requests, (batches, requests)  # fewer model calls than requests
    assert after["max_requests_per_batch"] >= 2
    want = np.asarray(local.embed(texts), dtype=np.float32)
    got = np.asarray([answers[i] for i in range(len(texts))], dtype=np.float32)
    assert np.abs(got - want).max() < 1e-5  # a shared call gives each text its own vector
    assert after["cpu_s"] >= before["cpu_s"] and after["texts"] - before["texts"] == len(texts)


@pytest.mark.parametrize(("body", "param"), [
    ({}, "input"),
    ({"input": []}, "input"),
    ({"input": ""}, "input"),
    ({"input": ["fine", 3]}, "input[1]"),
    ({"input": [[101, 2023]]}, "input[0]"),  # token arrays
    ({"input": "x", "temperature": 1}, "temperature"),
    ({"input": "x", "dimensions": 12}, "dimensions"),
    ({"input": "x", "model": "text-embedding-3-small"}, "model"),
    ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
    ({"input": "x" * 40_000}, "input"),
    (["input"], None),
])
def test_bad_input_is_refused_naming_the_field(service: str, body: Any,
                                               param: str | None) -> None:
    before = httpx.get(service + "/stats").json()["requests"]
    resp = _post(service, body)
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error"
    if param is not None:
        assert param.split("[")[0] in error["message"]
    assert httpx.get(service + "/stats").json()["requests"] == before  # never reached the model
    assert _post(service, {"input": "still up"}).status_code == 200


def test_malformed_requests_and_routes(service: str) -> None:
    resp = httpx.post(service + "/embeddings", content=b"{not json", timeout=30)
    assert resp.status_code == 400 and "not JSON" in resp.json()["error"]["message"]
    assert httpx.get(service + "/nothing").status_code == 404
    assert httpx.get(service + "/embeddings").status_code == 404  # POST only
    models = httpx.get(service + "/models").json()
    assert {m["id"] for m in models["data"]} >= {"minilm", "all-MiniLM-L6-v2/onnx-fp32"}
    assert httpx.get(service.removesuffix("/v1") + "/health").json()["status"] == "ok"


@pytest.mark.anyio
async def test_a_store_embeds_through_the_service(service: str, tmp_path: Path) -> None:
    """What an API server does with ``--embedder openai:URL#minilm``: no model in process."""
    embedder = embedder_from_spec(f"openai:{service}#minilm")
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    store = SqliteStore(tmp_path / "s.db", embedder=embedder)
    try:
        await store.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                             content="The user is allergic to peanuts."))
        await store.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                             content="The user plays chess on Sundays."))
        hits = await store.recall(RecallRequest(agent_id="a", k=1,
                                                query="does the user have food allergies?"))
        assert [h.content for h in hits.results] == ["The user is allergic to peanuts."]
    finally:
        await store.aclose()
        embedder.close()


def test_an_api_key_is_required_when_set(tmp_path: Path) -> None:
    os.environ["MW_TEST_EMBED_KEY"] = "s3cret"
    try:
        proc, url = start_embed_service(tmp_path / "key.log", "--spec", "hashing:32",
                                        "--api-key-env", "MW_TEST_EMBED_KEY")
    finally:
        del os.environ["MW_TEST_EMBED_KEY"]
    try:
        assert _post(url, {"input": "x"}).status_code == 401
        ok = _post(url, {"input": "x"}, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and len(ok.json()["data"][0]["embedding"]) == 32
    finally:
        proc.terminate()
        proc.wait(30)
