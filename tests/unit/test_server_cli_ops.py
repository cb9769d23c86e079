"""The operational CLI end to end through ``memorywire.cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memorywire.cli import main


def _json(capsys: pytest.CaptureFixture[str]) -> object:
    return json.loads(capsys.readouterr().out)


def test_token_lifecycle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "t.db")
    assert main(["token", "create", "--role", "agent", "--agent", "A", "--provenance", "cli",
                 "--tokens-db", db, "--json"]) == 0
    created = _json(capsys)
    assert isinstance(created, dict) and created["token"].startswith("mw_")
    assert main(["token", "list", "--tokens-db", db, "--json"]) == 0
    listed = _json(capsys)
    assert isinstance(listed, dict)
    assert [t["id"] for t in listed["tokens"]] == [created["id"]]
    assert "token" not in listed["tokens"][0] and created["token"] not in json.dumps(listed)
    assert main(["token", "revoke", created["id"], "--tokens-db", db]) == 0
    assert main(["token", "revoke", created["id"], "--tokens-db", db]) == 1
    assert "not_found" in capsys.readouterr().err
    assert main(["token", "create", "--role", "agent", "--tokens-db", db]) == 1


def test_operations_on_a_local_store(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--store", "memory://", "--embedder", "hashing"]
    assert main(["remember", *base, "-a", "A", "hello there", "--metadata", '{"x": 1}',
                 "--json"]) == 0
    out = _json(capsys)
    assert isinstance(out, dict) and out["stores"] == ["memory"]
    assert main(["recall", *base, "-a", "A", "hello"]) == 0
    # Each run opens its own memory:// store, so this one is empty, and says so.
    assert capsys.readouterr().out == "no memories matched\n"
    assert main(["recall", *base, "-a", "A", "hello", "-k", "1000000000", "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["code"] == "invalid_request"
    assert "/k" in captured.err
    assert main(["forget", *base, "-a", "A"]) == 1
    assert main(["approvals", "list", *base]) == 1
    assert "capability_missing" in capsys.readouterr().err


def test_serve_refuses_no_auth_off_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--store", "memory://", "--host", "0.0.0.0", "--no-auth"]) == 2
    assert "non-loopback" in capsys.readouterr().err


def test_local_approvals_with_a_governance_db(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--store", "memory://", "--embedder", "hashing",
            "--governance-db", str(tmp_path / "gov.db")]
    assert main(["remember", *base, "-a", "A", "needs review", "--approval-required",
                 "--json"]) == 0
    staged = _json(capsys)
    assert isinstance(staged, dict) and staged["pending_approval"] is True
    assert main(["approvals", "list", *base, "--json"]) == 0
    listed = _json(capsys)
    assert isinstance(listed, dict) and [a["id"] for a in listed["approvals"]] == [staged["id"]]
    assert main(["approvals", "reject", staged["id"], *base, "--reason", "no"]) == 0


def test_typed_fields_and_where_from_the_cli(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--store", f"sqlite:///{tmp_path / 'm.db'}", "--embedder", "hashing"]
    for content, valence in (("rain on the trip", "-0.5"), ("sun on the trip", "0.5")):
        assert main(["remember", *base, "-a", "A", content, "-t", "emotional",
                     "--fields", f'{{"valence": {valence}}}', "--json"]) == 0
    capsys.readouterr()
    assert main(["recall", *base, "-a", "A", "trip", "--where", '{"valence": {"lt": 0}}',
                 "--json"]) == 0
    out = _json(capsys)
    assert isinstance(out, dict)
    assert [(h["content"], h["valence"]) for h in out["results"]] == [("rain on the trip", -0.5)]
    assert main(["remember", *base, "-a", "A", "x", "-t", "emotional",
                 "--fields", '{"valence": 5}', "--json"]) == 1
    assert "valence" in capsys.readouterr().err
