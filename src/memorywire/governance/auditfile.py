"""The audit chain as a file: exported beside a dump, verified offline.

A ``memorywire/audit`` v0 file is JSON Lines: a header naming the chain's head at export
time, one ``entry`` line per audit entry (every column, the two hashes included, in ``seq``
order), one ``checkpoint`` line per signed checkpoint the database held, and a footer with
the count and the head again. Verifying it needs neither the database nor any secret: the
chain hashes are plain SHA-256 (the HMAC key only hides content inside ``details``), so
:func:`verify_audit_file` recomputes the chain exactly as ``audit verify`` does on the
database, and names the file line of the first entry that fails.

As with the database, the chain alone proves no entry was edited in isolation; a signed
checkpoint from elsewhere (``--checkpoint``, ``--trusted-key``) is what proves the tail was
not rewritten. Checkpoints inside the file are only as trustworthy as the file.
"""

from __future__ import annotations

import json
import time
from typing import IO, Any

from memorywire.errors import InvalidRequest
from memorywire.governance.audit import AuditLog
from memorywire.governance.chain import (
    AuditEntry,
    Checkpoint,
    Problem,
    VerifyReport,
    canonical_json,
    verify_entries,
)

__all__ = ["FORMAT", "export_audit", "verify_audit_file"]

FORMAT = "memorywire/audit"
VERSION = "0"
_PAGE = 5_000


def _line(out: IO[bytes], doc: dict[str, Any]) -> None:
    out.write(canonical_json(doc).encode("utf-8") + b"\n")


def export_audit(log: AuditLog, out: IO[bytes]) -> int:
    """Write the log up to its head now (entries appended meanwhile are left for the next
    export); returns the number of entries."""
    head_seq, head_hash = log.head()
    head = {"seq": head_seq, "hash": head_hash}
    _line(out, {"kind": "header", "format": FORMAT, "version": VERSION, "head": head,
                "created_at": int(time.time() * 1000)})
    count, after = 0, 0
    while after < head_seq:
        page = [e for e in log.entries(after_seq=after, limit=_PAGE) if e.seq <= head_seq]
        if not page:
            break
        for entry in page:
            _line(out, {"kind": "entry", **entry.to_dict()})
        count += len(page)
        after = page[-1].seq
    for cp in log.stored_checkpoints():
        _line(out, {"kind": "checkpoint", **cp.to_dict()})
    _line(out, {"kind": "footer", "count": count, "head": head})
    out.flush()
    return count


def _entry(doc: dict[str, Any], n: int) -> AuditEntry:
    try:
        return AuditEntry(seq=int(doc["seq"]), ts=int(doc["ts"]), actor=str(doc["actor"]),
                          action=str(doc["action"]), agent_id=doc.get("agent_id"),
                          memory_ids=tuple(str(i) for i in doc["memory_ids"]),
                          details=dict(doc["details"]), prev_hash=str(doc["prev_hash"]),
                          hash=str(doc["hash"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidRequest(f"audit file line {n}: not an audit entry ({exc})") from exc


def verify_audit_file(path: str, checkpoints: list[dict[str, Any]] | None = None,
                      trusted_keys: list[str] | None = None) -> dict[str, Any]:
    """The ``audit verify`` report for a file, plus ``first_bad_line``; raises
    ``InvalidRequest`` only for a file that is not an audit export at all."""
    entries: list[AuditEntry] = []
    found: list[Checkpoint] = []
    lines: dict[int, int] = {}
    header: dict[str, Any] | None = None
    footer: dict[str, Any] | None = None
    with open(path, "rb") as f:
        for n, text in enumerate(f, start=1):
            try:
                doc = json.loads(text)
            except ValueError as exc:
                raise InvalidRequest(f"audit file line {n}: not JSON ({exc})") from exc
            kind = doc.get("kind") if isinstance(doc, dict) else None
            if n == 1:
                if kind != "header" or doc.get("format") != FORMAT:
                    raise InvalidRequest(f"audit file line 1: not a {FORMAT} v{VERSION} file")
                header = doc
            elif kind == "entry":
                entry = _entry(doc, n)
                entries.append(entry)
                lines.setdefault(entry.seq, n)
            elif kind == "checkpoint":
                found.append(Checkpoint.from_dict(doc))
            elif kind == "footer":
                footer = doc
            else:
                raise InvalidRequest(f"audit file line {n}: unknown line kind {kind!r}")
    if header is None:
        raise InvalidRequest("audit file is empty")
    given = [Checkpoint.from_dict(c) for c in checkpoints or ()]
    report = verify_entries(entries, [*found, *given], trusted_keys)
    extra = _head_problem(header, footer, entries)
    if extra is not None and report.ok:
        report = VerifyReport(ok=False, entries=report.entries, last_seq=report.last_seq,
                              first_bad_seq=extra.seq, problems=(extra,),
                              checkpoints_checked=report.checkpoints_checked,
                              last_checkpoint_seq=report.last_checkpoint_seq,
                              kinds=(extra.kind,))
    out = report.to_dict()
    out["file"] = path
    out["first_bad_line"] = (None if report.first_bad_seq is None
                             else lines.get(report.first_bad_seq))
    return out


def _head_problem(header: dict[str, Any], footer: dict[str, Any] | None,
                  entries: list[AuditEntry]) -> Problem | None:
    """A file cut short or padded: its entries do not end at the head it announced."""
    head = header.get("head") or {}
    last = max(entries, key=lambda e: e.seq, default=None)
    last_seq = 0 if last is None else last.seq
    if footer is None:
        return Problem("truncated", last_seq + 1, "the file ends without its footer")
    if footer.get("count") != len(entries) or footer.get("head") != head:
        return Problem("truncated", last_seq + 1,
                       f"the footer counts {footer.get('count')} entries, the file holds "
                       f"{len(entries)}")
    if last_seq != head.get("seq") or (last is not None and last.hash != head.get("hash")):
        return Problem("truncated", last_seq + 1,
                       f"the file announces head {head.get('seq')}, its entries end at "
                       f"{last_seq}")
    return None
