"""Server settings from defaults, a TOML/JSON file, environment variables and flags (in that order).

Environment variables are ``MEMORYWIRE_<FIELD>`` (``MEMORYWIRE_STORE``, ``MEMORYWIRE_PORT``,
``MEMORYWIRE_MAX_BODY_BYTES``, ...). The data directory is ``$MEMORYWIRE_HOME`` or
``$XDG_DATA_HOME/memorywire`` (``~/.local/share/memorywire``).
"""

from __future__ import annotations

import ipaddress
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorywire.errors import InvalidRequest
from memorywire.server.config_file import StoreEntry, read_config_file
from memorywire.server.limits import Limits, Timeouts
from memorywire.server.mcp.tools import ToolDefaults

if TYPE_CHECKING:
    from memorywire.governance.signing import SigningKeySource

__all__ = ["ServerConfig", "StoreEntry", "data_dir", "is_loopback", "load_config"]


def data_dir() -> Path:
    home = os.environ.get("MEMORYWIRE_HOME")
    if home:
        return Path(home)
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "memorywire"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServerConfig:
    store: str = ""
    #: Several stores behind one router (the ``[[stores]]`` section, or a repeated
    #: ``--store``); when set, ``store`` is unused.
    stores: tuple[StoreEntry, ...] = field(default_factory=tuple)
    #: Router settings (see :class:`memorywire.router.MemoryRouter`).
    quorum: int = 1
    remember_policy: str = "all"
    router_deadline_s: float = 2.0
    rrf_k: int = 60
    #: The router's durable outbox of forgets a child missed (``[router] outbox``); empty:
    #: ``router-outbox.db`` in the data directory.
    router_outbox: str = ""
    host: str = "127.0.0.1"
    port: int = 8765
    #: Processes ``serve`` runs on its port: a whole number, or ``auto`` (2 on a machine with
    #: 2+ CPUs when the store and governance database live outside the process, else 1; see
    #: server/workers.py). 1 by default: measured, a second worker did not pay on a shared
    #: 2-core machine (docs/decisions.md). Each worker loads its own model (~250 MB).
    workers: str = "1"
    no_auth: bool = False
    tokens_db: str = ""
    governance_db: str = ""
    #: Governance for the embedded default store: on unless ``--no-governance`` /
    #: ``[governance] enabled = false``; then the audit log and approval queue live beside
    #: ``mem.db`` in ``mem.gov.db``. Off also turns off a configured ``governance_db``.
    governance: bool = True
    #: Governance policy: a JSON policy file's path, or the policy itself (``default``,
    #: ``rules``); applies only when governance is on.
    policies: str | Mapping[str, Any] | None = None
    #: Seal dumps and kept texts under per-user data keys that an erase destroys
    #: (``[governance] per_user_keys``; see governance/datakeys.py). Once on, it stays on for
    #: that governance database.
    per_user_keys: bool = False
    #: The address people reach this deployment's server at, whose ``/ui`` decides staged
    #: writes (``MEMORYWIRE_PUBLIC_URL``). Staged answers link there from every transport,
    #: ``memorywire mcp`` on stdio included; empty: ``serve`` links to ``http://host:port``
    #: and the other commands give the approval id alone.
    public_url: str = ""
    #: Approvals in a row of one agent/source/type (staged by a policy rule) after which the
    #: reviewer UI offers the rule that would have committed them (governance/patterns.py).
    review_pattern_threshold: int = 5
    #: The Ed25519 key (PEM) deletion receipts are signed with (``MEMORYWIRE_SIGNING_KEY``);
    #: empty: beside the governance database, created on first use (see governance/signing.py).
    signing_key: str = ""
    #: Seconds between expiry sweeps in ``serve`` (0 turns the sweeper off) and how long past
    #: its ``expires_at`` a memory is kept before the sweep purges it.
    purge_interval_s: float = 300.0
    purge_grace_hours: float = 24.0
    #: ``default`` lets the store choose; otherwise an embedder spec (``minilm``,
    #: ``minilm-int8``, ``hashing`` (tests only), ``sentence-transformers:M``,
    #: ``openai:URL#MODEL``; see :mod:`memorywire.embed.spec`).
    embedder: str = "default"
    max_body_bytes: int = Limits.max_body_bytes
    max_import_bytes: int = Limits.max_import_bytes
    max_import_unzipped_bytes: int = Limits.max_import_unzipped_bytes
    max_import_line_bytes: int = Limits.max_import_line_bytes
    max_import_records: int = Limits.max_import_records
    max_content_bytes: int = Limits.max_content_bytes
    max_json_depth: int = Limits.max_json_depth
    recall_rate: float = Limits.recall_rate
    recall_burst: int = Limits.recall_burst
    write_rate: float = Limits.write_rate
    write_burst: int = Limits.write_burst
    anonymous_rate: float = Limits.anonymous_rate
    anonymous_burst: int = Limits.anonymous_burst
    #: Seconds a client may take to send request headers, then the body; idle keep-alive.
    header_timeout_s: float = Timeouts.header_s
    body_timeout_s: float = Timeouts.body_s
    idle_timeout_s: float = Timeouts.idle_s
    #: Per-token rate limits: ``auto`` (off on a loopback bind, where one local principal
    #: runs many workers; on for any other bind), ``on`` or ``off``.
    rate_limits: str = "auto"
    #: Origins allowed to call the server from a browser (an absent Origin is always allowed).
    allowed_origins: tuple[str, ...] = field(default_factory=tuple)
    #: Host names (or host:port) besides loopback that may address a loopback-bound server;
    #: any Host passes on a public bind unless some are listed (see server/origin.py).
    allowed_hosts: tuple[str, ...] = field(default_factory=tuple)
    #: Prometheus ``/metrics`` (loopback or admin token); see docs/observability.md.
    metrics: bool = True
    #: OpenTelemetry traces over OTLP (needs the ``otel`` extra).
    tracing: bool = False
    #: One JSON line per request on the ``memorywire.access`` logger.
    access_log: bool = False
    #: ``agent_id``/``user_id`` MCP tools use when a call leaves them out (``MEMORYWIRE_AGENT``,
    #: ``MEMORYWIRE_USER``); empty: the call must name them.
    agent: str = ""
    user: str = ""
    #: The relevance floor (0..1, see :mod:`memorywire.core.relevance`) of a recall that
    #: names no ``min_relevance``; ``None``: each store's calibrated floors (equal to 0.5).
    min_relevance: float | None = None

    def tool_defaults(self) -> ToolDefaults:
        return ToolDefaults(agent_id=self.agent, user_id=self.user)

    def resolved(self) -> ServerConfig:
        """Fill in paths under the data directory and check the combination is safe."""
        home = data_dir()
        embedded_default = not self.store and not self.stores
        out = replace(
            self,
            store=self.store or f"sqlite:///{home / 'mem.db'}",
            tokens_db=self.tokens_db or str(home / "tokens.db"),
        )
        if not out.governance:
            out = replace(out, governance_db="")
        elif embedded_default and not out.governance_db:
            out = replace(out, governance_db=str(home / "mem.gov.db"))
        if out.no_auth and not is_loopback(out.host):
            raise InvalidRequest(
                f"refusing to serve without authentication on non-loopback address {out.host!r}; "
                "drop --no-auth and create a token with `memorywire token create`"
            )
        if out.remember_policy not in ("all", "primary_only"):
            raise InvalidRequest(
                f"remember_policy must be all or primary_only (got {out.remember_policy!r})"
            )
        if out.policies is not None and not out.governance_db:
            raise InvalidRequest(
                "policies are set but governance is off; give governance_db "
                "(--governance-db, or [governance] database) so they apply"
            )
        if out.per_user_keys and not out.governance_db:
            raise InvalidRequest(
                "per_user_keys is on but governance is off; the data keys live in the "
                "governance database (give governance_db, or turn governance on)"
            )
        if out.review_pattern_threshold < 1:
            raise InvalidRequest("review_pattern_threshold must be at least 1 "
                                 f"(got {out.review_pattern_threshold})")
        if out.public_url and not out.public_url.startswith(("http://", "https://")):
            raise InvalidRequest(
                f"public_url must be an http:// or https:// address (got {out.public_url!r})"
            )
        if not 0 < out.port < 65536:
            raise InvalidRequest(f"port {out.port} is out of range")
        if out.purge_interval_s < 0 or out.purge_grace_hours < 0:
            raise InvalidRequest("purge_interval_s and purge_grace_hours must be >= 0 "
                                 "(purge_interval_s = 0 turns the expiry sweeper off)")
        if out.workers.strip().lower() != "auto" and not (
            out.workers.strip().isdigit() and int(out.workers) >= 1
        ):
            raise InvalidRequest(
                f"workers must be auto or a whole number >= 1 (got {out.workers!r})"
            )
        if out.rate_limits not in ("auto", "on", "off"):
            raise InvalidRequest(
                f"rate_limits must be auto, on or off (got {out.rate_limits!r})"
            )
        return out

    def signing_key_source(self) -> SigningKeySource:
        """Where deletion receipts' key comes from (resolved configurations only)."""
        from memorywire.governance.signing import SigningKeySource, default_signing_key_path

        if self.signing_key:
            return SigningKeySource(self.signing_key, create=False)
        if self.governance_db:
            return SigningKeySource(default_signing_key_path(self.governance_db), create=True)
        return SigningKeySource(None, create=False)

    def timeouts(self) -> Timeouts:
        return Timeouts(self.header_timeout_s, self.body_timeout_s, self.idle_timeout_s)

    def rate_limited(self) -> bool:
        """Whether per-token rate limits apply (see ``rate_limits``)."""
        if self.rate_limits == "auto":
            return not is_loopback(self.host)
        return self.rate_limits == "on"

    def limits(self) -> Limits:
        return Limits(
            max_body_bytes=self.max_body_bytes,
            max_import_bytes=self.max_import_bytes,
            max_import_unzipped_bytes=self.max_import_unzipped_bytes,
            max_import_line_bytes=self.max_import_line_bytes,
            max_import_records=self.max_import_records,
            max_content_bytes=self.max_content_bytes,
            max_json_depth=self.max_json_depth,
            recall_rate=self.recall_rate,
            recall_burst=self.recall_burst,
            write_rate=self.write_rate,
            write_burst=self.write_burst,
            body_timeout_s=self.body_timeout_s,
            anonymous_rate=self.anonymous_rate,
            anonymous_burst=self.anonymous_burst,
        )


def _stores_of(name: str, value: Any) -> tuple[StoreEntry, ...]:
    """A list of store URLs (a repeated ``--store``, ``MEMORYWIRE_STORES=a,b``) or entries."""
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list | tuple):
        raise InvalidRequest(f"config {name}: cannot use {value!r}")
    return tuple(v if isinstance(v, StoreEntry) else StoreEntry(str(v)) for v in value)


def _relevance(value: Any) -> float:
    """``min_relevance`` from a file, the environment or a flag: a number in 0..1."""
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not 0.0 <= number <= 1.0:  # NaN fails too
        raise InvalidRequest(f"config min_relevance: must be a number from 0 to 1 "
                             f"(got {value!r})")
    return number


def _coerce(name: str, value: Any, default: Any) -> Any:
    if name == "min_relevance":
        return _relevance(value)
    if name == "stores":
        return _stores_of(name, value)
    if name == "policies":
        if isinstance(value, str | Mapping):
            return value
        raise InvalidRequest(f"config policies: a policy file path or table (got {value!r})")
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, tuple):
            if isinstance(value, str):
                return tuple(v.strip() for v in value.split(",") if v.strip())
            return tuple(str(v) for v in value)
        return str(value)
    except (TypeError, ValueError):
        raise InvalidRequest(f"config {name}: cannot use {value!r}") from None


def load_config(
    path: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> ServerConfig:
    """Defaults < file < environment < explicit overrides (``None`` values are ignored).

    ``path`` defaults to ``$MEMORYWIRE_CONFIG``.
    """
    env = os.environ if env is None else env
    base = ServerConfig()
    known = {f.name: getattr(base, f.name) for f in fields(ServerConfig)}
    values: dict[str, Any] = {}
    path = path if path is not None else (env.get("MEMORYWIRE_CONFIG") or None)
    if path is not None:
        for key, value in read_config_file(path, known).items():
            try:
                values[key] = _coerce(key, value, known[key])
            except InvalidRequest as exc:  # name the file as well as the key
                raise InvalidRequest(f"config file {path}: {exc.message}") from None
    for key, default in known.items():
        raw = env.get(f"MEMORYWIRE_{key.upper()}")
        if raw is not None:
            if key == "store":
                values.pop("stores", None)  # the environment's one store beats the file's list
            values[key] = _coerce(key, raw, default)
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key == "store" and isinstance(value, list | tuple):
            # A repeated ``--store``: one URL is that store; several are a router.
            if len(value) > 1:
                values["stores"] = _stores_of("store", value)
                continue
            value = value[0]
        if key == "store":
            values.pop("stores", None)  # a flag naming one store overrides the file's list
        values[key] = _coerce(key, value, known[key])
    return replace(base, **values)
