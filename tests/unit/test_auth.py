from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from memorywire.core.clock import FakeClock
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


def test_scope_checks_name_what_is_refused() -> None:
    p = Principal("p", Role.AGENT, frozenset({"A", "B"}))
    p.check_scope("B", None)
    p.check_scope("A", "any-user")  # no user_ids: every user of its agents
    with pytest.raises(Forbidden) as agent:
        p.check_scope("C", None)
    assert agent.value.message == "this token may not act for agent_id 'C'"
    users = Principal("u", Role.AGENT, None, frozenset({"u1", "u2"}))
    users.check_scope("any-agent", "u2")
    with pytest.raises(Forbidden) as user:
        users.check_scope("any-agent", None)
    assert user.value.message == (
        "this token is limited to its user_ids; pass one of them as user_id")
    assert p.owns_agent("A") and not p.owns_agent("C") and users.owns_agent("Z")
    assert Principal("n", Role.AGENT, frozenset()).owns_agent("A") is False


def test_require_names_the_role_and_what_is_needed() -> None:
    reviewer = Principal("r", Role.REVIEWER)
    reviewer.require(Role.REVIEWER)
    reviewer.require(Role.ADMIN, Role.REVIEWER)
    with pytest.raises(Forbidden) as exc:
        reviewer.require(Role.ADMIN)
    assert exc.value.message == "role 'reviewer' may not do this (needs: admin)"
    with pytest.raises(Forbidden) as two:
        Principal("a", Role.AGENT, frozenset({"A"})).require(Role.REVIEWER, Role.ADMIN)
    assert two.value.message == "role 'agent' may not do this (needs: reviewer, admin)"


def test_local_principals_are_two_admins_with_distinct_names() -> None:
    admin, operator = Principal.local_admin(), Principal.local_operator()
    assert (admin.name, admin.role, admin.agent_ids, admin.user_ids) == (
        "local", Role.ADMIN, None, None)
    assert (operator.name, operator.role, operator.agent_ids) == ("operator", Role.ADMIN, None)


def test_token_info_round_trips_scope_and_names(tmp_path: Path) -> None:
    clock = FakeClock(1_000)
    store = TokenStore(tmp_path / "new" / "dir" / "tokens.db", clock=clock)
    secret, info = store.create(role=Role.AGENT, agent_ids=["B", "A", "B"], user_ids=["u2", "u1"],
                                provenance="agent:A", name="bot")
    assert (info.name, info.agent_ids, info.user_ids) == ("bot", ("A", "B"), ("u1", "u2"))
    assert info.to_dict() == {
        "id": info.id, "name": "bot", "role": "agent", "agent_ids": ["A", "B"],
        "user_ids": ["u1", "u2"], "provenance": "agent:A", "created_at": info.created_at,
        "revoked_at": None}
    p = store.authenticate(secret)
    assert p == Principal("bot", Role.AGENT, frozenset({"A", "B"}), frozenset({"u1", "u2"}),
                          "agent:A")
    assert p.token_id == info.id
    assert store.list() == [info] and info.created_at == 1_000
    clock.advance(5)
    _, admin = store.create(role="admin")
    assert admin.name == f"admin-{admin.id[-6:]}"
    assert admin.to_dict()["agent_ids"] is None and admin.to_dict()["user_ids"] is None
    assert store.authenticate_hashed(hashlib.sha256(secret.encode()).hexdigest()) == p
    with pytest.raises(Unauthorized) as unknown:
        store.authenticate_hashed("0" * 64)
    assert unknown.value.message == "a valid bearer token is required"
    clock.advance(5)
    revoked = store.revoke(info.id)
    assert revoked.revoked_at == 1_010 and revoked.id == info.id and admin.created_at == 1_005
    assert revoked.to_dict()["revoked_at"] == revoked.revoked_at
    with pytest.raises(Unauthorized):
        store.authenticate(secret)
    assert [t.id for t in store.list(include_revoked=True)] == [info.id, admin.id]
    assert store.list() == [admin]
    store.close()


def test_a_live_name_is_taken_until_its_token_is_revoked() -> None:
    store = TokenStore()
    _, first = store.create(role="reviewer", name="rev")
    with pytest.raises(InvalidRequest) as exc:
        store.create(role="admin", name="rev")
    assert exc.value.message == "a live token is already named 'rev'"
    store.revoke(first.id)
    _, second = store.create(role="admin", name="rev")
    assert second.name == "rev" and second.id != first.id
    with pytest.raises(InvalidRequest) as empty:
        store.create(role="agent", agent_ids=[])
    assert empty.value.message == "an agent token needs at least one agent_id in its scope"
    with pytest.raises(InvalidRequest) as role:
        store.create(role="root")
    assert role.value.message == "unknown role 'root'; use agent, reviewer or admin"
    with pytest.raises(NotFound) as missing:
        store.revoke("nope")
    assert missing.value.message == "no live token 'nope'"


def test_secrets_are_prefixed_random_and_only_live_ones_authenticate() -> None:
    store = TokenStore()
    a, _ = store.create(role="admin")
    b, _ = store.create(role="admin")
    assert a.startswith("mw_") and b.startswith("mw_") and a != b
    # 256 random bits: 32 bytes are 43 URL-safe base64 characters
    assert len(a) == len(b) == 3 + 43
    assert store.authenticate(a).role is Role.ADMIN
    for bad in ("x" + a, a[3:], a.upper()):
        with pytest.raises(Unauthorized) as exc:
            store.authenticate(bad)
        assert exc.value.message == "a valid bearer token is required"


def test_tokens_are_shared_across_threads_and_connections(tmp_path: Path) -> None:
    """Servers authenticate on worker threads, and a second process sees a new token at once
    (autocommit), without the first closing its store."""
    import threading

    writer = TokenStore(tmp_path / "tokens.db")
    secret, info = writer.create(role="admin", name="ops")
    reader = TokenStore(tmp_path / "tokens.db")
    assert reader.authenticate(secret).name == "ops"
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.append(writer.authenticate(secret).name))
    thread.start()
    thread.join()
    assert seen == ["ops"]
    writer.revoke(info.id)
    with pytest.raises(Unauthorized):
        reader.authenticate(secret)
    writer.close()
    reader.close()


def test_allows_is_check_scope_as_a_predicate() -> None:
    p = Principal("p", Role.AGENT, frozenset({"A"}), frozenset({"u1"}))
    assert p.allows("A", "u1")
    assert not p.allows("B", "u1") and not p.allows("A", "u2") and not p.allows("A", None)
    agents_only = Principal("q", Role.AGENT, frozenset({"A"}))
    assert agents_only.allows("A", None) and agents_only.allows("A", "anyone")
    assert not agents_only.allows("B", None)
    everyone = Principal.local_admin()
    assert everyone.allows("Z", None) and everyone.allows("Z", "u")
    for principal in (p, agents_only, everyone):
        for agent, user in (("A", "u1"), ("A", "u2"), ("B", None), ("A", None)):
            try:
                principal.check_scope(agent, user)
                checked = True
            except Forbidden:
                checked = False
            assert principal.allows(agent, user) is checked, (principal.name, agent, user)


def test_scoped_means_limited_to_some_agents_or_users() -> None:
    assert Principal("a", Role.AGENT, frozenset({"A"})).scoped is True
    assert Principal("u", Role.ADMIN, None, frozenset({"u1"})).scoped is True
    assert Principal.local_admin().scoped is False
    assert Principal("r", Role.REVIEWER).scoped is False


def test_require_for_reads_the_operation_table() -> None:
    agent = Principal("a", Role.AGENT, frozenset({"A"}))
    reviewer = Principal("r", Role.REVIEWER)
    agent.require_for("forget")
    reviewer.require_for("approvals.approve")
    Principal.local_admin().require_for("audit.verify")
    with pytest.raises(Forbidden) as exc:
        agent.require_for("approvals.approve")
    assert exc.value.message == "role 'agent' may not do this (needs: reviewer, admin)"
    with pytest.raises(Forbidden) as admin_only:
        reviewer.require_for("recover")
    assert admin_only.value.message == "role 'reviewer' may not do this (needs: admin)"


def test_the_default_store_is_private_memory_and_writes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    one, two = TokenStore(), TokenStore()
    one.create(role="admin", name="same")
    two.create(role="admin", name="same")  # a separate database: the name is free there
    assert two.list()[0].name == "same" and len(one.list()) == 1
    one.close()
    two.close()
    assert list(tmp_path.iterdir()) == []


def test_a_token_changed_or_revoked_by_another_process_shows_at_once(tmp_path: Path) -> None:
    """Principals are kept parsed per token row, so every request still reads the row: a
    revocation or a new scope written by another process (another ``serve``, the CLI) holds
    on the next request."""
    db = tmp_path / "tokens.db"
    serving, admin = TokenStore(db), TokenStore(db)
    try:
        secret, info = admin.create(role="agent", agent_ids=["A", "B"], name="t")
        first = serving.authenticate(secret)
        assert first.agent_ids == frozenset({"A", "B"})
        assert serving.authenticate(secret) is first  # the same row: parsed once
        other = sqlite3.connect(db)
        other.execute("UPDATE tokens SET agent_ids = ? WHERE id = ?", ('["C"]', info.id))
        other.commit()
        other.close()
        assert serving.authenticate(secret).agent_ids == frozenset({"C"})
        admin.revoke(info.id)
        with pytest.raises(Unauthorized):
            serving.authenticate(secret)
    finally:
        serving.close()
        admin.close()
