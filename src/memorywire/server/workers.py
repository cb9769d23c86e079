"""Several ``serve`` processes on one port (``workers``).

One Python process serves at most one core: the model call, SQLite and the HTTP stack all
hold the GIL for most of a request, so on a machine with spare cores a single process is the
ceiling. With ``workers = N`` the parent claims the port and starts N worker processes
(spawned, not forked: a fork would copy the model's thread pools half-initialised), each
listening on the port with ``SO_REUSEPORT``; the kernel hands each new connection to one of
them by a hash of the client's address. Each
worker opens its own runtime (store, governance, tokens, model) exactly as a single server
does, so what makes several workers correct is what already makes several servers on one
database correct: every store and governance write is one exclusive transaction that reads
the state it extends (chain head, queue row, scope version) inside it.

That holds only for stores that live outside the process. :func:`worker_count` refuses more
than one worker on a store that does not (``memory://``, ``sqlite://:memory:``) or is not
known to be safe, naming the option, and ``auto`` picks one worker for them.

What stays per worker, by design (docs/decisions.md): rate limits are divided by N, so the
buckets of all workers together allow the configured rate; ``/metrics`` answers for the
worker that took the connection, each series labelled ``worker``; the expiry sweeper and the
router's outbox courier run in worker 0 only, so a purge is not done (and receipted) twice.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from memorywire.errors import ERROR_CODES, InvalidRequest, MemorywireError
from memorywire.server.config import ServerConfig

__all__ = ["auto_workers", "cpus", "per_worker", "serve_workers", "shareable", "worker_count"]

#: Most workers ``auto`` starts: each loads the model (~250 MB), and more processes contend
#: for SQLite's one write lock; a larger machine names its count.
AUTO_MAX = 2

Ready = Callable[[ServerConfig, list[tuple[str, str]]], None]


def cpus() -> int:
    """CPUs this process may run on (a container's or taskset's limit, not the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _scheme(url: str) -> str:
    return url.split(":", 1)[0].split("+", 1)[0].lower()


def _sqlite_in_memory(url: str) -> bool:
    """``sqlite://``, ``sqlite://:memory:`` (store/sqlite/url.py's reading; the server layer
    does not import a backend)."""
    rest = url.partition("://")[2].split("?", 1)[0]
    return rest in ("", ":memory:", "/:memory:")


def shareable(config: ServerConfig) -> str | None:
    """``None`` when processes can share this resolved configuration's databases, else why
    not (a sentence naming the store)."""
    if config.stores:
        return ("several stores behind a router are not verified for several processes "
                "(the router's outbox and per-child deadlines are per process)")
    url = config.store
    scheme = _scheme(url)
    if scheme in ("sqlite", "sqlite-vec"):
        if _sqlite_in_memory(url):
            return f"the store {url!r} lives in one process's memory"
    elif scheme not in ("postgres", "postgresql"):
        if scheme == "memory":
            return f"the store {url!r} lives in one process's memory"
        return f"the store scheme {scheme!r} is not known to be safe for several processes"
    if config.governance_db in (":memory:",):
        return "the governance database ':memory:' lives in one process's memory"
    return None


def auto_workers(config: ServerConfig) -> int:
    """What ``workers = "auto"`` means for this resolved configuration."""
    if shareable(config) is not None:
        return 1
    return max(1, min(AUTO_MAX, cpus()))


def worker_count(config: ServerConfig) -> int:
    """The number of processes to serve a resolved configuration with; refuses more than one
    on a store processes cannot share, naming the option."""
    raw = config.workers.strip().lower()
    if raw == "auto":
        return auto_workers(config)
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise InvalidRequest(f"workers must be auto or a whole number >= 1 "
                             f"(got {config.workers!r})")
    why = shareable(config) if n > 1 else None
    if why is not None:
        raise InvalidRequest(
            f"workers = {n} needs a store every worker process can open, but {why}; "
            "each worker would serve its own copy. Use workers = 1 (--workers 1) or a "
            "sqlite file / postgresql store")
    return n


def per_worker(config: ServerConfig, n: int) -> ServerConfig:
    """The configuration one of ``n`` workers runs: each rate limit divided by ``n`` (bursts
    rounded up), so all workers' buckets together allow the configured rate."""
    if n <= 1:
        return config
    return replace(
        config,
        recall_rate=config.recall_rate / n,
        recall_burst=max(1, math.ceil(config.recall_burst / n)),
        write_rate=config.write_rate / n,
        write_burst=max(1, math.ceil(config.write_burst / n)),
        anonymous_rate=config.anonymous_rate / n,
        anonymous_burst=max(1, math.ceil(config.anonymous_burst / n)),
    )


def _socket(host: str, port: int) -> socket.socket:
    """A TCP socket on ``host:port`` in the port's ``SO_REUSEPORT`` group (not listening)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise InvalidRequest(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    return sock


def _listen(host: str, port: int) -> socket.socket:
    """A worker's own listening socket. Each worker has one and the kernel spreads new
    connections over them by a hash of the client's address, so they are balanced at once;
    one shared socket would let whichever worker wakes first accept a whole burst."""
    sock = _socket(host, port)
    sock.listen(2048)
    return sock


def _claim(host: str, port: int) -> tuple[socket.socket, Any]:
    """Hold the port for this server: a bound (never listening) socket, so anything else
    binding it without ``SO_REUSEPORT`` fails, and a lock file, so a second multi-worker
    ``serve`` of the same user on the same port fails instead of silently sharing it."""
    import fcntl
    import tempfile
    from pathlib import Path

    runtime = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    name = f"memorywire-{os.getuid()}-{host.strip('[]').replace(':', '_')}-{port}.lock"
    try:
        lock = open(Path(runtime) / name, "a+b")  # noqa: SIM115  held until the server stops
    except OSError as exc:
        raise InvalidRequest(f"cannot claim {host}:{port}: lock file {exc.filename}: "
                             f"{exc.strerror}") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        raise InvalidRequest(f"cannot listen on {host}:{port}: another memorywire serve "
                             "holds it") from None
    try:
        return _socket(host, port), lock
    except BaseException:
        lock.close()
        raise


@dataclass(frozen=True)
class _Job:
    config: ServerConfig
    index: int
    count: int
    log_level: str
    #: ``server.app.run_server``, handed in (pickled by name) so this module need not import
    #: the app that imports it.
    run: Callable[..., None]


def _worker_main(job: _Job, report: Any, go: Any) -> None:
    """One worker: open the runtime, tell the parent, and once every worker is ready (the
    parent has printed where the server is), listen and serve until told to stop."""
    def ready(cfg: ServerConfig, where: list[tuple[str, str]]) -> None:
        report.put(("ready", job.index, where, cfg))

    def listen() -> socket.socket:
        go.wait()
        return _listen(job.config.host, job.config.port)

    try:
        job.run(per_worker(job.config, job.count), on_ready=ready, log_level=job.log_level,
                listen=listen, worker=(job.index, job.count))
    except MemorywireError as exc:
        report.put(("error", job.index, exc.code, exc.message))
        raise SystemExit(2) from None
    except BaseException as exc:
        report.put(("error", job.index, "internal_error", f"{type(exc).__name__}: {exc}"))
        raise


def _error(code: str, message: str) -> MemorywireError:
    return ERROR_CODES.get(code, MemorywireError)(message)


def serve_workers(config: ServerConfig, n: int, *, run: Callable[..., None],
                  on_ready: Ready | None, log_level: str) -> None:
    """Run ``run`` (``server.app.run_server``) in ``n`` workers: claim the port, start
    them, wait for all to be ready (``on_ready`` once), then for one to exit or for a
    signal, and stop the rest. A worker that fails makes the whole server fail with its
    error."""
    import queue

    ctx = multiprocessing.get_context("spawn")
    report = ctx.Queue()
    go = ctx.Event()
    held, lock = _claim(config.host, config.port)
    procs = [ctx.Process(target=_worker_main, name=f"memorywire-worker-{i}",
                         args=(_Job(config, i, n, log_level, run), report, go))
             for i in range(n)]
    stop = False

    def on_signal(signum: int, _frame: Any) -> None:
        nonlocal stop
        stop = True

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for p in procs:
            p.start()
        waiting = set(range(n))
        failure: MemorywireError | None = None
        while waiting and not stop and failure is None:
            try:
                msg = report.get(timeout=0.5)
            except queue.Empty:
                if any(p.exitcode is not None for p in procs):
                    try:  # its error, if it sent one before exiting
                        msg = report.get(timeout=2)
                    except queue.Empty:
                        failure = MemorywireError("a worker exited during start-up")
                        continue
                else:
                    continue
            if msg[0] == "ready":
                waiting.discard(msg[1])
                if not waiting:
                    if on_ready is not None:
                        on_ready(msg[3], msg[2])
                    go.set()
            else:
                failure = _error(msg[2], f"worker {msg[1]}: {msg[3]}")
        if failure is not None:
            raise failure
        while not stop and all(p.exitcode is None for p in procs):
            for p in procs:
                p.join(0.5)
                if stop or p.exitcode is not None:
                    break
        gone = [(i, p.exitcode) for i, p in enumerate(procs) if p.exitcode is not None]
        if not stop and gone:
            with contextlib.suppress(queue.Empty):  # its own error, if it could send one
                msg = report.get(timeout=1)
                if msg[0] == "error":
                    raise _error(msg[2], f"worker {msg[1]} stopped the server: {msg[3]}")
            raise MemorywireError(f"worker {gone[0][0]} exited (code {gone[0][1]}); "
                                  "the other workers were stopped")
    finally:
        _stop(procs)
        for s, handler in old.items():
            signal.signal(s, handler)
        report.close()
        held.close()
        lock.close()


def _stop(procs: list[Any]) -> None:
    """SIGTERM every live worker (uvicorn then finishes its requests and closes the runtime),
    then wait; one that does not stop in time is killed."""
    for p in procs:
        if p.exitcode is None and p.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGTERM)
    for p in procs:
        if p.pid is None:
            continue
        p.join(30)
        if p.exitcode is None:
            p.kill()
            p.join(5)
