"""The door's rules, as a table: what no store can hold is named by its JSON pointer."""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.errors import InvalidRequest
from memorywire.wire.door import MAX_DAYS, MAX_MILLIS, check_document, problems

REFUSED: list[tuple[Any, str, str]] = [
    ({"content": "a\ud800"}, "/content", "unicode"),
    ({"content": "\udfffb"}, "/content", "unicode"),
    ({"content": "é\x00"}, "/content", "unicode"),
    ({"metadata": {"k\ud800": 1}}, "/metadata", "unicode"),
    ({"metadata": {"a/b": ["x", {"y": "\x00"}]}}, "/metadata/a~1b/1/y", "unicode"),
    ({"metadata": {"n": 2**63}}, "/metadata/n", "maximum"),
    ({"filter": {"n": -(2**63) - 1}}, "/filter/n", "maximum"),
    ({"expires_at": MAX_MILLIS + 1}, "/expires_at", "maximum"),
    ({"expires_at": -1}, "/expires_at", "maximum"),
    ({"policy": {"older_than_days": MAX_DAYS + 1}}, "/policy/older_than_days", "maximum"),
]

ACCEPTED: list[Any] = [
    {"content": "emoji 😀, RTL \u202e, é, tab\t"},
    {"expires_at": MAX_MILLIS, "metadata": {"expires_at": -5, "older_than_days": 10**9}},
    {"metadata": {"n": 2**63 - 1, "m": -(2**63), "f": 1e308}},
    ["not", "an", "object"],
]


@pytest.mark.parametrize(("doc", "path", "keyword"), REFUSED)
def test_refused_values_are_named_by_pointer(doc: Any, path: str, keyword: str) -> None:
    found = problems(doc)
    assert [(p.path, p.keyword) for p in found] == [(path, keyword)]
    with pytest.raises(InvalidRequest) as exc:
        check_document("remember", doc)
    assert exc.value.details[0].path == path
    exc.value.message.encode("utf-8")  # the message itself is always encodable


@pytest.mark.parametrize("doc", ACCEPTED)
def test_storable_values_pass(doc: Any) -> None:
    assert problems(doc) == []


def test_a_flood_of_problems_is_capped() -> None:
    assert len(problems({"metadata": {str(i): "\x00" for i in range(1000)}})) == 20
