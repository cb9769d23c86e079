#!/usr/bin/env bash
# The deployment of docs/deploy.md on one machine, on loopback: a PostgreSQL primary, hot
# standbys streaming from it (pg_basebackup of pgserver's bundled binaries, or of
# MEMORYWIRE_PG_BIN), PgBouncer in transaction mode in front of the primary, one
# `memorywire embed serve` and N `memorywire serve` processes that embed through it, read
# from a standby and write (store and governance) through PgBouncer.
#
#   scripts/cluster-up.sh [--dir DIR] [--servers N] [--replicas R] [--spec minilm|hashing]
#                         [--pool N]
#   scripts/cluster-up.sh --down DIR
#
# Prints DIR/cluster.env (URLs, the store URL, tokens) when everything answers. Logs and
# pid files stay in DIR. Trust authentication and loopback only: for tests and benchmarks,
# never for a deployment. Needs pgserver (pip install pgserver) and pgbouncer (Debian).
set -Eeuo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$here/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
export PYTHONPATH="$here/src${PYTHONPATH:+:$PYTHONPATH}"

dir="" servers=2 replicas=1 spec="minilm" pool=8 down=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir="$2"; shift 2 ;;
        --servers) servers="$2"; shift 2 ;;
        --replicas) replicas="$2"; shift 2 ;;
        --spec) spec="$2"; shift 2 ;;
        --pool) pool="$2"; shift 2 ;;
        --down) down="$2"; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "cluster-up: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

stop_dir() {
    local d="$1" pid
    for f in "$d"/*.pid; do
        [ -e "$f" ] || continue
        pid="$(cat "$f")"
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$f"
    done
    if [ -e "$d/pg/cluster.json" ]; then
        "$PY" -c "import sys; from pathlib import Path
from memorywire.testing.pg_cluster import stop_cluster
stop_cluster(Path(sys.argv[1]))" "$d/pg"
    fi
}

if [ -n "$down" ]; then
    stop_dir "$down"
    echo "cluster-up: stopped everything under $down"
    exit 0
fi

case "$servers$replicas$pool" in *[!0-9]*) echo "cluster-up: counts must be numbers" >&2; exit 2 ;; esac
[ "$servers" -ge 1 ] || { echo "cluster-up: --servers must be at least 1" >&2; exit 2; }
[ "$replicas" -ge 1 ] || { echo "cluster-up: --replicas must be at least 1" >&2; exit 2; }
[ -n "$dir" ] || dir="$(mktemp -d /tmp/memorywire-cluster-XXXXXX)"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
trap 'echo "cluster-up: failed; stopping what started (logs in $dir)" >&2; stop_dir "$dir"' ERR

free_port() { "$PY" -c "from memorywire.testing.pg_cluster import free_port; print(free_port())"; }

# 1. PostgreSQL primary + standbys + PgBouncer, one database with pgvector, and API tokens
"$PY" - "$dir" "$replicas" "$pool" <<'EOF'
import json, sys
from pathlib import Path
from memorywire.server.auth import TokenStore
from memorywire.testing.pg_cluster import start_cluster

root, replicas, pool = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cluster = start_cluster(root / "pg", replicas=replicas, pgbouncer=True, pool_size=pool)
cluster.create_database("memorywire")
tokens = TokenStore(root / "tokens.db")
try:
    agent, _ = tokens.create(role="agent", agent_ids=["a", *(f"agent-{i}" for i in range(1000))],
                             name="cluster-agent")
    reviewer, _ = tokens.create(role="reviewer", name="cluster-reviewer")
    admin, _ = tokens.create(role="admin", name="cluster-admin")
finally:
    tokens.close()
(root / "tokens.json").write_text(json.dumps({"agent": agent, "reviewer": reviewer,
                                              "admin": admin}))
EOF

pg_json="$dir/pg/cluster.json"
field() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
bouncer_port="$(field "$pg_json" pgbouncer_port)"
primary_port="$(field "$pg_json" primary_port)"
replica_hosts="$("$PY" -c "import json,sys; print(','.join('127.0.0.1:%d' % p for p in json.load(open(sys.argv[1]))['replica_ports']))" "$pg_json")"
store_url="postgresql://postgres@127.0.0.1:$bouncer_port/memorywire?replicas=$replica_hosts&pool_max=8"
# governance keeps no session state either (docs/decisions.md, pgb35): one pooler for both
governance_url="postgresql://postgres@127.0.0.1:$bouncer_port/memorywire"

wait_for() {  # URL, what, log, pid: poll until it answers 200 (or the process is gone)
    for _ in $(seq 1 300); do
        if "$PY" -c "import httpx,sys; sys.exit(httpx.get(sys.argv[1], timeout=2).status_code != 200)" "$1" 2>/dev/null; then
            return 0
        fi
        kill -0 "$4" 2>/dev/null || break
        sleep 0.3
    done
    echo "cluster-up: $2 did not answer at $1; its log:" >&2; tail -n 30 "$3" >&2; return 1
}

# 2. the embedding service
embed_port="$(free_port)"
"$PY" -m memorywire.cli embed serve --host 127.0.0.1 --port "$embed_port" --spec "$spec" \
    > "$dir/embed.log" 2>&1 &
echo $! > "$dir/embed.pid"
wait_for "http://127.0.0.1:$embed_port/health" "embed serve" "$dir/embed.log" "$(cat "$dir/embed.pid")"
embedder="openai:http://127.0.0.1:$embed_port/v1#$spec"

# 3. the API servers
urls=()
for i in $(seq 1 "$servers"); do
    port="$(free_port)"
    MEMORYWIRE_HOME="$dir/home$i" MEMORYWIRE_EMBEDDER="$embedder" \
        "$PY" -m memorywire.cli serve --host 127.0.0.1 --port "$port" --store "$store_url" \
        --governance-db "$governance_url" --tokens-db "$dir/tokens.db" \
        > "$dir/serve$i.log" 2>&1 &
    echo $! > "$dir/serve$i.pid"
    urls+=("http://127.0.0.1:$port")
done
for i in $(seq 1 "$servers"); do
    wait_for "${urls[$((i - 1))]}/v0/health" "serve $i" "$dir/serve$i.log" "$(cat "$dir/serve$i.pid")"
done

{
    echo "MEMORYWIRE_CLUSTER_DIR='$dir'"
    echo "MEMORYWIRE_SERVERS='${urls[*]}'"
    echo "MEMORYWIRE_EMBEDDER='$embedder'"
    echo "MEMORYWIRE_STORE_URL='$store_url'"
    echo "MEMORYWIRE_GOVERNANCE_URL='$governance_url'"
    echo "MEMORYWIRE_PRIMARY_PORT='$primary_port'"
    echo "MEMORYWIRE_PGBOUNCER_PORT='$bouncer_port'"
    echo "MEMORYWIRE_REPLICAS='$replica_hosts'"
    echo "MEMORYWIRE_AGENT_TOKEN='$(field "$dir/tokens.json" agent)'"
    echo "MEMORYWIRE_REVIEWER_TOKEN='$(field "$dir/tokens.json" reviewer)'"
    echo "MEMORYWIRE_ADMIN_TOKEN='$(field "$dir/tokens.json" admin)'"
} > "$dir/cluster.env"
trap - ERR
cat "$dir/cluster.env"
echo "cluster-up: up; stop with scripts/cluster-up.sh --down $dir" >&2
