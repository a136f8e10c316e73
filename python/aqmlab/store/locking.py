"""The store's write lock: one writer (sweep, compaction, repair) per store at a time."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
from collections.abc import Iterator
from typing import Any

__all__ = ["LOCK", "LOCK_GRACE", "lock", "writer"]


LOCK = ".lock"

#: seconds to wait for the workers of a dead lock holder to end
LOCK_GRACE = 10.0

#: locks this process holds, by the store's real path: [file descriptor, depth]
_HELD: dict[str, list[int]] = {}


def _holder(fd: int) -> dict:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        doc = json.loads(os.read(fd, 4096).decode("utf-8") or "{}")
        return doc if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def writer(out: str | os.PathLike) -> dict | None:
    """The process writing into the store now (``pid``, ``host``, ``since``), or None
    (checked without taking the lock)."""
    import fcntl

    p = pathlib.Path(out) / LOCK
    if os.path.realpath(p.parent) in _HELD:
        return None
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(fd) or {"pid": "?", "host": "?", "since": "?"}
    except OSError:
        return None
    finally:
        os.close(fd)  # releases the shared lock if taken
    return None


@contextlib.contextmanager
def lock(out: str | os.PathLike) -> Iterator[None]:
    """Holds the store's write lock (``OUT/.lock``) for the block: one writer (sweep,
    compaction, repair) per store at a time. The file names the holder (pid, host, start
    time); the lock itself is an ``flock`` on it, which the kernel releases when the
    holder ends however it ends, so the lock of a dead process is taken over. Where the
    file system has no ``flock``, a lock whose holder is a process of this host that no
    longer exists is taken over. Reentrant within a process. A second writer gets
    :class:`aqmlab.errors.StoreLocked`."""
    import datetime
    import fcntl
    import socket
    import time

    from aqmlab.errors import StoreLocked

    out = pathlib.Path(out)
    key = os.path.realpath(out)
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield
        finally:
            _HELD[key][1] -= 1
        return
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    host = socket.gethostname()
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            h = _holder(fd)
            # A holder of this host that is gone, yet the lock is held: its forked workers
            # share the locked file until they end (they are told to when it dies).
            deadline = time.monotonic() + LOCK_GRACE
            while h.get("host") == host and not _alive(h.get("pid")) and time.monotonic() < deadline:
                time.sleep(0.05)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    continue
            else:
                gone = h.get("host") == host and not _alive(h.get("pid"))
                raise StoreLocked(f"{out} is being written by another aqmlab process (pid {h.get('pid', '?')} on "
                                  f"{h.get('host', '?')}, since {h.get('since', '?')}"
                                  + ("; that process has ended but processes it started still hold the lock" if gone else "")
                                  + "); wait for it to finish or stop it, then run the command again") from None
        except OSError:  # no flock here (some network file systems): the holder named in the file decides
            h = _holder(fd)
            if h.get("pid") not in (None, os.getpid()) and (h.get("host") != host or _alive(h.get("pid"))):
                raise StoreLocked(f"{out} is being written by another aqmlab process (pid {h.get('pid')} on "
                                  f"{h.get('host')}); wait for it to finish or stop it (or delete {out / LOCK} "
                                  "if that process is gone), then run the command again") from None
        me = {"pid": os.getpid(), "host": host,
              "since": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(me).encode())
    except BaseException:
        os.close(fd)
        raise
    _HELD[key] = [fd, 1]
    try:
        yield
    finally:
        del _HELD[key]
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        os.close(fd)
