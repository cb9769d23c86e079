from __future__ import annotations

import pytest

from memorywire.errors import InvalidRequest, PayloadTooLarge, RateLimited
from memorywire.server.limits import Limits, RateLimiter, json_depth, parse_json_body


@pytest.mark.parametrize(
    ("raw", "depth"),
    [
        (b"", 0),
        (b"1", 0),
        (b"{}", 1),
        (b'{"a": [1, {"b": []}]}', 4),
        (b'"[[[[[[[["', 0),
        (b'{"a": "\\"[[[[", "b": [1]}', 2),
        (b"[" * 10_000 + b"]" * 10_000, 10_000),
    ],
)
def test_depth_ignores_brackets_inside_strings(raw: bytes, depth: int) -> None:
    assert json_depth(raw) == depth


def test_parse_refuses_before_recursing() -> None:
    limits = Limits(max_json_depth=64)
    with pytest.raises(InvalidRequest) as exc:
        parse_json_body(b"[" * 100_000, limits)
    assert exc.value.details[0].keyword == "maxDepth"
    assert parse_json_body(b"[" * 64 + b"]" * 64, limits) is not None
    with pytest.raises(PayloadTooLarge):
        parse_json_body(b" " * 11, Limits(max_body_bytes=10))


def test_token_bucket_refills_and_keys_are_independent() -> None:
    now = [0.0]
    rl = RateLimiter(rate=2.0, burst=2, now=lambda: now[0])
    rl.acquire("a")
    rl.acquire("a")
    with pytest.raises(RateLimited) as exc:
        rl.acquire("a")
    assert exc.value.retry_after == pytest.approx(0.5)
    rl.acquire("b")
    now[0] += 0.5
    rl.acquire("a")
    with pytest.raises(RateLimited):
        rl.acquire("a")


def test_depth_limit_is_exact_on_both_sides_of_the_bracket_count_shortcut() -> None:
    """Bodies with few brackets skip the exact walk; the limit must not move because of it."""
    limits = Limits(max_json_depth=3)
    assert parse_json_body(b'{"a": {"b": [1]}}', limits) == {"a": {"b": [1]}}
    with pytest.raises(InvalidRequest) as exc:
        parse_json_body(b'{"a": {"b": [[1]]}}', limits)
    assert "depth 4" in exc.value.message
    # many brackets, all but one inside a string: counted, then walked exactly, accepted
    assert parse_json_body(b'{"a": "[[[[{{{{"}', limits) == {"a": "[[[[{{{{"}
