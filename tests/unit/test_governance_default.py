"""Governance is on for the embedded default store: its audit log and approval queue live
beside ``mem.db`` in ``mem.gov.db``, ``approval_required`` is honoured and the log verifies;
``--no-governance`` turns it off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memorywire.cli import main
from memorywire.server.config import load_config


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORYWIRE_HOME", str(tmp_path / "data"))
    for var in ("MEMORYWIRE_STORE", "MEMORYWIRE_CONFIG", "MEMORYWIRE_GOVERNANCE_DB",
                "MEMORYWIRE_GOVERNANCE"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "data"


def _cli(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    assert main(list(argv)) == code, capsys.readouterr().err
    out = capsys.readouterr().out
    return json.loads(out) if out.strip() else None


def test_default_store_is_governed_beside_its_file(home: Path) -> None:
    on = load_config(env={}).resolved()
    assert on.governance_db == str(home / "mem.gov.db")
    off = load_config(env={}, overrides={"governance": False}).resolved()
    assert off.governance_db == ""
    # a store named explicitly is governed only when a database is given, as before
    named = load_config(env={}, overrides={"store": ["memory://"]}).resolved()
    assert named.governance_db == ""


def test_default_setup_audits_and_honours_approval_required(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--embedder", "hashing", "-a", "A"]
    plain = _cli(capsys, "remember", *base, "tea at four", "--json")
    assert not plain["pending_approval"]
    staged = _cli(capsys, "remember", *base, "the door code is 1234", "--approval-required",
                  "--json")
    assert staged["pending_approval"]
    assert (home / "mem.gov.db").exists()
    report = _cli(capsys, "audit", "verify", "--embedder", "hashing")
    assert report["ok"], report
    assert main(["audit", "list"]) == 0
    entries = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    assert len(entries) >= 2 and plain["id"] in {i for e in entries for i in e["memory_ids"]}


def test_no_governance_leaves_no_log(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _cli(capsys, "remember", "--no-governance", "--embedder", "hashing", "-a", "A", "x",
         "--json")
    assert (home / "mem.db").exists() and not (home / "mem.gov.db").exists()


def test_audit_verify_finds_a_write_behind_governances_back(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import anyio

    from memorywire.embed.hashing import HashingEmbedder
    from memorywire.store.sqlite import SqliteStore
    from memorywire.wire.models import RememberRequest

    governed = _cli(capsys, "remember", "--embedder", "hashing", "-a", "A", "tea at four",
                    "--json")
    clean = _cli(capsys, "audit", "verify", "--embedder", "hashing")
    assert clean["ok"] and clean["store"] == {
        "store": "sqlite", "url": f"sqlite:///{home / 'mem.db'}", "ok": True, "unaudited": []}

    async def backdoor() -> str:
        store = SqliteStore(home / "mem.db", embedder=HashingEmbedder())
        try:
            wrote = await store.remember(RememberRequest(
                agent_id="A", type="semantic", content="the door code is 1234"))
            return wrote.id
        finally:
            await store.aclose()

    sneaked = anyio.run(backdoor)
    assert main(["audit", "verify", "--embedder", "hashing"]) == 1
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert not report["ok"] and not report["store"]["ok"]
    assert [m["id"] for m in report["store"]["unaudited"]] == [sneaked] != [governed["id"]]
    assert "store 'sqlite'" in out.err and "behind governance's back" in out.err
    # A governed repeat of the sneaked memory is answered with it (deduplicated), and its
    # audit entry, which changed nothing, does not account for the write behind the back.
    again = _cli(capsys, "remember", "--embedder", "hashing", "-a", "A",
                 "the door code is 1234", "--json")
    assert again["id"] == sneaked and again["deduplicated"] is True
    assert main(["audit", "verify", "--embedder", "hashing"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [m["id"] for m in report["store"]["unaudited"]] == [sneaked]
