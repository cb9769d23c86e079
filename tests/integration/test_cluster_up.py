"""``scripts/cluster-up.sh``: the whole topology of docs/deploy.md on one machine, as real
processes (primary, hot standby, PgBouncer, the embedding service, two API servers), then
``--down``."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import psycopg
import pytest

from memorywire.testing.pg_cluster import pgbouncer_binary

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(600)]

if pgbouncer_binary() is None:
    pytest.skip("pgbouncer is not installed (Debian package pgbouncer; "
                "scripts/ci-system-deps.sh installs it)", allow_module_level=True)
pytest.importorskip("pgserver", reason="the cluster runs pgserver's bundled PostgreSQL")


def _env(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        out[key] = shlex.split(value)[0] if value else ""
    return out


def test_cluster_up_serves_through_pgbouncer_and_replica() -> None:
    # Not under pytest's tmp root: any pytest run starting meanwhile resets it to 0700,
    # which locks out the user PostgreSQL runs as (see memorywire.testing.postgres).
    tmp_path = Path(tempfile.mkdtemp(prefix="memorywire-cluster-"))
    script = str(ROOT / "scripts" / "cluster-up.sh")
    env = {**os.environ, "PYTHON": sys.executable}
    up = subprocess.run([script, "--dir", str(tmp_path / "c"), "--servers", "2", "--spec",
                         "hashing", "--pool", "2"], env=env, capture_output=True, text=True,
                        timeout=500, check=False)
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        c = _env(tmp_path / "c" / "cluster.env")
        first, second = c["MEMORYWIRE_SERVERS"].split()
        # governance (queue, audit chain) goes through PgBouncer too, not to the primary
        assert f":{c['MEMORYWIRE_PGBOUNCER_PORT']}/" in c["MEMORYWIRE_GOVERNANCE_URL"]
        head = {"authorization": f"Bearer {c['MEMORYWIRE_AGENT_TOKEN']}"}
        with httpx.Client(timeout=60, headers=head) as http:
            for i in range(6):
                r = http.post(f"{first}/v0/remember", json={
                    "agent_id": "a", "type": "semantic", "id": f"m{i}",
                    "content": f"The user's note {i} is about the garden and the piano."})
                assert r.status_code == 200, r.text
            # the first server reads its own writes (standby caught up, or the primary)
            r = http.post(f"{first}/v0/recall", json={"agent_id": "a", "k": 6,
                                                       "query": "note 5 garden piano"})
            assert "m5" in {h["id"] for h in r.json()["results"]}, r.text
            r = http.post(f"{second}/v0/recall", json={"agent_id": "a", "k": 6,
                                                        "query": "note 1 garden piano"})
            assert r.status_code == 200, r.text
            embed = c["MEMORYWIRE_EMBEDDER"].removeprefix("openai:").split("#")[0]
            stats = httpx.get(f"{embed}/stats").json()
            assert stats["texts"] >= 8  # writes and queries embedded by the service
        with httpx.Client(timeout=60) as http:
            staged = http.post(f"{first}/v0/remember", headers=head, json={
                "agent_id": "a", "type": "semantic", "id": "gated",
                "content": "The user's gate code is kept for review.",
                "approval_required": True})
            assert staged.status_code == 200 and staged.json()["pending_approval"], staged.text
            approved = http.post(f"{second}/v0/approvals/gated/approve", json={"reason": "ok"},
                                 headers={"authorization":
                                          f"Bearer {c['MEMORYWIRE_REVIEWER_TOKEN']}"})
            assert approved.status_code == 200, approved.text
            verified = http.post(f"{second}/v0/audit/verify", headers={
                "authorization": f"Bearer {c['MEMORYWIRE_ADMIN_TOKEN']}"})
            assert verified.status_code == 200 and verified.json()["ok"] is True, verified.text
        primary = f"postgresql://postgres@127.0.0.1:{c['MEMORYWIRE_PRIMARY_PORT']}/memorywire"
        with psycopg.connect(primary) as conn:
            streaming = conn.execute("SELECT state FROM pg_stat_replication").fetchall()
            rows = conn.execute("SELECT count(*) FROM memorywire_memories").fetchone()
        assert streaming == [("streaming",)] and rows == (7,)
        bouncer = f"postgresql://postgres@127.0.0.1:{c['MEMORYWIRE_PGBOUNCER_PORT']}/pgbouncer"
        with psycopg.connect(bouncer, autocommit=True, prepare_threshold=None) as conn:
            cur = conn.execute("SHOW STATS")
            names = [d.name for d in cur.description or []]
            stats_rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        mine = [s for s in stats_rows if s["database"] == "memorywire"]
        assert mine and int(mine[0]["total_xact_count"]) > 6  # the writes went through it
        replica = c["MEMORYWIRE_REPLICAS"].split(",")[0]
        with psycopg.connect(f"postgresql://postgres@{replica}/memorywire") as conn:
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
    finally:
        down = subprocess.run([script, "--down", str(tmp_path / "c")], env=env,
                              capture_output=True, text=True, timeout=300, check=False)
    assert down.returncode == 0, down.stderr
    left = subprocess.run(["pgrep", "-f", str(tmp_path / "c")], capture_output=True, text=True,
                          check=False)
    assert left.stdout.strip() == "", left.stdout  # nothing of the cluster still runs
    shutil.rmtree(tmp_path, ignore_errors=True)
