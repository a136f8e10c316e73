#!/usr/bin/env bash
# Builds ns-3.44 from source in its `release` profile (-O3 -DNDEBUG, NS_ASSERT and NS_LOG
# compiled out) and the benchmark programs against it -> build/ns3-dumbbell-release and
# build/ns3-rttfair-release.
#
# Why: the PyPI wheel that setup.sh installs is built with asserts and logging compiled in
# (`NS_LOG=TcpSocketBase=level_all` prints from it), the ns-3 "default" profile. A speed
# comparison should be against ns-3 as a user who wants speed builds it; compare.py uses
# the release binary when it exists and says which one it timed.
#
# Source: $NS3_SRC (an ns-3.44 source tree) if set; else src/ns-3.44, extracted there from
# $NS3_GIT (a local clone or mirror of ns-3-dev that has the ns-3.44 tag; only the
# top-level files and the modules built are taken, so a partial mirror without the
# large data files of other modules will do) or, without NS3_GIT, a shallow clone of
# the ns-3.44 tag from gitlab.com/nsnam/ns-3-dev. Needs cmake and ninja: taken from
# benchmarks/ns3/.venv (setup.sh) and installed there with pip if missing.
# Takes ~6 min on 2 cores (8 of ns-3's modules: core, network, internet, point-to-point,
# traffic-control, applications, stats, bridge). Idempotent: an existing build is reused.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="$HERE/.venv"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
if ! [ -x "$VENV/bin/cmake" ] || ! [ -x "$VENV/bin/ninja" ]; then
  "$VENV/bin/pip" install -q cmake ninja
fi
export PATH="$VENV/bin:$PATH"

MODULES="core network internet point-to-point traffic-control applications stats bridge"
SRC="${NS3_SRC:-$HERE/src/ns-3.44}"
if ! [ -f "$SRC/CMakeLists.txt" ]; then
  mkdir -p "$SRC"
  if [ -n "${NS3_GIT:-}" ]; then
    top=$(git --git-dir="$NS3_GIT" ls-tree --name-only ns-3.44 | grep -v '^src$')
    # shellcheck disable=SC2086  # word splitting of the path lists is intended
    git --git-dir="$NS3_GIT" archive ns-3.44 $top src/CMakeLists.txt $(printf 'src/%s ' $MODULES) \
      | tar -x -C "$SRC"
  elif ! git clone -q --depth 1 --branch ns-3.44 https://gitlab.com/nsnam/ns-3-dev.git "$SRC"; then
    echo "build-release.sh: cannot clone ns-3.44; set NS3_SRC to an ns-3.44 source tree or NS3_GIT to a local ns-3-dev clone with the ns-3.44 tag" >&2
    exit 1
  fi
fi
grep -q '^3\.44' "$SRC/VERSION" || { echo "build-release.sh: $SRC is not ns-3.44 (VERSION: $(cat "$SRC/VERSION"))" >&2; exit 1; }

B="$SRC/build-release"
if ! [ -f "$B/build.ninja" ]; then
  cmake -S "$SRC" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=release \
    -DNS3_ENABLED_MODULES="$(echo $MODULES | tr ' ' ';')" \
    -DNS3_EXAMPLES=OFF -DNS3_TESTS=OFF -DNS3_PYTHON_BINDINGS=OFF >/dev/null
fi
grep -q '^NS3_ASSERT:BOOL=OFF' "$B/CMakeCache.txt" && grep -q '^NS3_LOG:BOOL=OFF' "$B/CMakeCache.txt" \
  || { echo "build-release.sh: $B is not a release configuration (asserts or logging on)" >&2; exit 1; }
ninja -C "$B" -j "$(nproc)"

LIBDIR="$(dirname "$(ls "$SRC"/build/lib/libns3.44-core*.so | head -1)")"
LIBS=""
for m in $MODULES; do
  lib="$(ls "$LIBDIR"/libns3.44-"$m"*.so | head -1)"
  LIBS="$LIBS -l:$(basename "$lib")"
done
mkdir -p "$HERE/build"
for prog in dumbbell rttfair; do
  g++ -O3 -std=c++20 -DNDEBUG -I"$SRC/build/include" "$HERE/$prog.cc" -o "$HERE/build/ns3-$prog-release" \
    -L"$LIBDIR" $LIBS -Wl,-rpath,"$LIBDIR"
  echo "built $HERE/build/ns3-$prog-release"
done
