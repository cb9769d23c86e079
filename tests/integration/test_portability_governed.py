"""Dumps that carry revision history and pending approvals, imported into governed and
ungoverned targets, and the audit chain exported beside the dump and verified offline."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memorywire.core.clock import FakeClock
from memorywire.core.records import UpdateRequest
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import CapabilityMissing, InvalidRequest
from memorywire.governance.actor import acting_as
from memorywire.governance.auditfile import export_audit, verify_audit_file
from memorywire.governance.store import GovernedStore
from memorywire.portability import DumpReader, export_dump, import_dump, verify_dump
from memorywire.store.portable import OnConflict
from memorywire.store.sqlite import SqliteStore
from memorywire.wire import validate
from memorywire.wire.models import ForgetRequest, MemoryType, RememberRequest
from tests.integration.conftest import Cli

pytestmark = pytest.mark.anyio
def _governed(tmp: Path, name: str, clock: FakeClock) -> GovernedStore:
    inner = SqliteStore(tmp / f"{name}.db", embedder=HashingEmbedder(), clock=clock)
    return GovernedStore(inner, tmp / f"{name}.gov.db", clock=clock)


async def _populate(gov: GovernedStore, clock: FakeClock) -> None:
    """m1 remembered then updated twice, m2 remembered, m3 forgotten, p1 staged."""
    with acting_as("alice"):
        for i in (1, 2, 3):
            clock.advance(1000)
            await gov.remember(RememberRequest(agent_id="a1", id=f"m{i}", type=MemoryType.SEMANTIC,
                                               content=f"fact {i}", user_id="u1"))
        for n in (1, 2):
            clock.advance(1000)
            await gov.update(UpdateRequest(agent_id="a1", id="m1", content=f"fact 1, v{n + 1}",
                                           reason=f"correction {n}"))
        await gov.forget(ForgetRequest(agent_id="a1", ids=["m3"], reason="wrong"))
        clock.advance(1000)
        await gov.remember(RememberRequest(agent_id="a1", id="p1", type=MemoryType.SEMANTIC,
                                           content="needs a reviewer", approval_required=True))


async def _dump(gov: GovernedStore, path: Path, **flags: Any) -> int:
    with open(path, "wb") as out:
        return await export_dump(gov, out, url="sqlite:///src.db", include_forgotten=True,
                                 **flags)


def _history(gov: GovernedStore, memory_id: str) -> list[tuple[str, str]]:
    return [(e["action"], e["actor"]) for e in gov.audit_entries(agent_id="a1",
                                                                  memory_id=memory_id)]


async def test_history_and_pending_travel_between_governed_stores(tmp_path: Path) -> None:
    clock = FakeClock()
    source, target = _governed(tmp_path, "src", clock), _governed(tmp_path, "dst", clock)
    try:
        await _populate(source, clock)
        dump = tmp_path / "d.jsonl"
        assert await _dump(source, dump, include_history=True, include_pending=True) == 3
        assert verify_dump(str(dump)) == 3
        lines = [json.loads(t) for t in dump.read_text(encoding="utf-8").splitlines()]
        for line in lines:
            validate("export/line", line)
        assert lines[0]["history"] is True and lines[0]["pending"] is True
        m1 = next(x for x in lines if x["kind"] == "record" and x["record"]["id"] == "m1")
        source_ops = [r["operation"] for r in m1["history"]]
        assert source_ops.count("update") >= 2 and "remember" in source_ops
        assert [x["pending"]["id"] for x in lines if x["kind"] == "pending"] == ["p1"]
        assert lines[-1]["pending"] == 1

        clock.advance(60_000)
        plan, counts = await import_dump(target, str(dump), on_conflict=OnConflict.SKIP)
        fates = {f.field: f.fate for f in plan.fields}
        assert fates["history"] == fates["pending"] == "kept"
        assert counts.inserted == 3 and counts.pending == 1
        # The target's history of m1: the source's revisions at their original times, then
        # the import itself.
        got = source.audit_entries(agent_id="a1", memory_id="m1")
        restored = [e for e in target.audit_entries(agent_id="a1", memory_id="m1")
                    if "imported" in e["details"]]
        assert [(e["action"], e["actor"]) for e in restored] == [
            (e["action"], e["actor"]) for e in got]
        assert [e["details"]["imported"]["at"] for e in restored] == [e["ts"] for e in got]
        assert "import" in [action for action, _ in _history(target, "m1")]
        # The staged write waits in the target's queue, and approving it there writes it.
        queued = await target.alist_pending()
        assert [q["id"] for q in queued] == ["p1"]
        assert await target.get("a1", "p1") is None
        await target.approve("p1", "reviewer", None)
        assert (await target.get("a1", "p1")) is not None
        # Importing again adds no second copy of the history and stages nothing new.
        before = len(target.audit_entries(agent_id="a1", memory_id="m1"))
        _, again = await import_dump(target, str(dump), on_conflict=OnConflict.SKIP)
        assert again.skipped == 3 and again.history == 0
        assert len(target.audit_entries(agent_id="a1", memory_id="m1")) == before
        assert target.verify()["ok"]
    finally:
        await source.aclose()
        await target.aclose()


async def test_an_ungoverned_target_loses_history_and_pending_only_when_allowed(
        tmp_path: Path) -> None:
    clock = FakeClock()
    source = _governed(tmp_path, "src", clock)
    target = SqliteStore(tmp_path / "plain.db", embedder=HashingEmbedder(), clock=clock)
    try:
        await _populate(source, clock)
        dump = tmp_path / "d.jsonl"
        await _dump(source, dump, include_history=True, include_pending=True)
        with pytest.raises(InvalidRequest) as refused:
            await import_dump(target, str(dump))
        assert "history" in refused.value.message and "pending" in refused.value.message
        assert await target.get("a1", "m1") is None  # nothing written before the refusal
        plan, counts = await import_dump(target, str(dump), allow_loss={"history", "pending"})
        lost = {f.field: f.records for f in plan.fields if f.fate == "lost"}
        assert lost == {"history": 3, "pending": 1}
        assert counts.inserted == 3 and counts.history == counts.pending == 0
    finally:
        await source.aclose()
        await target.aclose()


async def test_history_needs_governance_and_a_changed_history_names_its_line(
        tmp_path: Path) -> None:
    clock = FakeClock()
    plain = SqliteStore(tmp_path / "plain.db", embedder=HashingEmbedder(), clock=clock)
    source = _governed(tmp_path, "src", clock)
    try:
        with pytest.raises(CapabilityMissing, match="include_history"):
            await _dump(plain, tmp_path / "x.jsonl", include_history=True)
        await _populate(source, clock)
        dump = tmp_path / "d.jsonl"
        await _dump(source, dump, include_history=True)
        lines = dump.read_text(encoding="utf-8").splitlines()
        doc = json.loads(lines[2])
        doc["history"][0]["actor"] = "mallory"
        lines[2] = json.dumps(doc)
        dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(InvalidRequest, match="dump line 3: digest mismatch"):
            verify_dump(str(dump))
    finally:
        await plain.aclose()
        await source.aclose()


async def test_a_dump_without_history_is_unchanged_by_the_new_fields(tmp_path: Path) -> None:
    clock = FakeClock()
    source = _governed(tmp_path, "src", clock)
    try:
        await _populate(source, clock)
        governed, bare = tmp_path / "g.jsonl", tmp_path / "b.jsonl"
        await _dump(source, governed)
        with open(bare, "wb") as out:
            await export_dump(source.inner, out, url="sqlite:///src.db", include_forgotten=True)

        def strip(path: Path) -> list[dict[str, Any]]:
            docs = [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines()]
            docs[0].pop("created_at")
            return docs

        assert strip(governed) == strip(bare)
        assert all("history" not in d and d["kind"] != "pending" for d in strip(bare))
    finally:
        await source.aclose()


async def test_audit_file_verifies_offline_and_names_a_tampered_line(tmp_path: Path) -> None:
    clock = FakeClock()
    source = _governed(tmp_path, "src", clock)
    try:
        await _populate(source, clock)
        path = tmp_path / "audit.jsonl"
        with open(path, "wb") as out:
            n = export_audit(source.audit_log, out)
    finally:
        await source.aclose()
    good = verify_audit_file(str(path))
    assert good["ok"] and good["entries"] == n > 5 and good["first_bad_line"] is None
    lines = path.read_text(encoding="utf-8").splitlines()
    edited = json.loads(lines[3])
    edited["actor"] = "mallory"
    bad = [*lines[:3], json.dumps(edited), *lines[4:]]
    path.write_text("\n".join(bad) + "\n", encoding="utf-8")
    report = verify_audit_file(str(path))
    assert not report["ok"] and report["first_bad_line"] == 4
    assert "edited" in report["kinds"]
    # A file cut short (the last entries and the footer gone) is caught by the head it
    # announced, even though the chain it still holds is intact.
    path.write_text("\n".join(lines[:-3]) + "\n", encoding="utf-8")
    cut = verify_audit_file(str(path))
    assert not cut["ok"] and "truncated" in cut["kinds"]


async def test_cli_exports_history_pending_and_audit_and_verifies_offline(
        tmp_path: Path, cli: Cli) -> None:
    clock = FakeClock()
    source = _governed(tmp_path, "src", clock)
    await _populate(source, clock)
    await source.aclose()
    url, gov = f"sqlite:///{tmp_path}/src.db", str(tmp_path / "src.gov.db")
    dump, audit = tmp_path / "d.jsonl", tmp_path / "audit.jsonl"
    no_gov = subprocess.run(cli.args("export", "--store", url, "--include-history"),
                            env=cli.env, capture_output=True, text=True, timeout=120)
    assert no_gov.returncode == 1 and "--governance-db" in no_gov.stderr
    with open(dump, "wb") as out:
        done = subprocess.run(cli.args("export", "--store", url, "--governance-db", gov,
                                       "--include-history", "--include-pending", "--audit",
                                       str(audit)),
                              env=cli.env, stdout=out, stderr=subprocess.PIPE, timeout=120)
    assert done.returncode == 0, done.stderr
    assert verify_dump(str(dump)) == 2  # m3 is forgotten: not exported by default
    verify = cli.args("audit", "verify", "--file", str(audit), hashing=False)
    ok = subprocess.run(verify, env=cli.env, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"], ok.stderr
    exported = subprocess.run(cli.args("audit", "export", "--db", gov, hashing=False),
                              env=cli.env, capture_output=True, timeout=120)
    assert exported.returncode == 0
    assert exported.stdout.splitlines()[1:] == audit.read_bytes().splitlines()[1:]
    lines = audit.read_text(encoding="utf-8").splitlines()
    doc = json.loads(lines[1])
    doc["action"] = "forget"
    audit.write_text("\n".join([lines[0], json.dumps(doc), *lines[2:]]) + "\n",
                     encoding="utf-8")
    bad = subprocess.run(verify, env=cli.env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "line 2" in bad.stderr
    target_gov = tmp_path / "dst.gov.db"
    target = _governed(tmp_path, "dst", clock)  # creates the target's governance database
    await target.aclose()
    imported = subprocess.run(cli.args("import", "--store", f"sqlite:///{tmp_path}/dst.db",
                                       "--governance-db", str(target_gov), str(dump)),
                              env=cli.env, capture_output=True, text=True, timeout=120)
    assert imported.returncode == 0, imported.stderr
    counts = json.loads(imported.stdout)
    assert counts["inserted"] == 2 and counts["pending"] == 1 and counts["history"] > 2


async def test_pending_lines_are_verified_and_a_pair_reader_refuses_history(
        tmp_path: Path) -> None:
    clock = FakeClock()
    source = _governed(tmp_path, "src", clock)
    try:
        await _populate(source, clock)
        dump = tmp_path / "d.jsonl"
        await _dump(source, dump, include_history=True, include_pending=True)
    finally:
        await source.aclose()
    # A reader of (row, vector) pairs would drop the history: it refuses instead.
    with open(dump, "rb") as stream, pytest.raises(InvalidRequest,
                                                   match="dump line 2: carries a history"):
        list(DumpReader(stream))
    lines = dump.read_text(encoding="utf-8").splitlines()
    pending = json.loads(lines[-2])
    assert pending["kind"] == "pending"
    pending["pending"]["request"]["content"] = "approve me instead"
    forged = tmp_path / "forged.jsonl"
    forged.write_text("\n".join([*lines[:-2], json.dumps(pending), lines[-1]]) + "\n",
                      encoding="utf-8")
    with pytest.raises(InvalidRequest, match=f"dump line {len(lines) - 1}: digest mismatch"):
        verify_dump(str(forged))
    dropped = tmp_path / "dropped.jsonl"
    dropped.write_text("\n".join([*lines[:-2], lines[-1]]) + "\n", encoding="utf-8")
    with pytest.raises(InvalidRequest, match="footer counts 1 pending"):
        verify_dump(str(dropped))
