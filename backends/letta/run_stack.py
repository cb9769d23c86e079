"""Start, on loopback, everything a real Letta server needs offline; stop it all on SIGTERM.

PostgreSQL 16 + pgvector comes from the ``pgserver`` wheel (Letta has no SQLite fallback for
archives). The Letta 0.16.8 wheel ships no migrations, so its tables are made from its own ORM
metadata. Embeddings come from ``backends/embed_server.py`` (real MiniLM). When everything
answers, the Letta base URL is written to the ready file; the caller polls for it.

Usage: python backends/letta/run_stack.py WORKDIR LETTA_PORT EMBED_PORT READY_FILE
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

HERE = Path(__file__).resolve().parent


def _wait_http(url: str, seconds: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status < 500:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer within {seconds:.0f}s")


def _make_schema(uri: str) -> None:
    import sqlalchemy as sa

    # Letta picks pgvector or SQLite column types from this setting at import time.
    os.environ["LETTA_PG_URI"] = uri
    from letta.orm import Base

    engine = sa.create_engine(uri.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
    Base.metadata.create_all(engine)
    # ``messages.sequence_id`` is filled by the database (``FetchedValue``): Letta's migrations
    # give it a sequence that the ORM metadata does not carry. Without it no agent can be
    # created (its first system message fails NOT NULL); the native-import tests create one.
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE SEQUENCE IF NOT EXISTS message_seq_id"))
        conn.execute(sa.text("ALTER TABLE messages ALTER COLUMN sequence_id "
                             "SET DEFAULT nextval('message_seq_id')"))
    engine.dispose()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    workdir, ready = Path(sys.argv[1]), Path(sys.argv[2])
    letta_port, embed_port = _free_port(), _free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    workdir.chmod(0o755)  # postgres runs as an unprivileged user when we are root
    ready.unlink(missing_ok=True)
    children: list[subprocess.Popen[bytes]] = []
    stop = {"now": False}

    def _on_signal(signum: int, frame: object) -> None:
        stop["now"] = True

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver.postgres_server import get_server
    pg = get_server(workdir / "pgdata", cleanup_mode="stop")
    try:
        admin = pg.get_uri()
        # pgserver's URI names the socket directory as the host; Letta's drivers accept that.
        pg.psql("CREATE DATABASE letta;") if "letta" not in pg.psql(
            "SELECT datname FROM pg_database;") else None
        parts = urlsplit(admin)
        uri = urlunsplit((parts.scheme, parts.netloc, "/letta", parts.query, ""))
        # Letta rebuilds the URI and drops a user that has no host beside it: say it twice.
        letta_uri = uri + "&user=postgres"
        _make_schema(uri)
        env = dict(os.environ, OPENAI_API_KEY="offline-not-used", LETTA_PG_URI=letta_uri,
                   LETTA_TELEMETRY_ENABLE_DATADOG="false", HF_HUB_OFFLINE="1")
        log = (workdir / "embed.log").open("ab")
        children.append(subprocess.Popen(
            [sys.executable, str(HERE.parent / "embed_server.py"), str(embed_port)],
            stdout=log, stderr=subprocess.STDOUT, env=env))
        _wait_http(f"http://127.0.0.1:{embed_port}/health", 120, children[-1])
        log = (workdir / "letta.log").open("ab")
        children.append(subprocess.Popen(
            [str(Path(sys.executable).parent / "letta"), "server", "--host", "127.0.0.1",
             "--port", str(letta_port)],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir))
        _wait_http(f"http://127.0.0.1:{letta_port}/v1/health/", 240, children[-1])
        partial = ready.with_suffix(".partial")
        # Third line: Letta's own database, so tests can prove a hard delete left no bytes.
        partial.write_text(
            f"http://127.0.0.1:{letta_port}\nhttp://127.0.0.1:{embed_port}/v1\n{uri}\n",
            encoding="utf-8",
        )
        partial.replace(ready)
        while not stop["now"]:
            for child in children:
                if child.poll() is not None:
                    print(f"{child.args!r} died with {child.returncode}", file=sys.stderr)
                    return 1
            time.sleep(0.5)
        return 0
    finally:
        for child in reversed(children):
            if child.poll() is None:
                child.terminate()
                try:
                    child.wait(20)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
        pg.cleanup()


if __name__ == "__main__":
    sys.exit(main())
