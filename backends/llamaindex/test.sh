#!/usr/bin/env bash
# make test-llamaindex: LlamaIndex needs setuptools>=80.9, newer than the main .venv has, so
# its integration tests run in an isolated venv built from the pinned lock (backends/venv.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
venv="$(backends/venv.sh llamaindex)"
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/integrations/test_llamaindex.py \
    tests/integrations/test_docs_examples.py "$@"
