"""What a conformance scenario runs against, and how one scenario is run and judged.

A backend author supplies one *store factory*: a callable taking keyword arguments
``embedder`` and ``clock`` and returning a fresh, empty ``MemoryStore`` (it may return an
awaitable). Scenarios ask the harness for stores; the harness closes them afterwards.

A scenario passes, fails (an ``AssertionError`` or any unexpected error, reported with its
message) or is skipped — only because the store does not declare a capability the scenario
needs, and the skip names that capability.
"""

from __future__ import annotations

import inspect
import tempfile
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from memorywire.core.clock import FakeClock
from memorywire.embed.base import Embedder
from memorywire.store.base import Capability, MemoryStore
from memorywire.wire.models import MemoryType, RememberRequest

__all__ = [
    "Harness",
    "Outcome",
    "Scenario",
    "ScenarioSkip",
    "StoreFactory",
    "embedder_for_conformance",
    "rem",
    "run_scenario",
    "scenario",
]

StoreFactory = Callable[..., MemoryStore | Awaitable[MemoryStore]]


class ScenarioSkip(Exception):
    """Raised by a scenario (through :meth:`Harness.require`) when a capability is absent."""


@dataclass(frozen=True)
class Scenario:
    name: str
    doc: str
    needs: frozenset[Capability]
    run: Callable[[Harness, MemoryStore], Awaitable[None]]
    #: Needs a model that captures meaning (the hashing test embedder cannot pass it).
    semantic_model: bool = False


@dataclass(frozen=True)
class Outcome:
    scenario: str
    result: str  # PASS | SKIP | FAIL
    reason: str = ""


def scenario(
    fn: Callable[[Harness, MemoryStore], Awaitable[None]],
    *needs: Capability,
    semantic_model: bool = False,
) -> Scenario:
    """A scenario named after its function, documented by its docstring."""
    return Scenario(fn.__name__, (fn.__doc__ or "").strip(), frozenset(needs), fn,
                    semantic_model=semantic_model)


_EMBEDDER: list[Embedder] = []


def embedder_for_conformance() -> tuple[Embedder, bool]:
    """The default local model when installed (``True``), else the hashing embedder."""
    if not _EMBEDDER:
        try:
            from memorywire.embed import default_embedder

            model: Embedder = default_embedder()
            model.embed(["warm up"])
            _EMBEDDER.append(model)
        except Exception:
            from memorywire.embed.hashing import HashingEmbedder

            _EMBEDDER.append(HashingEmbedder(64))
    emb = _EMBEDDER[0]
    return emb, not emb.name.startswith("hashing")


def rem(agent: str, content: str | dict[str, Any], **kw: Any) -> RememberRequest:
    kw.setdefault("type", MemoryType.SEMANTIC)
    return RememberRequest.model_validate({"agent_id": agent, "content": content, **kw})


@dataclass
class Harness:
    factory: StoreFactory
    embedder: Embedder
    clock: FakeClock
    workdir: Path
    opened: list[MemoryStore] = field(default_factory=list)

    async def store(self) -> MemoryStore:
        """A fresh empty store (scenarios get one; call again for a second, independent one)."""
        made = self.factory(embedder=self.embedder, clock=self.clock)
        store: MemoryStore = await made if inspect.isawaitable(made) else made
        self.opened.append(store)
        return store

    @staticmethod
    def require(store: MemoryStore, *caps: Capability) -> None:
        # sorted: a scenario's needs are a set, and a report must not change run to run
        missing = sorted(c.value for c in caps if c not in store.capabilities)
        if missing:
            raise ScenarioSkip(f"store does not declare capability {', '.join(missing)}")

    async def remember_all(self, store: MemoryStore, reqs: Sequence[RememberRequest]) -> list[str]:
        bulk = getattr(store, "remember_many", None)
        if bulk is not None:
            return [r.id for r in await bulk(list(reqs))]
        return [(await store.remember(r)).id for r in reqs]

    async def close(self) -> None:
        for store in reversed(self.opened):
            await store.aclose()
        self.opened.clear()


async def _run(factory: StoreFactory, scenario: Scenario) -> Outcome:
    embedder, semantic = embedder_for_conformance()
    if scenario.semantic_model and not semantic:
        return Outcome(scenario.name, "SKIP", "no semantic embedding model is installed")
    with tempfile.TemporaryDirectory(prefix="mw-conf-") as tmp:
        harness = Harness(factory, embedder, FakeClock(), Path(tmp))
        try:
            store = await harness.store()
            Harness.require(store, *scenario.needs)
            await scenario.run(harness, store)
        except ScenarioSkip as skip:
            return Outcome(scenario.name, "SKIP", str(skip))
        except AssertionError as exc:
            line = traceback.extract_tb(exc.__traceback__)[-1].lineno
            return Outcome(scenario.name, "FAIL", f"{exc or 'assertion failed'} (line {line})")
        except Exception as exc:
            return Outcome(scenario.name, "FAIL", f"{type(exc).__name__}: {exc}")
        finally:
            await harness.close()
    return Outcome(scenario.name, "PASS")


def run_scenario(factory: StoreFactory, scenario: Scenario) -> Outcome:
    """Run one scenario in its own event loop (so stores never outlive a loop)."""
    return anyio.run(_run, factory, scenario)
