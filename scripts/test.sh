#!/usr/bin/env bash
# Runs every test: sets up .venv (scripts/setup.sh: pinned deps + release build of the
# extension), the lint step (clippy, ruff, mypy, import cycles), then the Rust tests of the whole
# workspace, then the Python tests.
# Exits non-zero on any failure. Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${AQMLAB_VENV:-$ROOT/.venv}

bash scripts/setup.sh

# Build pyo3 for the same interpreter as maturin did, so cargo does not rebuild it.
export PYO3_PYTHON=$VENV/bin/python

echo "test: cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

echo "test: ruff check python benchmarks scripts"
"$VENV/bin/ruff" check python benchmarks scripts

echo "test: mypy (python/aqmlab; settings in pyproject.toml)"
"$VENV/bin/mypy"

echo "test: no import cycles (Rust core per file, Python package per module)"
"$VENV/bin/python" scripts/import_cycles.py

echo "test: cargo test --workspace"
cargo test --workspace

# the ns-3 engine's smoke test needs ns-3.44 and its program (about 1.5 min from scratch,
# seconds when the cache is there); without them it is skipped
echo "test: ns-3 engine setup (scripts/setup-ns3.sh)"
bash scripts/setup-ns3.sh

echo "test: pytest"
set +e
"$VENV/bin/python" -m pytest -q
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "test: pytest collected no tests; that is a failure" >&2
    exit 1
fi
exit "$rc"
