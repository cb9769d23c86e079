"""Notice a transitions release that adds a callback-like parameter we never classified.

Our validator accepts keys from an allow-list, so a new key is refused anyway; this test keeps
the *named* lists (used in error messages and the hostile corpus) complete.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from transitions import Machine, State, Transition
from transitions.extensions import HierarchicalMachine
from transitions.extensions.nesting import NestedState
from transitions.extensions.states import Error, Tags, Timeout, Volatile

from memorywire.procedural.keys import (
    CALLBACK_KEYS,
    GUARD_KEYS,
    KNOWN_MACHINE_PARAMETERS,
    KNOWN_STATE_PARAMETERS,
    KNOWN_TRANSITION_PARAMETERS,
)

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def params(fn: Callable[..., Any]) -> set[str]:
    sig = inspect.signature(fn)
    return {n for n, p in sig.parameters.items() if n != "self" and p.kind not in _VARIADIC}


KNOWN = CALLBACK_KEYS | set(GUARD_KEYS)


@pytest.mark.parametrize(
    ("fn", "harmless"),
    [
        (Machine.__init__, KNOWN_MACHINE_PARAMETERS),
        (HierarchicalMachine.__init__, KNOWN_MACHINE_PARAMETERS),
        (Machine.add_transition, KNOWN_TRANSITION_PARAMETERS),
        (Transition.__init__, KNOWN_TRANSITION_PARAMETERS),
        (State.__init__, KNOWN_STATE_PARAMETERS),
        (NestedState.__init__, KNOWN_STATE_PARAMETERS),
    ],
    ids=["Machine", "HierarchicalMachine", "add_transition", "Transition", "State", "NestedState"],
)
def test_every_parameter_is_classified(fn: Callable[..., Any], harmless: frozenset[str]) -> None:
    unknown = params(fn) - KNOWN - harmless
    assert not unknown, f"new transitions parameter(s) to classify in procedural/keys.py: {unknown}"


def test_dynamic_callback_families_are_named() -> None:
    families: set[str] = set()
    for cls in (State, Transition, NestedState, Timeout, Tags, Error, Volatile):
        families.update(getattr(cls, "dynamic_methods", []))
    assert families <= CALLBACK_KEYS, families - CALLBACK_KEYS


def test_machine_callback_properties_are_named() -> None:
    props = {n for n, v in vars(Machine).items() if isinstance(v, property)}
    callbackish = {
        n for n in props if n.startswith(("on_", "before", "after", "prepare", "finalize"))
    }
    assert callbackish <= CALLBACK_KEYS, callbackish - CALLBACK_KEYS
    assert params(Machine.callbacks) == {"funcs", "event_data"}


def test_extension_state_kwargs_are_named() -> None:
    """Extension states pop their options out of **kwargs; read them from the source."""
    popped: set[str] = set()
    for cls in (Timeout, Tags, Error, Volatile):
        src = inspect.getsource(cls.__init__)
        for chunk in src.split("kwargs.pop(")[1:]:
            popped.add(chunk.split(",")[0].split(")")[0].strip("'\" "))
    assert popped, "could not read extension state options"
    assert popped <= KNOWN | KNOWN_STATE_PARAMETERS, popped - KNOWN - KNOWN_STATE_PARAMETERS
