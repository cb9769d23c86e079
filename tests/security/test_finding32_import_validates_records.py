"""Finding 32 (high): import skipped the door's checks. A record with ``created_at:
"yesterday"``, ``confidence: 5.0``, ``id: ""`` or a 10,000-character id was accepted with 200,
after which list, recall, forget and erase of that agent answered 500, so the API could not
even clean it up; NUL bytes and 5 MB of content were stored and a repeated id was silently
dropped. Now one bad line refuses the whole dump, naming the line and the field, with the
store unchanged; ``skip_invalid`` (REST) / ``--skip-invalid`` (CLI) imports the rest and
reports what it left out. (Import is REST and CLI only: JSON-RPC and MCP have no import.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memorywire.cli.main import main
from memorywire.core.records import Row
from memorywire.store.base import ListQuery
from tests.security.conftest import Rig
from tests.security.dumps import dump, post_import, row

pytestmark = pytest.mark.anyio

BAD: dict[str, tuple[Row, str]] = {
    "created-at-yesterday": (row("bad", created_at="yesterday"), "/record/created_at"),
    "confidence-5": (row("bad", confidence=5.0), "/record/confidence"),
    "empty-id": (row(""), "/record/id"),
    "10k-id": (row("x" * 10_000), "/record/id"),
    "nul-in-content": (row("bad", content="a\x00b"), "/record/content"),
    "5mb-content": (row("bad", content="y" * (5 << 20)), "/record/content"),
    "empty-content": (row("bad", content=""), "/record/content"),
    "nul-in-metadata-key": (row("bad", metadata={"k\x00": 1}), "/record/metadata"),
    "expires-after-9999": (row("bad", expires_at=2**62), "/record/expires_at"),
    "deleted-after-9999": (row("bad", deleted_at=2**62), "/record/deleted_at"),
    "huge-int-in-metadata": (row("bad", metadata={"n": 2**70}), "/record/metadata/n"),
}


async def _ids(rig: Rig) -> list[str]:
    rows = await rig.gov.list(ListQuery(agent_id="a1", include_archived=True))
    return sorted(r.id for r in rows)


async def _agent_still_served(rig: Rig) -> None:
    """What used to answer 500 after a bad import: list, recall, forget, erase."""
    for op, doc in [("list", {"agent_id": "a1"}),
                    ("recall", {"agent_id": "a1", "query": "fact"}),
                    ("forget", {"agent_id": "a1", "ids": ["good1"]}),
                    ("erase", {"agent_id": "a1"})]:
        r = await rig.http.post(f"/v0/{op}", content=json.dumps(doc),
                                headers={"authorization": f"Bearer {rig.admin}",
                                         "content-type": "application/json"})
        assert r.status_code == 200, (op, r.text)


@pytest.mark.parametrize("case", sorted(BAD))
async def test_one_bad_record_refuses_the_whole_dump_naming_line_and_field(
    rig: Rig, case: str
) -> None:
    bad, field = BAD[case]
    before = await _ids(rig)
    audit = rig.audit_len()
    r = await post_import(rig.http, dump(row("good1"), bad, row("good2")), rig.admin)
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["code"] == "invalid_request"
    assert "dump line 3" in body["message"], body["message"]  # header 1, good1 2, bad 3
    assert any(d["path"].startswith(field) for d in body["details"]), body
    assert await _ids(rig) == before == []
    assert rig.audit_len() == audit
    await _agent_still_served(rig)


async def test_a_repeated_id_refuses_the_dump_instead_of_vanishing(rig: Rig) -> None:
    r = await post_import(rig.http, dump(row("m1", content="first"), row("m2"),
                                         row("m1", content="second")), rig.admin)
    assert r.status_code == 400, r.text
    assert "dump line 4" in r.json()["message"] and "line 2" in r.json()["message"]
    assert r.json()["details"][0]["path"] == "/record/id"
    assert await _ids(rig) == []


async def test_skip_invalid_imports_the_rest_and_reports_each_skipped_line(rig: Rig) -> None:
    lines = [row("good1"), BAD["created-at-yesterday"][0], row("good2"),
             row("good1", content="again"), row("", content="no id")]
    r = await post_import(rig.http, dump(*lines), rig.admin, "?skip_invalid=true")
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["inserted"] == 2
    assert report["skipped_invalid"] == 3
    assert [(s["line"], s["path"]) for s in report["invalid"]] == [
        (3, "/record/created_at"), (5, "/record/id"), (6, "/record/id")]
    assert await _ids(rig) == ["good1", "good2"]
    held = await rig.gov.get("a1", "good1")
    assert held is not None and held.content == "a fact"  # the first of a repeated id
    await _agent_still_served(rig)


async def test_a_dump_with_nan_is_refused_naming_the_line(rig: Rig) -> None:
    body = dump(row("good1"), row("bad", confidence=float("nan")))  # json writes NaN
    assert b'"confidence":NaN' in body
    r = await post_import(rig.http, body, rig.admin)
    assert r.status_code == 400 and "dump line 3" in r.json()["message"], r.text
    assert await _ids(rig) == []


def test_cli_import_refuses_then_skips_with_skip_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(dump(row("good1"), BAD["confidence-5"][0], row("good2")))
    store = ["--store", f"sqlite:///{tmp_path / 'm.db'}", "--embedder", "hashing"]
    assert main(["import", *store, str(path)]) == 1
    err = capsys.readouterr().err
    assert "dump line 3" in err and "/record/confidence" in err, err
    assert not (tmp_path / "m.db").exists() or _cli_ids(tmp_path) == []

    assert main(["import", *store, "--skip-invalid", str(path)]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert report["inserted"] == 2 and report["skipped_invalid"] == 1
    assert report["invalid"][0]["line"] == 3
    assert report["invalid"][0]["path"] == "/record/confidence"
    assert _cli_ids(tmp_path) == ["good1", "good2"]


def _cli_ids(tmp_path: Path) -> list[str]:
    import anyio

    from memorywire.embed.hashing import HashingEmbedder
    from memorywire.store.sqlite import SqliteStore

    async def go() -> list[str]:
        store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder())
        try:
            return sorted(r.id for r in await store.list(ListQuery(agent_id="a1")))
        finally:
            await store.aclose()

    return anyio.run(go)
