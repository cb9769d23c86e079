"""Every wire version this implementation knows, and whether a peer's documents are readable.

Policy (wire v0): v0 is a draft and may break until 0.5. Adding an optional field needs no
new version. Adding a required field or a memory type bumps the minor; removing anything
bumps the major. Versions are written ``MAJOR`` or ``MAJOR.MINOR`` (``"0"`` means ``0.0``);
a leading ``v`` is tolerated.

:func:`compatible` answers one question from the reader's side: *can this implementation
read documents written for the peer's version?*

* different major: no (something was removed);
* same major and minor: yes;
* same major, different minor, and either side still in the draft window (major 0, minor
  below 5): no, because drafts may break each other;
* otherwise yes when the peer is at our minor or older (a reader of a newer minor keeps
  accepting the older minors of its major), no when the peer is newer (it may send required
  fields or memory types we have never seen).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memorywire.errors import ErrorDetail, InvalidRequest, UnsupportedVersion

__all__ = [
    "CURRENT",
    "DRAFT_UNTIL",
    "KNOWN_VERSIONS",
    "LATEST_MINOR",
    "SUPPORTED",
    "VERSION_HEADER",
    "Version",
    "check_requested",
    "compatible",
    "parse_version",
    "versions_doc",
]

#: The version this implementation reads and writes.
CURRENT = "0"
#: Every version whose schemas ship with this package, oldest first.
KNOWN_VERSIONS: tuple[str, ...] = ("0",)

_VERSION = re.compile(r"^v?(0|[1-9][0-9]{0,3})(?:\.(0|[1-9][0-9]{0,3}))?$")


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def is_draft(self) -> bool:
        return self < DRAFT_UNTIL


#: Before this version, v0 may make breaking changes between minors.
DRAFT_UNTIL = Version(0, 5)
#: The newest minor of v0 this implementation speaks (its additions: docs/spec/v0.md §11).
LATEST_MINOR = "0.1"
#: The text a refusal quotes: every request of major 0 (any minor) is served.
SUPPORTED = "0.x (0.0 to 0.1)"
#: The HTTP header a request may announce its version in, and responses carry.
VERSION_HEADER = "Memorywire-Version"


def check_requested(text: object, where: str) -> None:
    """Refuse a request that announces a version this implementation cannot serve.

    Negotiation is by major only: a request of any v0 minor is served (minors add optional
    fields, which the schemas judge one by one); another major is ``unsupported_version``
    naming the supported range. ``where`` is the pointer or header named in the error.
    """
    if text is None:
        return
    if not isinstance(text, str):
        raise InvalidRequest(f"{where} must be a string such as \"0\" or \"0.1\"",
                             [ErrorDetail(where, "type", "must be a string")])
    try:
        asked = parse_version(text)
    except InvalidRequest as exc:
        raise InvalidRequest(f"{where}: {exc.message}",
                             [ErrorDetail(where, "pattern", exc.message)]) from None
    if asked.major != 0:
        msg = f"wire version {text} is not supported; this server speaks {SUPPORTED}"
        raise UnsupportedVersion(msg, [ErrorDetail(where, "unsupported_version", msg)])


def versions_doc() -> dict[str, object]:
    """What health and OpenAPI say about versions."""
    return {"current": LATEST_MINOR, "supported": SUPPORTED, "majors": [0],
            "header": VERSION_HEADER}


def parse_version(text: str) -> Version:
    """``"0"``, ``"0.3"`` or ``"v1.2"``; anything else is an ``InvalidRequest``."""
    m = _VERSION.match(text.strip())
    if m is None:
        raise InvalidRequest(f"not a wire version: {text!r} (expected MAJOR or MAJOR.MINOR)")
    return Version(int(m.group(1)), int(m.group(2) or 0))


def compatible(peer_version: str, ours: str = CURRENT) -> bool:
    """Whether documents written for ``peer_version`` can be read at ``ours`` (see module doc)."""
    peer, me = parse_version(peer_version), parse_version(ours)
    if peer.major != me.major:
        return False
    if peer.minor == me.minor:
        return True
    if peer.is_draft or me.is_draft:
        return False
    return peer.minor < me.minor
