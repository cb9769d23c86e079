"""``benchmarks/load.py --cluster DIR``: the load aimed at ``scripts/cluster-up.sh``'s servers.

The cluster (API servers, embedding service, PostgreSQL primary and standbys, PgBouncer) is
already running; clients are spread over the API servers, and each process's CPU seconds
are read from ``/proc`` before and after, so the report gives CPU per operation for every
kind of process: what capacity planning per core needs.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from _load_server import cpu_seconds

__all__ = ["ClusterTarget", "load_cluster"]


@dataclass
class ClusterTarget:
    """Stands in for a RunningServer: ``base`` is the first API server, ``bases`` all."""

    dir: Path
    bases: list[str]
    agent_token: str
    reviewer_token: str
    embed_base: str
    pids: dict[str, int] = field(default_factory=dict)
    governance: bool = True

    @property
    def base(self) -> str:
        return self.bases[0]

    def headers(self, role: str = "agent") -> dict[str, str]:
        token = self.agent_token if role == "agent" else self.reviewer_token
        return {"Authorization": f"Bearer {token}"}

    def cpu(self) -> dict[str, float]:
        """CPU seconds of each process (with its children: PostgreSQL's backends)."""
        return {name: cpu_seconds(pid) for name, pid in self.pids.items()}

    def embed_stats(self) -> dict[str, float]:
        stats: dict[str, float] = httpx.get(self.embed_base + "/stats", timeout=10).json()
        return stats

    def stop(self) -> None:
        """The cluster outlives the run (``scripts/cluster-up.sh --down`` stops it)."""


def _env(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        out[key] = shlex.split(value)[0] if value else ""
    return out


def _pid(path: Path) -> int:
    return int(path.read_text(encoding="utf-8").split()[0])


def load_cluster(folder: Path) -> ClusterTarget:
    env = _env(folder / "cluster.env")
    pids = {f"serve{i + 1}": _pid(folder / f"serve{i + 1}.pid")
            for i in range(len(env["MEMORYWIRE_SERVERS"].split()))}
    pids["embed"] = _pid(folder / "embed.pid")
    pg = folder / "pg"
    for node in sorted(p for p in pg.iterdir() if (p / "postmaster.pid").exists()):
        pids[f"postgres-{node.name}"] = _pid(node / "postmaster.pid")
    if (pg / "pgbouncer" / "pgbouncer.pid").exists():
        pids["pgbouncer"] = _pid(pg / "pgbouncer" / "pgbouncer.pid")
    embed = env["MEMORYWIRE_EMBEDDER"].removeprefix("openai:").split("#")[0]
    return ClusterTarget(folder, env["MEMORYWIRE_SERVERS"].split(),
                         env["MEMORYWIRE_AGENT_TOKEN"], env["MEMORYWIRE_REVIEWER_TOKEN"],
                         embed, pids)
