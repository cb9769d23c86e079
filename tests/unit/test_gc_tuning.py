"""The serving process's collector settings: what the environment may ask, and what tune does."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorywire.errors import InvalidRequest
from memorywire.server import gc_tuning
from memorywire.server.gc_tuning import FREEZE_ENV, THRESHOLD_ENV, GcSettings


@pytest.fixture
def restored_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_defaults_freeze_and_raise_the_young_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FREEZE_ENV, raising=False)
    monkeypatch.delenv(THRESHOLD_ENV, raising=False)
    assert gc_tuning.settings_from_env() == GcSettings(True, gc_tuning.DEFAULT_THRESHOLD)


def test_cpython_behaviour_can_be_asked_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FREEZE_ENV, "0")
    monkeypatch.setenv(THRESHOLD_ENV, "700")
    assert gc_tuning.settings_from_env() == GcSettings(False, 700)


@pytest.mark.parametrize(("name", "value"), [
    (FREEZE_ENV, "yes"), (FREEZE_ENV, "2"), (THRESHOLD_ENV, "lots"),
    (THRESHOLD_ENV, "0"), (THRESHOLD_ENV, "-5"), (THRESHOLD_ENV, "1000001"),
])
def test_a_malformed_value_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, name: str,
                                               value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(InvalidRequest, match=name):
        gc_tuning.settings_from_env()


def test_tune_freezes_what_exists_and_sets_the_threshold(restored_gc: None) -> None:
    kept = [{"startup": i} for i in range(100)]  # a tracked container alive at startup
    gc_tuning.tune(GcSettings(freeze=True, threshold=12_345))
    assert gc.get_threshold()[0] == 12_345
    assert gc.get_freeze_count() >= len(kept)
    # cycles made after startup are still found
    a: list[object] = []
    a.append(a)
    del a
    assert gc.collect() >= 1


def test_tune_without_freeze_leaves_the_generations_alone(restored_gc: None) -> None:
    gc.unfreeze()
    gc_tuning.tune(GcSettings(freeze=False, threshold=700))
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold()[0] == 700


def test_serve_refuses_a_malformed_setting_before_it_starts(tmp_path: Path) -> None:
    env = {**os.environ, "MEMORYWIRE_HOME": str(tmp_path), THRESHOLD_ENV: "lots"}
    proc = subprocess.run(
        [sys.executable, "-m", "memorywire.cli", "serve", "--store", "memory://", "--port",
         "18765", "--no-auth"], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert f"{THRESHOLD_ENV} must be an integer, not 'lots'" in proc.stderr
