"""docs/spec/v0.md covers the whole wire: every operation, schema name and error code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memorywire.errors import ERROR_CODES
from memorywire.store.base import Capability
from memorywire.wire import OPERATIONS, schema, schema_names

SPEC = Path(__file__).resolve().parents[2] / "docs" / "spec" / "v0.md"
TEXT = SPEC.read_text(encoding="utf-8")


@pytest.mark.parametrize("op", OPERATIONS)
def test_every_operation_has_a_section(op: str) -> None:
    assert re.search(rf"^### 4\.\d {op}$", TEXT, re.MULTILINE), op


@pytest.mark.parametrize("name", schema_names(include_definitions=True))
def test_every_schema_name_is_mentioned(name: str) -> None:
    assert f"`{name}`" in TEXT


@pytest.mark.parametrize("code", sorted(ERROR_CODES))
def test_every_error_code_has_its_http_status(code: str) -> None:
    row = re.search(rf"^\| `{code}` \| (\d{{3}}) \|", TEXT, re.MULTILINE)
    assert row is not None, f"no table row for {code}"
    assert int(row.group(1)) == ERROR_CODES[code].http_status


@pytest.mark.parametrize("cap", [c.value for c in Capability])
def test_every_capability_is_named(cap: str) -> None:
    assert f"`{cap}`" in TEXT


@pytest.mark.parametrize("op", OPERATIONS)
def test_every_request_and_response_field_is_documented_in_its_section(op: str) -> None:
    section = re.split(rf"^### 4\.\d {op}$", TEXT, flags=re.MULTILINE)[1].split("\n### ")[0]
    for kind in (op, f"{op}.response"):
        for field in schema(kind)["properties"]:
            assert f"`{field}`" in section, f"{kind}.{field}"


def test_policy_keys_fusion_modes_and_strategies_are_documented() -> None:
    policy = schema("expire")["$defs"]["policy"]["properties"]
    for word in [
        *policy,
        "rrf",
        "max",
        "weighted",
        "keep_canonical",
        "merge_content",
        "keep_highest_confidence",
        "archive",
        "demote",
    ]:
        assert f"`{word}`" in TEXT, word


def test_semantics_are_stated() -> None:
    for phrase in [
        "Soft delete",
        "Hard delete",
        "1 / (60 + rank",
        "1 + 0.1 × 1 / (1 + min_hop_distance)",
        "MCP tools",
        "not an alternative to the Model Context Protocol",
        "0.5",
    ]:
        assert phrase in TEXT, phrase
