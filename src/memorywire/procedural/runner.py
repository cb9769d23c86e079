"""Replay a validated procedure on a pytransitions ``Machine`` that has no callbacks at all.

The machine only ever receives state names as plain strings and transitions as plain dicts of
``trigger``/``source``/``dest`` (plus guards that are *callables* closed over our own
registry, so pytransitions never resolves a string to code). The model is a fresh, empty
object, so no ``on_enter_<state>`` method can be discovered on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from copy import deepcopy
from types import MappingProxyType
from typing import Any, Protocol

from transitions import Machine, MachineError

from memorywire.core.procedure import (
    EMPTY_PREDICATES,
    Predicate,
    PredicateRegistry,
    parse_procedure,
    procedure_to_dict,
)
from memorywire.core.records import UpdateRequest
from memorywire.errors import Conflict, ErrorDetail, InvalidRequest, NotFound
from memorywire.wire.models import MemoryRecord, MemoryType, Procedure

__all__ = ["ProcedureRunner", "ProcedureStore"]


class ProcedureStore(Protocol):
    """The two store operations a runner needs; every ``MemoryStore`` satisfies it.

    Declared here rather than imported from ``memorywire.store`` so the procedure layer does
    not depend on the storage layer that depends on it.
    """

    async def get(self, agent_id: str, id: str, user_id: str | None = None) -> MemoryRecord | None:
        ...

    async def update(self, req: UpdateRequest) -> MemoryRecord: ...


class _Model:
    """A blank model: pytransitions adds ``state``, ``trigger``, ``may_*`` and ``is_*``."""


def _as_list(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _bind(pred: Predicate, context: Mapping[str, Any]) -> Callable[[], bool]:
    def check() -> bool:
        return bool(pred(context))

    return check


class ProcedureRunner:
    """Walk one procedure from its ``current`` (or ``initial``) state, one trigger at a time."""

    def __init__(
        self,
        procedure: Procedure | str | Mapping[str, Any],
        *,
        predicates: PredicateRegistry = EMPTY_PREDICATES,
    ) -> None:
        # Re-validate even a ready Procedure: a model built by hand skipped our rules.
        self._procedure = parse_procedure(procedure, predicates=predicates)
        p = self._procedure
        context = MappingProxyType(deepcopy(p.metadata or {}))
        edges: list[dict[str, Any]] = []
        for t in p.transitions:
            edge: dict[str, Any] = {"trigger": t.trigger, "source": t.source, "dest": t.dest}
            conditions = [_bind(predicates[n], context) for n in _as_list(t.conditions)]
            unless = [_bind(predicates[n], context) for n in _as_list(t.unless)]
            if conditions:
                edge["conditions"] = conditions
            if unless:
                edge["unless"] = unless
            edges.append(edge)
        self._triggers: tuple[str, ...] = tuple(dict.fromkeys(t.trigger for t in p.transitions))
        self._model = _Model()
        self._machine = Machine(
            model=self._model,
            states=list(p.states),
            initial=p.current or p.initial,
            transitions=edges,
            auto_transitions=False,
            send_event=False,
            ignore_invalid_triggers=False,
            ordered_transitions=False,
            queued=False,
        )

    @classmethod
    async def load(
        cls,
        store: ProcedureStore,
        agent_id: str,
        id: str,
        *,
        user_id: str | None = None,
        predicates: PredicateRegistry = EMPTY_PREDICATES,
    ) -> ProcedureRunner:
        """Rebuild the runner of a stored procedural memory, at its stored ``current`` state."""
        record = await store.get(agent_id, id, user_id)
        if record is None:
            raise NotFound(f"no procedural memory {id!r} for this agent")
        if record.type != MemoryType.PROCEDURAL:
            raise InvalidRequest(
                f"memory {id!r} is {record.type.value}, not procedural",
                [ErrorDetail("/type", "const", "expected 'procedural'")],
            )
        return cls(record.content, predicates=predicates)

    @property
    def state(self) -> str:
        return str(self._model.state)  # type: ignore[attr-defined]

    @property
    def procedure(self) -> Procedure:
        """The procedure with ``current`` set to where the runner stands now."""
        return self._procedure.model_copy(update={"current": self.state}, deep=True)

    def start(self, *, from_initial: bool = False) -> str:
        """(Re)enter the stored ``current`` state, or ``initial`` when asked or when unset."""
        p = self._procedure
        target = p.initial if from_initial else (p.current or p.initial)
        self._machine.set_state(target, model=self._model)
        return self.state

    def available_triggers(self) -> list[str]:
        """Triggers with an edge out of the current state, in declaration order.

        A guarded trigger is listed even when its guard would refuse right now.
        """
        here = set(self._machine.get_triggers(self.state))
        return [t for t in self._triggers if t in here]

    def fire(self, trigger: str) -> str:
        """Take one edge; raise ``InvalidRequest`` for an unknown trigger, ``Conflict`` when
        the trigger has no edge from here or its guard refuses. Returns the new state."""
        if trigger not in self._triggers:
            raise InvalidRequest(
                f"unknown trigger {trigger!r}",
                [ErrorDetail("/trigger", "enum", f"known triggers: {', '.join(self._triggers)}")],
            )
        here = self.state
        if trigger not in self.available_triggers():
            raise Conflict(f"trigger {trigger!r} is not available in state {here!r}")
        try:
            moved = self._machine.events[trigger].trigger(self._model)
        except MachineError as exc:
            raise Conflict(f"trigger {trigger!r} refused in state {here!r}: {exc.value}") from None
        if not moved:
            raise Conflict(f"trigger {trigger!r} refused by its guard in state {here!r}")
        return self.state

    async def persist(
        self, store: ProcedureStore, agent_id: str, memory_id: str, *, user_id: str | None = None
    ) -> MemoryRecord:
        """Write the new ``current`` back onto the same memory (id, scope and provenance stay)."""
        return await store.update(
            UpdateRequest(
                agent_id=agent_id,
                id=memory_id,
                user_id=user_id,
                content=procedure_to_dict(self.procedure),
            )
        )
