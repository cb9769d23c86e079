"""How many worker processes ``serve`` runs, and what each may do (server/workers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorywire.errors import InvalidRequest
from memorywire.server import workers
from memorywire.server.config import ServerConfig, StoreEntry, load_config
from memorywire.server.workers import per_worker, worker_count


def _resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **kw: object) -> ServerConfig:
    monkeypatch.setenv("MEMORYWIRE_HOME", str(tmp_path))
    kw.setdefault("workers", "auto")
    return ServerConfig(**kw).resolved()  # type: ignore[arg-type]


def test_one_worker_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "cpus", lambda: 8)
    monkeypatch.setenv("MEMORYWIRE_HOME", str(tmp_path))
    assert worker_count(ServerConfig().resolved()) == 1


def test_auto_is_two_on_a_file_store_with_two_cpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workers, "cpus", lambda: 2)
    assert worker_count(_resolved(tmp_path, monkeypatch)) == 2
    monkeypatch.setattr(workers, "cpus", lambda: 16)
    assert worker_count(_resolved(tmp_path, monkeypatch)) == 2
    monkeypatch.setattr(workers, "cpus", lambda: 1)
    assert worker_count(_resolved(tmp_path, monkeypatch)) == 1


@pytest.mark.parametrize("store", ["memory://", "sqlite://:memory:", "sqlite://"])
def test_auto_is_one_for_a_store_inside_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    monkeypatch.setattr(workers, "cpus", lambda: 8)
    assert worker_count(_resolved(tmp_path, monkeypatch, store=store)) == 1


@pytest.mark.parametrize("store", ["memory://", "sqlite://:memory:"])
def test_several_workers_on_a_store_inside_the_process_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    cfg = _resolved(tmp_path, monkeypatch, store=store, workers="2")
    with pytest.raises(InvalidRequest, match=r"workers = 2 .*memory"):
        worker_count(cfg)
    assert worker_count(_resolved(tmp_path, monkeypatch, store=store, workers="1")) == 1


def test_a_router_is_refused_with_several_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stores = (StoreEntry(f"sqlite:///{tmp_path / 'a.db'}"),
              StoreEntry(f"sqlite:///{tmp_path / 'b.db'}"))
    cfg = _resolved(tmp_path, monkeypatch, stores=stores, workers="3")
    with pytest.raises(InvalidRequest, match="router"):
        worker_count(cfg)
    assert worker_count(_resolved(tmp_path, monkeypatch, stores=stores)) == 1


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5", ""])
def test_a_bad_count_names_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    with pytest.raises(InvalidRequest, match="workers"):
        _resolved(tmp_path, monkeypatch, workers=bad)


def test_workers_from_file_environment_and_flag(tmp_path: Path) -> None:
    toml = tmp_path / "mw.toml"
    toml.write_text("[server]\nworkers = 3\n", encoding="utf-8")
    assert load_config(toml, env={}).workers == "3"
    assert load_config(toml, env={"MEMORYWIRE_WORKERS": "auto"}).workers == "auto"
    assert load_config(toml, env={}, overrides={"workers": "1"}).workers == "1"
    assert load_config(None, env={}).workers == "1"


def test_rate_limits_are_divided_between_workers() -> None:
    cfg = ServerConfig(recall_rate=10.0, recall_burst=5, write_rate=4.0, write_burst=1,
                       anonymous_rate=30.0, anonymous_burst=60)
    two = per_worker(cfg, 2)
    assert (two.recall_rate, two.recall_burst) == (5.0, 3)
    assert (two.write_rate, two.write_burst) == (2.0, 1)
    assert (two.anonymous_rate, two.anonymous_burst) == (15.0, 30)
    assert per_worker(cfg, 1) == cfg
