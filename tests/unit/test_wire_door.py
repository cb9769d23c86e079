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


# Each limit at its edge: the largest value that may enter and the smallest that may not.
EDGES: list[tuple[str, Any, Any, Any]] = [
    ("expires_at", MAX_MILLIS, MAX_MILLIS + 1, 0),
    ("created_at", MAX_MILLIS, MAX_MILLIS + 1, 0),
    ("updated_at", MAX_MILLIS, MAX_MILLIS + 1, 0),
    ("event_time", MAX_MILLIS, MAX_MILLIS + 1, 0),
    ("stored_at", MAX_MILLIS, MAX_MILLIS + 1, 0),
]


@pytest.mark.parametrize(("key", "largest", "above", "epoch"), EDGES, ids=[e[0] for e in EDGES])
def test_timestamps_are_milliseconds_from_the_epoch_to_year_9999(
    key: str, largest: int, above: int, epoch: int
) -> None:
    assert problems({key: largest}) == [] and problems({key: epoch}) == []
    [over] = problems({key: above})
    assert (over.path, over.keyword) == (f"/{key}", "maximum")
    assert over.message == (
        f"must be Unix milliseconds in 0..{MAX_MILLIS} (year 9999) (got {above})")
    [before] = problems({key: epoch - 1})
    assert before.message.endswith("(got -1)") and before.path == f"/{key}"


def test_the_largest_timestamp_is_the_last_millisecond_of_9999() -> None:
    from datetime import UTC, datetime

    last = datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
    assert int(last.timestamp() * 1000) == MAX_MILLIS
    assert (last - datetime(1970, 1, 1, tzinfo=UTC)).days == MAX_DAYS


@pytest.mark.parametrize("key", ["older_than_days", "no_recall_in_days"])
def test_day_counts_stop_at_the_day_limit(key: str) -> None:
    assert problems({"policy": {key: MAX_DAYS}}) == []
    assert problems({key: MAX_DAYS}) == [] and problems({key: 0}) == []
    [over] = problems({"policy": {key: MAX_DAYS + 1}})
    assert (over.path, over.keyword) == (f"/policy/{key}", "maximum")
    assert over.message == f"must be <= {MAX_DAYS} (got {MAX_DAYS + 1})"
    assert [p.path for p in problems({key: MAX_DAYS + 1})] == [f"/{key}"]


def test_the_64_bit_range_is_inclusive_at_both_ends() -> None:
    assert problems({"n": 2**63 - 1, "m": -(2**63)}) == []
    found = problems({"n": 2**63, "m": -(2**63) - 1, "t": [2**64]})
    assert [(p.path, p.keyword) for p in found] == [
        ("/n", "maximum"), ("/m", "maximum"), ("/t/0", "maximum")]
    assert found[0].message == f"must fit in a signed 64-bit integer (got {2**63})"
    # 64-bit overflow is named before the timestamp range, for a timestamp too.
    [big] = problems({"expires_at": 2**63})
    assert big.message.startswith("must fit in a signed 64-bit integer")


def test_only_our_own_fields_are_time_checked() -> None:
    """The caller's metadata, filters and lists may hold any 64-bit ``*_at``; a policy's
    fields are ours, one level down, but not deeper."""
    theirs = {"metadata": {"expires_at": -1, "older_than_days": MAX_DAYS + 1},
              "filter": {"created_at": MAX_MILLIS + 1},
              "items": [{"expires_at": -1}],
              "policy": {"rules": {"older_than_days": MAX_DAYS + 1}}}
    assert problems(theirs) == []
    assert [p.path for p in problems({"policy": {"expires_at": -1}})] == ["/policy/expires_at"]


def test_bools_floats_and_none_are_not_integers() -> None:
    assert problems({"expires_at": True, "older_than_days": None, "n": 1e300,
                     "event_time": -0.5, "x": float("inf")}) == []


def test_a_problem_key_is_quoted_and_its_value_not_walked() -> None:
    [p] = problems({"metadata": {"bad\x00key": {"deeper": "\x00"}}})
    assert (p.path, p.keyword) == ("/metadata", "unicode")
    assert p.message == "key 'bad\\x00key' must not contain NUL (U+0000) (at character 3)"
    [s] = problems({"\ud800": 1})
    assert s.path == "" and s.message.startswith("key '\\ud800' must not contain a lone")


def test_text_problems_say_where() -> None:
    [nul] = problems({"content": "abc\x00"})
    assert nul.message == "must not contain NUL (U+0000) (at character 3)"
    [sur] = problems({"content": "é\udc80"})
    assert sur.message == (
        "must not contain a lone UTF-16 surrogate (U+DC80 at character 1); send valid Unicode")
    assert problems({"content": "\U0001f600 paired, not lone"}) == []
    assert problems({"content": "\x00" + "\ud800"})[0].message.startswith("must not contain NUL")


def test_the_error_names_the_first_problem_and_counts_the_rest() -> None:
    with pytest.raises(InvalidRequest) as one:
        check_document("remember", {"content": "a\x00"})
    assert one.value.message == (
        "invalid remember: /content: must not contain NUL (U+0000) (at character 1)")
    assert [d.path for d in one.value.details] == ["/content"]
    with pytest.raises(InvalidRequest) as three:
        check_document("forget", {"reason": "\x00", "metadata": {"a": "\x00", "b": 2**64}})
    assert three.value.message == (
        "invalid forget: /reason: must not contain NUL (U+0000) (at character 0) (and 2 more)")
    assert len(three.value.details) == 3
    with pytest.raises(InvalidRequest) as flood:
        check_document("recall", {"metadata": {str(i): "\x00" for i in range(50)}})
    assert flood.value.message.endswith("(and 19 more)") and len(flood.value.details) == 20
    with pytest.raises(InvalidRequest) as root:
        check_document("merge", "\x00")
    assert root.value.message.startswith("invalid merge: (root): must not contain NUL")
    assert check_document("remember", {"content": "fine"}) is None


def test_the_cap_is_exactly_twenty() -> None:
    assert len(problems({"m": {str(i): "\x00" for i in range(20)}})) == 20
    assert len(problems({"m": {str(i): "\x00" for i in range(19)}})) == 19
    assert len(problems({"m": [2**64] * 21})) == 20


def test_the_first_nul_is_the_one_named() -> None:
    [p] = problems({"content": "a\x00b\x00"})
    assert p.message == "must not contain NUL (U+0000) (at character 1)"


def test_a_bare_value_is_checked_at_the_root() -> None:
    assert problems(5) == [] and problems("fine") == [] and problems(None) == []
    [big] = problems(2**64)
    assert (big.path, big.keyword) == ("", "maximum")


def test_keys_after_a_bad_key_are_still_walked() -> None:
    found = problems({"metadata": {"bad\x00": 1, "good": "\x00", "n": 2**64}})
    assert [(p.path, p.keyword) for p in found] == [
        ("/metadata", "unicode"), ("/metadata/good", "unicode"), ("/metadata/n", "maximum")]


def test_two_problems_say_one_more() -> None:
    with pytest.raises(InvalidRequest) as two:
        check_document("remember", {"content": "\x00", "source": "\x00"})
    assert two.value.message.endswith("(at character 0) (and 1 more)")
