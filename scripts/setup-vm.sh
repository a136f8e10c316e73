#!/usr/bin/env bash
# Sets up the linux engine's VM: the script aqmlab ships (python/aqmlab/setup/linux.sh,
# also `aqmlab setup linux` from an installed wheel), with this checkout's venv.
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
AQMLAB_PYTHON="${AQMLAB_PYTHON:-${AQMLAB_VENV:-$ROOT/.venv}/bin/python}" exec bash "$ROOT/python/aqmlab/setup/linux.sh" "$@"
