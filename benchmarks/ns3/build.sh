#!/usr/bin/env bash
# Compiles dumbbell.cc, rttfair.cc and wifi.cc against the ns-3 wheel installed by
# setup.sh -> build/ns3-dumbbell, build/ns3-rttfair and build/ns3-wifi.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
NS3="$("$HERE/.venv/bin/python" -c 'import ns3, os; print(os.path.dirname(ns3.__file__))' 2>/dev/null || echo "$HERE/.venv/lib/python3.11/site-packages/ns3")"
[ -d "$NS3/include" ] || NS3="$(ls -d "$HERE"/.venv/lib/python3*/site-packages/ns3 | head -1)"
mkdir -p "$HERE/build"
LIBS=""
for m in core network internet point-to-point traffic-control applications stats bridge mpi; do
  [ -f "$NS3/lib64/libns3.44-$m.so" ] && LIBS="$LIBS -lns3.44-$m"
done
for prog in dumbbell rttfair; do
  g++ -O3 -std=c++20 -DNS3_LOG_ENABLE=0 -I"$NS3/include" "$HERE/$prog.cc" -o "$HERE/build/ns3-$prog" \
    -L"$NS3/lib64" $LIBS -Wl,-rpath,"$NS3/lib64"
  echo "built $HERE/build/ns3-$prog"
done
# the WiFi program also needs the wifi module and what it depends on
WLIBS="$LIBS"
for m in wifi mobility propagation spectrum antenna energy internet-apps; do
  [ -f "$NS3/lib64/libns3.44-$m.so" ] && WLIBS="$WLIBS -lns3.44-$m"
done
g++ -O3 -std=c++20 -DNS3_LOG_ENABLE=0 -I"$NS3/include" "$HERE/wifi.cc" -o "$HERE/build/ns3-wifi" \
  -L"$NS3/lib64" $WLIBS -Wl,-rpath,"$NS3/lib64"
echo "built $HERE/build/ns3-wifi"
