#!/usr/bin/env bash
# make test-letta: isolated venv, then PostgreSQL (pgserver) + MiniLM endpoint + Letta server
# on loopback, the tests against them, and everything stopped again whatever happens.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
start=$(date +%s)
venv="$(backends/venv.sh letta)"
echo "letta venv ready in $(( $(date +%s) - start ))s: $venv"
work="$(mktemp -d /tmp/memorywire-letta.XXXXXX)"
chmod 755 "$work"
"$venv/bin/python" backends/letta/run_stack.py "$work/stack" "$work/ready" \
    > "$work/stack.log" 2>&1 &
stack=$!
cleanup() {
    kill -TERM "$stack" 2>/dev/null || true
    wait "$stack" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
ready() { [ -f "$work/ready" ] && [ "$(wc -l < "$work/ready")" -ge 3 ]; }
for _ in $(seq 1 600); do
    ready && break
    if ! kill -0 "$stack" 2>/dev/null; then
        echo "the Letta stack died while starting:"; tail -n 40 "$work/stack.log"
        tail -n 40 "$work/stack/letta.log" 2>/dev/null || true
        exit 1
    fi
    sleep 0.5
done
ready || { echo "the Letta stack did not start in 300s"; tail -n 40 "$work/stack.log"; exit 1; }
echo "letta stack up in $(( $(date +%s) - start ))s"
# The conformance outcomes also land in a report that benchmarks/conformance_matrix.py merges.
MEMORYWIRE_CONFORMANCE_REPORT=benchmarks/results/conformance-letta.json \
MEMORYWIRE_CONFORMANCE_COMMAND="make test-letta" \
MEMORYWIRE_LETTA_URL="$(sed -n 1p "$work/ready")" \
MEMORYWIRE_LETTA_EMBED_URL="$(sed -n 2p "$work/ready")" \
MEMORYWIRE_LETTA_PG_URI="$(sed -n 3p "$work/ready")" \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -c backends_tests/pytest.ini \
    backends_tests/letta "$@"
