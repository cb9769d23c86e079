"""Parsing, precise errors, round trips and replay of procedural FSMs."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memorywire.procedural as procedural
from memorywire.errors import Conflict, InvalidRequest, PayloadTooLarge
from memorywire.procedural import (
    MAX_STATES,
    MAX_TRANSITIONS,
    PredicateRegistry,
    Procedure,
    ProcedureRunner,
    parse_procedure,
    procedure_to_dict,
    procedure_to_json,
)

BOOK_FLIGHT: dict[str, Any] = {
    "name": "book-flight",
    "initial": "searching",
    "states": ["searching", "selecting", "paying", "confirmed", "cancelled"],
    "transitions": [
        {"trigger": "select", "source": "searching", "dest": "selecting"},
        {"trigger": "back", "source": ["selecting", "paying"], "dest": "searching"},
        {"trigger": "pay", "source": "selecting", "dest": "paying"},
        {"trigger": "confirm", "source": "paying", "dest": "confirmed"},
        {"trigger": "cancel", "source": "*", "dest": "cancelled"},
    ],
    "current": "searching",
    "metadata": {"owner": "travel-agent"},
}


def book_flight(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(BOOK_FLIGHT)
    out.update(changes)
    return out


def details_of(content: Any, **kw: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidRequest) as info:
        parse_procedure(content, **kw)
    return [(d.path, d.keyword) for d in info.value.details]


def test_all_names_exported() -> None:
    for name in procedural.__all__:
        assert hasattr(procedural, name), name


def test_string_and_object_forms_give_the_same_procedure() -> None:
    from_text = parse_procedure(json.dumps(BOOK_FLIGHT))
    from_obj = parse_procedure(BOOK_FLIGHT)
    assert from_text == from_obj
    assert isinstance(from_obj, Procedure)


def test_round_trip_is_lossless_in_both_forms() -> None:
    p = parse_procedure(BOOK_FLIGHT)
    assert procedure_to_dict(p) == BOOK_FLIGHT
    assert json.loads(procedure_to_json(p)) == BOOK_FLIGHT
    assert parse_procedure(procedure_to_json(p)) == p
    minimal = {"name": "m", "initial": "a", "states": ["a"]}
    assert procedure_to_dict(parse_procedure(minimal)) == minimal
    with_null = {"name": "m", "initial": "a", "states": ["a"], "current": None, "metadata": None}
    assert procedure_to_dict(parse_procedure(with_null)) == with_null


names = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda s: not s.startswith(("to_", "may_", "is_", "on_")) and "__" not in s
)


@st.composite
def procedures(draw: st.DrawFn) -> dict[str, Any]:
    states = draw(st.lists(names, min_size=1, max_size=8, unique=True))
    # "t" + "o_x" would be the reserved "to_x": the generator must not produce refused names.
    triggers = draw(st.lists(names.map(lambda s: "t" + s).filter(lambda s: not s.startswith("to_")),
                             min_size=0, max_size=6, unique=True))
    transitions = []
    for trig in triggers:
        src = draw(st.one_of(st.just("*"), st.sampled_from(states)))
        transitions.append({"trigger": trig, "source": src, "dest": draw(st.sampled_from(states))})
    out: dict[str, Any] = {
        "name": draw(names),
        "initial": draw(st.sampled_from(states)),
        "states": states,
        "transitions": transitions,
    }
    if draw(st.booleans()):
        out["current"] = draw(st.sampled_from(states))
    if draw(st.booleans()):
        out["metadata"] = draw(st.dictionaries(names, st.integers() | st.text(max_size=5)))
    return out


@settings(max_examples=60, deadline=None)
@given(procedures())
def test_round_trip_property(data: dict[str, Any]) -> None:
    p = parse_procedure(json.dumps(data))
    assert procedure_to_dict(p) == data
    assert parse_procedure(procedure_to_json(p)) == p


@pytest.mark.parametrize(
    ("content", "path", "keyword"),
    [
        (book_flight(initial="boarding"), "/initial", "enum"),
        (book_flight(current="boarding"), "/current", "enum"),
        (book_flight(states=["a", "a"], initial="a", current="a"), "/states/1", "uniqueItems"),
        (book_flight(states=[]), "/states", "type"),
        (book_flight(name="book.flight"), "/name", "pattern"),
        (book_flight(name="__class__"), "/name", "pattern"),
        ({"initial": "a", "states": ["a"]}, "/name", "required"),
        (book_flight(metadata=[1]), "/metadata", "type"),
        (book_flight(on_final="os.system"), "/on_final", "additionalProperties"),
        (
            book_flight(transitions=[{"trigger": "go", "source": "searching", "dest": "nowhere"}]),
            "/transitions/0/dest",
            "enum",
        ),
        (
            book_flight(
                transitions=[{"trigger": "go", "source": ["searching", "x"], "dest": "paying"}]
            ),
            "/transitions/0/source/1",
            "enum",
        ),
        (
            book_flight(
                transitions=[
                    {"trigger": "go", "source": "paying", "dest": "confirmed"},
                    {"trigger": "go", "source": "*", "dest": "cancelled"},
                ]
            ),
            "/transitions/1",
            "uniqueItems",
        ),
        (
            book_flight(transitions=[{"trigger": "go", "source": "paying"}]),
            "/transitions/0/dest",
            "required",
        ),
        (
            book_flight(transitions=[{"trigger": "may_go", "source": "paying", "dest": "paying"}]),
            "/transitions/0/trigger",
            "pattern",
        ),
        (
            book_flight(transitions=[{"trigger": "go", "source": "a/b", "dest": "paying"}]),
            "/transitions/0/source",
            "type",
        ),
    ],
)
def test_errors_name_the_offending_path(content: Any, path: str, keyword: str) -> None:
    assert (path, keyword) in details_of(content)
    if isinstance(content, dict):
        assert (path, keyword) in details_of(json.dumps(content))


def test_every_problem_is_reported_at_once() -> None:
    bad = book_flight(
        initial="nowhere",
        transitions=[{"trigger": "go", "source": "paying", "dest": "paying", "after": "x"}],
        before_state_change="x",
    )
    found = details_of(bad)
    assert ("/initial", "enum") in found
    assert ("/transitions/0/after", "additionalProperties") in found
    assert ("/before_state_change", "additionalProperties") in found


def test_size_limits() -> None:
    states = [f"s{i}" for i in range(MAX_STATES)]
    edges = [
        {"trigger": f"t{j}", "source": states[j % MAX_STATES], "dest": states[0]}
        for j in range(MAX_TRANSITIONS)
    ]
    at_limit = {"name": "big", "initial": "s0", "states": states, "transitions": edges}
    runner = ProcedureRunner(at_limit)
    assert runner.fire("t0") == "s0"
    assert ("/states", "maxItems") in details_of(dict(at_limit, states=[*states, "extra"]))
    over = dict(at_limit, transitions=[*edges, {"trigger": "x", "source": "s0", "dest": "s0"}])
    assert ("/transitions", "maxItems") in details_of(over)
    assert ("/states/0", "type") in details_of(dict(at_limit, states=["s" * 129, *states[1:]]))
    with pytest.raises(PayloadTooLarge):
        parse_procedure(dict(at_limit, metadata={"blob": "x" * 300_000}))
    with pytest.raises(PayloadTooLarge):
        parse_procedure(json.dumps(dict(at_limit, metadata={"blob": "x" * 300_000})))


def test_duplicate_json_keys_are_refused() -> None:
    text = '{"name": "m", "initial": "a", "initial": "b", "states": ["a", "b"]}'
    assert ("", "uniqueKeys") in details_of(text)


def test_runner_replays_book_flight_to_confirmed() -> None:
    runner = ProcedureRunner(json.dumps(BOOK_FLIGHT))
    assert runner.state == "searching"
    assert runner.available_triggers() == ["select", "cancel"]
    assert runner.fire("select") == "selecting"
    assert runner.available_triggers() == ["back", "pay", "cancel"]
    assert runner.fire("pay") == "paying"
    assert runner.fire("confirm") == "confirmed"
    assert runner.procedure.current == "confirmed"
    assert runner.procedure.transitions == parse_procedure(BOOK_FLIGHT).transitions
    assert runner.start(from_initial=True) == "searching"
    assert runner.start() == "searching"  # the stored current, not the runner's position


def test_runner_starts_from_current_else_initial() -> None:
    assert ProcedureRunner(book_flight(current="paying")).state == "paying"
    no_current = book_flight()
    del no_current["current"]
    assert ProcedureRunner(no_current).state == "searching"


def test_wildcard_cancel_from_every_state() -> None:
    for state in BOOK_FLIGHT["states"]:
        runner = ProcedureRunner(book_flight(current=state))
        assert runner.fire("cancel") == "cancelled"


def test_unavailable_trigger_is_a_clean_conflict_and_state_is_kept() -> None:
    runner = ProcedureRunner(BOOK_FLIGHT)
    with pytest.raises(Conflict, match="not available"):
        runner.fire("confirm")
    assert runner.state == "searching"
    with pytest.raises(InvalidRequest, match="unknown trigger"):
        runner.fire("to_confirmed")
    with pytest.raises(InvalidRequest):
        runner.fire("__class__")
    assert runner.state == "searching"


def test_model_gets_no_auto_transitions() -> None:
    runner = ProcedureRunner(BOOK_FLIGHT)
    model = runner._model
    assert not hasattr(model, "to_confirmed")
    assert callable(model.select)  # type: ignore[attr-defined]


def test_guards_only_from_the_registry() -> None:
    def has_card(meta: Mapping[str, Any]) -> bool:
        return bool(meta.get("card_on_file"))

    registry = PredicateRegistry({"has_card": has_card})
    guarded = book_flight(
        transitions=[
            {"trigger": "pay", "source": "searching", "dest": "paying", "conditions": ["has_card"]},
            {"trigger": "skip", "source": "searching", "dest": "paying", "unless": "has_card"},
        ]
    )
    assert ("/transitions/0/conditions/0", "enum") in details_of(guarded)  # empty registry
    p = parse_procedure(guarded, predicates=registry)
    assert procedure_to_dict(p) == guarded
    refused = ProcedureRunner(guarded, predicates=registry)
    with pytest.raises(Conflict, match="guard"):
        refused.fire("pay")
    assert refused.state == "searching"
    assert refused.fire("skip") == "paying"
    allowed = ProcedureRunner(dict(guarded, metadata={"card_on_file": True}), predicates=registry)
    assert allowed.fire("pay") == "paying"


def test_guard_metadata_is_read_only() -> None:
    def sneaky(meta: Mapping[str, Any]) -> bool:
        meta["x"] = 1  # type: ignore[index]
        return True

    registry = PredicateRegistry({"sneaky": sneaky})
    runner = ProcedureRunner(
        book_flight(
            transitions=[
                {"trigger": "go", "source": "searching", "dest": "paying", "conditions": "sneaky"}
            ]
        ),
        predicates=registry,
    )
    with pytest.raises(TypeError):
        runner.fire("go")


@pytest.mark.parametrize("name", ["os.system", "__import__", "a b", "", "to x"])
def test_registry_refuses_unsafe_names(name: str) -> None:
    with pytest.raises(InvalidRequest):
        PredicateRegistry({name: lambda meta: True})


def test_runner_revalidates_a_hand_built_procedure() -> None:
    p = Procedure.model_construct(
        name="x", initial="a", states=["a"], transitions=[], current=None, metadata=None
    )
    p.states.append("a.b")
    with pytest.raises(InvalidRequest):
        ProcedureRunner(p)
