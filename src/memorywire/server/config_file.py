"""The one configuration file: its sections, read into flat ``ServerConfig`` settings.

A file is TOML (``.toml``) or JSON (anything else) with these top-level keys, every one
optional (see docs/configuration.md, field by field):

- ``server``: the flat settings of :class:`~memorywire.server.config.ServerConfig`
  (host, port, limits, embedder, logging, metrics, ...). A file without any section is read
  as this table alone, as files written before sections existed are.
- ``stores``: a list of ``{url, name, weight, primary, deadline_s, trust}``; more than one
  becomes a router.
- ``router``: how several stores are fused (``quorum``, ``remember_policy``,
  ``deadline_s``, ``rrf_k``).
- ``governance``: ``enabled``, ``database`` and the policy (``default``, ``rules``,
  ``conflicts``, ``directives``), mapped
  onto :class:`~memorywire.governance.policies.PolicySet`.

Every key is checked here, so a misspelt one is refused with its full path
(``stores[1].wieght``) instead of being ignored.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memorywire.errors import InvalidRequest

__all__ = ["SECTIONS", "StoreEntry", "read_config_file"]

SECTIONS = ("server", "stores", "router", "governance")
_STORE_KEYS = ("url", "name", "weight", "primary", "deadline_s", "trust")
#: ``router`` key → the ``ServerConfig`` field it sets.
_ROUTER_KEYS = {
    "quorum": "quorum",
    "remember_policy": "remember_policy",
    "deadline_s": "router_deadline_s",
    "rrf_k": "rrf_k",
    "outbox": "router_outbox",
}
_GOVERNANCE_KEYS = ("enabled", "database", "default", "rules", "conflicts", "directives")
_POLICY_KEYS = ("default", "rules", "conflicts", "directives")


@dataclass(frozen=True)
class StoreEntry:
    """One store of a configuration; ``name`` tells children of a router apart."""

    url: str
    name: str = ""
    weight: float = 1.0
    primary: bool = False
    #: This child's own deadline in seconds; ``None``: the router's ``deadline_s``.
    deadline_s: float | None = None
    #: 0 < trust ≤ 1: multiplies the child's contribution to fusion in every mode.
    trust: float = 1.0


def _fail(path: str | Path, where: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"config file {path}: {where}: {message}")


def _table(path: str | Path, where: str, value: Any, allowed: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, where, "expected a table")
    for key in value:
        if key not in allowed:
            raise _fail(path, f"{where}.{key}", "unknown setting")
    return value


def _stores(path: str | Path, value: Any) -> tuple[StoreEntry, ...]:
    if not isinstance(value, list) or not value:
        raise _fail(path, "stores", "expected a non-empty list of store tables")
    out = []
    for i, raw in enumerate(value):
        where = f"stores[{i}]"
        item = _table(path, where, raw, _STORE_KEYS)
        url = item.get("url")
        if not isinstance(url, str) or not url:
            raise _fail(path, f"{where}.url", "a store URL is required")
        weight = item.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
            raise _fail(path, f"{where}.weight", f"must be a positive number (got {weight!r})")
        name = item.get("name", "")
        if not isinstance(name, str):
            raise _fail(path, f"{where}.name", "must be a string")
        primary = item.get("primary", False)
        if not isinstance(primary, bool):
            raise _fail(path, f"{where}.primary", "must be true or false")
        deadline = item.get("deadline_s")
        if deadline is not None and (isinstance(deadline, bool)
                                     or not isinstance(deadline, int | float) or deadline <= 0):
            raise _fail(path, f"{where}.deadline_s",
                        f"must be a positive number of seconds (got {deadline!r})")
        trust = item.get("trust", 1.0)
        if isinstance(trust, bool) or not isinstance(trust, int | float) or not 0 < trust <= 1:
            raise _fail(path, f"{where}.trust", f"must be a number in (0, 1] (got {trust!r})")
        out.append(StoreEntry(url, name, float(weight), primary,
                              None if deadline is None else float(deadline), float(trust)))
    if sum(e.primary for e in out) > 1:
        raise _fail(path, "stores", "at most one store may be primary")
    if len(out) == 1:
        for key in ("deadline_s", "trust"):
            if key in value[0]:
                raise _fail(path, f"stores[0].{key}", "only a router uses it: give several "
                                                      "stores, or leave it out")
    return tuple(out)


def _governance(path: str | Path, value: Any) -> dict[str, Any]:
    gov = _table(path, "governance", value, _GOVERNANCE_KEYS)
    values: dict[str, Any] = {}
    if "enabled" in gov:
        if not isinstance(gov["enabled"], bool):
            raise _fail(path, "governance.enabled", "must be true or false")
        values["governance"] = gov["enabled"]
    if "database" in gov:
        values["governance_db"] = gov["database"]
    if any(k in gov for k in _POLICY_KEYS):
        from memorywire.governance.policies import PolicySet

        policy: dict[str, Any] = {k: gov[k] for k in _POLICY_KEYS if k in gov}
        try:
            PolicySet.from_dict(policy)
        except InvalidRequest as exc:
            where = "; ".join(f"governance{d.path.replace('/', '.')}: {d.message}"
                              for d in exc.details) or "governance"
            raise InvalidRequest(f"config file {path}: {where}") from exc
        values["policies"] = policy
    return values


def read_config_file(path: str | Path, known: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ServerConfig`` field values a file sets (``known``: the flat field names).

    The values of the ``server`` table are returned raw; the caller coerces them like
    environment variables. Structured sections come back already checked.
    """
    text = Path(path).read_text(encoding="utf-8")
    try:
        doc = tomllib.loads(text) if str(path).endswith(".toml") else json.loads(text)
    except ValueError as exc:
        raise InvalidRequest(f"config file {path}: not valid TOML/JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InvalidRequest(f"config file {path}: expected a table of settings")
    # ``governance = false`` in a flat file is the setting; ``[governance]`` is the section.
    sectioned = any(key in SECTIONS and isinstance(v, dict | list) for key, v in doc.items())
    flat = doc.get("server", {}) if sectioned else doc
    if sectioned:
        for key in doc:
            if key not in SECTIONS:
                raise _fail(path, key, f"unknown section (sections: {', '.join(SECTIONS)})")
    values: dict[str, Any] = {}
    for key, value in _table(path, "server", flat, known).items():
        if key == "stores":  # a list of tables has its own section
            raise _fail(path, "server.stores", "list stores in the [[stores]] section")
        values[key] = value
    if not sectioned:
        return values
    if "stores" in doc:
        values["stores"] = _stores(path, doc["stores"])
    if "router" in doc:
        router = _table(path, "router", doc["router"], _ROUTER_KEYS)
        for key, value in router.items():
            values[_ROUTER_KEYS[key]] = value
    if "governance" in doc:
        values.update(_governance(path, doc["governance"]))
    return values
