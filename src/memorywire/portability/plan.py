"""The fidelity plan: per record field, kept / transformed / lost, with counts, before writing.

It is computed from what the target declares it keeps (``PortableStore.kept_fields``) and a
scan of the records to move (:class:`FieldScan`): a field the target cannot keep is *lost*
for the records that carry a value in it, and *kept* (nothing to lose) when none does. A new
record field needs nothing here (fields are found by introspection); a new way of carrying a
field differently goes in :data:`TRANSFORMS`, one entry.

Beside the record fields, a plan may carry *extras*: what governance holds about the records
(``history``, ``pending``), kept only by a governed target.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from memorywire.core.records import Row
from memorywire.errors import InvalidRequest

__all__ = ["EXTRAS", "TRANSFORMS", "FidelityPlan", "FieldScan", "plan_fidelity"]

#: field -> how a target that does not keep it natively still carries it (none in v0).
TRANSFORMS: dict[str, str] = {}

#: Plan entries that are not record fields; a lost one may be allowed like a field.
EXTRAS = ("history", "pending")

_DEFAULTS: dict[str, Any] = {f.name: (None if f.default is MISSING else f.default)
                             for f in fields(Row)}


def _carries(name: str, value: Any) -> bool:
    """Whether a row holds something in this field that a target could lose."""
    if value is None or value == {}:
        return False
    return value != _DEFAULTS[name] or _DEFAULTS[name] is None


@dataclass
class FieldScan:
    """How many scanned rows carry a value in each field."""

    rows: int = 0
    carrying: dict[str, int] = field(default_factory=lambda: {n: 0 for n in _DEFAULTS})
    #: The agents seen (verification reads agent by agent).
    agents: set[str] = field(default_factory=set)

    def add(self, row: Row) -> None:
        self.rows += 1
        self.agents.add(row.agent_id)
        for name in _DEFAULTS:
            if _carries(name, getattr(row, name)):
                self.carrying[name] += 1


@dataclass(frozen=True)
class FieldFate:
    field: str
    fate: str  # kept | transformed | lost
    records: int
    how: str = ""


@dataclass(frozen=True)
class FidelityPlan:
    source: str
    target: str
    rows: int
    fields: tuple[FieldFate, ...]

    @property
    def lost(self) -> list[str]:
        return [f.field for f in self.fields if f.fate == "lost"]

    def refuse_unless(self, allow_loss: set[str]) -> None:
        """Raise ``InvalidRequest`` naming every lost field ``allow_loss`` does not name."""
        unknown = allow_loss - set(_DEFAULTS) - set(EXTRAS)
        if unknown:
            raise InvalidRequest(f"--allow-loss names unknown fields: {sorted(unknown)}")
        refused = [f for f in self.lost if f not in allow_loss]
        if refused:
            raise InvalidRequest(
                f"the plan loses {', '.join(refused)} in {self.target}; "
                f"pass --allow-loss {' '.join(refused)} to migrate anyway")

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "records": self.rows,
                "fields": [{"field": f.field, "fate": f.fate, "records": f.records,
                            "how": f.how} for f in self.fields]}

    def table(self) -> str:
        lines = [f"fidelity {self.source} -> {self.target}: {self.rows} records",
                 f"{'field':<18}{'fate':<13}records"]
        lines += [f"{f.field:<18}{f.fate:<13}{f.records}" + (f"  ({f.how})" if f.how else "")
                  for f in self.fields]
        return "\n".join(lines)


def plan_fidelity(source: str, target: str, source_kept: frozenset[str],
                  target_kept: frozenset[str], scan: FieldScan,
                  extras: dict[str, tuple[int, bool, str]] | None = None) -> FidelityPlan:
    """Fields the source never had count as carried by no record (nothing to keep or lose).

    ``extras``: name -> (how many carry it, whether the target keeps it, why not)."""
    fates = []
    for name, count in scan.carrying.items():
        carried = count if name in source_kept else 0
        if name in target_kept or carried == 0:
            fates.append(FieldFate(name, "kept", carried))
        elif name in TRANSFORMS:
            fates.append(FieldFate(name, "transformed", carried, TRANSFORMS[name]))
        else:
            fates.append(FieldFate(name, "lost", carried))
    for name, (count, kept, why) in (extras or {}).items():
        fates.append(FieldFate(name, "kept" if kept or count == 0 else "lost", count,
                               "" if kept or count == 0 else why))
    return FidelityPlan(source, target, scan.rows, tuple(fates))
