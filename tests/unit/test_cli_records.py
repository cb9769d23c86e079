"""``memorywire get|list|update|history|erase`` end to end through ``memorywire.cli.main``,
on a SQLite file so that each command opens the store afresh, as separate runs do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memorywire.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def base(tmp_path: Path) -> list[str]:
    return ["--store", f"sqlite:///{tmp_path / 'mem.db'}", "--embedder", "hashing",
            "--governance-db", str(tmp_path / "gov.db"), "-a", "A"]


def test_get_list_update_history_erase(base: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    ids = [
        _run(capsys, "remember", *base, f"fact {i}", "-u", "carol" if i < 2 else "dave",
             "--json")["id"]
        for i in range(3)
    ]
    got = _run(capsys, "get", *base, ids[0], "--json")
    assert got["memory"]["content"] == "fact 0"
    page = _run(capsys, "list", *base, "--limit", "2", "--json")
    assert len(page["memories"]) == 2 and page["next_cursor"]
    rest = _run(capsys, "list", *base, "--cursor", page["next_cursor"], "--json")
    assert rest["next_cursor"] is None
    every = _run(capsys, "list", *base, "--limit", "1", "--all", "--json")
    assert sorted(m["id"] for m in every["memories"]) == sorted(ids)
    changed = _run(capsys, "update", *base, ids[0], "--content", "fact zero",
                   "--reason", "typo", "--json")
    assert changed["memory"]["content"] == "fact zero"
    hist = _run(capsys, "history", *base, ids[0], "--json")
    assert [r["operation"] for r in hist["revisions"]][-1] == "update"
    assert hist["revisions"][-1]["reason"] == "typo"

    assert main(["erase", *base, "-u", "carol"]) == 2
    assert "--yes" in capsys.readouterr().err
    erased = _run(capsys, "erase", *base, "-u", "carol", "--yes", "--json")
    assert sorted(erased["erased_ids"]) == sorted(ids[:2])
    left = _run(capsys, "list", *base, "--json")
    assert [m["id"] for m in left["memories"]] == [ids[2]]
    assert main(["get", *base, ids[0]]) == 1
    assert "not_found" in capsys.readouterr().err


def test_tables_for_people(base: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    mid = _run(capsys, "remember", *base, "Carol is vegetarian", "--json")["id"]
    assert main(["list", *base]) == 0
    assert "Carol is vegetarian" in capsys.readouterr().out
    assert main(["history", *base, mid]) == 0
    assert "remember" in capsys.readouterr().out


def test_history_without_governance_names_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = ["--store", f"sqlite:///{tmp_path / 'm.db'}", "--embedder", "hashing", "-a", "A"]
    mid = _run(capsys, "remember", *plain, "x", "--json")["id"]
    assert main(["history", *plain, mid]) == 1
    assert "capability_missing" in capsys.readouterr().err


def test_update_supersedes(base: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    old = _run(capsys, "remember", *base, "Carol lives in Lisbon", "--json")["id"]
    new = _run(capsys, "remember", *base, "Carol lives in Porto", "--json")["id"]
    out = _run(capsys, "update", *base, new, "--supersedes", old, "--json")
    assert {"id": old, "type": "supersedes"} in out["memory"]["links"]
    shown = _run(capsys, "get", *base, old, "--json")
    assert shown["memory"]["metadata"]["_validity"]["superseded_by"] == new
