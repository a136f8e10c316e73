#!/usr/bin/env bash
# Profile-guided optimisation (PGO) of the simulator's release build.
#
#   bash scripts/pgo.sh extension   build and install the Python extension with PGO
#                                   (scripts/setup.sh calls this; needs .venv)
#   bash scripts/pgo.sh bench       build target/pgo/bench-target/release/aqmlab-bench with
#                                   PGO and print its path (benchmarks: bench.py --pgo)
#
# Three steps: an instrumented build, the training runs of scripts/pgo_train.py (examples,
# parameter combinations covering every study, every qdisc and congestion control), and
# the final build that uses the merged counts (rustc -Cprofile-use). PGO changes how the
# code is laid out and inlined, never what it computes: results are bit-identical to the
# plain build (checked with benchmarks/digest_check.py; docs/architecture.md).
#
# Needs llvm-profdata of rustc's own LLVM (rustup component llvm-tools, added here if
# missing). Exits 3 if PGO is not possible (no llvm-profdata), so the caller can build
# without it; any other failure exits non-zero too. The profile is kept in
# target/pgo/MODE.profdata and reused until a Rust source, Cargo.lock, the training set,
# the examples or the studies change.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${AQMLAB_VENV:-$ROOT/.venv}
MODE=${1:-}
PGO=$ROOT/target/pgo
mkdir -p "$PGO"

case "$MODE" in
    extension | bench) ;;
    *)
        echo "usage: bash scripts/pgo.sh extension|bench" >&2
        exit 2
        ;;
esac

profdata() {
    local sysroot host p
    sysroot=$(rustc --print sysroot)
    host=$(rustc -vV | sed -n 's/^host: //p')
    p=$sysroot/lib/rustlib/$host/bin/llvm-profdata
    if [ ! -x "$p" ] && command -v rustup >/dev/null 2>&1; then
        timeout 300 rustup component add llvm-tools >/dev/null 2>&1 || true
    fi
    [ -x "$p" ] && echo "$p"
}

PROFDATA=$(profdata) || {
    echo "pgo: llvm-profdata for $(rustc --version) not found (rustup component add llvm-tools)" >&2
    exit 3
}

# True if the profile $1 is missing or older than anything it was trained from.
stale() {
    [ -f "$1" ] || return 0
    [ -n "$(find crates Cargo.lock Cargo.toml scripts/pgo_train.py examples studies python/aqmlab/study.py /dev/null \
        -newer "$1" -type f -print -quit 2>/dev/null)" ]
}

if [ "$MODE" = extension ]; then
    export VIRTUAL_ENV=$VENV
    export PYO3_PYTHON=$VENV/bin/python
    CRATES=(-p aqmlab-core -p aqmlab-py)
    say() { echo "setup: PGO $*"; }
else
    CRATES=(-p aqmlab-core)
    say() { :; }
fi
PROF=$PGO/$MODE.profdata
RAW=$PGO/$MODE-raw

# build TARGET_DIR RUSTFLAGS: the extension (installed into .venv) or aqmlab-bench
build() {
    local log=$PGO/$MODE-build.log
    if [ "$MODE" = extension ]; then
        CARGO_TARGET_DIR=$1 RUSTFLAGS=$2 "$VENV/bin/maturin" develop --release >"$log" 2>&1
    else
        CARGO_TARGET_DIR=$1 RUSTFLAGS=$2 cargo build --release -p aqmlab-core --bin aqmlab-bench >"$log" 2>&1
    fi || { tail -n 40 "$log" >&2; exit 1; }
}

if stale "$PROF"; then
    rm -rf "$RAW" && mkdir -p "$RAW"
    say "1/3: instrumented build of the extension"
    build "$PGO/$MODE-gen-target" "-Cprofile-generate=$RAW"
    say "2/3: training runs (scripts/pgo_train.py)"
    if [ "$MODE" = extension ]; then
        "$VENV/bin/python" scripts/pgo_train.py
    else
        "$VENV/bin/python" scripts/pgo_train.py --bench "$PGO/$MODE-gen-target/release/aqmlab-bench" >&2
    fi
    "$PROFDATA" merge -o "$PROF.tmp" "$RAW"/*.profraw
    mv "$PROF.tmp" "$PROF"
    # cargo does not see a new profile behind the same RUSTFLAGS: rebuild our crates
    CARGO_TARGET_DIR=$PGO/$MODE-target cargo clean -q --release "${CRATES[@]}" 2>/dev/null || true
else
    say "reusing $PROF (nothing it was trained from changed)"
fi
say "3/3: optimised build of the extension"
build "$PGO/$MODE-target" "-Cprofile-use=$PROF"
[ "$MODE" = extension ] || echo "$PGO/$MODE-target/release/aqmlab-bench"
