"""The browser rules as a table (pure ``check``): which requests a web page cannot make."""

from __future__ import annotations

import pytest

from memorywire.errors import Forbidden, InvalidRequest
from memorywire.server.origin import BrowserRules, check

LOOPBACK = BrowserRules.for_bind("127.0.0.1", ["https://app.example"], ["mem.lan"])
PUBLIC = BrowserRules.for_bind("0.0.0.0")


def _h(**kw: str) -> dict[bytes, bytes]:
    return {k.replace("_", "-").encode(): v.encode() for k, v in kw.items()}


@pytest.mark.parametrize(
    ("rules", "method", "path", "headers", "refusal"),
    [
        (LOOPBACK, "GET", "/v0/health", _h(host="127.0.0.1:8765"), None),
        (LOOPBACK, "GET", "/v0/health", _h(host="[::1]:8765"), None),
        (LOOPBACK, "GET", "/v0/health", _h(host="localhost"), None),
        (LOOPBACK, "GET", "/v0/health", _h(host="mem.lan:8765"), None),
        (LOOPBACK, "GET", "/v0/health", _h(host="evil.example"), Forbidden),
        (LOOPBACK, "GET", "/v0/health", {}, Forbidden),
        (PUBLIC, "GET", "/v0/health", _h(host="anything.example"), None),
        (PUBLIC, "GET", "/v0/audit", _h(host="mem.example", origin="https://mem.example"), None),
        (PUBLIC, "GET", "/v0/audit", _h(host="mem.example", origin="https://evil.example"),
         Forbidden),
        (LOOPBACK, "POST", "/v0/recall", _h(host="127.0.0.1", origin="null"), Forbidden),
        (LOOPBACK, "POST", "/v0/recall", _h(host="127.0.0.1", origin="file://x"), Forbidden),
        (LOOPBACK, "POST", "/v0/recall", _h(host="127.0.0.1", origin="https://app.example",
                                            content_type="application/json",
                                            content_length="2"), None),
        (LOOPBACK, "POST", "/v0/rpc", _h(host="127.0.0.1", content_type="text/plain",
                                         content_length="2"), InvalidRequest),
        (LOOPBACK, "POST", "/v0/rpc", _h(host="127.0.0.1", content_length="2"), InvalidRequest),
        (LOOPBACK, "POST", "/v0/rpc", _h(host="127.0.0.1",
                                         content_type="application/vnd.api+json; charset=utf-8",
                                         content_length="2"), None),
        (LOOPBACK, "POST", "/v0/audit/verify", _h(host="127.0.0.1"), None),
        (LOOPBACK, "POST", "/v0/audit/verify", _h(host="127.0.0.1", content_type="text/plain"),
         InvalidRequest),
        (LOOPBACK, "POST", "/ui/approvals/x", _h(host="127.0.0.1",
                                                 content_type="application/x-www-form-urlencoded",
                                                 content_length="9"), None),
    ],
)
def test_browser_rules(
    rules: BrowserRules, method: str, path: str, headers: dict[bytes, bytes],
    refusal: type[Exception] | None,
) -> None:
    err = check(rules, method, path, headers)
    if refusal is None:
        assert err is None
    else:
        assert type(err) is refusal
