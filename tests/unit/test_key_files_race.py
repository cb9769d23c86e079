"""Servers sharing one PostgreSQL database start together and must agree on one key.

CI caught four ``serve`` processes racing to create ``audit-hmac.key``: the loser's
``O_EXCL`` open failed with "File exists" and the server refused to start. Every process
here waits on a barrier, then creates or loads the same key files at the same instant.
"""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from memorywire.governance.keys import AuditKey
from memorywire.governance.signing import SigningKeySource

PROCS = 8


def _load(barrier: object, audit: str, signing: str, out: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    try:
        key = AuditKey.load_or_create(audit)
        sk = SigningKeySource(signing, create=True).get()
        assert sk is not None
        pub = sk.public_key().public_bytes_raw().hex()
        out.put(("ok", key.key_id, pub))  # type: ignore[attr-defined]
    except Exception as exc:  # reported to the parent, which fails the test
        out.put(("error", repr(exc), ""))  # type: ignore[attr-defined]


def test_processes_starting_together_share_one_audit_and_signing_key(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    for round_ in range(3):
        audit = tmp_path / f"r{round_}" / "audit-hmac.key"
        signing = tmp_path / f"r{round_}" / "signing-key.pem"
        barrier = ctx.Barrier(PROCS)
        out = ctx.Queue()
        procs = [ctx.Process(target=_load, args=(barrier, str(audit), str(signing), out))
                 for _ in range(PROCS)]
        for p in procs:
            p.start()
        results = [out.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=30)
        errors = [r[1] for r in results if r[0] == "error"]
        assert errors == []
        assert len({r[1] for r in results}) == 1, "processes hold different audit keys"
        assert len({r[2] for r in results}) == 1, "processes hold different signing keys"
        assert AuditKey.load_or_create(audit).key_id == results[0][1]
        assert sorted(x.name for x in audit.parent.iterdir()) == [
            "audit-hmac.key", "signing-key.pem"], "a temp file was left behind"
        assert audit.stat().st_mode & 0o777 == 0o600
