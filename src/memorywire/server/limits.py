"""Bounds on what one request may cost: body size, JSON nesting, content size, call rates.

Nesting is measured on the raw bytes before ``json.loads`` runs, because the parser recurses
once per level and a 10,000-deep array would otherwise exhaust the stack of the server.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memorywire.core.json_depth import json_depth
from memorywire.errors import ErrorDetail, InvalidRequest, PayloadTooLarge, RateLimited
from memorywire.wire.codec import parse_json

__all__ = [
    "AnonymousPacer",
    "Limits",
    "RateLimiter",
    "Timeouts",
    "check_content_size",
    "json_depth",
    "parse_json_body",
    "rate_limiters",
]

@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1 << 20
    #: Largest dump ``POST /v0/admin/import`` takes (spooled to a temporary file, never
    #: held in memory).
    max_import_bytes: int = 1 << 30
    #: The same dump once unzipped, one line of it, and its record lines: checked while the
    #: dump is read, so a gzip bomb stops at the first cap instead of filling memory.
    max_import_unzipped_bytes: int = 4 << 30
    max_import_line_bytes: int = 8 << 20
    max_import_records: int = 5_000_000
    max_content_bytes: int = 256 << 10
    max_json_depth: int = 64
    #: Sustained recall calls per second per token, and the burst allowed above it. Which
    #: operations draw from which bucket is the operation table's ``rate`` (recall, list).
    recall_rate: float = 50.0
    recall_burst: int = 100
    #: The same for writes (remember, forget, merge, expire), per token.
    write_rate: float = 25.0
    write_burst: int = 50
    #: Seconds to receive a whole request body once its headers are in (then 408).
    body_timeout_s: float = 30.0
    #: Requests without a token (health, schemas) per second for the whole server, and the
    #: burst above it; over it a request waits its turn (up to a second), then gets 429.
    anonymous_rate: float = 20.0
    anonymous_burst: int = 40


@dataclass(frozen=True)
class Timeouts:
    """Seconds a client may take (enforced by :mod:`memorywire.server.timeouts`)."""

    header_s: float = 10.0
    body_s: float = 30.0
    #: Keep-alive: an idle connection is closed after this long.
    idle_s: float = 5.0


def parse_json_body(raw: bytes, limits: Limits) -> Any:
    """Decode a request body or raise an ``InvalidRequest`` the client can act on."""
    if len(raw) > limits.max_body_bytes:
        raise PayloadTooLarge(
            f"request body is {len(raw)} bytes; the limit is {limits.max_body_bytes}",
            [ErrorDetail("", "maxBytes", f"at most {limits.max_body_bytes} bytes")],
        )
    # Each level opens with a bracket, so a body holding no more brackets than the limit
    # (brackets inside strings only add to the count) cannot nest deeper: the exact walk,
    # which builds arrays the size of the body, is only needed for bracket-rich bodies.
    brackets = raw.count(b"{") + raw.count(b"[")
    depth = json_depth(raw) if brackets > limits.max_json_depth else brackets
    if depth > limits.max_json_depth:
        raise InvalidRequest(
            f"JSON nesting depth {depth} exceeds the limit of {limits.max_json_depth}",
            [ErrorDetail("", "maxDepth", f"at most {limits.max_json_depth} levels")],
        )
    try:
        return parse_json(raw)
    except RecursionError:
        raise InvalidRequest(
            "request body nests too deeply", [ErrorDetail("", "maxDepth", "too deep")]
        ) from None


def check_content_size(content: Any, limits: Limits) -> None:
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    size = len(text.encode("utf-8"))
    if size > limits.max_content_bytes:
        raise PayloadTooLarge(
            f"content is {size} bytes; the limit is {limits.max_content_bytes}",
            [ErrorDetail("/content", "maxBytes", f"at most {limits.max_content_bytes} bytes")],
        )


class RateLimiter:
    """One token bucket per key (a token id); thread-safe, with an injectable monotonic clock."""

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        now: Callable[[], float] = time.monotonic,
        kind: str = "recall",
    ) -> None:
        """``kind`` names the limit in the 429 (``recall``, ``write``) so a client knows which."""
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self.kind = kind
        self._rate = rate
        self._burst = float(burst)
        self._now = now
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str) -> None:
        """Take one token or raise ``RateLimited`` saying when the next one is due."""
        with self._lock:
            now = self._now()
            tokens, last = self._buckets.get(key, (self._burst, now))
            tokens = min(self._burst, tokens + (now - last) * self._rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                wait = (1.0 - tokens) / self._rate
                limit = f"{self._rate:g}/s, burst {self._burst:g}"
                raise RateLimited(
                    f"{self.kind} rate limit of this token exceeded ({limit}); "
                    f"retry in {wait:.3f} s",
                    [ErrorDetail("", "rate_limit", f"{self.kind}: {limit}")],
                    retry_after=round(max(wait, 0.001), 3),
                )
            self._buckets[key] = (tokens - 1.0, now)



def rate_limiters(limits: Limits, *, enabled: bool) -> dict[str, RateLimiter | None]:
    """The Dispatcher's ``rate_limiter`` and ``write_limiter`` keyword arguments.

    Servers leave them off on a loopback bind by default (``ServerConfig.rate_limited``):
    there the caller is one local principal, often an agent with many workers, and a
    per-token limit only turns its bursts into 429s.
    """
    if not enabled:
        return {"rate_limiter": None, "write_limiter": None}
    return {
        "rate_limiter": RateLimiter(limits.recall_rate, limits.recall_burst, kind="recall"),
        "write_limiter": RateLimiter(limits.write_rate, limits.write_burst, kind="write"),
    }


class AnonymousPacer:
    """One token bucket for every caller without a token, that makes the excess wait.

    Anonymous endpoints (health, schemas) cost little each, but a flood of them still takes
    event-loop turns from authenticated work. Waiting here is free (the coroutine sleeps), so
    a client that floods in a closed loop is slowed to the budget instead of being answered
    at once with a 429 it can retry immediately; a request that would wait more than
    ``max_wait_s`` gets the 429 with ``Retry-After``.
    """

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        max_wait_s: float = 1.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self._rate = rate
        self._burst = float(burst)
        self._max_wait = max_wait_s
        self._now = now
        self._tokens = float(burst)
        self._last = now()

    def reserve(self) -> float:
        """Take a token, possibly one not yet earned: the seconds to wait before using it.
        Raises ``RateLimited`` when that wait would exceed ``max_wait_s``."""
        now = self._now()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
        self._last = now
        wait = (1.0 - self._tokens) / self._rate if self._tokens < 1.0 else 0.0
        if wait > self._max_wait:
            limit = f"{self._rate:g}/s, burst {self._burst:g}"
            raise RateLimited(
                f"requests without a token are limited to {limit} for this server; "
                f"retry in {wait:.3f} s",
                [ErrorDetail("", "rate_limit", f"anonymous: {limit}")],
                retry_after=round(wait, 3),
            )
        self._tokens -= 1.0
        return wait
