"""What pytransitions understands, sorted into what we accept and what we refuse.

pytransitions resolves callback *strings* by attribute lookup on the model and, failing that,
by ``__import__`` of the dotted path, so every callback key is a code-execution vector when
the machine comes from untrusted JSON. We accept keys from an allow-list only; the refused
names below exist so error messages can say *why* a key is refused and so
``tests/unit/test_procedural_introspection.py`` can notice a new transitions release that
adds a parameter nobody here has classified yet.
"""

from __future__ import annotations

__all__ = [
    "CALLBACK_KEYS",
    "GUARD_KEYS",
    "KNOWN_MACHINE_PARAMETERS",
    "KNOWN_STATE_PARAMETERS",
    "KNOWN_TRANSITION_PARAMETERS",
    "MACHINE_INSTANCE_ATTRIBUTES",
    "MACHINE_KEYS",
    "RESERVED_TRIGGER_PREFIXES",
    "TRANSITION_KEYS",
]

#: Keys a stored procedure may carry at the top level.
MACHINE_KEYS: tuple[str, ...] = ("name", "initial", "states", "transitions", "current", "metadata")
#: Keys every transition may carry.
TRANSITION_KEYS: tuple[str, ...] = ("trigger", "source", "dest")
#: Keys a transition may carry only when each name is a registered safe predicate.
GUARD_KEYS: tuple[str, ...] = ("conditions", "unless")

#: Every callback-like key of pytransitions core and its extensions (machine, state,
#: transition level). Each one either names code to run or makes the library build objects.
CALLBACK_KEYS: frozenset[str] = frozenset(
    {
        # machine
        "before_state_change",
        "after_state_change",
        "prepare_event",
        "finalize_event",
        "on_exception",
        "on_final",
        # transition
        "before",
        "after",
        "prepare",
        # state (core and extensions.states / nesting / asyncio)
        "on_enter",
        "on_exit",
        "on_timeout",
        "on_failure",
        "volatile",
        "hook",
    }
)

#: Parameters of ``Machine.__init__`` (core and extensions) that are not callbacks; we never
#: pass them from stored data either — the runner sets them itself.
KNOWN_MACHINE_PARAMETERS: frozenset[str] = frozenset(
    {
        "model",
        "states",
        "initial",
        "transitions",
        "send_event",
        "auto_transitions",
        "ordered_transitions",
        "ignore_invalid_triggers",
        "name",
        "queued",
        "model_attribute",
        "model_override",
        # extensions: diagrams, locking, asyncio, nesting
        "title",
        "show_conditions",
        "show_state_attributes",
        "show_auto_transitions",
        "use_pygraphviz",
        "graph_engine",
        "machine_context",
        "markup",
        "auto_transitions_markup",
    }
)

KNOWN_TRANSITION_PARAMETERS: frozenset[str] = frozenset(
    {"trigger", "source", "dest", "conditions", "unless", "label"}
)

KNOWN_STATE_PARAMETERS: frozenset[str] = frozenset(
    {
        "name",
        "final",
        "ignore_invalid_triggers",
        "initial",
        "children",
        "parallel",
        "tags",
        "accepted",
        "timeout",
        "retries",
        "label",
    }
)

#: Attributes a ``Machine`` instance sets on itself; a trigger must never shadow one.
MACHINE_INSTANCE_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "states",
        "events",
        "models",
        "send_event",
        "auto_transitions",
        "ignore_invalid_triggers",
        "name",
        "model_attribute",
        "model_override",
        "trigger",
        "state",
    }
)

#: Attribute families pytransitions adds to a model (``to_<state>``, ``may_<trigger>``,
#: ``is_<state>``) or resolves dynamically (``on_enter_<state>``, ``on_exit_<state>``).
RESERVED_TRIGGER_PREFIXES: tuple[str, ...] = ("to_", "may_", "is_", "on_enter_", "on_exit_")
