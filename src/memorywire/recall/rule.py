"""What a ranking rule is: the interface the recall plan runs every rule through.

A rule re-orders the hits a store's search returned (it never adds one, drops one or changes
a score) and may ask the search for a deeper pool first. The plan knows rules only through
this interface and the one ordered list of ``recall.rules``, so a new rule is one module, one
line in that list and its tests; the plan and the stores do not change.

:class:`RecallContext` is one recall as the rules see it: the request, the time it is judged
at and the store's :class:`~memorywire.recall.settings.RecallSettings`, plus a memo in which a
rule keeps what it derives from the question once per recall (the names it writes, the times
it names), so two rules that read the same thing (both subject rules read the names) derive it
once and the plan never has to know about it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from memorywire.core.timeline import HitT, HitView
from memorywire.recall.settings import RecallSettings
from memorywire.wire.models import RecallRequest

__all__ = ["RankingRule", "RecallContext"]

T = TypeVar("T")


@dataclass(frozen=True)
class RecallContext:
    """One recall as its rules see it; built by the plan once per recall."""

    req: RecallRequest
    #: The instant the recall is judged at (the store's clock).
    now: int
    settings: RecallSettings
    _memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def derived(self, key: str, make: Callable[[], T]) -> T:
        """``make()``, computed on the first call with ``key`` in this recall and then kept
        (a rule's derivation from the question, shared by the rules that read it)."""
        if key not in self._memo:
            self._memo[key] = make()
        value: T = self._memo[key]
        return value


class RankingRule(Protocol):
    """One re-ranking rule of the recall plan.

    ``name``: the rule's module name, for docs and errors. ``settings``: the
    :class:`RecallSettings` fields it reads (0 turns each off; a store that passes none gets
    them all at 0). :meth:`pool` says how deep the search must go for the rule to work;
    :meth:`apply` re-orders the hits.
    """

    @property
    def name(self) -> str: ...

    @property
    def settings(self) -> tuple[str, ...]: ...

    def pool(self, context: RecallContext, found: Sequence[HitView] | None, asked: int) -> int:
        """How many hits the rule needs the search to return: before the first search
        (``found`` is ``None``, ``asked`` the request's ``k``), and once after it (``found``:
        the hits a search for ``asked`` returned). The plan asks for the deepest any rule
        needs when that is more than ``asked``; 0 needs nothing more."""
        ...

    def apply(self, hits: Sequence[HitT], context: RecallContext) -> list[HitT]:
        """``hits`` (best first) in the rule's order: the same hits, scores untouched."""
        ...
