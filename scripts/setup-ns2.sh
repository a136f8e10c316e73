#!/usr/bin/env bash
# Installs ns-2.35 for the ns2 engine: the script aqmlab ships (python/aqmlab/setup/ns2.sh,
# also `aqmlab setup ns2` from an installed wheel).
exec bash "$(dirname "$0")/../python/aqmlab/setup/ns2.sh" "$@"
