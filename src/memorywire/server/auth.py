"""Who is calling, and what they may touch.

A caller is a :class:`Principal`: a role and a scope of agent ids (and optionally user ids).
Every operation is checked against it in the dispatcher, never in a transport. API tokens are
random 256-bit secrets shown once; only their SHA-256 is stored (a fast hash is enough for
high-entropy secrets, and it makes lookup an index probe instead of a scan of slow hashes).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from memorywire.core.clock import Clock, SystemClock
from memorywire.core.ids import new_id
from memorywire.errors import Forbidden, InvalidRequest, NotFound, Unauthorized
from memorywire.governance.actor import acting_as
from memorywire.wire.operations import operation

__all__ = ["LOCAL_OPERATOR", "TOKEN_PREFIX", "Principal", "Role", "TokenInfo", "TokenStore"]

TOKEN_PREFIX = "mw_"


class Role(StrEnum):
    AGENT = "agent"
    REVIEWER = "reviewer"
    ADMIN = "admin"


#: The name the local human (CLI, ``/ui`` without tokens) acts under; see local_operator.
LOCAL_OPERATOR = "operator"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. ``agent_ids=None`` means every agent (admin-style scope)."""

    name: str
    role: Role
    agent_ids: frozenset[str] | None = None
    user_ids: frozenset[str] | None = None
    provenance: str | None = None
    #: The API token's id: unique, unlike ``name`` (None for in-process and no-auth callers).
    token_id: str | None = field(default=None, compare=False)
    #: On the agent side although its role is not ``agent`` (see :attr:`is_agent`).
    agent_side: bool = field(default=False, compare=False)

    @classmethod
    def local_admin(cls) -> Principal:
        """The agent side in local mode: callers of a ``--no-auth`` server (REST, JSON-RPC,
        MCP), ``memorywire mcp`` over stdio and the in-process Python client."""
        return cls(name="local", role=Role.ADMIN, agent_side=True)

    @property
    def is_agent(self) -> bool:
        """Whether governance treats this caller as software acting for itself: an agent
        token, the local agent side, or any caller of an MCP tool. Its destructive writes
        wait for a person by default (the policy's ``agent_review``)."""
        return self.role is Role.AGENT or self.agent_side

    def acting(self) -> AbstractContextManager[None]:
        """Governance's view of this caller for the calls made inside (name, id, side)."""
        return acting_as(self.name, self.token_id, agent=self.is_agent)

    @classmethod
    def local_operator(cls) -> Principal:
        """The human in local mode: the CLI on a local store and the reviewer UI of a
        ``--no-auth`` server. A principal apart from :meth:`local_admin`, so a single
        operator can approve what an agent staged, while neither side can approve its own
        write (approvals compare principal names)."""
        return cls(name=LOCAL_OPERATOR, role=Role.ADMIN)

    def owns_agent(self, agent_id: str) -> bool:
        return self.agent_ids is None or agent_id in self.agent_ids

    @property
    def scoped(self) -> bool:
        """Whether the token is limited to some agents or users (not every tenant)."""
        return self.agent_ids is not None or self.user_ids is not None

    def allows(self, agent_id: str, user_id: str | None) -> bool:
        """:meth:`check_scope` as a predicate, for a read that spans many scopes (an export
        keeps the rows it allows)."""
        return self.owns_agent(agent_id) and (
            self.user_ids is None or (user_id is not None and user_id in self.user_ids))

    def check_scope(self, agent_id: str, user_id: str | None) -> None:
        """Refuse a request aimed outside the token's scope.

        The answer depends only on the token and the request, never on stored data, so it
        reveals nothing about another tenant's memories.
        """
        if not self.owns_agent(agent_id):
            raise Forbidden(f"this token may not act for agent_id {agent_id!r}")
        if self.user_ids is not None and (user_id is None or user_id not in self.user_ids):
            raise Forbidden("this token is limited to its user_ids; pass one of them as user_id")

    def require(self, *roles: Role) -> None:
        if self.role not in roles:
            allowed = ", ".join(r.value for r in roles)
            raise Forbidden(f"role {self.role.value!r} may not do this (needs: {allowed})")

    def require_for(self, op: str) -> None:
        """Refuse operation ``op`` unless the operation table lets this role call it."""
        self.require(*(r for r in Role if r.value in operation(op).roles))


@dataclass(frozen=True)
class TokenInfo:
    id: str
    name: str
    role: Role
    agent_ids: tuple[str, ...] | None
    user_ids: tuple[str, ...] | None
    provenance: str | None
    created_at: int
    revoked_at: int | None

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "role": self.role.value,
            "agent_ids": list(self.agent_ids) if self.agent_ids is not None else None,
            "user_ids": list(self.user_ids) if self.user_ids is not None else None,
            "provenance": self.provenance,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }

    def principal(self) -> Principal:
        return Principal(
            name=self.name,
            role=self.role,
            agent_ids=frozenset(self.agent_ids) if self.agent_ids is not None else None,
            user_ids=frozenset(self.user_ids) if self.user_ids is not None else None,
            provenance=self.provenance,
            token_id=self.id,
        )


_SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    id          TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL,
    agent_ids   TEXT,
    user_ids    TEXT,
    provenance  TEXT,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
"""


#: Parsed principals a TokenStore keeps (past it, it starts over).
_PRINCIPALS_KEPT = 1024


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class TokenStore:
    """API tokens in a small SQLite file (``":memory:"`` for tests)."""

    def __init__(self, path: str | Path = ":memory:", *, clock: Clock | None = None) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._clock = clock or SystemClock()
        #: Principals by the token row they were read from: a live token's row is read on
        #: every request (a revocation or a changed scope shows at once), but an unchanged
        #: row is not parsed again (an agent token's scope can list a thousand agent ids).
        self._principals: dict[tuple[object, ...], Principal] = {}
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)

    def create(
        self,
        *,
        role: Role | str,
        agent_ids: Iterable[str] | None = None,
        user_ids: Iterable[str] | None = None,
        provenance: str | None = None,
        name: str = "",
    ) -> tuple[str, TokenInfo]:
        """Mint a token; the secret is returned once and never stored."""
        try:
            role = Role(role)
        except ValueError:
            raise InvalidRequest(f"unknown role {role!r}; use agent, reviewer or admin") from None
        agents = tuple(sorted(set(agent_ids))) if agent_ids is not None else None
        users = tuple(sorted(set(user_ids))) if user_ids is not None else None
        if role is Role.AGENT and not agents:
            raise InvalidRequest("an agent token needs at least one agent_id in its scope")
        token_id = new_id()
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        info = TokenInfo(
            id=token_id,
            name=name or f"{role.value}-{token_id[-6:]}",
            role=role,
            agent_ids=agents,
            user_ids=users,
            provenance=provenance,
            created_at=self._clock.now_ms(),
            revoked_at=None,
        )
        with self._lock:
            taken = self._db.execute(
                "SELECT 1 FROM tokens WHERE name = ? AND revoked_at IS NULL", (info.name,)
            ).fetchone()
            if taken is not None:
                # Names show who acted in the audit log and the UI; two live tokens with
                # one name would make that ambiguous.
                raise InvalidRequest(f"a live token is already named {info.name!r}")
            self._db.execute(
                "INSERT INTO tokens VALUES (?,?,?,?,?,?,?,?,NULL)",
                (
                    info.id,
                    _hash(secret),
                    info.name,
                    info.role.value,
                    json.dumps(agents) if agents is not None else None,
                    json.dumps(users) if users is not None else None,
                    provenance,
                    info.created_at,
                ),
            )
        return secret, info

    def authenticate(self, secret: str | None) -> Principal:
        """The principal of a live token; every failure looks the same to the caller."""
        if not secret or not secret.startswith(TOKEN_PREFIX):
            raise Unauthorized("a valid bearer token is required")
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM tokens WHERE secret_hash = ? AND revoked_at IS NULL",
                (_hash(secret),),
            ).fetchone()
            if row is None:
                raise Unauthorized("a valid bearer token is required")
            key = tuple(row)
            known = self._principals.get(key)
            if known is None:
                if len(self._principals) >= _PRINCIPALS_KEPT:
                    self._principals.clear()
                known = self._principals[key] = _info(row).principal()
            return known

    def authenticate_hashed(self, secret_hash: str) -> Principal:
        """:meth:`authenticate` by the SHA-256 of the secret, for a holder that keeps only
        that (the reviewer UI's shared sessions)."""
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM tokens WHERE secret_hash = ? AND revoked_at IS NULL",
                (secret_hash,),
            ).fetchone()
        if row is None:
            raise Unauthorized("a valid bearer token is required")
        return _info(row).principal()

    def list(self, *, include_revoked: bool = False) -> list[TokenInfo]:
        sql = "SELECT * FROM tokens"
        if not include_revoked:
            sql += " WHERE revoked_at IS NULL"
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY created_at, id").fetchall()
        return [_info(r) for r in rows]

    def revoke(self, token_id: str) -> TokenInfo:
        with self._lock:
            cur = self._db.execute(
                "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (self._clock.now_ms(), token_id),
            )
            row = self._db.execute("SELECT * FROM tokens WHERE id = ?", (token_id,)).fetchone()
        if cur.rowcount == 0 or row is None:
            raise NotFound(f"no live token {token_id!r}")
        return _info(row)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _info(row: tuple[object, ...]) -> TokenInfo:
    tid, _h, name, role, agents, users, prov, created, revoked = row
    return TokenInfo(
        id=str(tid),
        name=str(name),
        role=Role(str(role)),
        agent_ids=tuple(json.loads(str(agents))) if agents is not None else None,
        user_ids=tuple(json.loads(str(users))) if users is not None else None,
        provenance=str(prov) if prov is not None else None,
        created_at=int(str(created)),
        revoked_at=int(str(revoked)) if revoked is not None else None,
    )
