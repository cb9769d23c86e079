"""``memorywire upgrade PATH``: a memorywire 0.5 file becomes a store of this version, in place.

For a 0.5 user whose programs and configuration name the file (``sqlite-vec://./mem.db``):
after the upgrade the same URL opens it. The steps, each leaving something whole behind:

1. the file is checked to be a 0.5 database and copied, through SQLite's backup API (so a
   write-ahead log is folded in), to ``PATH.0.5.bak``; an existing backup is never
   overwritten;
2. its memories are imported, exactly as ``memorywire import --from-format memorywire-0.5``
   does, into a new store beside it (``PATH.upgrading``), governed by ``governance_db``
   (``mem.gov.db`` for ``mem.db``; created when missing), so the 0.5 audit log becomes
   history there and staged writes wait in its queue;
3. every imported record is read back from the new store;
4. only then the new file replaces ``PATH`` (one rename). The 0.5 file's ``-wal``/``-shm``
   are removed first: SQLite would otherwise replay the old log into the new file.

A failure before step 4 leaves ``PATH`` as it was (and removes the half-made new store).
Stop every program that has the file open before upgrading it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memorywire.embed.base import Embedder
from memorywire.errors import Conflict, StoreCorrupt
from memorywire.governance.store import GovernedStore
from memorywire.portability.moves import portable, rows_of
from memorywire.portability.mw05 import Mw05Source
from memorywire.portability.plan import FidelityPlan
from memorywire.portability.sources import ForeignCounts, import_foreign
from memorywire.store.portable import OnConflict
from memorywire.store.registry import open_store

__all__ = ["UpgradeReport", "default_governance_db", "upgrade_in_place"]

BACKUP_SUFFIX = ".0.5.bak"
_WORK_SUFFIX = ".upgrading"
_SIDE_FILES = ("-wal", "-shm", "-journal")


@dataclass
class UpgradeReport:
    path: str
    backup: str
    governance_db: str
    plan: FidelityPlan
    counts: ForeignCounts
    verified: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"upgraded": self.path, "backup": self.backup,
                "governance_db": self.governance_db, "inserted": self.counts.inserted,
                "verified": self.verified, "history": self.counts.history,
                "pending": self.counts.pending, "plan": self.plan.to_json()}


def default_governance_db(path: str) -> str:
    """``mem.gov.db`` beside ``mem.db`` (the layout of the default store), else
    ``PATH.gov.db``."""
    p = Path(path)
    return str(p.with_suffix(".gov.db") if p.suffix == ".db" else Path(path + ".gov.db"))


def _remove(path: Path) -> None:
    for f in (path, *(Path(f"{path}{s}") for s in _SIDE_FILES)):
        with contextlib.suppress(FileNotFoundError):
            f.unlink()


def _backup(src: Path, dst: Path) -> None:
    """A consistent single-file copy, the write-ahead log included."""
    source = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    try:
        target = sqlite3.connect(dst)
        try:
            source.backup(target)
            target.execute("PRAGMA journal_mode = DELETE")
        finally:
            target.close()
    finally:
        source.close()


async def upgrade_in_place(path: str, embedder: Embedder, *, governance_db: str | None = None,
                           allow_loss: set[str] | None = None) -> UpgradeReport:
    """Convert the 0.5 database at ``path`` (see the module docstring for the steps)."""
    if path.startswith("sqlite-vec://"):
        path = path[len("sqlite-vec://"):]
    target = Path(path)
    source = Mw05Source(path)
    source.check()  # refuses a file that is not a 0.5 database, before anything is written
    backup = Path(path + BACKUP_SUFFIX)
    if backup.exists():
        raise Conflict(f"{backup} exists: an earlier upgrade's backup is never overwritten; "
                       "move it away first")
    work = Path(path + _WORK_SUFFIX)
    gov_db = governance_db or default_governance_db(path)
    _backup(target, backup)
    _remove(work)
    store = open_store(f"sqlite:///{work.resolve()}", embedder=embedder)
    gov = GovernedStore(store, gov_db)
    try:
        plan, counts = await import_foreign(gov, Mw05Source(str(backup)),
                                            on_conflict=OnConflict.FAIL, allow_loss=allow_loss)
        wanted = {(r.agent_id, r.id) for r in (await Mw05Source(str(backup)).read()).rows}
        have = {(r.agent_id, r.id) async for r in rows_of(portable(store))}
        if wanted - have:
            raise StoreCorrupt(f"upgrade of {path}: {len(wanted - have)} records did not read "
                               f"back from the new store; {path} is unchanged")
    except BaseException:
        await gov.aclose()
        _remove(work)
        backup.unlink()
        raise
    await gov.aclose()
    if any(Path(f"{work}{s}").exists() for s in _SIDE_FILES[:1]):
        raise StoreCorrupt(f"upgrade of {path}: the new store's write-ahead log was not "
                           f"folded in on close; {path} is unchanged, the new store is {work}")
    for suffix in _SIDE_FILES:
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").unlink()
    os.replace(work, target)
    return UpgradeReport(str(target), str(backup), gov_db, plan, counts, len(have))
