"""Load test of ``memorywire serve`` as users run it, over REST on loopback.

Defaults: the SQLite store, the default embedder (MiniLM), governance and token auth on, the
server's own rate limits, 8 closed-loop clients for 20 s. The mix is remember 50%, recall 35%,
forget 7%, gated remember + approve 8% (the reviewer approves each staged write at once;
a plain remember when governance is off).
There is no public "list memories" operation in v0, so listing is not part of the mix.

Every remember carries a client-chosen ``id``. After the run each acknowledged write is
checked: *lost* when re-remembering the id gives a different ``stored_at`` (the row was gone),
*duplicated* when one content appears under two ids in the agent's recall.

``--rate R`` switches to an open loop: requests arrive every 1/R s whatever the answers, and
latency counts from the planned arrival (no coordinated omission). ``--open-workers`` (32)
workers, each with one kept-alive connection, send them in schedule order; an arrival that
finds all busy waits, its wait counted in its latency, and the run's ``open_loop`` key
reports the deepest backlog and the starts later than 10 ms. (One task and connection per
request, as before, cost the client 5x the closed loop's CPU per op once the server lagged:
httpx's pool scans every waiting request on each release, so the generator starved the
server it measured.)

``--cluster DIR`` loads the running ``scripts/cluster-up.sh`` topology instead (clients spread
over its API servers) and adds each process's CPU seconds per operation
(``process_cpu_s_per_op``: API servers, the embedding service, PostgreSQL nodes with their
backends, PgBouncer) and the embedding service's counters.

``--anon-health N`` adds a phase where authenticated recall runs alone, then beside N
anonymous ``/v0/health`` clients, and reports both recall p99s. ``--store``/``--embedder``
repeat to compare setups in one run.

Results go to stdout (a table, or JSON with ``--json``) and to ``--out`` when given.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _load_cluster import load_cluster
from _load_server import (
    RunningServer,
    ServerSetup,
    cpu_seconds,
    embed_batching,
    otlp_sink,
    start_server,
)

MIX = (("remember", 0.50), ("recall", 0.35), ("forget", 0.07), ("remember_gated", 0.08))
MAX_REQUESTS = 200_000
MAX_SECONDS = 600.0
#: Open-loop workers (kept-alive connections): several times the requests in flight at the
#: rates this machine serves (~200/s at ~30 ms is ~6), so waiting means the server is behind.
OPEN_WORKERS = 32
#: A request that leaves this long after its planned arrival counts as a late start.
LATE_S = 0.010


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    throttled: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    error_codes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    requests: int = 0


@dataclass
class Ledger:
    """Acknowledged writes: id -> (agent, content, stored_at or None when approved later)."""

    acked: dict[str, tuple[str, str, int | None]] = field(default_factory=dict)
    live: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


async def _call(http: httpx.AsyncClient, method: str, path: str, op: str, st: Stats,
                doc: Any = None, headers: dict[str, str] | None = None,
                started: float | None = None) -> Any:
    """One request; latency counts from ``started`` (the planned arrival) when given."""
    t0 = time.perf_counter() if started is None else started
    st.requests += 1
    try:
        r = await http.request(method, path, json=doc, headers=headers)
    except httpx.HTTPError as exc:
        st.errors[op] += 1
        st.error_codes[type(exc).__name__] += 1
        return None
    if r.status_code == 429:
        st.throttled[op] += 1
        return None
    if r.status_code >= 400:
        st.errors[op] += 1
        st.error_codes[str(r.status_code)] += 1
        return None
    st.latencies[op].append(time.perf_counter() - t0)
    return r.json()


async def _one(http: httpx.AsyncClient, srv: RunningServer, rng: random.Random, agent: str,
               seq: str, st: Stats, ledger: Ledger, started: float | None = None) -> None:
    roll, acc, op = rng.random(), 0.0, "remember"
    for name, share in MIX:
        acc += share
        if roll < acc:
            op = name
            break
    live = ledger.live[agent]
    if (op == "forget" and not live) or (op == "remember_gated" and not srv.governance):
        op = "remember"
    h = srv.headers()
    if op in ("remember", "remember_gated"):
        mid = f"{agent}-{seq}"
        content = f"load {agent} note {seq} about topic{rng.randrange(50)}"
        doc: dict[str, Any] = {"agent_id": agent, "type": "semantic", "content": content,
                               "id": mid}
        if op == "remember_gated":
            doc["approval_required"] = True
        out = await _call(http, "POST", "/v0/remember", op, st, doc, h, started)
        if out is None:
            return
        if op == "remember_gated":
            ok = await _call(http, "POST", f"/v0/approvals/{out['id']}/approve", "approve", st,
                             {"reason": "load"}, srv.headers("reviewer"))
            if ok is None:
                return
            ledger.acked[mid] = (agent, content, None)
        else:
            ledger.acked[mid] = (agent, content, int(out["stored_at"]))
        live.append(mid)
    elif op == "recall":
        q = {"agent_id": agent, "query": f"what about topic{rng.randrange(50)}", "k": 10}
        await _call(http, "POST", "/v0/recall", op, st, q, h, started)
    else:
        victim = live.pop(rng.randrange(len(live)))
        out = await _call(http, "POST", "/v0/forget", op, st,
                          {"agent_id": agent, "ids": [victim]}, h, started)
        if out is not None:
            ledger.acked.pop(victim, None)
        else:
            live.append(victim)


async def _closed_loop(srv: RunningServer, clients: int, seconds: float, max_requests: int,
                       st: Stats, ledger: Ledger, agents: list[str]) -> None:
    end = time.perf_counter() + seconds

    async def client(n: int) -> None:
        rng = random.Random(n)
        bases = getattr(srv, "bases", [srv.base])  # a cluster: clients spread over its servers
        async with httpx.AsyncClient(base_url=bases[n % len(bases)], timeout=30) as http:
            i = 0
            while time.perf_counter() < end and st.requests < max_requests:
                await _one(http, srv, rng, agents[n % len(agents)], f"c{n}-{i}", st, ledger)
                i += 1

    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(client, n)


@dataclass
class Schedule:
    """How well the open loop kept its schedule: the backlog of arrived-but-unsent requests
    and how late requests left, so a run that fell behind says so beside its p99."""

    workers: int
    scheduled: int = 0
    max_queue_depth: int = 0
    late_starts: int = 0
    lags: list[float] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        return {"workers": self.workers, "scheduled": self.scheduled,
                "max_queue_depth": self.max_queue_depth, "late_threshold_ms": LATE_S * 1000,
                "late_starts": self.late_starts, "start_lag_p50_ms": _pct(self.lags, 50),
                "start_lag_p99_ms": _pct(self.lags, 99),
                "start_lag_max_ms": round(max(self.lags, default=0.0) * 1000, 2)}


async def _open_loop(srv: RunningServer, rate: float, seconds: float, max_requests: int,
                     st: Stats, ledger: Ledger, agents: list[str],
                     sched: Schedule | None = None) -> None:
    """Request ``i`` arrives at ``t0 + i / rate`` whatever the answers. A fixed pool of
    workers, each with one kept-alive connection, takes arrivals in schedule order; when all
    are busy the arrivals wait (a virtual queue: the schedule itself) and their latency keeps
    counting from the planned time. One task and one connection per request, as before,
    made the generator's own CPU grow with the backlog until it starved the server."""
    sched = sched or Schedule(OPEN_WORKERS)
    total = min(int(rate * seconds), max_requests)
    sched.scheduled = total
    nxt = 0

    async def worker(w: int, http: httpx.AsyncClient) -> None:
        nonlocal nxt
        rng = random.Random(7000 + w)
        while nxt < total:
            i, nxt = nxt, nxt + 1
            planned = t0 + i / rate
            now = time.perf_counter()
            if planned > now:
                await anyio.sleep(planned - now)
                now = time.perf_counter()
            else:  # arrived while every worker was busy: it waited in the queue
                arrived = min(total, int((now - t0) * rate) + 1)
                sched.max_queue_depth = max(sched.max_queue_depth, arrived - i)
            lag = now - planned
            sched.lags.append(max(lag, 0.0))
            if lag > LATE_S:
                sched.late_starts += 1
            await _one(http, srv, rng, agents[i % len(agents)], f"o{i}", st, ledger, planned)

    # Clients are built before the clock starts: each costs milliseconds (httpx makes an SSL
    # context even for http), which would otherwise read as the first arrivals' queueing.
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(
            httpx.AsyncClient(base_url=srv.base, timeout=30,
                              limits=httpx.Limits(max_connections=1)))
            for _ in range(min(sched.workers, max(total, 1)))]
        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for w, http in enumerate(clients):
                tg.start_soon(worker, w, http)


async def _verify(srv: RunningServer, ledger: Ledger) -> tuple[int, int]:
    lost = dup = 0
    verify_start = int(time.time() * 1000)
    items = list(ledger.acked.items())
    st = Stats()

    async def check(chunk: list[tuple[str, tuple[str, str, int | None]]]) -> None:
        nonlocal lost
        async with httpx.AsyncClient(base_url=srv.base, timeout=60) as http:
            for mid, (agent, content, stored_at) in chunk:
                doc = {"agent_id": agent, "type": "semantic", "content": content, "id": mid}
                again = await _call(http, "POST", "/v0/remember", "verify", st, doc,
                                    srv.headers())
                if again is None or _moved(int(again["stored_at"]), stored_at, verify_start):
                    lost += 1

    async with anyio.create_task_group() as tg:
        for w in range(8):
            tg.start_soon(check, items[w::8])
    async with httpx.AsyncClient(base_url=srv.base, timeout=60) as http:
        for agent in {a for a, _, _ in ledger.acked.values()}:
            got = await _call(http, "POST", "/v0/recall", "verify", st,
                              {"agent_id": agent, "query": "load note", "k": 1000},
                              srv.headers())
            contents = [h["content"] for h in (got or {}).get("results", [])]
            dup += len(contents) - len(set(contents))
    return lost, dup


def _moved(now_at: int, acked_at: int | None, verify_start: int) -> bool:
    """A re-remember that stores anew means the acknowledged row was gone."""
    if acked_at is None:  # approved later: its stored_at was never seen by the client
        return now_at >= verify_start
    return now_at != acked_at


async def _recall_p99(srv: RunningServer, clients: int, seconds: float, anon: int,
                      agents: list[str]) -> dict[str, Any]:
    st = Stats()
    end = time.perf_counter() + seconds

    async def recaller(n: int) -> None:
        rng = random.Random(100 + n)
        async with httpx.AsyncClient(base_url=srv.base, timeout=30) as http:
            while True:  # at least one call, however late the task starts on a busy machine
                q = {"agent_id": agents[n % len(agents)], "k": 10,
                     "query": f"topic{rng.randrange(50)}"}
                await _call(http, "POST", "/v0/recall", "recall", st, q, srv.headers())
                if time.perf_counter() >= end:
                    break

    async def flooder() -> None:
        async with httpx.AsyncClient(base_url=srv.base, timeout=30) as http:
            while True:
                await _call(http, "GET", "/v0/health", "health", st)
                if time.perf_counter() >= end:
                    break

    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(recaller, n)
        for _ in range(anon):
            tg.start_soon(flooder)
    return {"recall_p99_ms": _pct(st.latencies["recall"], 99),
            "recalls": len(st.latencies["recall"]), "recall_throttled": st.throttled["recall"],
            "health_calls": len(st.latencies["health"]), "errors": sum(st.errors.values())}


def _pct(xs: list[float], p: float) -> float:
    return round(float(np.percentile(np.array(xs) * 1000, p)), 2) if xs else 0.0


def run_setup(setup: ServerSetup, args: argparse.Namespace) -> dict[str, Any]:
    agents = [f"agent-{n}" for n in range(max(args.clients, 8))]
    home = Path(tempfile.mkdtemp(prefix="mw-load-"))
    cluster = getattr(args, "cluster", None)  # load_ab builds its own Namespace, without it
    srv: Any = load_cluster(Path(cluster)) if cluster else \
        start_server(setup, home, agents)
    procs0: dict[str, float] = {}
    procs: dict[str, float] | None = None
    st, ledger = Stats(), Ledger()
    seconds = args.duration
    try:
        async def warm() -> None:  # first model call and first scope load are not the steady state
            async with httpx.AsyncClient(base_url=srv.base, timeout=60) as http:
                for agent in agents:
                    await _call(http, "POST", "/v0/recall", "warm", Stats(),
                                {"agent_id": agent, "query": "warm up", "k": 1}, srv.headers())

        anyio.run(warm)
        cpu0 = cpu_seconds(srv.process.pid) if not cluster else 0.0
        if cluster:
            procs0 = srv.cpu()
        self0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        sched = Schedule(getattr(args, "open_workers", OPEN_WORKERS)) if args.rate else None
        if sched is not None:
            anyio.run(_open_loop, srv, args.rate, seconds, args.max_requests, st, ledger, agents,
                      sched)
        else:
            anyio.run(_closed_loop, srv, args.clients, seconds, args.max_requests, st, ledger,
                      agents)
        elapsed = time.perf_counter() - t0
        if cluster:
            ops = max(sum(len(x) for x in st.latencies.values()), 1)
            used = {k: v - procs0[k] for k, v in srv.cpu().items()}
            procs = {k: round(v / ops, 5) for k, v in used.items()}
            server_cpu = sum(v for k, v in used.items() if k.startswith("serve"))
        else:
            server_cpu = cpu_seconds(srv.process.pid) - cpu0
        self1 = resource.getrusage(resource.RUSAGE_SELF)
        client_cpu = (self1.ru_utime - self0.ru_utime) + (self1.ru_stime - self0.ru_stime)
        lost, dup = anyio.run(_verify, srv, ledger)
        anon = None
        if args.anon_health:
            phase = args.anon_seconds
            alone = anyio.run(_recall_p99, srv, args.clients, phase, 0, agents)
            flooded = anyio.run(_recall_p99, srv, args.clients, phase, args.anon_health, agents)
            p99a, p99f = alone["recall_p99_ms"], flooded["recall_p99_ms"]
            anon = {"anonymous_clients": args.anon_health, "seconds_each": phase,
                    "recall_p99_ms_alone": p99a, "recall_p99_ms_flooded": p99f,
                    "ratio": round(p99f / p99a, 2) if p99a else None,
                    "alone": alone, "flooded": flooded}
        batching = embed_batching(srv.base)
    finally:
        srv.stop()
        # the server's home (database, keys, audit) is this run's alone: a benchmark that
        # leaves it behind fills /tmp after a few hundred runs
        shutil.rmtree(home, ignore_errors=True)
    everything = [x for xs in st.latencies.values() for x in xs]
    done = len(everything)
    return {
        "setup": setup.describe(),
        "mode": f"open loop {args.rate}/s" if args.rate else f"closed loop, {args.clients} clients",
        "seconds": round(elapsed, 2),
        "throughput_ops_s": round(done / elapsed, 1),
        "p50_ms": _pct(everything, 50), "p95_ms": _pct(everything, 95),
        "p99_ms": _pct(everything, 99),
        "errors": sum(st.errors.values()), "error_codes": dict(st.error_codes),
        "throttled": sum(st.throttled.values()),
        "acknowledged_writes": len(ledger.acked), "lost": lost, "duplicated": dup,
        "server_cpu_s_per_op": round(server_cpu / done, 5) if done else None,
        "client_cpu_s_per_op": round(client_cpu / done, 5) if done else None,
        "operations": {
            op: {"count": len(xs), "errors": st.errors[op], "throttled": st.throttled[op],
                 "p50_ms": _pct(xs, 50), "p95_ms": _pct(xs, 95), "p99_ms": _pct(xs, 99)}
            for op, xs in sorted(st.latencies.items())
        },
        "anon_health": anon,
        "embed_batching": batching,
        # --cluster: CPU seconds per operation of each process of the topology
        "process_cpu_s_per_op": procs,
        "embed_service": srv.embed_stats() if cluster else None,
        "open_loop": sched.report() if sched is not None else None,
    }


def _machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
            "platform": platform.platform(), "python": platform.python_version()}


def _print_table(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    for r in report["runs"]:
        s = r["setup"]
        t = Table("op", "count", "errors", "429", "p50 ms", "p95 ms", "p99 ms", title=(
            f"{s['store']} + {s['embedder']}, governance {s['governance']}, auth {s['auth']}, "
            f"{r['mode']}: {r['throughput_ops_s']} ops/s, lost {r['lost']}, "
            f"duplicated {r['duplicated']}, server CPU {r['server_cpu_s_per_op']} s/op"))
        for op, o in r["operations"].items():
            t.add_row(op, str(o["count"]), str(o["errors"]), str(o["throttled"]),
                      str(o["p50_ms"]), str(o["p95_ms"]), str(o["p99_ms"]))
        Console().print(t)
        if r["anon_health"]:
            a = r["anon_health"]
            Console().print(f"recall p99 alone {a['recall_p99_ms_alone']} ms, with "
                            f"{a['anonymous_clients']} anonymous health clients "
                            f"{a['recall_p99_ms_flooded']} ms (x{a['ratio']})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--clients", type=int, default=8, help="closed-loop clients (max 64)")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of load (max 600)")
    ap.add_argument("--rate", type=float, help="open loop: requests per second")
    ap.add_argument("--open-workers", type=int, default=OPEN_WORKERS,
                    help="open loop: workers, one kept-alive connection each (max 256)")
    ap.add_argument("--max-requests", type=int, default=MAX_REQUESTS)
    ap.add_argument("--store", action="append", help="sqlite (default), memory, or a URL")
    ap.add_argument("--embedder", action="append", help="minilm (default) or hashing")
    ap.add_argument("--no-governance", action="store_true")
    ap.add_argument("--no-auth", action="store_true")
    ap.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE",
                    help="environment for the server, e.g. MEMORYWIRE_RECALL_RATE=100000")
    ap.add_argument("--tracing", choices=["off", "on", "both"], default="off",
                    help="OpenTelemetry tracing in the server, exporting to a local OTLP sink;"
                         " 'both' runs each setup without and with it")
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat every setup this many times, interleaved (max 10)")
    ap.add_argument("--anon-health", type=int, default=0, metavar="N",
                    help="also measure recall p99 with N anonymous /v0/health clients")
    ap.add_argument("--anon-seconds", type=float, default=10.0)
    ap.add_argument("--note", default="", help="free text recorded in the report")
    ap.add_argument("--cluster", metavar="DIR",
                    help="load the running scripts/cluster-up.sh topology in DIR instead of "
                         "starting a server; reports each process's CPU per operation")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", help="also write the JSON report to this file")
    args = ap.parse_args(argv)
    # A killed benchmark must still stop its server (the finally blocks run on SystemExit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # a value out of range is refused, naming the flag, rather than quietly clamped
    for flag, value, lo, hi in (("--clients", args.clients, 1, 64),
                                ("--open-workers", args.open_workers, 1, 256),
                                ("--max-requests", args.max_requests, 1, MAX_REQUESTS),
                                ("--duration", args.duration, 0.1, MAX_SECONDS),
                                ("--anon-seconds", args.anon_seconds, 0.1, MAX_SECONDS),
                                ("--rounds", args.rounds, 1, 10)):
        if not lo <= value <= hi:
            ap.error(f"{flag} must be between {lo} and {hi}, got {value}")
    if args.rate is not None and not 0 < args.rate <= 10_000:
        ap.error(f"--rate must be between 0 (exclusive) and 10000, got {args.rate}")
    server_env = dict(kv.split("=", 1) for kv in args.server_env)
    machine = _machine()
    sink_url, sink = otlp_sink()
    tracing = {"off": [False], "on": [True], "both": [False, True]}[args.tracing]
    setups = [
        ServerSetup(store, embedder, not args.no_governance, not args.no_auth,
                    {**server_env, **({"MEMORYWIRE_TRACING": "true",
                                       "OTEL_EXPORTER_OTLP_ENDPOINT": sink_url} if t else {})})
        for store in (args.store or ["sqlite"])
        for embedder in (args.embedder or ["minilm"])
        for t in tracing
    ]
    try:
        runs = [run_setup(setup, args) for _ in range(args.rounds)
                for setup in setups]
    finally:
        sink.shutdown()
    first = runs[0]
    report = {key: first[key] for key in ("throughput_ops_s", "p50_ms", "p99_ms", "lost",
                                          "duplicated", "setup")}
    report.update(machine=machine, note=args.note, runs=runs)
    if args.tracing == "both":
        def median(traced: bool) -> float:
            xs = [r["throughput_ops_s"] for r in runs
                  if r["setup"]["tracing"] == traced]
            return float(np.median(xs))

        report["tracing_cost"] = {
            "throughput_median_off": median(False), "throughput_median_on": median(True),
            "throughput_loss": round(1 - median(True) / median(False), 3)}
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_table(report)
    return 0 if all(r["lost"] == 0 and r["duplicated"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
