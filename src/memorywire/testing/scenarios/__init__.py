"""Every conformance scenario, in report order."""

from memorywire.testing.scenarios import graph, lifecycle, read, time, write

__all__ = ["SCENARIOS", "by_name"]

SCENARIOS = [*read.SCENARIOS, *write.SCENARIOS, *lifecycle.SCENARIOS, *graph.SCENARIOS,
             *time.SCENARIOS]


def by_name(name: str) -> object:
    return next(s for s in SCENARIOS if s.name == name)
