"""OpenTelemetry traces: one span per operation, child spans per governance step, store call
and embedding model call. Off by default and then never imported, so it costs nothing.

Attribute names follow the OpenTelemetry semantic conventions where one exists:
``gen_ai.operation.name`` / ``gen_ai.request.model`` / ``gen_ai.provider.name`` on the model
call (GenAI embeddings), ``gen_ai.agent.id`` for the agent whose memory is touched,
``db.system.name`` / ``db.operation.name`` on store calls. There is no stable convention for
memory operations yet, so those carry ``memorywire.*`` names.

Needs the ``otel`` extra (``opentelemetry-sdk``, ``opentelemetry-exporter-otlp-proto-http``);
the exporter reads the standard ``OTEL_EXPORTER_OTLP_*`` environment variables.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from memorywire.errors import CapabilityMissing
from memorywire.wire.operations import OPERATION_TABLE

__all__ = ["EXTRA_HINT", "TracedStore", "Tracing"]

EXTRA_HINT = "pip install 'memorywire[otel]'"
#: Store methods that get a child span: the operations the table marks ``traced``.
_OPS = frozenset(spec.name for spec in OPERATION_TABLE if spec.traced)


class Tracing:
    """A tracer plus the span helpers the server uses."""

    def __init__(self, provider: Any | None = None) -> None:
        """``provider`` (a ``TracerProvider``) is for tests; by default spans go over OTLP."""
        try:
            from opentelemetry import trace
        except ImportError as exc:
            raise CapabilityMissing(f"tracing needs OpenTelemetry; run `{EXTRA_HINT}`") from exc
        self._trace = trace
        if provider is None:
            provider = _otlp_provider()
        self.provider = provider
        self.tracer = provider.get_tracer("memorywire")

    @contextlib.contextmanager
    def operation(self, op: str, principal: str, request_id: str | None) -> Iterator[Any]:
        """The root span of one request's operation."""
        attrs: dict[str, Any] = {"memorywire.operation": op, "enduser.id": principal}
        if request_id:
            attrs["memorywire.request_id"] = request_id
        with self.tracer.start_as_current_span(f"memorywire {op}", attributes=attrs,
                                               kind=self._trace.SpanKind.SERVER) as span:
            yield span

    def embed_span(self, model: str) -> Any:
        """A factory for the model-call span, used by the embedder's batcher."""
        trace = self._trace
        tracer = self.tracer

        def span(texts: int) -> contextlib.AbstractContextManager[Any]:
            if not trace.get_current_span().is_recording():
                return contextlib.nullcontext()  # work outside a request: no orphan traces
            opened: contextlib.AbstractContextManager[Any] = tracer.start_as_current_span(
                f"embeddings {model}", attributes={
                "gen_ai.operation.name": "embeddings",
                "gen_ai.request.model": model,
                "gen_ai.provider.name": "onnxruntime",
                "memorywire.embed.texts": texts,
            }, kind=trace.SpanKind.INTERNAL)
            return opened

        return span


class TracedStore:
    """Wraps a store so each operation runs in a child span; everything else passes through."""

    def __init__(self, inner: Any, tracing: Tracing, *, step: str, system: str) -> None:
        self._inner = inner
        self._tracing = tracing
        self._step = step
        self._system = system

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in _OPS:
            return attr

        async def traced(req: Any, *args: Any, **kw: Any) -> Any:
            attrs = {"db.system.name": self._system, "db.operation.name": name,
                     "memorywire.step": self._step}
            agent = getattr(req, "agent_id", None)
            if agent:
                attrs["gen_ai.agent.id"] = agent
            with self._tracing.tracer.start_as_current_span(f"{self._step} {name}",
                                                            attributes=attrs):
                return await attr(req, *args, **kw)

        return traced


def _otlp_provider() -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise CapabilityMissing(
            f"tracing over OTLP needs the OpenTelemetry SDK and exporter; run `{EXTRA_HINT}`"
        ) from exc
    provider = TracerProvider(resource=Resource.create({"service.name": "memorywire"}))
    # The SDK's defaults (2,048 queued spans, flushed every 5 s) drop spans above ~400 spans/s;
    # a busy server makes four per operation. The standard OTEL_BSP_* variables still win.
    queue = None if "OTEL_BSP_MAX_QUEUE_SIZE" in os.environ else 32768
    delay = None if "OTEL_BSP_SCHEDULE_DELAY" in os.environ else 1000
    provider.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(), max_queue_size=queue, schedule_delay_millis=delay))
    return provider
