"""Real PostgreSQL topologies on one machine: a primary, hot standbys streaming from it, and
PgBouncer in transaction mode in front, for tests and ``scripts/cluster-up.sh``.

Everything runs from the binaries the ``pgserver`` wheel bundles (PostgreSQL 16 with
pgvector 0.6), or from the folder ``MEMORYWIRE_PG_BIN`` names (another build, e.g. a newer
pgvector): ``initdb`` and ``pg_ctl`` for the primary, ``pg_basebackup -R`` for each standby
(streaming replication, ``hot_standby`` on), and the system's ``pgbouncer`` (Debian package
``pgbouncer``) for the pooler. Nodes listen on loopback TCP ports with ``trust``
authentication: a test cluster, never a deployment (``docs/deploy.md`` has that).

As root, PostgreSQL and PgBouncer refuse to run; they run as the ``pgserver`` system user
that ``pgserver`` itself creates for the same reason, and the cluster's folders are handed to
that user.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PG_BIN_ENV", "Cluster", "PgBouncer", "PgNode", "free_port", "pgbouncer_binary",
           "start_cluster", "stop_cluster", "wait_replayed"]

#: Where Debian installs PgBouncer (``/usr/sbin`` is not on every user's PATH).
_PGBOUNCER_PATHS = ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer")


def free_port() -> int:
    """A loopback port nothing listens on now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pgbouncer_binary() -> str | None:
    """PgBouncer's executable, or ``None`` when it is not installed."""
    found = shutil.which("pgbouncer")
    if found:
        return found
    return next((p for p in _PGBOUNCER_PATHS if os.access(p, os.X_OK)), None)


#: A folder of PostgreSQL binaries to use instead of pgserver's (``initdb``, ``pg_ctl``,
#: ``pg_basebackup``, ``postgres``, with pgvector installed), e.g. another wheel's newer build.
PG_BIN_ENV = "MEMORYWIRE_PG_BIN"


def _bin_dir() -> Path:
    given = os.environ.get(PG_BIN_ENV)
    if given:
        return Path(given)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns without XDG_RUNTIME_DIR
        from pgserver._commands import POSTGRES_BIN_PATH
    return Path(POSTGRES_BIN_PATH)


def _bin(name: str) -> str:
    return str(_bin_dir() / name)


def _system_user() -> str | None:
    """The user the servers run as: ``pgserver`` when we are root, else ourselves."""
    if os.geteuid() != 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )
    ensure_user_exists("pgserver")
    # the bundled binaries, libraries and extensions must be readable by that user
    bins = _bin_dir()
    ensure_prefix_permissions(bins)
    ensure_folder_permissions(bins, 0o055)
    for sub in ("lib", "share"):
        if (bins.parent / sub).exists():
            ensure_folder_permissions(bins.parent / sub, 0o044)
    return "pgserver"


def _give(path: Path, user: str | None) -> None:
    """Hand ``path`` (a folder we made) to ``user``, and let it traverse the folders above."""
    if user is None:
        return
    shutil.chown(path, user, user)
    for parent in path.parents:
        if parent == parent.parent:
            break
        parent.chmod(parent.stat().st_mode | 0o011)


def _run(args: list[str], user: str | None, timeout: float = 120) -> str:
    done = subprocess.run(args, user=user, capture_output=True, text=True, timeout=timeout,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def _wait_port(port: int, deadline_s: float, what: str) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {deadline_s:.0f} s")


@dataclass
class PgNode:
    """One PostgreSQL server: its data folder and loopback port."""

    name: str
    datadir: Path
    port: int
    user: str | None

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    @property
    def log(self) -> Path:
        return self.datadir.parent / f"{self.name}.log"

    def start(self) -> None:
        _run([_bin("pg_ctl"), "-D", str(self.datadir), "-l", str(self.log), "-w", "-t", "120",
              "start"], self.user, timeout=180)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` (clients cut, a clean shutdown) or ``immediate`` (as a
        crash would: no shutdown checkpoint)."""
        _run([_bin("pg_ctl"), "-D", str(self.datadir), "-m", mode, "-w", "-t", "120",
              "stop"], self.user, timeout=180)

    @property
    def running(self) -> bool:
        done = subprocess.run([_bin("pg_ctl"), "-D", str(self.datadir), "status"],
                              user=self.user, capture_output=True, check=False)
        return done.returncode == 0

    def query(self, sql: str, database: str = "postgres") -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.dsn(database), autocommit=True) as conn:
            cur = conn.execute(sql)
            return list(cur.fetchall()) if cur.description is not None else []


def _configure(node: PgNode, settings: dict[str, str]) -> None:
    with (node.datadir / "postgresql.auto.conf").open("a", encoding="utf-8") as fh:
        for key, value in settings.items():
            fh.write(f"{key} = '{value}'\n")


def init_primary(root: Path, port: int, user: str | None, *,
                 synchronous: bool = False) -> PgNode:
    """A fresh primary in ``root/primary`` that standbys can stream from. ``synchronous``:
    a commit returns once a standby has applied it (``remote_apply``), so a write is never
    acknowledged before a standby holds it."""
    node = PgNode("primary", root / "primary", port, user)
    node.datadir.mkdir(mode=0o700)
    _give(node.datadir, user)
    _run([_bin("initdb"), "-D", str(node.datadir), "--auth=trust", "-U", "postgres",
          "--encoding=utf8"], user)
    settings = {"listen_addresses": "127.0.0.1", "port": str(port),
                "unix_socket_directories": str(node.datadir), "wal_level": "replica",
                "max_wal_senders": "10", "hot_standby": "on", "max_connections": "200",
                "wal_keep_size": "512MB"}
    if synchronous:
        settings |= {"synchronous_standby_names": "*", "synchronous_commit": "remote_apply"}
    _configure(node, settings)
    node.start()
    return node


def add_standby(primary: PgNode, root: Path, port: int, name: str = "replica") -> PgNode:
    """A hot standby of ``primary`` in ``root/NAME``: a base backup streamed with its WAL,
    then streaming replication from the primary."""
    node = PgNode(name, root / name, port, primary.user)
    node.datadir.mkdir(mode=0o700)
    _give(node.datadir, primary.user)
    _run([_bin("pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
          "-D", str(node.datadir), "-R", "-X", "stream", "-c", "fast"], primary.user,
         timeout=600)
    _configure(node, {"port": str(port), "unix_socket_directories": str(node.datadir),
                      "cluster_name": name})
    # -R wrote primary_conninfo; naming the standby lets the primary list it by name
    with (node.datadir / "postgresql.auto.conf").open("a", encoding="utf-8") as fh:
        fh.write(f"primary_conninfo = 'host=127.0.0.1 port={primary.port} user=postgres "
                 f"application_name={name}'\n")
    node.start()
    return node


def wait_replayed(primary: PgNode, standby: PgNode, deadline_s: float = 60) -> None:
    """Wait until ``standby`` has replayed everything ``primary`` has written so far."""
    [(lsn,)] = primary.query("SELECT pg_current_wal_lsn()::text")
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        [(ok,)] = standby.query(f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn")
        if ok:
            return
        time.sleep(0.05)
    raise RuntimeError(f"{standby.name} did not replay {lsn} within {deadline_s:.0f} s")


@dataclass
class PgBouncer:
    """PgBouncer in transaction mode on a loopback port, in front of one PostgreSQL."""

    folder: Path
    port: int
    target_port: int
    pool_size: int
    user: str | None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        binary = pgbouncer_binary()
        if binary is None:
            raise RuntimeError("pgbouncer is not installed (Debian package pgbouncer)")
        self.folder.mkdir(exist_ok=True)
        _give(self.folder, self.user)
        ini = self.folder / "pgbouncer.ini"
        (self.folder / "userlist.txt").write_text('"postgres" ""\n', encoding="utf-8")
        ini.write_text("\n".join([
            "[databases]",
            f"* = host=127.0.0.1 port={self.target_port}",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            f"listen_port = {self.port}",
            "unix_socket_dir =",
            "auth_type = trust",
            f"auth_file = {self.folder / 'userlist.txt'}",
            "pool_mode = transaction",
            f"default_pool_size = {self.pool_size}",
            "max_client_conn = 2000",
            "admin_users = postgres",
            "stats_users = postgres",
            f"logfile = {self.folder / 'pgbouncer.log'}",
            f"pidfile = {self.folder / 'pgbouncer.pid'}",
            "", ]), encoding="utf-8")
        for path in self.folder.iterdir():
            _give(path, self.user)
        out = (self.folder / "stdout.log").open("ab")
        try:
            self.proc = subprocess.Popen([binary, str(ini)], user=self.user, stdout=out,
                                         stderr=out, start_new_session=True)
        finally:
            out.close()
        _wait_port(self.port, 30, "pgbouncer")

    def show(self, what: str) -> list[dict[str, Any]]:
        """``SHOW what`` on PgBouncer's admin console (``pools``, ``stats``, ...)."""
        import psycopg
        from psycopg.rows import dict_row

        with psycopg.connect(self.dsn("pgbouncer"), autocommit=True,
                             prepare_threshold=None, row_factory=dict_row) as conn:
            return list(conn.execute(f"SHOW {what}").fetchall())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@dataclass
class Cluster:
    """A primary, its standbys and (optionally) PgBouncer, all under ``root``."""

    root: Path
    primary: PgNode
    replicas: list[PgNode] = field(default_factory=list)
    bouncer: PgBouncer | None = None

    def describe(self) -> dict[str, Any]:
        """Ports and DSNs (``cluster.json``, what ``scripts/cluster-up.sh`` prints)."""
        return {"root": str(self.root), "primary": self.primary.dsn(),
                "replicas": [r.dsn() for r in self.replicas],
                "pgbouncer": self.bouncer.dsn() if self.bouncer else None,
                "primary_port": self.primary.port,
                "replica_ports": [r.port for r in self.replicas],
                "pgbouncer_port": self.bouncer.port if self.bouncer else None,
                "nodes": [{"name": n.name, "datadir": str(n.datadir), "port": n.port}
                          for n in [self.primary, *self.replicas]],
                "user": self.primary.user}

    def create_database(self, name: str) -> str:
        """A database with the vector extension on the primary (standbys replay both); its
        DSN on the primary."""
        self.primary.query(f'CREATE DATABASE "{name}"')
        self.primary.query("CREATE EXTENSION IF NOT EXISTS vector", name)
        return self.primary.dsn(name)

    def close(self, *, remove: bool = True) -> None:
        """Stop everything that still runs (and delete ``root`` unless ``remove`` is off)."""
        if self.bouncer is not None:
            self.bouncer.stop()
        for node in [*self.replicas, self.primary]:
            try:
                if node.running:
                    node.stop("immediate")
            except RuntimeError:
                pass
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)


def stop_cluster(root: Path) -> None:
    """Stop what :func:`start_cluster` started under ``root`` (from its ``cluster.json``), for
    a cluster whose starting process has exited (``scripts/cluster-up.sh --down``)."""
    info = json.loads((root / "cluster.json").read_text(encoding="utf-8"))
    pidfile = root / "pgbouncer" / "pgbouncer.pid"
    if pidfile.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pidfile.read_text(encoding="utf-8").strip()), 15)
    for node in reversed(info["nodes"]):
        pg = PgNode(node["name"], Path(node["datadir"]), int(node["port"]), info.get("user"))
        if pg.running:
            pg.stop("fast")


def start_cluster(root: Path, *, replicas: int = 1, pgbouncer: bool = False,
                  synchronous: bool = False, pool_size: int = 4,
                  ports: dict[str, int] | None = None) -> Cluster:
    """Start a primary with ``replicas`` hot standbys (and PgBouncer) under ``root`` (an
    empty or missing folder); ``ports`` may fix ``primary``, ``replica0``..., ``pgbouncer``.
    Writes ``root/cluster.json``. On failure everything started is stopped again."""
    ports = dict(ports or {})
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    user = _system_user()
    _give(root, user)
    primary = init_primary(root, ports.get("primary") or free_port(), user,
                           synchronous=synchronous)
    cluster = Cluster(root, primary)
    try:
        for i in range(replicas):
            cluster.replicas.append(add_standby(
                primary, root, ports.get(f"replica{i}") or free_port(), f"replica{i}"))
        if pgbouncer:
            cluster.bouncer = PgBouncer(root / "pgbouncer", ports.get("pgbouncer") or free_port(),
                                        primary.port, pool_size, user)
            cluster.bouncer.start()
    except BaseException:
        cluster.close(remove=False)
        raise
    (root / "cluster.json").write_text(json.dumps(cluster.describe(), indent=2) + "\n",
                                       encoding="utf-8")
    return cluster
