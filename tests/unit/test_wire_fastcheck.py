"""The compiled pre-check never accepts what the reference validator refuses.

``validate`` returns ``[]`` as soon as ``jsonschema-rs`` accepts a document, so one
acceptance the reference (``jsonschema`` with our ``contentSchema`` extension) would refuse
lets an invalid request through. These tests compare the two on every shipped example and on
mutations of each (every field dropped, replaced by values of every JSON type and by edge
values, an unknown key added), and pin the cases where the pre-check must decline.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from memorywire.errors import InvalidRequest
from memorywire.wire import check, examples, fastcheck, schema_names, validate
from memorywire.wire.validate import reference_issues

pytestmark = pytest.mark.skipif(
    not fastcheck.available(), reason="jsonschema-rs (the 'fast' extra) is not installed"
)

#: Values of every JSON type plus the edges where two validators are most likely to part:
#: empty and long strings, a trailing newline under a ``$``-anchored pattern, bool vs int,
#: 1.0 as an integer, out-of-range and non-finite numbers, huge integers, non-JSON objects.
_VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 0.5, 1.5, -0.5, 2**63, 2**80, float("nan"),
    float("inf"), "", "x", "a\n", "semantic", "procedural", "remember", "a" * 5000,
    "\u00e9t\u00e9", "\U0001f600", [], ["x"], [1], ["x", "x"], [{}], {}, {"x": 1},
    {"type": "string"}, (1, 2), {1, 2}, b"x",
]

_FSM = {
    "name": "door",
    "initial": "closed",
    "states": ["closed", "open"],
    "transitions": [{"trigger": "push", "source": "closed", "dest": "open"}],
}


def _paths(doc: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*at, key)
            yield from _paths(value, (*at, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield (*at, i)
            yield from _paths(value, (*at, i))


def _set(doc: Any, path: tuple[Any, ...], value: Any, *, drop: bool = False) -> Any:
    out = copy.deepcopy(doc)
    node = out
    for part in path[:-1]:
        node = node[part]
    if drop:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def _mutations(doc: Any) -> Iterator[Any]:
    yield doc
    if isinstance(doc, dict):
        yield {**doc, "zz_unknown": 1}
    for path in _paths(doc):
        if isinstance(path[-1], str):
            yield _set(doc, path, None, drop=True)
            yield _set(doc, (*path[:-1], path[-1] + "x"), 1)
        for value in _VALUES:
            yield _set(doc, path, value)


def _corpus() -> Iterator[tuple[str, Any]]:
    for ex in examples():
        for doc in _mutations(ex.document):
            yield ex.kind, doc
    procedural = {"agent_id": "a", "type": "procedural"}
    for content in [json.dumps(_FSM), json.dumps({**_FSM, "initial": 3}), "{", "[]", _FSM,
                    {**_FSM, "initial": 3}]:
        yield "remember", {**procedural, "content": content}


def test_every_acceptance_is_one_the_reference_makes() -> None:
    checked = accepted = 0
    wrong: list[tuple[str, str]] = []
    for kind, doc in _corpus():
        checked += 1
        if fastcheck.accepts(kind, doc):
            accepted += 1
            if reference_issues(kind, doc):
                wrong.append((kind, repr(doc)[:200]))
    assert wrong == []
    # the corpus exercises both answers, and the pre-check does accept the common case
    assert checked > 5000
    assert accepted > 500


def test_the_pre_check_accepts_every_shipped_example_but_fsm_strings() -> None:
    refused = [(e.kind, e.name) for e in examples() if not fastcheck.accepts(e.kind, e.document)]
    fsm_strings = [
        (e.kind, e.name)
        for e in examples()
        if e.kind == "remember"
        and e.document.get("type") == "procedural"
        and isinstance(e.document.get("content"), str)
    ]
    assert fsm_strings
    assert refused == fsm_strings


def test_a_json_string_under_content_schema_is_left_to_the_reference() -> None:
    bad = {"agent_id": "a", "type": "procedural", "content": json.dumps({"name": "door"})}
    good = {"agent_id": "a", "type": "procedural", "content": json.dumps(_FSM)}
    assert not fastcheck.accepts("remember", bad)
    assert not fastcheck.accepts("remember", good)
    assert validate("remember", bad) == reference_issues("remember", bad)
    assert "/content/initial" in [i.path for i in validate("remember", bad)]
    assert validate("remember", good) == []


def test_non_json_values_are_left_to_the_reference() -> None:
    doc = {"agent_id": "a", "type": "semantic", "content": {1, 2}}
    assert not fastcheck.accepts("remember", doc)
    assert validate("remember", doc) == reference_issues("remember", doc) != []


def test_refusals_carry_the_reference_issues() -> None:
    doc = {"agent_id": "", "type": "semantik", "contnet": "x"}
    with pytest.raises(InvalidRequest) as caught:
        check("remember", doc)
    assert [(d.path, d.keyword) for d in caught.value.details] == [
        (i.path, i.keyword) for i in reference_issues("remember", doc)
    ]


def test_turned_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fastcheck.ENV, "0")
    fastcheck._module.cache_clear()
    fastcheck._compiled.cache_clear()
    try:
        assert not fastcheck.available()
        doc = {"agent_id": "a", "type": "semantic", "content": "x"}
        assert not fastcheck.accepts("remember", doc)
        assert validate("remember", doc) == []
    finally:
        monkeypatch.delenv(fastcheck.ENV)
        fastcheck._module.cache_clear()
        fastcheck._compiled.cache_clear()
        fastcheck._registry.cache_clear()
    assert fastcheck.available()


def test_every_schema_compiles_and_every_kind_has_examples() -> None:
    names = schema_names(include_definitions=True)
    assert all(fastcheck._compiled(n) is not None for n in names)
    assert set(names) - {e.kind for e in examples()} == {"common"}
