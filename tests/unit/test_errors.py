"""Every error code survives a trip through the wire envelope, which validates as ``error``."""

from __future__ import annotations

import json

import pytest

from memorywire.errors import (
    ERROR_CODES,
    ErrorDetail,
    InvalidRequest,
    MemorywireError,
    RateLimited,
    error_from_envelope,
)
from memorywire.wire import parse_error, validate

CODES = sorted(ERROR_CODES)


def _tree(cls: type[MemorywireError]) -> list[type[MemorywireError]]:
    return [cls, *(c for sub in cls.__subclasses__() for c in _tree(sub))]


def test_codes_are_unique_and_snake_case() -> None:
    classes = [c for c in _tree(MemorywireError) if c.__module__ == "memorywire.errors"]
    assert len({c.code for c in classes}) == len(classes) == len(CODES)
    for code in CODES:
        assert code.replace("_", "").isalpha() and code.islower()


@pytest.mark.parametrize("code", CODES)
def test_round_trip_every_code(code: str) -> None:
    cls = ERROR_CODES[code]
    details = [ErrorDetail("/k", "maximum", "must be <= 1000 (got 5000)")]
    original = cls("something went wrong", details, retry_after=1.5)
    envelope = original.to_envelope()
    assert validate("error", envelope) == []
    assert validate("error", json.loads(json.dumps(envelope))) == []
    back = error_from_envelope(envelope)
    assert type(back) is cls
    assert (back.code, back.message, back.details, back.retry_after) == (
        code,
        "something went wrong",
        tuple(details),
        1.5,
    )
    assert type(parse_error(json.dumps(envelope))) is cls


@pytest.mark.parametrize("code", CODES)
def test_http_status_is_an_error_status(code: str) -> None:
    assert 400 <= ERROR_CODES[code].http_status <= 599


def test_envelope_without_retry_after_omits_it() -> None:
    env = InvalidRequest("bad").to_envelope()
    assert env == {"code": "invalid_request", "message": "bad", "details": []}
    assert validate("error", env) == []


def test_unknown_code_from_a_peer_becomes_the_base_class() -> None:
    err = error_from_envelope({"code": "quota_exceeded", "message": "m", "details": []})
    assert type(err) is MemorywireError and err.message == "m"
    assert validate("error", {"code": "quota_exceeded", "message": "m", "details": []}) == []


@pytest.mark.parametrize(
    ("envelope", "path"),
    [
        ({"message": "m", "details": []}, "/code"),
        ({"code": "Not-Snake", "message": "m", "details": []}, "/code"),
        ({"code": "x", "message": "m", "details": [{"path": "/a"}]}, "/details/0/keyword"),
        ({"code": "x", "message": "m", "details": [], "retry_after": -1}, "/retry_after"),
    ],
)
def test_bad_envelopes_are_refused(envelope: dict[str, object], path: str) -> None:
    assert path in [i.path for i in validate("error", envelope)]


def test_rate_limited_carries_retry_after() -> None:
    env = RateLimited("slow down", retry_after=2).to_envelope()
    assert env["retry_after"] == 2 and validate("error", env) == []
