#!/usr/bin/env bash
# Installs ns-2.35 (Debian's ns2 package) for `aqmlab run --engine ns2` and checks that
# `ns` runs a one-line script. Idempotent: does nothing but the check when ns is present.
# Usage: aqmlab setup ns2 (or, in a source checkout, bash scripts/setup-ns2.sh).
set -euo pipefail

check() {
    # ns prints nothing and exits 0 on a script that only exits
    local tcl
    tcl=$(mktemp --suffix=.tcl)
    printf 'set ns [new Simulator]\nputs "ns2 ok [$ns now]"\nexit 0\n' >"$tcl"
    local out
    out=$(ns "$tcl" 2>&1) || { rm -f "$tcl"; echo "setup-ns2: ns is installed but does not run: $out" >&2; return 1; }
    rm -f "$tcl"
    case "$out" in
        *"ns2 ok 0"*) echo "setup-ns2: $(command -v ns) runs (ns-2.35)";;
        *) echo "setup-ns2: unexpected output from ns: $out" >&2; return 1;;
    esac
}

if command -v ns >/dev/null 2>&1; then
    check
    exit $?
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-ns2: apt-get not found: install ns-2.35 (the Debian/Ubuntu package ns2) by hand" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup-ns2: not root and no sudo: run as root" >&2; exit 1; }
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-cache show ns2 >/dev/null 2>&1; then
    $SUDO apt-get update -q
fi
$SUDO apt-get install -y -q --no-install-recommends ns2
check
