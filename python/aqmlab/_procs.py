"""Worker process pools that end with the process that made them.

A ``ProcessPoolExecutor`` worker waits for work on a queue from its parent; if the parent
dies without shutting the pool down (``kill``, ``kill -9``, an out-of-memory kill), the
workers stay behind as idle orphans. The sweeps, compaction and figure rendering use
:func:`pool` instead: on Linux each worker asks the kernel (``prctl(PR_SET_PDEATHSIG)``) to
send it SIGTERM when its parent ends. Elsewhere the pool is a plain one.
"""
from __future__ import annotations

import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor

__all__ = ["pool"]

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _end_with_parent(parent: int) -> None:
    """Pool initializer: SIGTERM when the parent process ends (Linux). A worker that is
    not the pool owner's own child (the ``forkserver`` start method forks workers from a
    server process) stays a plain worker."""
    if not sys.platform.startswith("linux") or os.getppid() != parent:
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: a plain worker
        return
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)


def pool(max_workers: int) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` whose workers end when this process ends."""
    return ProcessPoolExecutor(max_workers=max_workers, initializer=_end_with_parent, initargs=(os.getpid(),))
