#!/usr/bin/env bash
# Creates benchmarks/ns3/.venv and installs the ns-3 PyPI wheel (ns-3 3.44) into it.
# Usage: benchmarks/ns3/setup.sh   (idempotent; takes a minute or two, downloads ~100 MB)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="$HERE/.venv"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
# --no-deps: the C++ programs need only the wheel's headers and libraries; its Python
# bindings' dependency (cppyy) has no wheel here and pip would build it from source (hours)
"$VENV/bin/pip" install -q --no-deps "ns3==3.44.*"
"$VENV/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("ns")
print("ns3 wheel at", pathlib.Path(spec.origin).parent if spec and spec.origin else spec)
PY
