"""``--from-format``: which reader opens which kind of foreign data.

The readers live in modules of their own because each may reach its vendor's library (mem0,
Cognee through the backend that loads it, Letta over HTTP); this registry is the one place
that knows them all, imported by the CLI. The reading and writing rules are in
:mod:`memorywire.portability.sources`.
"""

from __future__ import annotations

from collections.abc import Callable

from memorywire.errors import InvalidRequest
from memorywire.portability.sources import ForeignData, ForeignSource, import_foreign

__all__ = ["FORMATS", "ForeignData", "ForeignSource", "import_foreign", "open_foreign"]


def _mw05(location: str, agent: str | None) -> ForeignSource:
    from memorywire.portability.mw05 import Mw05Source

    if agent is not None:
        raise InvalidRequest("--agent does not apply to memorywire-0.5 files "
                             "(every row names its agent)")
    return Mw05Source(location)


def _mem0(location: str, agent: str | None) -> ForeignSource:
    from memorywire.portability.mem0_native import Mem0NativeSource

    return Mem0NativeSource(location, default_agent=agent)


def _letta(location: str, agent: str | None) -> ForeignSource:
    from memorywire.portability.letta_native import LettaNativeSource

    return LettaNativeSource(location, agent=agent)


def _cognee(location: str, agent: str | None) -> ForeignSource:
    from memorywire.portability.cognee_native import CogneeNativeSource

    return CogneeNativeSource(location, agent=agent)


#: ``--from-format`` name -> opener ``(location, --agent) -> source``.
FORMATS: dict[str, Callable[[str, str | None], ForeignSource]] = {
    "memorywire-0.5": _mw05,
    "mem0": _mem0,
    "letta": _letta,
    "cognee": _cognee,
}


def open_foreign(fmt: str, location: str, agent: str | None = None) -> ForeignSource:
    try:
        opener = FORMATS[fmt]
    except KeyError:
        raise InvalidRequest(f"unknown --from-format {fmt!r}; known: "
                             f"memorywire-export, {', '.join(FORMATS)}") from None
    return opener(location, agent)
