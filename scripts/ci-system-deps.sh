#!/usr/bin/env bash
# System packages CI needs beyond the Python virtualenv. Idempotent: installs only what is
# missing. Never fails the build: without network (or root) it warns, and the tests that need
# the package skip with a reason naming it.
#   chromium  the Debian browser the reviewer-UI browser test drives through Playwright
#             (tests/integration/test_review_ui_browser.py); we never run `playwright install`.
set -uo pipefail

warn() { echo "ci-system-deps: WARNING: $*" >&2; }

if [ -x /usr/bin/chromium ]; then
    echo "ci-system-deps: chromium present ($(/usr/bin/chromium --version 2>/dev/null | head -n1))"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    warn "no apt-get here; install chromium at /usr/bin/chromium by hand, or the browser test skips"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        warn "not root and no passwordless sudo; cannot install chromium, the browser test skips"
        exit 0
    fi
fi

echo "ci-system-deps: installing chromium"
if ! $SUDO apt-get update -qq; then
    warn "apt-get update failed (no network?); trying the cached package lists"
fi
if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; then
    warn "apt-get install chromium failed (no network?); the browser test skips"
    exit 0
fi
echo "ci-system-deps: chromium installed ($(/usr/bin/chromium --version 2>/dev/null | head -n1))"
