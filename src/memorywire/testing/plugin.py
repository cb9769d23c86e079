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

With ``MEMORYWIRE_CONFORMANCE_REPORT=<path>`` set, the session also writes its conformance
outcomes to that JSON file (see :mod:`memorywire.testing.report`): one cell per scenario,
named after the store's ``name``. A test that errors (in a fixture, say) is a FAIL there too,
with the error's message as the reason.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memorywire.store.base import MemoryStore
from memorywire.testing.harness import Scenario, StoreFactory, run_scenario
from memorywire.testing.report import (
    ENV_COMMAND,
    ENV_REPORT,
    Cell,
    build_report,
    git_commit,
    write_report,
)
from memorywire.testing.scenarios import SCENARIOS

__all__ = ["FACTORY_FIXTURE", "check_scenario"]

FACTORY_FIXTURE = "memorywire_store_factory"
_TEST_PREFIX = "test_memorywire_conformance["
_BACKEND_KEY = "memorywire_backend"
_OUTCOME_KEY = "memorywire_outcome"


def check_scenario(factory: StoreFactory, scenario: Scenario,
                   node: pytest.Item | None = None) -> None:
    """Run one scenario and turn its outcome into a pytest pass, skip or failure.

    With ``node``, the store's name and the outcome are kept on the test's
    ``user_properties`` for the conformance report.
    """
    seen: list[str] = []

    def recording(**kw: Any) -> Any:
        made = factory(**kw)
        if inspect.isawaitable(made):
            return _record_awaited(made, seen)
        seen.append(made.name)
        return made

    outcome = run_scenario(recording if node is not None else factory, scenario)
    if node is not None:
        if seen:
            node.user_properties.append((_BACKEND_KEY, seen[0]))
        node.user_properties.append((_OUTCOME_KEY, (outcome.result, outcome.reason)))
    if outcome.result == "SKIP":
        pytest.skip(f"{scenario.name}: {outcome.reason}")
    if outcome.result == "FAIL":
        pytest.fail(f"{scenario.name}: {outcome.reason}", pytrace=False)


async def _record_awaited(made: Any, seen: list[str]) -> MemoryStore:
    store: MemoryStore = await made
    seen.append(store.name)
    return store


def test_memorywire_conformance(memorywire_store_factory: StoreFactory,
                                memorywire_scenario: Scenario,
                                request: pytest.FixtureRequest) -> None:
    check_scenario(memorywire_store_factory, memorywire_scenario, request.node)


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
    def test(memorywire_store_factory: StoreFactory, request: pytest.FixtureRequest) -> None:
        check_scenario(memorywire_store_factory, scenario, request.node)

    test.__name__ = f"test_memorywire_conformance_{scenario.name}"
    test.__doc__ = scenario.doc or None
    return test


# --- the JSON report ----------------------------------------------------------------------


@dataclass
class _Seen:
    """What one conformance test produced so far (setup, call and teardown reports)."""

    module: str
    scenario: str
    backend: str | None = None
    result: str = "PASS"
    reason: str = ""


def _scenario_of(report: pytest.TestReport) -> tuple[str, str] | None:
    module, sep, name = report.nodeid.rpartition("::")
    if not sep or not name.startswith(_TEST_PREFIX) or not name.endswith("]"):
        return None
    return module, name[len(_TEST_PREFIX):-1]


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (path, line, "Skipped: why")
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message).removeprefix("Failed: ")
    lines = [ln for ln in report.longreprtext.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def _backend_from_module(module: str) -> str:
    stem = Path(module).stem.removeprefix("test_")
    return stem.removesuffix("_conformance") or stem


class _Reporter:
    """Collects every conformance test's outcome; writes them when the session ends."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.seen: dict[str, _Seen] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        where = _scenario_of(report)
        if where is None:
            return
        seen = self.seen.setdefault(report.nodeid, _Seen(*where))
        props: dict[str, Any] = dict(report.user_properties)
        backend = props.get(_BACKEND_KEY)
        if isinstance(backend, str):
            seen.backend = backend
        recorded: tuple[str, str] | None = props.get(_OUTCOME_KEY)
        if seen.result == "FAIL":
            return  # the first failure is the one that explains the rest
        if report.failed:
            seen.result = "FAIL"
            if report.when == "call" and recorded and recorded[0] == "FAIL":
                seen.reason = str(recorded[1])
            else:
                prefix = "" if report.when == "call" else f"error in {report.when}: "
                seen.reason = prefix + _reason(report)
        elif report.skipped:
            seen.result = "SKIP"
            seen.reason = str(recorded[1]) if recorded else _reason(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        target = os.environ.get(ENV_REPORT)
        if not target or not self.seen:
            return  # nothing asked for, or a run that collected no conformance test
        by_module: dict[str, str] = {}
        for s in self.seen.values():
            if s.backend is not None:
                by_module.setdefault(s.module, s.backend)
        cells = [Cell(s.backend or by_module.get(s.module) or _backend_from_module(s.module),
                      s.scenario, s.result, s.reason) for s in self.seen.values()]
        params = self.config.invocation_params
        command = os.environ.get(ENV_COMMAND) or " ".join(["pytest", *params.args])
        path = Path(target)
        if not path.is_absolute():
            path = params.dir / path
        write_report(path, build_report(cells, command=command, commit=git_commit(params.dir)))


_REPORTER = "memorywire-conformance-report"


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin(_REPORTER):
        config.pluginmanager.register(_Reporter(config), _REPORTER)
