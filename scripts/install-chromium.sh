#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium, used by the report test to render the
# study report page and take a screenshot (python/tests/test_report.py).
# Idempotent: does nothing if a chromium binary is already on PATH.
# Needs root (or sudo) and apt; CI calls: bash scripts/install-chromium.sh
set -euo pipefail
for c in chromium chromium-browser google-chrome; do
    if command -v "$c" >/dev/null 2>&1; then
        echo "install-chromium: $(command -v "$c") already present ($("$c" --version 2>/dev/null || echo '?'))"
        exit 0
    fi
done
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "install-chromium: need root or sudo" >&2; exit 1; }
    SUDO="sudo"
fi
command -v apt-get >/dev/null 2>&1 || { echo "install-chromium: apt-get not found (Debian/Ubuntu only)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# fonts-dejavu-core: a complete default font so the page's text renders.
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
chromium --version
