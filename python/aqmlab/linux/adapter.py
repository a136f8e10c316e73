"""The Linux engine as :mod:`aqmlab.engines` sees it: ``available``, ``check``, ``run``
around :func:`aqmlab.linux.engine.run_linux` and :func:`aqmlab.linux.translate.translate`."""

from __future__ import annotations

import os
import shutil
from typing import Any

from aqmlab.errors import ScenarioError

__all__ = ["available", "check", "run"]


def available() -> str | None:
    """None when qemu, a kernel with modules and the guest's programs are installed."""
    from aqmlab.linux import vm

    missing = []
    if shutil.which("qemu-system-x86_64") is None:
        missing.append("qemu-system-x86_64")
    try:
        vm.find_kernel()
    except vm.VmError:
        missing.append("a kernel with its modules")
    for b in vm.BINARIES:
        if shutil.which(b, path="/usr/bin:/usr/sbin:/bin:/sbin") is None:
            missing.append(b)
    if missing:
        return f"linux is not installed ({', '.join(missing)} missing): run aqmlab setup linux"
    return None


def check(scenario: Any) -> list[str]:
    """The first key the Linux engine cannot express (its translation stops there)."""
    from aqmlab.linux.translate import translate

    try:
        translate(scenario.to_dict(), scenario.validate())
    except ScenarioError as e:
        return [str(e)]
    return []


def run(scenario: Any, seed: int | None = None, *, log: Any = None, keep: str | os.PathLike[str] | None = None, **kwargs: Any) -> Any:
    """:func:`aqmlab.linux.engine.run_linux`."""
    from aqmlab.linux.engine import run_linux

    return run_linux(scenario, seed, log=log, keep=keep, **kwargs)
