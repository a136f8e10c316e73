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
# without it; any other failure exits non-zero too. The extension's profile is kept in
# target/pgo/ext.profdata and reused until a Rust source, Cargo.lock or the training set
# changes.
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

train_merge() { # $1 = raw dir, $2 = output profile, rest = pgo_train.py arguments
    local raw=$1 out=$2
    shift 2
    "$VENV/bin/python" scripts/pgo_train.py "$@"
    "$PROFDATA" merge -o "$out" "$raw"/*.profraw
}

if [ "$MODE" = extension ]; then
    export VIRTUAL_ENV=$VENV
    export PYO3_PYTHON=$VENV/bin/python
    PROF=$PGO/ext.profdata
    if stale "$PROF"; then
        RAW=$PGO/ext-raw
        rm -rf "$RAW" && mkdir -p "$RAW"
        echo "setup: PGO 1/3: instrumented build of the extension"
        CARGO_TARGET_DIR=$PGO/ext-gen-target RUSTFLAGS="-Cprofile-generate=$RAW" \
            "$VENV/bin/maturin" develop --release >"$PGO/ext-gen.log" 2>&1 ||
            { tail -n 40 "$PGO/ext-gen.log" >&2; exit 1; }
        echo "setup: PGO 2/3: training runs (scripts/pgo_train.py)"
        train_merge "$RAW" "$PROF.tmp"
        mv "$PROF.tmp" "$PROF"
        # cargo does not see a new profile behind the same RUSTFLAGS: rebuild our crates
        CARGO_TARGET_DIR=$PGO/ext-target cargo clean -q --release -p aqmlab-core -p aqmlab-py 2>/dev/null || true
    else
        echo "setup: PGO: reusing $PROF (nothing it was trained from changed)"
    fi
    echo "setup: PGO 3/3: optimised build of the extension"
    CARGO_TARGET_DIR=$PGO/ext-target RUSTFLAGS="-Cprofile-use=$PROF" \
        "$VENV/bin/maturin" develop --release >"$PGO/ext-use.log" 2>&1 ||
        { tail -n 40 "$PGO/ext-use.log" >&2; exit 1; }
else
    PROF=$PGO/bench.profdata
    BIN=$PGO/bench-target/release/aqmlab-bench
    if stale "$PROF"; then
        RAW=$PGO/bench-raw
        rm -rf "$RAW" && mkdir -p "$RAW"
        CARGO_TARGET_DIR=$PGO/bench-gen-target RUSTFLAGS="-Cprofile-generate=$RAW" \
            cargo build --release -q -p aqmlab-core --bin aqmlab-bench >&2
        train_merge "$RAW" "$PROF.tmp" --bench "$PGO/bench-gen-target/release/aqmlab-bench" >&2
        mv "$PROF.tmp" "$PROF"
        CARGO_TARGET_DIR=$PGO/bench-target cargo clean -q --release -p aqmlab-core 2>/dev/null || true
    fi
    CARGO_TARGET_DIR=$PGO/bench-target RUSTFLAGS="-Cprofile-use=$PROF" \
        cargo build --release -q -p aqmlab-core --bin aqmlab-bench >&2
    echo "$BIN"
fi
