#!/usr/bin/env bash
# make test-cognee: isolated venv, a private HF cache with the MiniLM tokenizer, the MiniLM
# embedding endpoint on loopback, then the tests against an in-process Cognee whose data
# lives in a temporary directory; everything stopped and removed again whatever happens.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
start=$(date +%s)
venv="$(backends/venv.sh cognee)"
echo "cognee venv ready in $(( $(date +%s) - start ))s: $venv"
work="$(mktemp -d /tmp/memorywire-cognee.XXXXXX)"
embed=""
cleanup() {
    if [ -n "$embed" ]; then
        kill -TERM "$embed" 2>/dev/null || true
        wait "$embed" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
"$venv/bin/python" backends/cognee/hf_cache.py "$work/hf"
port="$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$venv/bin/python" backends/embed_server.py "$port" > "$work/embed.log" 2>&1 &
embed=$!
for _ in $(seq 1 240); do
    "$venv/bin/python" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=2)" \
        2>/dev/null && break
    if ! kill -0 "$embed" 2>/dev/null; then
        echo "the embedding endpoint died while starting:"; tail -n 40 "$work/embed.log"; exit 1
    fi
    sleep 0.5
done
echo "embedding endpoint up in $(( $(date +%s) - start ))s on port $port"
# Cognee reads these at import: no LLM, no model downloads, nothing under ~/.cognee.
env HF_HOME="$work/hf" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 GLINER_AUTO_INSTALL=false \
    LOG_LEVEL=ERROR TELEMETRY_DISABLED=1 ENV=test \
    SYSTEM_ROOT_DIRECTORY="$work/cognee/system" DATA_ROOT_DIRECTORY="$work/cognee/data" \
    COGNEE_LOGS_DIR="$work/cognee/logs" \
    MEMORYWIRE_COGNEE_ROOT="$work/cognee" \
    MEMORYWIRE_COGNEE_EMBED_URL="http://127.0.0.1:$port/v1" \
    MEMORYWIRE_CONFORMANCE_REPORT=benchmarks/results/conformance-cognee.json \
    MEMORYWIRE_CONFORMANCE_COMMAND="make test-cognee" \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -c backends_tests/pytest.ini \
    backends_tests/cognee "$@"
