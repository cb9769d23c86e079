"""The schema files: valid 2020-12, addressed under the v0 base, loadable by short name."""

from __future__ import annotations

from importlib.resources import files

import pytest
from jsonschema import Draft202012Validator

import memorywire.wire as wire
from memorywire.errors import NotFound
from memorywire.wire import BASE_URI, registry, schema, schema_id, schema_names

OPERATIONS = [
    "remember", "recall", "forget", "merge", "expire", "get", "list", "update", "history", "erase"
]
EXPECTED = {
    *OPERATIONS,
    *(f"{op}.response" for op in OPERATIONS),
    "types/semantic",
    "types/episodic",
    "types/procedural",
    "types/emotional",
    "types/fsm",
    "types/memory",
    "governance/review",
    "governance/decision",
    "export/line",
    "error",
}
ALL = sorted(schema_names(include_definitions=True))


def test_names_are_exactly_the_documented_kinds() -> None:
    assert set(schema_names()) == EXPECTED
    assert set(ALL) == EXPECTED | {"common"}
    assert schema_names()[:2] == ["erase", "erase.response"]


@pytest.mark.parametrize("name", ALL)
def test_schema_is_valid_under_the_2020_12_metaschema(name: str) -> None:
    doc = schema(name)
    Draft202012Validator.check_schema(doc)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("name", ALL)
def test_id_lives_under_the_v0_base(name: str) -> None:
    doc = schema(name)
    path = name if "/" in name or name in ("error", "common") else f"operations/{name}"
    assert doc["$id"] == BASE_URI + path == schema_id(name)
    assert BASE_URI == "https://memorywire.dev/schemas/v0/"


def test_every_reference_resolves_offline() -> None:
    resolver = registry().resolver()

    def refs(node: object) -> list[str]:
        if isinstance(node, dict):
            own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
            return own + [r for v in node.values() for r in refs(v)]
        if isinstance(node, list):
            return [r for v in node for r in refs(v)]
        return []

    for name in ALL:
        for ref in refs(schema(name)):
            target = schema_id(name) + ref if ref.startswith("#") else ref
            assert resolver.lookup(target).contents is not None, (name, ref)


def test_operation_names_accept_the_long_form() -> None:
    assert schema("operations/remember") == schema("remember")


def test_unknown_name_is_not_found() -> None:
    with pytest.raises(NotFound, match="no wire schema named 'rememberr'"):
        schema("rememberr")


def test_returned_schema_is_a_private_copy() -> None:
    schema("remember")["properties"].clear()
    assert "agent_id" in schema("remember")["properties"]


def test_schemas_ship_as_package_data() -> None:
    # hatchling puts every file under src/memorywire into the wheel; the loader reads them
    # through importlib.resources, exactly as an installed wheel would.
    root = files("memorywire.wire").joinpath("schemas", "v0")
    assert root.joinpath("operations", "remember.json").is_file()
    assert root.joinpath("types", "fsm.json").is_file()


@pytest.mark.parametrize(
    ("kind", "invariant"),
    [
        ("remember", lambda s: s["additionalProperties"] is False),
        (
            "recall",
            lambda s: (
                {k: v for k, v in s["properties"]["k"].items() if k != "description"}
                == {"type": "integer", "minimum": 1, "maximum": 1000, "default": 5}
            ),
        ),
        (
            "recall",
            lambda s: (
                (s["properties"]["hops"]["minimum"], s["properties"]["hops"]["maximum"]) == (0, 3)
            ),
        ),
        ("forget", lambda s: s["anyOf"] == [{"required": ["ids"]}, {"required": ["filter"]}]),
        ("forget", lambda s: s["properties"]["filter"]["minProperties"] == 1),
        (
            "expire",
            lambda s: "policy" in s["required"] and s["$defs"]["policy"]["minProperties"] == 1,
        ),
        ("merge", lambda s: s["properties"]["duplicates"]["minItems"] == 1),
        ("remember.response", lambda s: s["additionalProperties"] is False),
        ("recall.response", lambda s: s["additionalProperties"] is False),
        ("recall.response", lambda s: s["$defs"]["hit"]["additionalProperties"] is True),
        ("forget.response", lambda s: s["additionalProperties"] is False),
        ("types/episodic", lambda s: s["additionalProperties"] is True),
    ],
)
def test_invariants_live_in_the_schema(kind: str, invariant: object) -> None:
    assert callable(invariant) and invariant(schema(kind))


def test_public_names() -> None:
    for name in wire.__all__:
        assert hasattr(wire, name), name
