"""Version parsing and the reader-side compatibility rules of the v0 versioning policy."""

from __future__ import annotations

import pytest

from memorywire.errors import InvalidRequest
from memorywire.wire.versions import (
    CURRENT,
    DRAFT_UNTIL,
    KNOWN_VERSIONS,
    Version,
    compatible,
    parse_version,
)


def test_current_is_known_and_matches_the_schema_base() -> None:
    from memorywire.wire import BASE_URI

    assert CURRENT in KNOWN_VERSIONS
    assert BASE_URI.endswith(f"/v{CURRENT}/")
    assert compatible(CURRENT)


@pytest.mark.parametrize(
    ("text", "version"),
    [("0", Version(0, 0)), ("0.3", Version(0, 3)), ("v1.2", Version(1, 2)), (" 2 ", Version(2, 0))],
)
def test_parse(text: str, version: Version) -> None:
    assert parse_version(text) == version


@pytest.mark.parametrize("text", ["", "x", "0.", "1.2.3", "01", "-1", "0.a"])
def test_parse_rejects_garbage(text: str) -> None:
    with pytest.raises(InvalidRequest):
        parse_version(text)


@pytest.mark.parametrize(
    ("peer", "ours", "ok"),
    [
        ("0", "0", True),
        ("0.0", "0", True),
        ("v0", "0.0", True),
        ("1", "0", False),  # another major: something was removed
        ("0", "1", False),
        ("0.1", "0", False),  # inside the draft window minors may break each other
        ("0", "0.1", False),
        ("0.4", "0.5", False),  # one side still a draft
        ("0.5", "0.6", True),  # past the draft: we read older minors
        ("0.6", "0.5", False),  # a newer minor may carry required fields we never saw
        ("1.0", "1.3", True),
        ("1.4", "1.3", False),
        ("2.1", "1.9", False),
    ],
)
def test_compatible(peer: str, ours: str, ok: bool) -> None:
    assert compatible(peer, ours) is ok


def test_draft_window() -> None:
    assert parse_version("0.4").is_draft and not parse_version("0.5").is_draft
    assert Version(0, 5) == DRAFT_UNTIL
    assert str(parse_version("v1")) == "1.0"
