"""Every tampering of the audit table is caught; untouched logs never raise an alarm.

Each trial copies a real log database into memory, drops the append-only triggers there (what
an attacker with file access would do), applies one random edit, delete, insert, reorder or
truncation through a raw connection, optionally recomputes every hash after the change, and
verifies against a checkpoint exported before the tampering.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.governance.audit import AuditLog
from memorywire.governance.chain import GENESIS_HASH, canonical_json, entry_hash

Row = list[Any]  # seq, ts, actor, action, agent_id, memory_ids, details, prev_hash, hash
TRIALS = 1000
N = 40


def _build(path: Path, rng: random.Random, n: int) -> dict[str, Any]:
    log = AuditLog.open(path)
    with log.connection:  # one transaction: a build pays for one fsync, not n
        _append_all(log, rng, n)
    cp = log.checkpoint(Ed25519PrivateKey.generate())
    log.close()
    return cp


def _append_all(log: AuditLog, rng: random.Random, n: int) -> None:
    for i in range(n):
        log.append(
            actor=rng.choice(["alice", "bob", "svc"]),
            action=rng.choice(["remember", "recall", "forget", "staged", "approved"]),
            agent_id=rng.choice(["a1", "a2", None]),
            memory_ids=[f"m{rng.randrange(100)}" for _ in range(rng.randrange(3))],
            details={"content_sha256": f"{rng.getrandbits(256):064x}", "i": i},
        )


def _copy(src: Path) -> apsw.Connection:
    disk = apsw.Connection(str(src))
    mem = apsw.Connection(":memory:")
    with mem.backup("main", disk, "main") as b:
        b.step()
    disk.close()
    mem.execute("DROP TRIGGER audit_log_no_update")
    mem.execute("DROP TRIGGER audit_log_no_delete")
    return mem


def _rows(conn: apsw.Connection) -> list[Row]:
    return [list(r) for r in conn.execute("SELECT * FROM audit_log ORDER BY seq")]


def _write(conn: apsw.Connection, rows: list[Row]) -> None:
    with conn:
        conn.execute("DELETE FROM audit_log")
        conn.executemany("INSERT INTO audit_log VALUES (?,?,?,?,?,?,?,?,?)", rows)


def _rehash(rows: list[Row], start: int) -> None:
    """The attacker's best effort: a consistent chain from ``start`` on, renumbered."""
    rows.sort(key=lambda r: r[0])
    for i in range(start, len(rows)):
        rows[i][0] = i + 1
        prev = GENESIS_HASH if i == 0 else rows[i - 1][8]
        body = {
            "seq": rows[i][0],
            "ts": rows[i][1],
            "actor": rows[i][2],
            "action": rows[i][3],
            "agent_id": rows[i][4],
            "memory_ids": json.loads(rows[i][5]),
            "details": json.loads(rows[i][6]),
        }
        rows[i][7] = prev
        rows[i][8] = entry_hash(prev, body)


def _edit(rows: list[Row], rng: random.Random, rehash: bool) -> tuple[int, str]:
    k = rng.randrange(len(rows))
    # Hash columns are rewritten by a rehash anyway, so only content columns then.
    col = rng.choice([1, 2, 3, 4, 5, 6] if rehash else [1, 2, 3, 4, 5, 6, 7, 8])
    old = rows[k][col]
    new: Any
    if col == 1:
        new = old + rng.randint(1, 10**6)
    elif col == 5:
        new = canonical_json([*json.loads(old), "forged"])
    elif col == 6:
        new = canonical_json({"content_sha256": "0" * 64, "forged": True})
    elif col in (7, 8):
        new = f"{rng.getrandbits(256):064x}"
    else:
        new = f"{old}-x"
    rows[k][col] = new
    return rows[k][0], "edited"


def _delete(rows: list[Row], rng: random.Random, rehash: bool) -> tuple[int, str]:
    k = rng.randrange(len(rows) - 1)  # the last one is the truncation case
    seq = rows[k][0]
    del rows[k]
    if rng.random() < 0.5:
        for r in rows[k:]:
            r[0] -= 1
    return seq, "deleted"


def _insert(rows: list[Row], rng: random.Random, rehash: bool) -> tuple[int, str]:
    k = rng.randrange(len(rows))
    for r in reversed(rows[k:]):
        r[0] += 1
    prev = GENESIS_HASH if k == 0 else rows[k - 1][8]
    body = {
        "seq": k + 1,
        "ts": 1,
        "actor": "mallory",
        "action": "approved",
        "agent_id": "a1",
        "memory_ids": ["evil"],
        "details": {},
    }
    forged_hash = entry_hash(prev, body) if rng.random() < 0.5 else "e" * 64
    rows.insert(k, [k + 1, 1, "mallory", "approved", "a1", '["evil"]', "{}", prev, forged_hash])
    return k + 1, "inserted"


def _reorder(rows: list[Row], rng: random.Random, rehash: bool) -> tuple[int, str]:
    i, j = sorted(rng.sample(range(len(rows)), 2))
    seq_i, seq_j = rows[i][0], rows[j][0]
    rows[i], rows[j] = rows[j], rows[i]
    rows[i][0], rows[j][0] = seq_i, seq_j
    return seq_i, "reordered"


def _truncate(rows: list[Row], rng: random.Random, rehash: bool) -> tuple[int, str]:
    k = rng.randrange(len(rows))
    seq = rows[k][0]
    del rows[k:]
    return seq, "truncated"


TAMPERS: list[Callable[[list[Row], random.Random, bool], tuple[int, str]]] = [
    _edit,
    _delete,
    _insert,
    _reorder,
    _truncate,
]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("tamper") / "gov.db"
    return path, _build(path, random.Random(7), N)


def test_every_random_tamper_is_detected(base: tuple[Path, dict[str, Any]]) -> None:
    path, cp = base
    rng = random.Random(20240601)
    kinds_seen: dict[str, int] = {}
    for trial in range(TRIALS):
        conn = _copy(path)
        rows = _rows(conn)
        tamper = TAMPERS[trial % len(TAMPERS)]
        rehashed = tamper is not _truncate and rng.random() < 0.3
        seq, kind = tamper(rows, rng, rehashed)
        if rehashed:
            _rehash(rows, max(0, seq - 1) if rows else 0)
        _write(conn, rows)
        report = AuditLog(conn).verify(checkpoints=[cp])
        conn.close()
        assert not report.ok, (trial, tamper.__name__, seq, rehashed)
        assert report.first_bad_seq is not None
        if not rehashed:
            # The chain itself points at the first entry that was touched.
            assert report.first_bad_seq == seq, (trial, tamper.__name__, seq, report)
            if kind in ("edited", "reordered", "truncated"):
                assert kind in report.kinds, (trial, kind, report.kinds)
        for k in report.kinds:
            kinds_seen[k] = kinds_seen.get(k, 0) + 1
    assert {"edited", "deleted", "inserted", "reordered", "truncated"} <= kinds_seen.keys()


def test_no_false_alarms_on_untouched_logs(tmp_path: Path) -> None:
    rng = random.Random(3)
    for i in range(40):
        path = tmp_path / f"g{i}.db"
        cp = _build(path, rng, rng.randrange(0, 30))
        log = AuditLog.open(path)
        log.append(actor="late", action="recall")  # growth after a checkpoint is fine
        report = log.verify(checkpoints=[cp])
        stored = log.verify()
        log.close()
        assert report.ok and stored.ok, report
        assert report.first_bad_seq is None
