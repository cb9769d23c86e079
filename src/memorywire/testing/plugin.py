"""The conformance suite as a pytest plugin: one fixture in, one test per scenario out.

A backend author writes a test module like::

    import pytest
    from mystore import MyStore

    pytest_plugins = ["memorywire.testing.plugin"]   # or -p memorywire.testing.plugin

    @pytest.fixture
    def memorywire_store_factory(tmp_path):
        # keyword arguments embedder= and clock= are passed in; return a fresh empty store
        return lambda **kw: MyStore(tmp_path / f"{uuid.uuid4()}.db", **kw)

Wherever that fixture is defined in a test module, the module also gets one test per
scenario, ``test_memorywire_conformance[<scenario>]``. A scenario is skipped only when the
store does not declare a capability it needs; the skip reason names it.
"""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.testing.harness import Scenario, StoreFactory, run_scenario
from memorywire.testing.scenarios import SCENARIOS

__all__ = ["FACTORY_FIXTURE", "check_scenario"]

FACTORY_FIXTURE = "memorywire_store_factory"


def check_scenario(factory: StoreFactory, scenario: Scenario) -> None:
    """Run one scenario and turn its outcome into a pytest pass, skip or failure."""
    outcome = run_scenario(factory, scenario)
    if outcome.result == "SKIP":
        pytest.skip(f"{scenario.name}: {outcome.reason}")
    if outcome.result == "FAIL":
        pytest.fail(f"{scenario.name}: {outcome.reason}", pytrace=False)


def test_memorywire_conformance(memorywire_store_factory: StoreFactory,
                                memorywire_scenario: Scenario) -> None:
    check_scenario(memorywire_store_factory, memorywire_scenario)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "memorywire_scenario" in metafunc.fixturenames:
        metafunc.parametrize("memorywire_scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: Any) -> Any:
    """A module defining the factory fixture also collects the suite's test function."""
    if name != FACTORY_FIXTURE or not isinstance(collector, pytest.Module):
        return None
    items = list(
        pytest.Function.from_parent(
            collector,
            name=f"test_memorywire_conformance[{s.name}]",
            callobj=_bind(s),
        )
        for s in SCENARIOS
    )
    return items


def _bind(scenario: Scenario) -> Any:
    def test(memorywire_store_factory: StoreFactory) -> None:
        check_scenario(memorywire_store_factory, scenario)

    test.__name__ = f"test_memorywire_conformance_{scenario.name}"
    test.__doc__ = scenario.doc or None
    return test
