"""``memorywire recall --asked-at``: the time of asking from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memorywire.cli import main

DAY = 86_400_000
#: Thursday 9 March 2023, 15:47 UTC.
ASKED = 1_678_376_820_000


def _ids(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [h["id"] for h in json.loads(capsys.readouterr().out)["results"]]


def test_asked_at_ranks_the_memory_of_last_saturday_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--store", f"sqlite:///{tmp_path / 'm.db'}", "--embedder", "hashing", "-a", "A"]
    for mid, text, when in (("sat", "Bought a necklace at the market", ASKED - 5 * DAY),
                            ("old", "My aunt gave me the necklace I got for my birthday",
                             ASKED - 60 * DAY)):
        assert main(["remember", *base, text, "--type", "episodic", "--id", mid,
                     "--fields", json.dumps({"event_time": when}), "--json"]) == 0
        capsys.readouterr()
    query = "Who gave me the necklace I got last Saturday?"
    assert main(["recall", *base, query, "--json"]) == 0
    assert _ids(capsys) == ["old", "sat"]
    for asked in (str(ASKED), "2023-03-09T15:47:00Z", "2023-03-09"):
        assert main(["recall", *base, query, "--asked-at", asked, "--json"]) == 0
        assert _ids(capsys) == ["sat", "old"], asked


def test_a_time_that_is_not_one_is_refused(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["recall", "--store", "memory://", "-a", "A", "x", "--asked-at", "last week"])
    assert "--asked-at" in capsys.readouterr().err
