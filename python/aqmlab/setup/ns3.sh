#!/usr/bin/env bash
# Sets up the ns-3 engine (aqmlab run --engine ns3, aqmlab crosscheck --engines ns3).
# Run it as `aqmlab setup ns3` (or, in a source checkout, bash scripts/setup-ns3.sh):
#   1. a venv in $CACHE/venv with the ns-3.44 PyPI wheel (`ns3==3.44.post0`: ns-3's headers and
#      shared libraries, default build profile with NS_LOG/NS_ASSERT compiled in);
#   2. compiles the engine's one C++ program, aqmlab/ns3/aqmlab-ns3.cc, into
#      $CACHE/aqmlab-ns3 against the wheel, and, when ns-3.44 has been built from source in
#      its release profile (benchmarks/ns3/build-release.sh, or $NS3_SRC pointing at such a
#      tree), also into $CACHE/aqmlab-ns3-release, which the engine then prefers (faster).
# CACHE is ${AQMLAB_NS3_CACHE:-~/.cache/aqmlab/ns3}. Idempotent: a program newer than its source and
# the ns-3 headers is kept. Needs python3 (with venv), g++ (C++20) and network access
# to PyPI for the first run (a 66 MB wheel).
set -euo pipefail
# this script ships inside the aqmlab package (aqmlab/setup/ns3.sh), beside the program's
# source (aqmlab/ns3/aqmlab-ns3.cc); in a source checkout the package is python/aqmlab
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
CACHE="${AQMLAB_NS3_CACHE:-$HOME/.cache/aqmlab/ns3}"
SRC_CC="$HERE/../ns3/aqmlab-ns3.cc"
[ -f "$SRC_CC" ] || { echo "setup-ns3: $SRC_CC not found" >&2; exit 1; }
# the wheel's exact version (published as 3.44.post0; "ns3==3.44" does not resolve)
NS3_WHEEL=3.44.post0
MODULES="core network internet point-to-point traffic-control applications stats bridge"
mkdir -p "$CACHE"

command -v g++ >/dev/null || { echo "setup-ns3: g++ not found (Debian: apt-get install g++)" >&2; exit 1; }

VENV="$CACHE/venv"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
if ! "$VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("ns3") != sys.argv[1])' "$NS3_WHEEL" 2>/dev/null; then
  echo "setup-ns3: installing the ns3 3.44 wheel into $VENV"
  # --no-deps: only the headers and libraries are used, not the Python bindings (cppyy,
  # which would be compiled from source)
  "$VENV/bin/pip" install -q --no-deps "ns3==$NS3_WHEEL"
fi
WHEEL="$(ls -d "$VENV"/lib/python3*/site-packages/ns3 | head -1)"
[ -d "$WHEEL/include" ] && [ -d "$WHEEL/lib64" ] || { echo "setup-ns3: $WHEEL has no include/ and lib64/" >&2; exit 1; }

# compile <include dir> <lib dir> <output> <extra flags...>
compile() {
  local inc="$1" libdir="$2" out="$3"; shift 3
  # up to date: newer than the source and than the ns-3 headers it was compiled against
  if [ "$out" -nt "$SRC_CC" ] && [ "$out" -nt "$inc" ]; then
    echo "setup-ns3: $out is up to date"
    return
  fi
  local libs="" m lib
  for m in $MODULES; do
    lib=""
    for suffix in "" -release -optimized -default; do  # the build profile's library suffix
      [ -f "$libdir/libns3.44-$m$suffix.so" ] && { lib="$libdir/libns3.44-$m$suffix.so"; break; }
    done
    [ -n "$lib" ] || { echo "setup-ns3: no libns3.44-$m in $libdir" >&2; exit 1; }
    libs="$libs -l:$(basename "$lib")"
  done
  echo "setup-ns3: compiling $out"
  g++ -O2 -std=c++20 "$@" -I"$inc" "$SRC_CC" -o "$out.tmp" -L"$libdir" $libs -Wl,-rpath,"$libdir"
  mv "$out.tmp" "$out"
}

compile "$WHEEL/include" "$WHEEL/lib64" "$CACHE/aqmlab-ns3" -DNS3_LOG_ENABLE=0

# ns-3.44 built from source in the release profile (benchmarks/ns3/build-release.sh)
REL="${NS3_SRC:-$ROOT/benchmarks/ns3/src/ns-3.44}"
if [ -f "$REL/build-release/CMakeCache.txt" ] && grep -q '^NS3_LOG:BOOL=OFF' "$REL/build-release/CMakeCache.txt" \
   && ls "$REL"/build/lib/libns3.44-core*.so >/dev/null 2>&1; then
  compile "$REL/build/include" "$(dirname "$(ls "$REL"/build/lib/libns3.44-core*.so | head -1)")" \
    "$CACHE/aqmlab-ns3-release" -DNDEBUG
else
  rm -f "$CACHE/aqmlab-ns3-release"
  echo "setup-ns3: no ns-3.44 release build found (benchmarks/ns3/build-release.sh makes one); the engine uses the wheel's build"
fi
echo "setup-ns3: done ($CACHE)"
