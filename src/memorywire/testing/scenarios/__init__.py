"""Every conformance scenario, in report order."""

from memorywire.testing.scenarios import (
    duplicates,
    forgetting,
    graph,
    lifecycle,
    read,
    time,
    typed,
    write,
)

__all__ = ["SCENARIOS", "by_name"]

SCENARIOS = [*read.SCENARIOS, *write.SCENARIOS, *lifecycle.SCENARIOS, *graph.SCENARIOS,
             *forgetting.SCENARIOS, *time.SCENARIOS, *duplicates.SCENARIOS,
             *typed.SCENARIOS]


def by_name(name: str) -> object:
    return next(s for s in SCENARIOS if s.name == name)
