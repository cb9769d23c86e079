"""What the CLI prints for people: full ids, ISO dates, tables that fit, no traceback on a pipe."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from memorywire.cli import main
from memorywire.cli.render import age, iso, render

ID = "01a23276-9e08-73f7-8a26-ed74913497fd"
CREATED = 1_796_142_964_233


def _approval(**kw: object) -> dict[str, object]:
    return {"id": ID, "status": "pending", "operation": "remember", "agent_id": "travel-bot",
            "request": {"type": "semantic", "content": "The user is allergic to peanuts. " * 5},
            "created_at": CREATED, "content_hash": "ab" * 32, **kw}


def _rendered(command: str, doc: object, width: int) -> str:
    out = io.StringIO()
    render(command, doc, Console(file=out, width=width, color_system=None))
    return out.getvalue()


def test_iso_and_age() -> None:
    assert iso(CREATED) == "2026-12-01T16:36:04Z"
    assert age(CREATED, CREATED + 125_000) == "2 min ago"
    assert age(CREATED, CREATED + 3 * 86_400_000) == "3 d ago"


@pytest.mark.parametrize("width", [40, 60, 80, 120, 200])
def test_approvals_show_the_full_id_agent_type_excerpt_and_age_at_any_width(width: int) -> None:
    """Regression: 13 JSON columns cut the id needed to approve."""
    text = _rendered("approvals", {"approvals": [_approval()]}, width)
    assert ID in text
    assert "travel-bot" in text and "semantic" in text and "allergic" in text
    assert "ago" in text
    assert str(CREATED) not in text and "abab" not in text
    assert max(len(line) for line in text.splitlines()) <= max(width, len(ID) + 2)


def test_token_table_fits_and_names_the_columns_it_left_out() -> None:
    rows = [{"id": ID, "name": "reviewer-one", "role": "reviewer", "agent_ids": None,
             "user_ids": None, "provenance": None, "created_at": CREATED, "revoked_at": None}]
    text = _rendered("token", {"tokens": rows}, 80)
    assert ID in text and max(len(line) for line in text.splitlines()) <= 80
    assert "not shown here" in text
    wide = _rendered("token", {"tokens": rows}, 200)
    assert "2026-12-01T16:36:04Z" in wide and str(CREATED) not in wide


def test_a_single_document_shows_dates_as_iso() -> None:
    text = _rendered("remember", {"id": ID, "stored_at": CREATED, "stores": ["sqlite"]}, 100)
    assert "2026-12-01T16:36:04Z" in text and ID in text


def test_json_keeps_the_wire_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--store", "memory://", "--embedder", "hashing"]
    assert main(["remember", *base, "-a", "A", "hello", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert isinstance(doc["stored_at"], int)


def test_closed_pipe_ends_quietly() -> None:
    """Regression: ``--json | head`` ended in a BrokenPipeError traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memorywire.cli", "schema", "remember"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first byte is written
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert proc.returncode == 141
