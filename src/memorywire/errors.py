"""The one exception tree of memorywire.

Every failure a caller can see is a :class:`MemorywireError` subclass carrying a stable wire
``code``. Transports map the code, never the Python class: HTTP turns it into a status
(``http_status``), JSON-RPC and MCP send the code inside the error envelope. Backend-specific
exceptions are translated into this tree at one point per backend, so callers never catch a
driver's exception type.

Tree::

    MemorywireError                 internal_error        500
    ├── InvalidRequest              invalid_request       400
    │   ├── PayloadTooLarge         payload_too_large     413
    │   └── UnsupportedVersion      unsupported_version   400
    ├── Unauthorized                unauthorized          401
    ├── Forbidden                   forbidden             403
    ├── NotFound                    not_found             404
    ├── Conflict                    conflict              409
    │   └── EmbedderMismatch        embedder_mismatch     409
    ├── PendingApproval             pending_approval      409
    ├── CapabilityMissing           capability_missing    422
    ├── RateLimited                 rate_limited          429
    ├── BackendUnavailable          backend_unavailable   503
    │   └── StorageFull             storage_full          507
    └── StoreCorrupt                store_corrupt         500
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "ERROR_CODES",
    "BackendUnavailable",
    "CapabilityMissing",
    "Conflict",
    "EmbedderMismatch",
    "ErrorDetail",
    "Forbidden",
    "InvalidRequest",
    "MemorywireError",
    "NotFound",
    "PayloadTooLarge",
    "PendingApproval",
    "RateLimited",
    "StorageFull",
    "StoreCorrupt",
    "Unauthorized",
    "UnsupportedVersion",
    "error_from_envelope",
]


@dataclass(frozen=True)
class ErrorDetail:
    """One precise complaint: where (JSON pointer), which rule (keyword), and why."""

    path: str
    keyword: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "keyword": self.keyword, "message": self.message}


class MemorywireError(Exception):
    """Base of every error memorywire raises on purpose."""

    code: ClassVar[str] = "internal_error"
    http_status: ClassVar[int] = 500

    def __init__(
        self,
        message: str,
        details: Sequence[ErrorDetail] = (),
        *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details: tuple[ErrorDetail, ...] = tuple(details)
        self.retry_after = retry_after

    def to_envelope(self) -> dict[str, Any]:
        """The wire error envelope (schema ``error``)."""
        env: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "details": [d.to_dict() for d in self.details],
        }
        if self.retry_after is not None:
            env["retry_after"] = self.retry_after
        return env

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code!r})"


class InvalidRequest(MemorywireError):
    code = "invalid_request"
    http_status = 400


class PayloadTooLarge(InvalidRequest):
    code = "payload_too_large"
    http_status = 413


class UnsupportedVersion(InvalidRequest):
    """The request announces a wire version whose major this implementation does not speak."""

    code = "unsupported_version"
    http_status = 400


class Unauthorized(MemorywireError):
    code = "unauthorized"
    http_status = 401


class Forbidden(MemorywireError):
    code = "forbidden"
    http_status = 403


class NotFound(MemorywireError):
    code = "not_found"
    http_status = 404


class Conflict(MemorywireError):
    code = "conflict"
    http_status = 409


class EmbedderMismatch(Conflict):
    """A store was built with another embedding model or dimension than the one offered."""

    code = "embedder_mismatch"


class PendingApproval(MemorywireError):
    code = "pending_approval"
    http_status = 409


class CapabilityMissing(MemorywireError):
    """The store cannot honour a requested feature; v0 says error, never silent skip."""

    code = "capability_missing"
    http_status = 422


class RateLimited(MemorywireError):
    code = "rate_limited"
    http_status = 429


class BackendUnavailable(MemorywireError):
    code = "backend_unavailable"
    http_status = 503


class StorageFull(BackendUnavailable):
    """The disk (or quota) under a database is full: nothing was written; free space, retry."""

    code = "storage_full"
    http_status = 507


class StoreCorrupt(MemorywireError):
    """The backing file or database is not what we wrote; nothing is overwritten."""

    code = "store_corrupt"
    http_status = 500


def _all_subclasses(cls: type[MemorywireError]) -> list[type[MemorywireError]]:
    out = [cls]
    for sub in cls.__subclasses__():
        out.extend(_all_subclasses(sub))
    return out


ERROR_CODES: Mapping[str, type[MemorywireError]] = {
    c.code: c for c in _all_subclasses(MemorywireError)
}


def error_from_envelope(envelope: Mapping[str, Any]) -> MemorywireError:
    """Rebuild the exception a peer sent; an unknown code becomes the base class."""
    cls = ERROR_CODES.get(str(envelope.get("code", "")), MemorywireError)
    details = [
        ErrorDetail(str(d.get("path", "")), str(d.get("keyword", "")), str(d.get("message", "")))
        for d in envelope.get("details", []) or []
        if isinstance(d, Mapping)
    ]
    retry = envelope.get("retry_after")
    err = cls(
        str(envelope.get("message", "")),
        details,
        retry_after=float(retry) if isinstance(retry, int | float) else None,
    )
    return err
