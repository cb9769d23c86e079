"""``RecallSettings``: checked once, a bad value refused naming the setting, and a store given
a setting its search does not have refuses it rather than ignoring it."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace
from pathlib import Path
from typing import Any

import pytest

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.recall.settings import PORTABLE_RECALL, RecallSettings
from memorywire.store.memory import InMemoryStore
from memorywire.store.postgres import PostgresStore
from memorywire.store.sqlite import SqliteStore

EMB = HashingEmbedder(16)


@pytest.mark.parametrize(("name", "bad", "says"), [
    ("relevance_floor", float("nan"), "relevance_floor must be a finite number"),
    ("relevance_floor", "0.3", "relevance_floor must be a finite number"),
    ("lexical_floor", float("inf"), "lexical_floor must be a finite number"),
    ("tail_gap", -0.1, "tail_gap must be a finite number >= 0 or None"),
    ("tail_gap", True, "tail_gap must be a finite number"),
    ("lexical_weight", 0.0, "lexical_weight must be > 0"),
    ("feedback_weight", -1.0, "feedback_weight must be a finite number >= 0"),
    ("entity_gate", 1, "entity_gate must be true or false"),
    ("session_weight", -0.5, "session_weight must be a finite number >= 0"),
    ("subject_weight", float("nan"), "subject_weight"),
    ("substance_weight", True, "substance_weight"),
    ("turn_weight", float("inf"), "turn_weight"),
    ("duplicate_share", 1.5, "duplicate_share must be at most 1"),
    ("subject_lexical_weight", -1, "subject_lexical_weight"),
])
def test_a_bad_value_is_refused_naming_the_setting(name: str, bad: Any, says: str) -> None:
    with pytest.raises(InvalidRequest, match=says):
        replace(PORTABLE_RECALL, **{name: bad})


def test_values_are_kept_as_floats_and_the_value_is_frozen() -> None:
    settings = replace(PORTABLE_RECALL, relevance_floor=-1, turn_weight=0, tail_gap=1)
    assert settings.relevance_floor == -1.0 and isinstance(settings.relevance_floor, float)
    assert isinstance(settings.turn_weight, float) and isinstance(settings.tail_gap, float)
    with pytest.raises(FrozenInstanceError):
        settings.turn_weight = 1.0  # type: ignore[misc]


def test_the_store_dependent_settings_have_no_default() -> None:
    """Code cannot build settings that silently take another store's floors or feedback."""
    with pytest.raises(TypeError, match="lexical_floor"):
        RecallSettings()  # type: ignore[call-arg]
    full = RecallSettings(lexical_floor=0.2, tail_gap=None, feedback_weight=0.0)
    assert full.turn_weight == PORTABLE_RECALL.turn_weight


def test_a_store_refuses_a_bad_value_before_it_opens_anything(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="turn_weight"):
        SqliteStore(tmp_path / "m.db", EMB,
                    recall=replace(SqliteStore.DEFAULT_RECALL, turn_weight=-1.0))
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize("store", [InMemoryStore, PostgresStore])
@pytest.mark.parametrize(("name", "value"), [("feedback_weight", 0.3), ("lexical_weight", 2.0)])
def test_a_setting_the_store_lacks_is_refused_unless_neutral(store: type, name: str,
                                                              value: float) -> None:
    args: tuple[Any, ...] = ("postgresql://nobody@127.0.0.1:1/none",) if store is PostgresStore \
        else ()
    with pytest.raises(InvalidRequest, match=f"{name}={value}: {store.__name__} has no such"):
        store(*args, embedder=EMB, recall=replace(PORTABLE_RECALL, **{name: value}))
    made = store(*args, embedder=EMB, recall=PORTABLE_RECALL)  # neutral: accepted
    assert made.recall_settings is PORTABLE_RECALL


def test_sqlite_runs_every_setting_it_is_given(tmp_path: Path) -> None:
    settings = replace(SqliteStore.DEFAULT_RECALL, feedback_weight=0.0, lexical_weight=1.5,
                       entity_gate=False)
    store = SqliteStore(tmp_path / "m.db", EMB, recall=settings)
    assert store.recall_settings is settings
    assert SqliteStore(tmp_path / "n.db", EMB).recall_settings is SqliteStore.DEFAULT_RECALL
