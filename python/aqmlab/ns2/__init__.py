"""The ns-2 engine: the same scenario on ns-2.35 (Debian's ``ns2`` package).

:mod:`aqmlab.ns2.translate` turns a scenario into a Tcl script, :mod:`aqmlab.ns2.engine`
runs ``ns`` and parses its traces into the simulator's tables. See docs/engines.md.
"""
