"""The fidelity plan: per record field, kept / transformed / lost, with counts, before writing.

It is computed from what the target declares it keeps (``PortableStore.kept_fields``) and a
scan of the records to move (:class:`FieldScan`): a field the target cannot keep is *lost*
for the records that carry a value in it, and *kept* (nothing to lose) when none does. A new
record field needs nothing here (fields are found by introspection); a new way of carrying a
field differently goes in :data:`TRANSFORMS`, one entry.

An import from outside (a first-implementation file, a vendor's native data) also names what
the *source* holds that no record field carries (an audit log, mem0's content hash, staged
writes): those are the plan's ``notes``, each kept in another form (*transformed*) or *lost*,
and a lost one is refused like a lost field unless ``--allow-loss`` names it.

Beside the record fields, a plan may carry *extras*: what governance holds about the records
(``history``, ``pending``), kept only by a governed target.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from memorywire.core.records import Row
from memorywire.errors import InvalidRequest

__all__ = [
    "EXTRAS", "TRANSFORMS", "FidelityPlan", "FieldFate", "FieldScan", "plan_fidelity",
    "source_note",
]

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
    fate: str  # kept | transformed | lost | absent (a source item with nothing in it)
    records: int
    how: str = ""


def source_note(item: str, records: int, fate: str, how: str) -> FieldFate:
    """A source item outside the record fields; ``absent`` when no record has one, so the
    report always lists what a source of this kind can hold."""
    return FieldFate(item, fate if records else "absent", records, how)


@dataclass(frozen=True)
class FidelityPlan:
    source: str
    target: str
    rows: int
    fields: tuple[FieldFate, ...]
    #: What the source holds outside the record fields (imports from outside only).
    notes: tuple[FieldFate, ...] = ()

    @property
    def lost(self) -> list[str]:
        return [f.field for f in self.fields + self.notes if f.fate == "lost"]

    def refuse_unless(self, allow_loss: set[str]) -> None:
        """Raise ``InvalidRequest`` naming every lost field ``allow_loss`` does not name."""
        unknown = allow_loss - set(_DEFAULTS) - set(EXTRAS) - {n.field for n in self.notes}
        if unknown:
            raise InvalidRequest(f"--allow-loss names unknown fields: {sorted(unknown)}")
        refused = [f for f in self.lost if f not in allow_loss]
        if refused:
            raise InvalidRequest(
                f"the plan loses {', '.join(refused)} in {self.target}; "
                f"pass --allow-loss {' '.join(refused)} to migrate anyway")

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "source": self.source, "target": self.target, "records": self.rows,
            "fields": [{"field": f.field, "fate": f.fate, "records": f.records, "how": f.how}
                       for f in self.fields]}
        if self.notes:
            doc["source_items"] = [{"item": n.field, "fate": n.fate, "records": n.records,
                                    "how": n.how} for n in self.notes]
        return doc

    def table(self) -> str:
        lines = [f"fidelity {self.source} -> {self.target}: {self.rows} records",
                 f"{'field':<18}{'fate':<13}records"]
        lines += [f"{f.field:<18}{f.fate:<13}{f.records}" + (f"  ({f.how})" if f.how else "")
                  for f in self.fields]
        if self.notes:
            lines.append(f"{'source item':<18}{'fate':<13}records")
            lines += [f"{n.field:<18}{n.fate:<13}{n.records}  ({n.how})" for n in self.notes]
        return "\n".join(lines)


def plan_fidelity(source: str, target: str, source_kept: frozenset[str],
                  target_kept: frozenset[str], scan: FieldScan,
                  notes: tuple[FieldFate, ...] = (),
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
    return FidelityPlan(source, target, scan.rows, tuple(fates), notes)
