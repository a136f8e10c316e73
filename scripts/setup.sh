#!/usr/bin/env bash
# Sets up a development environment from scratch, or refreshes it:
#   1. creates .venv with CPython >= 3.11 (if missing),
#   2. installs the pinned Python dependencies from requirements.lock,
#   3. builds the Rust extension in release mode and installs aqmlab into .venv
#      (maturin develop: the package is editable, python/ is used in place), profile-guided
#      (scripts/pgo.sh) unless AQMLAB_PGO=0 or llvm-profdata is unavailable.
# Needs: Rust (cargo), CPython >= 3.11 with venv/pip, network access to PyPI and crates.io.
# Usage: bash scripts/setup.sh        (then: .venv/bin/aqmlab --help)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${AQMLAB_VENV:-$ROOT/.venv}

pick_python() {
    for c in "${PYTHON:-}" python3.11 python3 python; do
        [ -n "$c" ] || continue
        command -v "$c" >/dev/null 2>&1 || continue
        if "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
            echo "$c"
            return 0
        fi
    done
    echo "error: CPython >= 3.11 not found (set PYTHON=/path/to/python3.11)" >&2
    return 1
}

if [ ! -x "$VENV/bin/python" ]; then
    PY=$(pick_python)
    echo "setup: creating $VENV with $("$PY" --version)"
    "$PY" -m venv "$VENV"
fi

echo "setup: installing pinned Python dependencies (requirements.lock)"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements.lock

echo "setup: building the Rust extension (release) and installing aqmlab into $VENV"
export VIRTUAL_ENV=$VENV
export PYO3_PYTHON=$VENV/bin/python
mkdir -p target
# Profile-guided build (scripts/pgo.sh: ~10 % faster simulations, same results) unless
# AQMLAB_PGO=0 or rustc's llvm-profdata cannot be had; then the plain release build.
rc=3
if [ "${AQMLAB_PGO:-1}" != 0 ]; then
    set +e
    bash scripts/pgo.sh extension
    rc=$?
    set -e
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
        echo "error: the profile-guided build failed (logs in target/pgo/; AQMLAB_PGO=0 builds without it)" >&2
        exit 1
    fi
fi
if [ "$rc" -eq 3 ]; then
    [ "${AQMLAB_PGO:-1}" = 0 ] || echo "setup: building without PGO"
    LOG=target/maturin-develop.log
    if ! "$VENV/bin/maturin" develop --release >"$LOG" 2>&1; then
        tail -n 60 "$LOG" >&2
        echo "error: maturin develop failed (full log: $LOG)" >&2
        exit 1
    fi
    grep -E '^(📦|🛠)' "$LOG" || true
fi
"$VENV/bin/aqmlab" --version
