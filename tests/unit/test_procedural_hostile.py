"""A corpus of hostile FSMs (every one refused) and an audit-hook proof that the accepted
ones neither import, compile, exec nor spawn anything while validated and run."""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from memorywire.errors import InvalidRequest
from memorywire.procedural import (
    MAX_STATES,
    MAX_TRANSITIONS,
    PredicateRegistry,
    ProcedureRunner,
    parse_procedure,
)
from memorywire.procedural.keys import CALLBACK_KEYS, GUARD_KEYS

BASE: dict[str, Any] = {
    "name": "base",
    "initial": "a",
    "states": ["a", "b"],
    "transitions": [{"trigger": "go", "source": "a", "dest": "b"}],
}
PAYLOADS = ("os.system", "subprocess.Popen", "builtins.exec", "__import__", "print")
#: Keys pytransitions or its extensions might accept some day, and plain junk.
FUTURE_KEYS = (
    "callbacks",
    "on_whatever",
    "model",
    "send_event",
    "auto_transitions",
    "ordered_transitions",
    "ignore_invalid_triggers",
    "queued",
    "model_attribute",
    "model_override",
    "name_",
    "label",
    "tags",
    "timeout",
    "children",
    "parallel",
    "final",
    "__class__",
    "",
)


def fsm(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(BASE)
    out.update(changes)
    return out


def edge(**changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"trigger": "go", "source": "a", "dest": "b"}
    out.update(changes)
    return out


def hostile_corpus() -> Iterator[tuple[str, Any]]:
    every_key = sorted(CALLBACK_KEYS | set(FUTURE_KEYS))
    for key in every_key:
        for payload in PAYLOADS[:2]:
            yield f"machine key {key}={payload}", fsm(**{key: payload})
            yield f"transition key {key}={payload}", fsm(transitions=[edge(**{key: payload})])
            yield f"transition key {key}=[{payload}]", fsm(transitions=[edge(**{key: [payload]})])
            state = {"name": "a", key: payload}
            yield f"state dict {key}={payload}", fsm(states=[state, "b"])
    yield "state dict without callbacks", fsm(states=[{"name": "a"}, "b"])
    # guards: nothing is registered by default, and registered-looking names still fail
    for key in GUARD_KEYS:
        for name in [*PAYLOADS, "go", "a", "ok.ok", "ok__x", "x" * 200, "", 1, None]:
            yield f"guard {key}={name!r}", fsm(transitions=[edge(**{key: name})])
            yield f"guard {key}=[{name!r}]", fsm(transitions=[edge(**{key: [name]})])
    # triggers that collide with what pytransitions puts on a model or machine
    for trig in (
        "to_b", "to_a", "trigger", "state", "may_go", "is_a", "add_state", "dispatch",
        "set_state", "get_state", "callbacks", "resolve_callable", "events", "models",
        "model", "on_enter_a", "on_exit_b", "__init__", "__class__", "_process", "os.system",
        "before", "after", "prepare", "conditions", "initial", "states", "transitions",
        "go\n", "gо",  # a Cyrillic 'о'
    ):  # fmt: skip
        yield f"trigger {trig!r}", fsm(transitions=[edge(trigger=trig)])
    # names: dotted, dunder, wildcard, non-string
    for bad in ("a.b", "__init__", "*", "=", "", " a", "a\x00", 1, 1.5, True, None, ["a"]):
        yield f"state {bad!r}", fsm(states=["a", bad, "b"])
        yield f"initial {bad!r}", fsm(initial=bad)
        if bad is not None:  # current: null is allowed (start at initial)
            yield f"current {bad!r}", fsm(current=bad)
        yield f"dest {bad!r}", fsm(transitions=[edge(dest=bad)])
        if bad not in ("*", ["a"]):  # both are sound sources
            yield f"source {bad!r}", fsm(transitions=[edge(source=bad)])
        yield f"trigger {bad!r}", fsm(transitions=[edge(trigger=bad)])
    yield "name with dot", fsm(name="os.path")
    yield "name dunder", fsm(name="__main__")
    yield "name non-string", fsm(name=7)
    # wildcard abuse
    yield "source list holding *", fsm(transitions=[edge(source=["*"])])
    yield "source list mixing *", fsm(transitions=[edge(source=["a", "*"])])
    yield "dest *", fsm(transitions=[edge(dest="*")])
    yield "dest = (reflexive)", fsm(transitions=[edge(dest="=")])
    yield "empty source list", fsm(transitions=[edge(source=[])])
    yield "duplicate source in list", fsm(transitions=[edge(source=["a", "a"])])
    yield "wildcard duplicating an edge", fsm(transitions=[edge(), edge(source="*")])
    yield "same edge twice", fsm(transitions=[edge(), edge(dest="a")])
    yield "internal transition (dest null)", fsm(transitions=[edge(dest=None)])
    # shapes
    yield "transitions as lists", fsm(transitions=[["go", "a", "b"]])
    yield "transitions as object", fsm(transitions={"go": edge()})
    yield "transition as string", fsm(transitions=["go"])
    yield "states as string", fsm(states="a")
    yield "states as object", fsm(states={"a": {}})
    yield "empty states", fsm(states=[])
    yield "metadata as list", fsm(metadata=["x"])
    yield "missing initial", {k: v for k, v in BASE.items() if k != "initial"}
    yield "missing states", {k: v for k, v in BASE.items() if k != "states"}
    yield "top level list", [BASE]
    yield "top level number", 5
    yield "not JSON", "{'name': 'x'}"
    yield "JSON list text", json.dumps([BASE])
    yield "duplicate keys", '{"name":"x","initial":"a","states":["a"],"states":["b"]}'
    yield "deep nesting text", '{"metadata":' + "[" * 100_000 + "]" * 100_000 + "}"
    yield "NaN metadata", fsm(metadata={"x": float("nan")})
    yield "non-JSON metadata", fsm(metadata={"x": {1, 2}})
    # size
    states = [f"s{i}" for i in range(MAX_STATES + 1)]
    yield "too many states", fsm(states=states, initial="s0")
    many = [edge(trigger=f"t{i}") for i in range(MAX_TRANSITIONS + 1)]
    yield "too many transitions", fsm(transitions=many)
    yield "huge metadata", fsm(metadata={"x": "y" * (300 * 1024)})
    yield "huge text", json.dumps(fsm(metadata={"x": "y" * (300 * 1024)}))
    yield "long state", fsm(states=["a", "b", "c" * 129])
    yield "long trigger", fsm(transitions=[edge(trigger="t" * 129)])
    yield "long name", fsm(name="n" * 257)


CORPUS = list(hostile_corpus())


@pytest.mark.parametrize(("label", "content"), CORPUS, ids=[label for label, _ in CORPUS])
def test_hostile_fsm_is_refused(label: str, content: Any) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_procedure(content)
    assert info.value.details, label
    assert all(d.path is not None and d.message for d in info.value.details)
    with pytest.raises(InvalidRequest):
        ProcedureRunner(content)
    if isinstance(content, dict):
        try:
            text = json.dumps(content, allow_nan=False)
        except (TypeError, ValueError):
            return
        with pytest.raises(InvalidRequest):
            parse_procedure(text)


def test_corpus_is_large_and_fully_refused() -> None:
    refused = 0
    for _, content in CORPUS:
        try:
            parse_procedure(content)
        except InvalidRequest:
            refused += 1
    assert len(CORPUS) > 300
    assert refused == len(CORPUS)


def test_callback_keys_refused_even_with_a_registry() -> None:
    registry = PredicateRegistry({"ok": lambda meta: True})
    for key in sorted(CALLBACK_KEYS):
        with pytest.raises(InvalidRequest, match="callback"):
            parse_procedure(fsm(transitions=[edge(**{key: "ok"})]), predicates=registry)


# --- audit hook ------------------------------------------------------------------------------

WATCHED = (
    "import",
    "exec",
    "compile",
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "ctypes.dlopen",
    "builtins.input",
)


class _Recorder:
    """Audit hooks cannot be removed, so one recorder lives for the session and only listens
    while ``active`` is set."""

    def __init__(self) -> None:
        self.active = False
        self.events: list[tuple[str, str]] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if self.active and event in WATCHED:
            self.events.append((event, repr(args)[:200]))


_RECORDER: _Recorder | None = None


@pytest.fixture(scope="session")
def audit() -> _Recorder:
    global _RECORDER
    if _RECORDER is None:
        _RECORDER = _Recorder()
        sys.addaudithook(_RECORDER)
    return _RECORDER


def accepted_machines() -> list[tuple[dict[str, Any], list[str]]]:
    book = {
        "name": "book-flight",
        "initial": "searching",
        "states": ["searching", "selecting", "paying", "confirmed", "cancelled"],
        "transitions": [
            {"trigger": "select", "source": "searching", "dest": "selecting"},
            {"trigger": "pay", "source": "selecting", "dest": "paying", "conditions": "ok"},
            {"trigger": "confirm", "source": "paying", "dest": "confirmed", "unless": ["no"]},
            {"trigger": "cancel", "source": "*", "dest": "cancelled"},
        ],
        "current": "searching",
        "metadata": {"k": 1},
    }
    n = MAX_STATES
    states = [f"s{i}" for i in range(n)]
    ring = {
        "name": "ring",
        "initial": "s0",
        "states": states,
        "transitions": [
            {"trigger": f"t{j}", "source": states[j % n], "dest": states[(j + 1) % n]}
            for j in range(MAX_TRANSITIONS)
        ],
    }
    return [(book, ["select", "pay", "confirm"]), (ring, ["t0", "t1", "t2", "t3"])]


def test_accepted_machines_run_without_import_exec_or_spawn(audit: _Recorder) -> None:
    def ok(meta: Mapping[str, Any]) -> bool:
        return True

    def no(meta: Mapping[str, Any]) -> bool:
        return False

    registry = PredicateRegistry({"ok": ok, "no": no})
    machines = accepted_machines()
    # Warm-up outside the window: first use may import lazily-loaded library parts.
    for content, _ in machines:
        ProcedureRunner(json.dumps(content), predicates=registry)
    finals = []
    audit.events.clear()
    audit.active = True
    try:
        for content, path in machines:
            for form in (content, json.dumps(content)):
                runner = ProcedureRunner(form, predicates=registry)
                for trig in path:
                    runner.fire(trig)
                runner.available_triggers()
                finals.append(runner.state)
    finally:
        audit.active = False
    assert finals == ["confirmed", "confirmed", "s4", "s4"]
    assert audit.events == []


def test_the_audit_hook_can_fail(audit: _Recorder) -> None:
    """The recorder really sees the events it guards against."""
    audit.events.clear()
    audit.active = True
    try:
        compile("1", "<probe>", "eval")
        sys.modules.pop("colorsys", None)
        import colorsys  # noqa: F401
    finally:
        audit.active = False
    seen = {event for event, _ in audit.events}
    assert {"compile", "import"} <= seen
