#!/usr/bin/env bash
# Sets up the ns3 engine: the script aqmlab ships (python/aqmlab/setup/ns3.sh, also
# `aqmlab setup ns3` from an installed wheel).
exec bash "$(dirname "$0")/../python/aqmlab/setup/ns3.sh" "$@"
