#!/usr/bin/env bash
# Installs the real Flent (and matplotlib, which Flent needs to plot) into its own venv,
# for the Flent-export test (python/tests/test_flent.py), which checks that `flent`
# loads and plots the *.flent.gz files aqmlab writes.
# Usage: bash scripts/install-flent.sh [VENV]   (default .venv-flent in the repo root)
# Then:  AQMLAB_FLENT=$VENV/bin/flent pytest python/tests/test_flent.py
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-${AQMLAB_FLENT_VENV:-$PWD/.venv-flent}}
PY=${PYTHON:-python3}
if [ ! -x "$VENV/bin/flent" ]; then
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q "flent==2.3.0" "matplotlib==3.11.2"
fi
"$VENV/bin/flent" --version
