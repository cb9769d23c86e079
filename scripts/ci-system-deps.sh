#!/usr/bin/env bash
# System packages CI needs beyond the Python virtualenv. Idempotent: installs only what is
# missing. Never fails the build: without network (or root) it warns, and the tests that need
# the package skip with a reason naming it.
#   chromium   the Debian browser the reviewer-UI browser test drives through Playwright
#              (tests/integration/test_review_ui_browser.py); we never run `playwright install`.
#   pgbouncer  the connection pooler the pgbouncer tests put in front of PostgreSQL
#              (tests/integration/test_pgbouncer.py, scripts/cluster-up.sh).
set -uo pipefail

warn() { echo "ci-system-deps: WARNING: $*" >&2; }

# package -> the binary that shows it is installed
declare -A BINARY=([chromium]=/usr/bin/chromium [pgbouncer]=/usr/sbin/pgbouncer)
missing=()
for pkg in chromium pgbouncer; do
    if [ -x "${BINARY[$pkg]}" ]; then
        echo "ci-system-deps: $pkg present ($("${BINARY[$pkg]}" --version 2>/dev/null | head -n1))"
    else
        missing+=("$pkg")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    warn "no apt-get here; install ${missing[*]} by hand, or the tests that need them skip"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        warn "not root and no passwordless sudo; cannot install ${missing[*]}, their tests skip"
        exit 0
    fi
fi

echo "ci-system-deps: installing ${missing[*]}"
if ! $SUDO apt-get update -qq; then
    warn "apt-get update failed (no network?); trying the cached package lists"
fi
for pkg in "${missing[@]}"; do
    # one at a time: a package that cannot be installed must not keep the others out
    if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg"; then
        warn "apt-get install $pkg failed (no network?); the tests that need it skip"
        continue
    fi
    echo "ci-system-deps: $pkg installed ($("${BINARY[$pkg]}" --version 2>/dev/null | head -n1))"
done
exit 0
