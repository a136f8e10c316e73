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

# the ns-2 engine's smoke test needs ns-2.35 (Debian's ns2 through apt-get, about a
# minute the first time, nothing once installed); where it cannot be installed (no apt,
# no root or sudo, no network) that test is skipped with the reason
echo "test: ns-2 engine setup (scripts/setup-ns2.sh)"
if command -v ns >/dev/null 2>&1 || command -v apt-get >/dev/null 2>&1; then
    bash scripts/setup-ns2.sh || echo "test: ns-2 could not be installed; its smoke test is skipped" >&2
else
    echo "test: no apt-get: ns-2 is not installed; its smoke test is skipped" >&2
fi

echo "test: pytest"
set +e
"$VENV/bin/python" -m pytest -q
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "test: pytest collected no tests; that is a failure" >&2
    exit 1
fi
[ "$rc" -eq 0 ] || exit "$rc"

# The wheel a user installs without Rust: built (reusing the profile-guided build's crates),
# installed into a fresh venv outside the tree, and the README's main job run from it.
echo "test: wheel (scripts/build-wheel.sh --smoke)"
bash scripts/build-wheel.sh --smoke
