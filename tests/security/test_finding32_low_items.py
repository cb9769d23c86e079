"""Finding 32 (low): ``sqlite:///abs/path`` could land in a relative folder depending on the
working directory; store URL numbers were not range-checked (``busy_timeout_ms`` past a C
``int`` was an internal error); another user's memory id could still be probed (a pending
write of another user answered ``pending_approval`` with its approval id, not the ``conflict``
any id in use gets)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from memorywire.cli.main import main
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.store.registry import open_store
from memorywire.wire.models import RememberRequest
from tests.security.conftest import Caller, Rig


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    old = Path.cwd()
    work = tmp_path / "work"
    work.mkdir()
    os.chdir(work)
    try:
        yield work
    finally:
        os.chdir(old)


def test_a_three_slash_url_meaning_two_existing_folders_is_refused(
    tmp_path: Path, workdir: Path
) -> None:
    absolute = tmp_path / "data"
    absolute.mkdir()
    rest = str(absolute / "m.db").lstrip("/")  # sqlite:///<rest>: relative or /<rest>?
    (workdir / rest).parent.mkdir(parents=True)  # the same folder name exists here too
    url = f"sqlite:///{rest}"
    with pytest.raises(InvalidRequest, match="ambiguous"):
        open_store(url, embedder=HashingEmbedder(16))

    async def write(u: str) -> None:
        store = open_store(u, embedder=HashingEmbedder(16))
        try:
            await store.remember(RememberRequest(agent_id="a", type="semantic", content="x"))
        finally:
            await store.aclose()

    anyio.run(write, f"sqlite:////{rest}")  # four slashes: the absolute file
    anyio.run(write, f"sqlite:///./{rest}")  # ./: the relative one
    assert (absolute / "m.db").is_file() and (workdir / rest).is_file()


@pytest.mark.parametrize("query", ["busy_timeout_ms=99999999999999", "busy_timeout_ms=-1",
                                   "cache_mb=-1", "busy_timeout_ms=99999999999999999999999"])
def test_store_url_numbers_out_of_range_are_invalid_requests(
    tmp_path: Path, query: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORYWIRE_HOME", str(tmp_path))
    url = f"sqlite:///{tmp_path / 'm.db'}?{query}"
    key = query.split("=")[0]

    async def go() -> None:
        store = open_store(url, embedder=HashingEmbedder(16))
        try:
            await store.remember(RememberRequest(agent_id="a", type="semantic", content="x"))
        finally:
            await store.aclose()

    with pytest.raises(InvalidRequest, match=key):
        anyio.run(go)
    assert main(["remember", "--store", url, "--embedder", "hashing", "--no-governance",
                 "--agent", "a", "x"]) != 0
    err = capsys.readouterr().err
    assert key in err and "internal error" not in err, err


def _rem(user: str, id_: str, content: str, **extra: object) -> dict[str, object]:
    return {"agent_id": "A", "user_id": user, "type": "semantic", "content": content,
            "id": id_, **extra}


@pytest.mark.anyio
async def test_another_users_ids_get_the_answer_of_any_id_in_use(rig: Rig, call: Caller) -> None:
    live = await call("remember", _rem("u1", "live1", "u1's memory"), rig.user1)
    staged = await call("remember", _rem("u1", "staged1", "u1's pending write",
                                         approval_required=True), rig.user1)
    assert live.ok and staged.ok and staged.body["pending_approval"] is True, staged

    on_live = await call("remember", _rem("u2", "live1", "probe"), rig.user2)
    on_pending = await call("remember", _rem("u2", "staged1", "probe"), rig.user2)
    assert (on_live.status, on_live.code) == (on_pending.status, on_pending.code) \
        == (409, "conflict"), (on_live, on_pending)
    assert on_live.body["message"].replace("live1", "ID") \
        == on_pending.body["message"].replace("staged1", "ID")
    assert "approval" not in str(on_pending.body)

    # Lookups answer one not_found whether the id is another user's or nobody's.
    for op, doc in [("get", {"id": "{id}"}), ("update", {"id": "{id}", "content": "pwn"}),
                    ("history", {"id": "{id}"})]:
        answers = set()
        for target in ("live1", "staged1", "nobody-has-this"):
            body = {"agent_id": "A", "user_id": "u2",
                    **{k: (target if v == "{id}" else v) for k, v in doc.items()}}
            out = await call(op, body, rig.user2)
            answers.add((out.status, out.code, str(out.body).replace(target, "ID")))
        assert len(answers) == 1 and next(iter(answers))[:2] == (404, "not_found"), answers
