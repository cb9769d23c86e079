"""A store URL's query keys: each one used, or refused naming it.

One store URL (``[[stores]] url``, ``--store``, ``MEMORYWIRE_STORE``) reaches every transport,
so it is where a deployment's ranking settings can live:
``sqlite:///mem.db?relevance_floor=-1&turn_weight=0``. The keys an embedded store accepts
are derived from its constructor's keyword-only parameters with a plain annotation
(``float``, ``int``, ``bool``, ``float | None``) and from the fields of
:class:`~memorywire.recall.RecallSettings` its search has (a store that takes ``recall``
declares ``DEFAULT_RECALL`` and the fields it lacks, ``RECALL_UNSUPPORTED``), so a setting
added to a constructor or a rule's setting added to ``RecallSettings`` is a URL key at once;
a test checks that none is left out.

A keyword given in code wins over the same setting in the URL (as ``pool_max`` always did on
PostgreSQL): the URL is the deployment's default, a program that passes a value means it.
The recall settings the URL and the code name one by one become one ``RecallSettings`` on the
store's defaults; a whole ``recall=`` given in code beside them is refused, since one of the
two would be dropped. A value the constructor or ``RecallSettings`` refuses is refused as
``invalid_request`` naming the key.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import parse_qsl

from memorywire.errors import InvalidRequest
from memorywire.recall.settings import RecallSettings

__all__ = [
    "Setting",
    "check_range",
    "constructor_keywords",
    "constructor_settings",
    "recall_settings",
    "refusing_bad_values",
    "split_query",
    "typed_settings",
    "url_keywords",
]

#: The annotations a URL value can be read as, spelled as ``from __future__ import
#: annotations`` leaves them.
_KINDS = ("bool", "int", "float", "float | None", "int | None")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class Setting:
    """A constructor keyword (or a field of the store's ``RecallSettings``) a URL key sets,
    and the annotation its value is read as."""

    param: str
    kind: str


def _kind(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation.strip()
    return str(getattr(annotation, "__name__", annotation))


def _recall_defaults(store: type) -> RecallSettings | None:
    """The recall settings ``store`` runs with when given none (``None``: it takes none)."""
    defaults = getattr(store, "DEFAULT_RECALL", None)
    return defaults if isinstance(defaults, RecallSettings) else None


def recall_settings(store: type) -> dict[str, Setting]:
    """URL key -> setting, for every ``RecallSettings`` field ``store``'s search has (none
    for a store that takes no ``recall``, i.e. declares no ``DEFAULT_RECALL``)."""
    if _recall_defaults(store) is None:
        return {}
    lacking: frozenset[str] = getattr(store, "RECALL_UNSUPPORTED", frozenset())
    return {f.name: Setting(f.name, _kind(f.type)) for f in fields(RecallSettings)
            if f.name not in lacking}


def constructor_settings(store: type, aliases: Mapping[str, str] | None = None
                         ) -> dict[str, Setting]:
    """URL key -> setting, for every keyword-only parameter of ``store.__init__`` with a plain
    annotation and every recall setting of the store (:func:`recall_settings`). ``aliases``
    (URL key -> parameter) gives a parameter another key, which then replaces the
    parameter's own name (``pool_max`` for PostgreSQL's ``max_size``)."""
    renamed = {param: key for key, param in (aliases or {}).items()}
    out: dict[str, Setting] = {}
    for p in inspect.signature(store).parameters.values():
        kind = _kind(p.annotation)
        if p.kind is inspect.Parameter.KEYWORD_ONLY and kind in _KINDS:
            out[renamed.get(p.name, p.name)] = Setting(p.name, kind)
    for key, setting in recall_settings(store).items():
        out[renamed.get(key, key)] = setting
    return out


def split_query(scheme: str, query: str, accepted: Iterable[str], *,
                passthrough: Callable[[str], bool] | None = None,
                hints: Mapping[str, str] | None = None) -> dict[str, str]:
    """The URL's query keys and values; a key given twice, or neither ``accepted`` nor taken
    by ``passthrough`` (PostgreSQL hands libpq its own), is refused naming it and listing the
    accepted keys. ``hints`` adds a sentence for a key users are known to try."""
    known = sorted(set(accepted))
    pairs = parse_qsl(query, keep_blank_values=True)
    out: dict[str, str] = {}
    unknown: list[str] = []
    for key, value in pairs:
        if key in out:
            raise InvalidRequest(f"{scheme} URL: query key {key!r} is given twice")
        if key not in known and not (passthrough and passthrough(key)):
            unknown.append(key)
        out[key] = value
    if query and not pairs:
        unknown.append(query)
    if unknown:
        notes = "".join(f" {hints[k]}" for k in unknown if hints and k in hints)
        extra = " and the libpq connection parameters" if passthrough else ""
        raise InvalidRequest(
            f"{scheme} URL: unknown query key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k) for k in unknown)}; accepted: "
            f"{', '.join(known) or '(none)'}{extra}.{notes}")
    return out


def _value(scheme: str, key: str, kind: str, text: str) -> Any:
    word = text.strip().lower()
    if kind == "bool":
        if word in _TRUE | _FALSE:
            return word in _TRUE
        raise InvalidRequest(f"{scheme} URL: {key} must be true or false, got {text!r}")
    if kind.endswith("| None") and word == "none":
        return None
    try:
        if kind.startswith("int"):
            whole = int(word)
            if not -(2**63) <= whole < 2**63:
                raise InvalidRequest(f"{scheme} URL: {key} must fit in a signed 64-bit "
                                     f"integer, got {text!r}")
            return whole
        number = float(word)
    except ValueError:
        what = "an integer" if kind.startswith("int") else "a number"
        also = " or none" if kind.endswith("| None") else ""
        raise InvalidRequest(f"{scheme} URL: {key} must be {what}{also}, got {text!r}") from None
    if not math.isfinite(number):
        raise InvalidRequest(f"{scheme} URL: {key} must be a finite number, got {text!r}")
    return number


def typed_settings(scheme: str, raw: Mapping[str, str], settings: Mapping[str, Setting]
                   ) -> dict[str, Any]:
    """Constructor keywords from the raw values of the keys that are ``settings``, each read
    as its annotation says (else refused naming the key and the expected kind)."""
    return {s.param: _value(scheme, key, s.kind, raw[key])
            for key, s in settings.items() if key in raw}


def constructor_keywords(store: type, scheme: str, given: Mapping[str, Any],
                         kw: Mapping[str, Any]) -> dict[str, Any]:
    """The keywords to build ``store`` with from the URL's typed settings ``given``,
    overridden by those given in code (``kw``). The recall settings among both become one
    ``recall``: the store's ``DEFAULT_RECALL`` with them replaced (checked there, so a bad
    value is ``invalid_request`` naming it); a ``recall`` given in code beside such settings
    is refused naming them, since one of the two would be dropped."""
    names = recall_settings(store).keys()
    changes = {k: v for k, v in given.items() if k in names}
    changes.update((k, v) for k, v in kw.items() if k in names)
    out = {k: v for k, v in given.items() if k not in names}
    out.update((k, v) for k, v in kw.items() if k not in names)
    defaults = _recall_defaults(store)
    if changes and defaults is not None:
        if out.get("recall") is not None:
            raise InvalidRequest(
                f"{scheme} store: recall= is given in code, so the recall settings "
                f"{', '.join(sorted(changes))} cannot also be given one by one (in the URL "
                "or as keywords); give them in one place")
        out["recall"] = replace(defaults, **changes)
    return out


def url_keywords(store: type, scheme: str, query: str, kw: Mapping[str, Any], *,
                 aliases: Mapping[str, str] | None = None,
                 hints: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The keywords to build ``store`` with: the URL's settings (every key checked as
    :func:`split_query` and :func:`typed_settings` do), overridden by those given in code
    (:func:`constructor_keywords`)."""
    settings = constructor_settings(store, aliases)
    raw = split_query(scheme, query, settings, hints=hints)
    return constructor_keywords(store, scheme, typed_settings(scheme, raw, settings), kw)


def check_range(name: str, value: float, low: float, high: float) -> None:
    """A constructor's range check, as the ``ValueError`` :func:`refusing_bad_values` turns
    into ``invalid_request`` naming the setting (a value a driver would overflow on, such as
    a busy timeout past a C ``int``, otherwise failed later as an internal error)."""
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(f"{name} must be between {low!r} and {high!r}, got {value!r}")


@contextmanager
def refusing_bad_values(scheme: str, keys: Iterable[str]) -> Iterator[None]:
    """Turn a constructor's ``ValueError`` about a setting the URL gave into
    ``invalid_request`` (some constructors check their ranges with ``ValueError``)."""
    named = tuple(keys)
    try:
        yield
    except ValueError as exc:
        if any(k in str(exc) for k in named):
            raise InvalidRequest(f"{scheme} URL: {exc}") from exc
        raise
