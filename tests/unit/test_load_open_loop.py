"""benchmarks/load.py's open loop against a server slower than the arrival rate: requests
that wait for a free worker are reported with that wait in their latency (no coordinated
omission), and the schedule report shows the backlog.

Only lower bounds are asserted: a loaded machine makes every request later, never earlier.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from load import Ledger, Schedule, Stats, _open_loop

SERVICE_S = 0.1  # each answer takes at least this long, one at a time
RATE = 40.0  # four times what the server can answer
SECONDS = 0.5


class _Slow(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        threading.Event().wait(SERVICE_S)
        body = json.dumps({"id": "x", "stored_at": 1, "results": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


class _Target:
    """What ``_one`` needs of a running server."""

    governance = False

    def __init__(self, base: str) -> None:
        self.base = base

    def headers(self, role: str = "agent") -> dict[str, str]:
        return {}


def test_open_loop_counts_the_queue_wait_from_the_planned_arrival() -> None:
    server = HTTPServer(("127.0.0.1", 0), _Slow)  # one request at a time
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        st, ledger, sched = Stats(), Ledger(), Schedule(workers=1)
        target: Any = _Target(f"http://127.0.0.1:{server.server_address[1]}")
        anyio.run(_open_loop, target, RATE, SECONDS, 1000, st, ledger, ["agent-0"], sched)
    finally:
        server.shutdown()
        server.server_close()
    n = int(RATE * SECONDS)
    latencies = [x for xs in st.latencies.values() for x in xs]
    assert len(latencies) == n == sched.scheduled
    # The last request could not start before the n - 1 answers ahead of it were given, and
    # its own took SERVICE_S more; it was planned (n - 1) / RATE after the first.
    floor = n * SERVICE_S - (n - 1) / RATE
    assert max(latencies) >= floor
    assert sched.max_queue_depth >= 2 and sched.late_starts >= n - 2
    assert sched.report()["start_lag_max_ms"] >= (floor - SERVICE_S) * 1000
