"""What every request must satisfy before any store, queue or audit log sees it.

JSON Schema cannot say "no lone surrogate", "no NUL" or "fits in a 64-bit column", yet each
of these is a value a storage layer refuses halfway through a write: SQLite and PostgreSQL
cannot encode a lone surrogate, PostgreSQL rejects NUL in text, and an integer above 2**63
overflows every INTEGER/BIGINT column. Refused there, the write has already logged its
intent and the caller sees a 500; refused here, the caller sees which field is wrong and
nothing has happened. The checks walk the decoded document once, keys included, and are
pure so the fuzz tests can call them directly.

Ranges:

* every integer anywhere (metadata and filters included) is within the signed 64-bit range;
* timestamps (``*_at``, ``event_time``) are milliseconds in ``0 ..`` :data:`MAX_MILLIS`
  (the last millisecond of the year 9999, the range every date library can print);
* day counts (``older_than_days``, ``no_recall_in_days``) are at most :data:`MAX_DAYS`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from memorywire.errors import ErrorDetail, InvalidRequest
from memorywire.wire.validate import pointer

__all__ = ["MAX_DAYS", "MAX_INT", "MAX_MILLIS", "check_document", "problems"]

MAX_INT = 2**63 - 1
MIN_INT = -(2**63)
#: 9999-12-31T23:59:59.999Z in Unix milliseconds.
MAX_MILLIS = 253_402_300_799_999
#: Days from the epoch to the end of year 9999, so ``now - days`` never leaves the range.
MAX_DAYS = 2_932_896
_TIME_KEYS = frozenset({"expires_at", "created_at", "updated_at", "event_time", "stored_at"})
_DAY_KEYS = frozenset({"older_than_days", "no_recall_in_days"})
#: Only the first few problems are listed: a hostile document may hold thousands.
_MAX_PROBLEMS = 20


def _text_problem(text: str) -> str | None:
    """Why no store can hold ``text``: a NUL, or a UTF-16 surrogate. Surrogates are valid
    only in pairs, which JSON decoding already combined into one code point, so any left
    are lone halves, exactly what the strict UTF-8 codec refuses."""
    # C-speed scans (memchr, the ASCII flag, the UTF-8 codec) instead of a regex: contents
    # of 256 KB pass through here twice per write.
    nul = text.find("\x00")
    if nul >= 0:
        return f"must not contain NUL (U+0000) (at character {nul})"
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"must not contain a lone UTF-16 surrogate (U+{ord(text[exc.start]):04X} at "
            f"character {exc.start}); send valid Unicode"
        )
    return None


def _walk(value: Any, path: list[str | int], *, top: bool) -> Iterator[ErrorDetail]:
    if isinstance(value, str):
        why = _text_problem(value)
        if why is not None:
            yield ErrorDetail(pointer(path), "unicode", why)
    elif isinstance(value, bool) or value is None or isinstance(value, float):
        return
    elif isinstance(value, int):
        key = path[-1] if path else None
        if not MIN_INT <= value <= MAX_INT:
            yield ErrorDetail(
                pointer(path), "maximum", f"must fit in a signed 64-bit integer (got {value})"
            )
        elif top and key in _TIME_KEYS and not 0 <= value <= MAX_MILLIS:
            yield ErrorDetail(
                pointer(path),
                "maximum",
                f"must be Unix milliseconds in 0..{MAX_MILLIS} (year 9999) (got {value})",
            )
        elif top and key in _DAY_KEYS and value > MAX_DAYS:
            yield ErrorDetail(pointer(path), "maximum", f"must be <= {MAX_DAYS} (got {value})")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str):
                why = _text_problem(k)
                if why is not None:
                    # The key itself is the problem: point at the object, quote the key safely.
                    yield ErrorDetail(pointer(path), "unicode", f"key {k!a} {why}")
                    continue
            # Metadata and filters are the caller's own keys: their ``*_at`` is not ours.
            own = top and (not path or path[-1] == "policy")
            yield from _walk(v, [*path, str(k)], top=own)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _walk(v, [*path, i], top=False)


def problems(document: Any) -> list[ErrorDetail]:
    """Every door problem in ``document`` (at most a few dozen), ``[]`` when it may enter."""
    out: list[ErrorDetail] = []
    for detail in _walk(document, [], top=True):
        out.append(detail)
        if len(out) >= _MAX_PROBLEMS:
            break
    return out


def check_document(op: str, document: Any) -> None:
    """Raise ``InvalidRequest`` naming each field no store could hold; else return."""
    found = problems(document)
    if found:
        head = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise InvalidRequest(
            f"invalid {op}: {head.path or '(root)'}: {head.message}{more}", found
        )
