#!/usr/bin/env bash
# Builds the installable wheel: dist/aqmlab-VERSION-cp311-abi3-manylinux_*.whl, one wheel for
# CPython >= 3.11 on Linux x86_64 (glibc as new as the build machine's), with the compiled
# simulator and the shipped studies inside; installing it needs no Rust.
#
#   bash scripts/build-wheel.sh           build the wheel into dist/
#   bash scripts/build-wheel.sh --smoke   build it, install it into a fresh venv in a temporary
#                                         folder and run the README's main job from there
#
# Run scripts/setup.sh first: the wheel is built with its profile (target/pgo/extension.profdata,
# the same profile-guided optimisation as the development build, reusing its compiled crates)
# when that profile exists and AQMLAB_PGO is not 0; otherwise as a plain release build.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${AQMLAB_VENV:-$ROOT/.venv}
SMOKE=0
case "${1:-}" in
    "") ;;
    --smoke) SMOKE=1 ;;
    *) echo "usage: bash scripts/build-wheel.sh [--smoke]" >&2; exit 2 ;;
esac
[ -x "$VENV/bin/maturin" ] || { echo "error: $VENV/bin/maturin not found: run bash scripts/setup.sh first" >&2; exit 1; }

PROF=$ROOT/target/pgo/extension.profdata
rm -rf "$ROOT/dist"
LOG=$ROOT/target/build-wheel.log
mkdir -p "$ROOT/target"
if [ "${AQMLAB_PGO:-1}" != 0 ] && [ -f "$PROF" ]; then
    echo "wheel: building with the profile $PROF"
    CARGO_TARGET_DIR=$ROOT/target/pgo/extension-target RUSTFLAGS="-Cprofile-use=$PROF" \
        "$VENV/bin/maturin" build --release --strip --out "$ROOT/dist" >"$LOG" 2>&1 || { tail -n 40 "$LOG" >&2; exit 1; }
else
    echo "wheel: building without PGO"
    "$VENV/bin/maturin" build --release --strip --out "$ROOT/dist" >"$LOG" 2>&1 || { tail -n 40 "$LOG" >&2; exit 1; }
fi
WHEEL=$(ls "$ROOT"/dist/aqmlab-*.whl)
echo "wheel: $WHEEL ($(du -h "$WHEEL" | cut -f1))"
# The shipped studies must be inside the wheel (aqmlab reproduce reads them from the package).
# the shipped studies, and what `aqmlab setup ENGINE` runs (the engines' messages name it)
cd "$ROOT/python/aqmlab"
for s in studies/*.toml setup/*.sh ns3/aqmlab-ns3.cc; do
    "$VENV/bin/python" - "$WHEEL" "aqmlab/$s" <<'PY' || { echo "error: $s is missing from the wheel" >&2; exit 1; }
import sys, zipfile
sys.exit(0 if sys.argv[2] in zipfile.ZipFile(sys.argv[1]).namelist() else 1)
PY
done
[ "$SMOKE" = 1 ] || exit 0

# A user's machine: a fresh venv outside the source tree, the wheel and its dependencies
# (pinned to requirements.lock), no Rust, then the main job.
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PY=$("$VENV/bin/python" -c 'import sys; print(sys._base_executable)')
"$PY" -m venv "$TMP/venv"
echo "wheel: installing into a fresh venv ($TMP/venv)"
"$TMP/venv/bin/pip" install --quiet --disable-pip-version-check "$WHEEL" -c "$ROOT/requirements.lock"
cd "$TMP"
echo "wheel: aqmlab reproduce saturated-tcp --quick (from the installed wheel)"
PATH=/usr/bin:/bin "$TMP/venv/bin/aqmlab" reproduce saturated-tcp --quick --jobs 2 >"$TMP/main-job.log" 2>&1 || {
    tail -n 40 "$TMP/main-job.log" >&2; echo "error: the main job failed from the installed wheel" >&2; exit 1; }
"$TMP/venv/bin/python" -c 'import aqmlab, sys; sys.exit(0 if "site-packages" in aqmlab.__file__ else 1)' ||
    { echo "error: the smoke test imported aqmlab from outside the installed wheel" >&2; exit 1; }
[ -s "$TMP/results/saturated-tcp-quick/report.html" ] || { echo "error: no report written by the main job" >&2; exit 1; }
for e in ns2 ns3 linux; do
    f=$("$TMP/venv/bin/aqmlab" setup "$e" --print-path) && [ -s "$f" ] ||
        { echo "error: aqmlab setup $e names no script in the installed wheel" >&2; exit 1; }
done
tail -n 3 "$TMP/main-job.log"
echo "wheel: the installed wheel ran the main job"
