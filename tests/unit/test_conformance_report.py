"""The conformance report: the plugin writes it from a real pytest run, the matrix merges it.

The pytest runs are in-process (``pytester``) over the in-memory store, with one scenario
broken on purpose so PASS, SKIP, FAIL and an erroring fixture all reach the report.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# Imported before pytester snapshots sys.modules (see _warm_modules).
import memorywire.store.memory
import memorywire.testing.plugin
from memorywire.testing.harness import embedder_for_conformance
from memorywire.testing.report import Cell, build_report, load_report, write_report

pytest_plugins = ["pytester"]

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _matrix_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memorywire_bench_conformance_matrix",
                                                  BENCH / "conformance_matrix.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BACKEND_MODULE = '''
import pytest
from memorywire.store.base import Capability
from memorywire.store.memory import InMemoryStore

pytest_plugins = ["memorywire.testing.plugin"]


class Limited(InMemoryStore):
    """No procedural memory declared, and every recall fails."""

    @property
    def capabilities(self):
        return frozenset(c for c in super().capabilities if c is not Capability.PROCEDURAL)

    async def recall(self, req):
        raise RuntimeError("recall is broken on purpose")


@pytest.fixture
def memorywire_store_factory():
    return lambda **kw: Limited(name="limited", **kw)
'''

ERRORING_MODULE = '''
import pytest

pytest_plugins = ["memorywire.testing.plugin"]


@pytest.fixture
def memorywire_store_factory():
    pytest.fail("MEMORYWIRE_FAKE_URL is not set", pytrace=False)
'''


@pytest.fixture(autouse=True)
def _warm_modules() -> None:
    """pytester forgets modules a run imported; numpy and onnxruntime cannot load twice."""
    embedder_for_conformance()
    assert memorywire.store.memory.InMemoryStore


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, source: str,
         name: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    pytester.makepyfile(**{name: source})
    monkeypatch.setenv("MEMORYWIRE_CONFORMANCE_REPORT", "out/conformance-x.json")
    monkeypatch.setenv("MEMORYWIRE_CONFORMANCE_COMMAND", "make test-x")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-W", "error",
                                          "-W", "ignore::pytest.PytestAssertRewriteWarning",
                                          *args)
    path = pytester.path / "out" / "conformance-x.json"
    assert path.exists(), result.stdout.str()
    return result, load_report(path)


def test_plugin_report_has_pass_skip_and_fail_with_reasons(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    k = "protocol or capabilities or procedural_round_trip or hit_shape"
    result, report = _run(pytester, monkeypatch, BACKEND_MODULE, "test_limited_conformance",
                          "-k", k)
    result.assert_outcomes(passed=2, skipped=1, failed=1)
    assert report["backends"] == ["limited"]  # the store's name, not the module's
    assert report["command"] == "make test-x"
    assert report["commit"] and report["generated_at"]
    cells = {c["scenario"]: c for c in report["cells"]}
    assert set(cells) == {"protocol", "capabilities", "procedural_round_trip", "hit_shape"}
    assert cells["protocol"]["result"] == "PASS"
    skip = cells["procedural_round_trip"]
    assert skip == {"backend": "limited", "scenario": "procedural_round_trip",
                    "result": "SKIP", "reason": "store does not declare capability procedural"}
    fail = cells["hit_shape"]
    assert fail["result"] == "FAIL"
    assert "recall is broken on purpose" in fail["reason"]


def test_fixture_error_is_a_fail_named_after_the_module(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result, report = _run(pytester, monkeypatch, ERRORING_MODULE, "test_fake_conformance",
                          "-k", "protocol")
    result.assert_outcomes(errors=1)
    (cell,) = report["cells"]
    assert cell == {"backend": "fake", "scenario": "protocol", "result": "FAIL",
                    "reason": "error in setup: MEMORYWIRE_FAKE_URL is not set"}


def test_no_report_without_the_variable(pytester: pytest.Pytester,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORYWIRE_CONFORMANCE_REPORT", raising=False)
    pytester.makepyfile(test_limited_conformance=BACKEND_MODULE)
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "-k", "protocol")
    assert not list(pytester.path.rglob("*.json"))


def _report(tmp_path: Path, name: str, cells: list[Cell]) -> Path:
    path = tmp_path / f"conformance-{name}.json"
    write_report(path, build_report(cells, command=f"make test-{name}", commit="abc123"))
    return path


def test_merge_adds_columns_with_provenance(tmp_path: Path) -> None:
    mod = _matrix_module()
    live = {"backends": [{"name": "memory", "source": "live"}],
            "scenarios": ["protocol", "health"],
            "cells": [{"backend": "memory", "scenario": s, "result": "PASS", "reason": ""}
                      for s in ("protocol", "health")]}
    path = _report(tmp_path, "letta", [
        Cell("letta", "protocol", "PASS"),
        Cell("letta", "gone_scenario", "PASS"),  # no longer in the suite: dropped
    ])
    clash = _report(tmp_path, "memory", [Cell("memory", "protocol", "FAIL", "stale")])
    (tmp_path / "conformance-broken.json").write_text("{", encoding="utf-8")

    merged = mod.merge_reports(live, mod.find_reports(tmp_path), root=tmp_path)

    assert [b["name"] for b in merged["backends"]] == ["memory", "letta"]
    letta = merged["backends"][1]
    assert letta["source"] == path.name
    assert letta["command"] == "make test-letta" and letta["commit"] == "abc123"
    by = {(c["backend"], c["scenario"]): c for c in merged["cells"]}
    assert by[("letta", "protocol")]["result"] == "PASS"
    assert by[("letta", "health")]["result"] == "NOT RUN"  # the report predates it
    assert ("letta", "gone_scenario") not in by
    assert by[("memory", "protocol")]["result"] == "PASS"  # live wins over clash
    assert clash.exists()

    doc = mod.render_markdown(merged)
    assert "| scenario | memory | letta |" in doc
    assert "| `protocol` | PASS | PASS |" in doc
    assert "`make test-letta` at commit `abc123`" in doc
    assert "`letta` / `health`: NOT RUN" in doc


def test_load_report_rejects_malformed_cells(tmp_path: Path) -> None:
    bad = tmp_path / "conformance-bad.json"
    bad.write_text(json.dumps({"cells": [{"backend": "x", "scenario": "y",
                                          "result": "MAYBE"}]}), encoding="utf-8")
    with pytest.raises(ValueError, match="malformed cell"):
        load_report(bad)


def test_a_skip_names_missing_capabilities_in_one_order() -> None:
    """A scenario's needs are a frozenset, whose order follows the process's hash seed; the
    committed reports must not change from run to run because of it."""
    import types

    from memorywire.store.base import Capability
    from memorywire.testing.harness import Harness, ScenarioSkip

    store: Any = types.SimpleNamespace(capabilities=frozenset())
    reasons = set()
    for caps in ((Capability.PURGE, Capability.ERASE), (Capability.ERASE, Capability.PURGE)):
        with pytest.raises(ScenarioSkip) as info:
            Harness.require(store, *caps)
        reasons.add(str(info.value))
    assert reasons == {"store does not declare capability erase, purge"}
