"""``memorywire audit verify|list|checkpoint`` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from memorywire.cli import main
from memorywire.governance.audit import AuditLog


def test_audit_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "gov.db"
    log = AuditLog.open(db)
    for i in range(5):
        log.append(actor="w", action="remember", agent_id="a", memory_ids=[f"m{i}"])
    log.close()
    key = tmp_path / "key.pem"
    key.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
        )
    )
    assert main(["audit", "checkpoint", "--db", str(db), "--key", str(key)]) == 0
    cp_file = tmp_path / "cp.json"
    cp_file.write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["audit", "verify", "--db", str(db), "--checkpoint", str(cp_file)]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True

    assert main(["audit", "list", "--db", str(db), "--memory-id", "m3"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line)["seq"] == 4

    log = AuditLog.open(db)
    log.connection.execute("DROP TRIGGER audit_log_no_delete")
    log.connection.execute("DELETE FROM audit_log WHERE seq = 5")
    log.close()
    assert main(["audit", "verify", "--db", str(db), "--checkpoint", str(cp_file)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["first_bad_seq"] == 5 and "truncated" in report["kinds"]

    assert main(["audit", "verify", "--db", str(tmp_path / "nope.db")]) == 2
    assert "no governance database" in capsys.readouterr().err
