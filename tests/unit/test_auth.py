from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memorywire.errors import Forbidden, InvalidRequest, NotFound, Unauthorized
from memorywire.server.auth import Principal, Role, TokenStore


def test_token_is_shown_once_and_stored_hashed(tmp_path: Path) -> None:
    db = tmp_path / "tokens.db"
    store = TokenStore(db)
    secret, info = store.create(role="agent", agent_ids=["A"], provenance="agent:A")
    store.close()
    raw = sqlite3.connect(db).execute("SELECT * FROM tokens").fetchall()
    assert secret not in repr(raw) and secret[3:] not in repr(raw)
    reopened = TokenStore(db)
    p = reopened.authenticate(secret)
    assert p == Principal(info.name, Role.AGENT, frozenset({"A"}), None, "agent:A")
    assert [t.id for t in reopened.list()] == [info.id]
    reopened.close()


def test_revocation_and_bad_secrets_look_alike() -> None:
    store = TokenStore()
    secret, info = store.create(role="reviewer")
    messages = set()
    store.revoke(info.id)
    for bad in (secret, "", None, "mw_x", secret + "x", "Bearer " + secret):
        with pytest.raises(Unauthorized) as exc:
            store.authenticate(bad)
        messages.add(exc.value.message)
    assert len(messages) == 1
    with pytest.raises(NotFound):
        store.revoke(info.id)
    assert store.list() == [] and len(store.list(include_revoked=True)) == 1


def test_agent_tokens_need_a_scope_and_roles_are_checked() -> None:
    store = TokenStore()
    with pytest.raises(InvalidRequest):
        store.create(role="agent")
    with pytest.raises(InvalidRequest):
        store.create(role="root", agent_ids=["A"])
    p = Principal("p", Role.AGENT, frozenset({"A"}), frozenset({"u1"}))
    p.check_scope("A", "u1")
    for agent, user in (("B", "u1"), ("A", "u2"), ("A", None)):
        with pytest.raises(Forbidden):
            p.check_scope(agent, user)
    with pytest.raises(Forbidden):
        p.require(Role.REVIEWER, Role.ADMIN)
    Principal.local_admin().check_scope("anyone", None)
