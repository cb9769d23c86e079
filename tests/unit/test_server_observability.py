"""/metrics, OpenTelemetry spans and the access log of a server built as ``serve`` builds it."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memorywire.embed import default_embedder
from memorywire.server.app import Server, build_server
from memorywire.server.auth import TokenStore
from memorywire.server.config import ServerConfig
from memorywire.server.metrics import Metrics
from memorywire.server.observability import ACCESS_LOGGER, Observability
from memorywire.server.tracing import Tracing

pytestmark = pytest.mark.anyio


@dataclass
class Running:
    server: Server
    admin: str
    agent: str
    reviewer: str


async def _running(tmp_path: Path, obs: Observability, *, client_host: str = "127.0.0.1",
                   ) -> AsyncIterator[tuple[Running, httpx.AsyncClient]]:
    tokens = TokenStore(tmp_path / "tokens.db")
    admin, _ = tokens.create(role="admin", name="admin")
    agent, _ = tokens.create(role="agent", agent_ids=["A"], name="agent")
    reviewer, _ = tokens.create(role="reviewer", name="reviewer")
    config = ServerConfig(store=f"sqlite:///{tmp_path / 'mem.db'}",
                          governance_db=str(tmp_path / "gov.db"),
                          tokens_db=str(tmp_path / "tokens.db"))
    server = build_server(config, tokens=tokens, observability=obs)
    transport = httpx.ASGITransport(app=server.app, client=(client_host, 5555))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            yield Running(server, admin, agent, reviewer), http
    finally:
        await server.aclose()


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_metrics_count_operations_latency_queue_and_batches(tmp_path: Path) -> None:
    metrics = Metrics()
    async for run, http in _running(tmp_path, Observability(metrics=metrics)):
        h = _auth(run.agent)
        for i in range(3):
            r = await http.post("/v0/remember", headers=h, json={
                "agent_id": "A", "type": "semantic", "content": f"fact {i}"})
            assert r.status_code == 200
        staged = await http.post("/v0/remember", headers=h, json={
            "agent_id": "A", "type": "semantic", "content": "needs review",
            "approval_required": True})
        assert staged.json()["pending_approval"] is True
        assert (await http.post("/v0/recall", headers=h, json={
            "agent_id": "A", "query": "fact"})).status_code == 200
        assert (await http.post("/v0/recall", headers=h, json={
            "agent_id": "B", "query": "fact"})).status_code == 403

        body = (await http.get("/metrics")).text
    assert ('memorywire_operations_total{operation="remember",outcome="ok"} 4' in body)
    assert 'memorywire_operations_total{operation="recall",outcome="ok"} 1' in body
    assert 'memorywire_operations_total{operation="recall",outcome="forbidden"} 1' in body
    assert 'memorywire_operation_duration_seconds_count{operation="remember"} 4' in body
    assert 'memorywire_operation_duration_seconds_bucket{operation="recall",le="+Inf"} 2' in body
    assert 'memorywire_approval_queue_depth{status="pending"} 1' in body
    assert metrics.value("memorywire_embed_batch_texts") >= 1


async def test_metrics_refuse_remote_callers_without_an_admin_token(tmp_path: Path) -> None:
    async for run, http in _running(tmp_path, Observability(metrics=Metrics()),
                                    client_host="203.0.113.9"):
        assert (await http.get("/metrics")).status_code == 401
        assert (await http.get("/metrics", headers=_auth(run.agent))).status_code == 403
        assert (await http.get("/metrics", headers=_auth(run.reviewer))).status_code == 403
        ok = await http.get("/metrics", headers=_auth(run.admin))
        assert ok.status_code == 200
        assert "# TYPE memorywire_operations_total counter" in ok.text


async def test_metrics_can_be_turned_off(tmp_path: Path) -> None:
    async for _run, http in _running(tmp_path, Observability()):
        assert (await http.get("/metrics")).status_code == 404


async def test_one_trace_per_request_through_governance_store_and_model(
    tmp_path: Path,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    obs = Observability(tracing=Tracing(provider))
    async for run, http in _running(tmp_path, obs):
        h = _auth(run.agent)
        for doc, op in [
            ({"agent_id": "A", "type": "semantic", "content": "the sky is blue"}, "remember"),
            ({"agent_id": "A", "query": "what colour is the sky"}, "recall"),
        ]:
            exporter.clear()
            assert (await http.post(f"/v0/{op}", headers=h, json=doc)).status_code == 200
            spans = exporter.get_finished_spans()
            assert len({s.context.trace_id for s in spans}) == 1, [s.name for s in spans]
            by_name = {s.name: s for s in spans}
            root = by_name[f"memorywire {op}"]
            governance = by_name[f"governance {op}"]
            store = by_name[f"store {op}"]
            model = by_name["embeddings all-MiniLM-L6-v2/onnx-fp32"]
            assert root.parent is None
            assert governance.parent is not None and governance.parent.span_id == (
                root.context.span_id)
            assert store.parent is not None and store.parent.span_id == (
                governance.context.span_id)
            # A governed remember asks the store's duplicate rule before it writes
            # (governance/repeats.py): its embedding is then the one the write reuses.
            parents = ({store.context.span_id, governance.context.span_id}
                       if op == "remember" else {store.context.span_id})
            assert model.parent is not None and model.parent.span_id in parents
            assert store.attributes is not None and store.attributes["db.system.name"] == "sqlite"
            assert store.attributes["gen_ai.agent.id"] == "A"
            assert model.attributes is not None
            assert model.attributes["gen_ai.operation.name"] == "embeddings"
    default_embedder().batcher.span_hook = None  # the process-wide model outlives the server


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def test_access_log_is_one_json_line_per_request_with_its_id(tmp_path: Path) -> None:
    collect = _Collect()
    logger = logging.getLogger(ACCESS_LOGGER)
    logger.addHandler(collect)
    try:
        async for run, http in _running(tmp_path, Observability(access_log=True)):
            r = await http.post("/v0/recall",
                                headers={**_auth(run.agent), "X-Request-Id": "req-42"},
                                json={"agent_id": "A", "query": "anything"})
            assert r.headers["x-request-id"] == "req-42"
            hostile = await http.get("/v0/health", headers={"X-Request-Id": "a b c"})
            fresh_id = hostile.headers["x-request-id"]
    finally:
        logger.removeHandler(collect)
    lines = [json.loads(line) for line in collect.lines]
    assert lines[0]["request_id"] == "req-42"
    assert lines[0]["operation"] == "recall" and lines[0]["principal"] == "agent"
    assert lines[0]["status"] == 200 and lines[0]["path"] == "/v0/recall"
    assert lines[1]["request_id"] == fresh_id != "a b c"
    assert len(lines) == 2


def test_the_grafana_dashboard_queries_only_metrics_the_server_exports() -> None:
    import re

    import anyio

    dashboard = Path(__file__).parents[2] / "docs" / "grafana-memorywire.json"
    doc = json.loads(dashboard.read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in doc["panels"] for t in p["targets"]]
    used = {re.sub(r"_(bucket|sum|count)$", "", m)
            for e in exprs for m in re.findall(r"memorywire_[a-z_]+", e)}
    metrics = Metrics()

    async def no_rows() -> dict[tuple[tuple[str, str], ...], float]:
        return {}

    metrics.gauge("memorywire_approval_queue_depth", "depth", no_rows)
    exported = set(re.findall(r"^# TYPE (\S+)", anyio.run(metrics.render), re.M))
    assert used and used <= exported, used - exported
