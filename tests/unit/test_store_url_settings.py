"""Every store URL's query keys are used or refused naming them; the embedded stores' settings
are query keys, derived from their constructors so that none can be forgotten."""

from __future__ import annotations

import inspect
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.recall.settings import RecallSettings
from memorywire.store.memory import InMemoryStore
from memorywire.store.postgres import PostgresStore
from memorywire.store.postgres.url import PG_ALIASES, libpq_keys
from memorywire.store.registry import open_store
from memorywire.store.sqlite import SqliteStore
from memorywire.store.url_settings import constructor_settings, url_keywords

EMB = HashingEmbedder(16)

#: Each embedded store, the scheme its URL keys are read under, and its URL key aliases.
EMBEDDED: tuple[tuple[type, str, dict[str, str]], ...] = (
    (SqliteStore, "sqlite", {}),
    (InMemoryStore, "memory", {}),
    (PostgresStore, "postgresql", PG_ALIASES),
)


def _url(tmp_path: Path, scheme: str, query: str) -> str:
    return {"sqlite": f"sqlite:///{tmp_path / 'm.db'}?{query}",
            "memory": f"memory://?{query}",
            # Never connects: the store connects on first use.
            "postgresql": f"postgresql://u@/db?host={tmp_path}&{query}"}[scheme]


def _text(value: Any) -> str:
    return "none" if value is None else str(value).lower()


@pytest.mark.parametrize(("store", "scheme", "aliases"), EMBEDDED)
def test_every_constructor_setting_is_a_url_key(store: type, scheme: str,
                                                aliases: dict[str, str]) -> None:
    """A keyword-only constructor setting, or a ``RecallSettings`` field, added later is a URL
    key at once; one the URL cannot carry (an annotation it cannot read) fails here until it
    is decided on. Keys with the defaults' values build the store's defaults."""
    params = [p for p in inspect.signature(store).parameters.values()
              if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "recall"]
    defaults: RecallSettings = store.DEFAULT_RECALL  # type: ignore[attr-defined]
    recall = {f.name: getattr(defaults, f.name) for f in fields(RecallSettings)
              if f.name not in store.RECALL_UNSUPPORTED}  # type: ignore[attr-defined]
    keys = {s.param: key for key, s in constructor_settings(store, aliases).items()}
    assert [p.name for p in params if p.name not in keys] == []
    assert [name for name in recall if name not in keys] == []
    query = "&".join([*(f"{keys[p.name]}={_text(p.default)}" for p in params),
                      *(f"{keys[name]}={_text(value)}" for name, value in recall.items())])
    args = url_keywords(store, scheme, query, {}, aliases=aliases)
    assert args == {**{p.name: p.default for p in params}, "recall": defaults}


@pytest.mark.parametrize(("store", "missing"), [(InMemoryStore, "feedback_weight"),
                                                (PostgresStore, "lexical_weight")])
def test_a_setting_a_store_lacks_is_no_url_key_and_refused_in_code(
        tmp_path: Path, store: type, missing: str) -> None:
    """PostgreSQL and the in-memory store have no feedback round and plain RRF: those keys are
    refused as unknown (as before), and the settings refused unless neutral when given in
    code, naming them (never ignored)."""
    scheme = "memory" if store is InMemoryStore else "postgresql"
    with pytest.raises(InvalidRequest, match=f"unknown query key '{missing}'"):
        open_store(_url(tmp_path, scheme, f"{missing}=0.5"), embedder=EMB)
    defaults: RecallSettings = store.DEFAULT_RECALL  # type: ignore[attr-defined]
    with pytest.raises(InvalidRequest, match=f"{missing}=0.5: {store.__name__} has no such"):
        open_store(_url(tmp_path, scheme, ""), embedder=EMB,
                   recall=replace(defaults, **{missing: 0.5}))
    neutral = open_store(_url(tmp_path, scheme, ""), embedder=EMB, recall=defaults)
    assert neutral.recall_settings == defaults  # type: ignore[attr-defined]


@pytest.mark.parametrize("scheme", ["sqlite", "memory"])
def test_a_url_setting_reaches_the_store(tmp_path: Path, scheme: str) -> None:
    store = open_store(_url(tmp_path, scheme, "turn_weight=0&relevance_floor=-1"
                                              "&entity_gate=off&tail_gap=none"),
                       embedder=EMB)
    settings: RecallSettings = store.recall_settings  # type: ignore[attr-defined]
    assert settings.turn_weight == 0.0
    assert settings.relevance_floor == -1.0
    assert settings.entity_gate is False
    assert settings.tail_gap is None
    # the rest are the store's own defaults, not another store's
    defaults = type(store).DEFAULT_RECALL  # type: ignore[attr-defined]
    assert settings == replace(defaults, turn_weight=0.0, relevance_floor=-1.0,
                               entity_gate=False, tail_gap=None)


@pytest.mark.parametrize("scheme", ["sqlite", "memory", "postgresql"])
def test_a_keyword_given_in_code_wins_over_the_url(tmp_path: Path, scheme: str) -> None:
    store = open_store(_url(tmp_path, scheme, "turn_weight=0&session_weight=0"),
                       embedder=EMB, turn_weight=0.5)
    settings: RecallSettings = store.recall_settings  # type: ignore[attr-defined]
    assert settings.turn_weight == 0.5
    assert settings.session_weight == 0.0


@pytest.mark.parametrize("scheme", ["sqlite", "memory", "postgresql"])
def test_recall_given_in_code_beside_url_settings_is_refused_naming_them(
        tmp_path: Path, scheme: str) -> None:
    """Either the URL's settings or the value in code would be dropped: neither is."""
    store_type = {"sqlite": SqliteStore, "memory": InMemoryStore,
                  "postgresql": PostgresStore}[scheme]
    recall = replace(store_type.DEFAULT_RECALL, substance_weight=0.0)  # type: ignore[attr-defined]
    with pytest.raises(InvalidRequest, match="session_weight, turn_weight cannot also be"):
        open_store(_url(tmp_path, scheme, "turn_weight=0&session_weight=0"),
                   embedder=EMB, recall=recall)
    store = open_store(_url(tmp_path, scheme, ""), embedder=EMB, recall=recall)
    assert store.recall_settings is recall  # type: ignore[attr-defined]


@pytest.mark.parametrize("scheme", ["sqlite", "memory", "postgresql"])
def test_an_unknown_key_is_refused_naming_it_and_the_accepted_ones(
        tmp_path: Path, scheme: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        open_store(_url(tmp_path, scheme, "turn_weight=0&bogus=1"), embedder=EMB)
    assert "'bogus'" in str(err.value)
    assert "turn_weight" in str(err.value) and "relevance_floor" in str(err.value)


def test_the_reported_url_is_refused_not_opened_with_defaults(tmp_path: Path) -> None:
    """Regression: this opened a store with turn_weight 2.0, ``bogus`` dropped."""
    with pytest.raises(InvalidRequest, match="'bogus'"):
        open_store(f"sqlite:///{tmp_path / 'q.db'}?turn_weight=0&bogus=1", embedder=EMB)
    assert not (tmp_path / "q.db").exists()


@pytest.mark.parametrize(("query", "named"), [
    ("turn_weight=heavy", "turn_weight must be a number, got 'heavy'"),
    ("turn_weight=-1", "turn_weight"),
    ("duplicate_share=2", "duplicate_share"),
    ("relevance_floor=nan", "relevance_floor must be a finite number"),
    ("entity_gate=maybe", "entity_gate must be true or false"),
    ("tail_gap=wide", "tail_gap must be a number or none"),
    ("busy_timeout_ms=1.5", "busy_timeout_ms must be an integer"),
    ("lexical_weight=0", "lexical_weight must be > 0"),
    ("feedback_weight=-1", "feedback_weight must be a finite number >= 0"),
    ("tail_gap=-0.1", "tail_gap must be a finite number >= 0 or None"),
    ("turn_weight=0&turn_weight=1", "'turn_weight' is given twice"),
])
def test_a_bad_value_is_refused_naming_the_key(tmp_path: Path, query: str, named: str) -> None:
    with pytest.raises(InvalidRequest, match=named.replace("(", r"\(")):
        open_store(_url(tmp_path, "sqlite", query), embedder=EMB)


@pytest.mark.parametrize("key", ["mode=ro", "uri=true", "cache=shared", "immutable=1"])
def test_sqlite_uri_parameters_are_refused_not_dropped(tmp_path: Path, key: str) -> None:
    """``?mode=ro`` used to open the file read-write without a word."""
    name = key.split("=")[0]
    with pytest.raises(InvalidRequest, match=f"'{name}' is a SQLite or SQLAlchemy URL"):
        open_store(f"sqlite:///{tmp_path / 'ro.db'}?{key}", embedder=EMB)


def test_a_memory_url_names_nothing_after_the_scheme() -> None:
    with pytest.raises(InvalidRequest, match="names nothing after the scheme"):
        open_store("memory://somewhere", embedder=EMB)


def test_postgres_settings_and_pool_keys_read_as_before(tmp_path: Path) -> None:
    store = open_store(_url(tmp_path, "postgresql",
                            "pool_max=3&exact_scope_limit=7&relevance_floor=-1"
                            "&sslmode=disable"), embedder=EMB)
    assert isinstance(store, PostgresStore)
    assert store._exact_limit == 7
    assert store.recall_settings.relevance_floor == -1.0
    with pytest.raises(InvalidRequest, match="pool_max must be an integer"):
        open_store(_url(tmp_path, "postgresql", "pool_max=many"), embedder=EMB)


def test_no_postgres_store_key_is_a_libpq_parameter() -> None:
    """Else a URL that configured libpq before would silently configure the store."""
    assert set(constructor_settings(PostgresStore, PG_ALIASES)) & libpq_keys() == set()


@pytest.mark.parametrize(("url", "key"), [
    ("letta://127.0.0.1:8283?embedding_endpoint=http://h/v1&relevance_floor=0", "relevance_floor"),
    ("cognee:///tmp/url9-c?embedding_endpoint=http://h/v1&bogus=1", "bogus"),
    ("mem0://?path=/tmp/url9-m&colection=x", "colection"),
])
def test_the_other_schemes_refuse_unknown_keys(url: str, key: str) -> None:
    with pytest.raises(InvalidRequest, match=f"unknown query key '{key}'; accepted: ") as err:
        open_store(url)
    assert "embedding_endpoint" in str(err.value) or "collection" in str(err.value)


def test_letta_and_cognee_refuse_a_bad_dimension() -> None:
    for url in ("letta://127.0.0.1:8283?embedding_endpoint=http://h/v1&embedding_dim=big",
                "cognee:///tmp/url9-c?embedding_endpoint=http://h/v1&embedding_dim=big"):
        with pytest.raises(InvalidRequest, match="embedding_dim must be an integer"):
            open_store(url)
