"""``recover`` without seeds: one verdict per memory, the first implementation's model.

0.5's ``memorywire recover --agent X`` looked at every memory of the agent and decided:

* **purge** — its ``source`` is not a trusted one (``web_page``, ``tool_result``, a plugin):
  provenance is the strongest signal there is about poison;
* **quarantine** — trusted source, but the content reads like an instruction planted for the
  agent (:mod:`memorywire.governance.directives`): hidden from every read and put before a
  reviewer, who releases it or erases it; never deleted on a guess;
* **expire** — confidence below a threshold (opt-in);
* **keep** — everything else.

One deliberate difference: a memory that records **no source** is of unknown provenance,
which 0.5 treated as untrusted (``"unknown"``) and purged. Nothing written through this
project's CLI, SDK or MCP server carries a source unless the writer or its token gives one,
so that reading would make a bare ``recover --agent X`` delete a user's whole memory (exactly
the danger issue 33 measured). It is kept, and its content is still checked;
``purge_unknown=True`` restores 0.5's reading.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from memorywire.core.directives import Finding
from memorywire.governance.directives import DetectorSet
from memorywire.wire.models import MemoryRecord

__all__ = ["DEFAULT_TRUSTED", "Verdict", "VerdictRules", "parse_trusted"]

#: 0.5's default ``--trusted user,system``.
DEFAULT_TRUSTED = frozenset({"user", "system"})

Verdict = Literal["purge", "quarantine", "expire", "keep"]


def parse_trusted(value: str | Iterable[str] | None) -> frozenset[str]:
    """``"user,system"`` or a list of names; ``None`` is the default."""
    if value is None:
        return DEFAULT_TRUSTED
    parts = value.split(",") if isinstance(value, str) else value
    return frozenset(p.strip() for p in parts if p.strip())


@dataclass(frozen=True)
class VerdictRules:
    trusted: frozenset[str] = DEFAULT_TRUSTED
    #: ``None``: content is not checked (seeded recovery without ``--detectors``).
    detectors: DetectorSet | None = field(default_factory=DetectorSet.of)
    #: ``False`` (``--no-quarantine``): a directive found in a trusted memory is reported but
    #: the memory is kept.
    quarantine: bool = True
    #: Expire memories whose confidence is below this (``None``: never).
    expire_below: float | None = None
    #: Purge memories that record no source (0.5's reading; see the module docstring).
    purge_unknown: bool = False

    def untrusted(self, rec: MemoryRecord) -> bool:
        if rec.source is None:
            return self.purge_unknown
        return rec.source.strip() not in self.trusted

    def finding(self, rec: MemoryRecord) -> Finding | None:
        if self.detectors is None:
            return None
        return self.detectors.inspect(rec.content, rec.type.value)

    def verdict(self, rec: MemoryRecord) -> tuple[Verdict, str]:
        """The verdict on one memory and why, in the order 0.5 applied them."""
        if self.untrusted(rec):
            return "purge", f"untrusted source {rec.source or 'unknown'!r}"
        found = self.finding(rec)
        if found is not None:
            why = (f"trusted source {rec.source or '(none)'!r}, but reads like an instruction "
                   f"for the agent ({', '.join(found.signals)}; score {found.score:.2f})")
            if self.quarantine:
                return "quarantine", why
            return "keep", why + "; quarantine is off"
        if self.expire_below is not None and rec.confidence is not None \
                and rec.confidence < self.expire_below:
            return "expire", f"confidence {rec.confidence:g} below {self.expire_below:g}"
        if rec.source is None:
            return "keep", "no source recorded (provenance unknown); content clean"
        return "keep", "clean"
