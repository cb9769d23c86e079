"""The one configuration file: the documented example loads and runs, every setting is
documented, misspelt keys are refused by name, several stores become a router (from the file
or a repeated ``--store``) and policies reach governance."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from memorywire.cli import main
from memorywire.client import Memory
from memorywire.errors import InvalidRequest
from memorywire.governance import GovernedStore
from memorywire.router import MemoryRouter
from memorywire.server.config import ServerConfig, load_config
from memorywire.server.runtime import running

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
POLICIES = Path(__file__).resolve().parents[2] / "examples" / "policies.json"


def _example() -> str:
    found = re.search(r"## A complete example.*?```toml\n(.*?)```", DOC.read_text("utf-8"), re.S)
    assert found, "docs/configuration.md lost its example"
    return found.group(1)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_every_setting_is_documented() -> None:
    doc = DOC.read_text("utf-8")
    example = _example()
    for f in fields(ServerConfig):
        if f.name in ("store", "stores", "governance_db", "policies", "quorum",
                      "remember_policy", "router_deadline_s", "rrf_k", "governance",
                      "router_outbox"):
            continue  # set through their sections in the example, documented in tables
        assert f"`{f.name}`" in doc, f.name
        assert re.search(rf"^{f.name} = ", example, re.M), f"example lacks {f.name}"


@pytest.mark.anyio
async def test_documented_example_loads_and_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the example's relative paths land here
    config = load_config(_write(tmp_path, "mw.toml", _example()), env={},
                         overrides={"embedder": "hashing"})
    assert [(s.name, s.weight, s.primary, s.deadline_s, s.trust) for s in config.stores] == [
        ("local", 1.0, True, None, 1.0), ("archive", 0.5, False, 5.0, 0.8)]
    assert (config.quorum, config.router_deadline_s, config.rrf_k) == (1, 2.0, 60)
    async with running(config) as runtime:
        governed = runtime.governed
        assert isinstance(governed, GovernedStore)
        assert [r.name for r in governed.policies.rules] == [
            "untrusted-sources", "no-bulk-forget-by-bots"]
        router = governed._inner
        assert isinstance(router, MemoryRouter)
        assert [s.name for s in router.stores] == ["local", "archive"]
        assert (router._deadlines, router._trust) == ({"local": 2.0, "archive": 5.0},
                                                      {"archive": 0.8})
        mem = Memory(runtime=runtime)
        wrote = await mem.remember(agent_id="my-agent", content="a note", type="semantic")
        assert wrote.stores == ["local", "archive"]
        staged = await mem.remember(agent_id="my-agent", content="from a page",
                                    type="semantic", source="web_page")
        assert staged.pending_approval  # the first rule of the example's policy
    assert (tmp_path / "mem.db").exists() and (tmp_path / "mem.gov.db").exists()


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[[stores]]\nurl = "memory://"\nwieght = 2\n', "stores[0].wieght"),
        ('[router]\nqorum = 2\n', "router.qorum"),
        ('[server]\nprot = 1\n', "server.prot"),
        ('[sever]\nport = 1\n', "sever"),
        ('[governance]\ndatabase = "g.db"\n[[governance.rules]]\nname = "x"\n'
         'decision = "maybe"\n', "governance.rules.0.decision"),
        ('[governance]\ndatabase = "g.db"\n[[governance.rules]]\nname = "x"\n'
         'decision = "review"\nmatch = { agnet_id = "a" }\n', "governance.rules.0.match.agnet_id"),
        ('[[stores]]\nurl = "memory://"\nweight = -1\n', "stores[0].weight"),
        ('[[stores]]\nname = "x"\n', "stores[0].url"),
        ('[[stores]]\nurl = "memory://"\n[[stores]]\nurl = "memory://"\ntrust = 2\n',
         "stores[1].trust"),
        ('[[stores]]\nurl = "memory://"\n[[stores]]\nurl = "memory://"\ntrust = 0\n',
         "stores[1].trust"),
        ('[[stores]]\nurl = "memory://"\ndeadline_s = -1\n[[stores]]\nurl = "memory://"\n',
         "stores[0].deadline_s"),
        ('[[stores]]\nurl = "memory://"\ntrust = 0.5\n', "stores[0].trust"),
    ],
)
def test_mistakes_are_refused_naming_the_key(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        load_config(_write(tmp_path, "bad.toml", text), env={})
    assert named in err.value.message


def test_json_is_accepted_and_env_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "mw.json", json.dumps(
        {"stores": [{"url": "memory://", "name": "a"}, {"url": "memory://", "name": "b"}],
         "router": {"quorum": 2}}))
    config = load_config(env={"MEMORYWIRE_CONFIG": str(path)})
    assert [s.name for s in config.stores] == ["a", "b"] and config.quorum == 2
    # a flag naming one store replaces the file's list
    assert load_config(path, env={}, overrides={"store": ["memory://"]}).resolved().store == (
        "memory://")
    assert not load_config(path, env={}, overrides={"store": ["memory://"]}).stores


@pytest.mark.anyio
async def test_policies_in_a_server_file_reach_governance(tmp_path: Path) -> None:
    """``serve --config`` used to refuse ``policies``; a path to a policy file now works."""
    path = _write(tmp_path, "mw.toml", f'store = "memory://"\npolicies = "{POLICIES}"\n'
                                       f'governance_db = "{tmp_path / "gov.db"}"\n')
    async with running(load_config(path, env={}), http=True) as runtime:
        assert runtime.governed is not None
        assert runtime.governed.policies.rules[0].name == "untrusted-sources"
    without = _write(tmp_path, "off.toml", f'policies = "{POLICIES}"\ngovernance = false\n')
    with pytest.raises(InvalidRequest, match="governance is off"):
        load_config(without, env={}).resolved()


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_repeated_store_flag_builds_a_router(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the second ``--store`` silently replaced the first."""
    a, b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    both = ["--store", a, "--store", b, "--embedder", "hashing", "-a", "A"]
    wrote = _cli(capsys, "remember", *both, "the cat sleeps on the sofa", "--json")
    assert wrote["stores"] == ["sqlite-1", "sqlite-2"]
    for one in (a, b):
        got = _cli(capsys, "get", "--store", one, "--embedder", "hashing", "-a", "A",
                   wrote["id"], "--json")
        assert got["memory"]["content"] == "the cat sleeps on the sofa"
    hits = _cli(capsys, "recall", *both, "cat sofa", "--json")
    assert [h["id"] for h in hits["results"]] == [wrote["id"]]
    assert hits["stores_queried"] == ["sqlite-1", "sqlite-2"]


@pytest.mark.parametrize("value", ["1.5", "-0.1", '"high"', "true", "nan"])
def test_a_relevance_floor_outside_0_1_is_refused_naming_the_key(
    tmp_path: Path, value: str
) -> None:
    with pytest.raises(InvalidRequest) as err:
        load_config(_write(tmp_path, "bad.toml", f"[server]\nmin_relevance = {value}\n"), env={})
    assert "min_relevance" in err.value.message and "bad.toml" in err.value.message
    with pytest.raises(InvalidRequest, match="min_relevance"):
        load_config(env={"MEMORYWIRE_MIN_RELEVANCE": value.strip('"')})


def test_a_relevance_floor_comes_from_file_env_and_flag_in_that_order(tmp_path: Path) -> None:
    path = _write(tmp_path, "mw.toml", "min_relevance = 0.25\n")
    assert ServerConfig().min_relevance is None
    assert load_config(path, env={}).min_relevance == 0.25
    env = {"MEMORYWIRE_MIN_RELEVANCE": "0.5"}
    assert load_config(path, env=env).min_relevance == 0.5
    assert load_config(path, env=env, overrides={"min_relevance": 0.75}).min_relevance == 0.75


def test_serve_and_mcp_refuse_a_floor_outside_0_1(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("serve", "mcp"):
        assert main([command, "--store", "memory://", "--min-relevance", "2"]) == 2
        assert "min_relevance" in capsys.readouterr().err
