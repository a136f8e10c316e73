"""The Linux engine: the same scenario on a real kernel (qdiscs, TCP) in a qemu VM.

:func:`run_linux` runs a scenario and returns an :class:`aqmlab.Result` with the
simulator's tables; :mod:`aqmlab.linux.translate` turns a scenario into ``ip``/``tc``
commands; :mod:`aqmlab.linux.vm` builds and boots the VM. See docs/linux-engine.md.
"""

from __future__ import annotations

__all__ = ["run_linux"]


def run_linux(*args, **kwargs):
    """See :func:`aqmlab.linux.engine.run_linux`."""
    from aqmlab.linux.engine import run_linux as _run

    return _run(*args, **kwargs)
