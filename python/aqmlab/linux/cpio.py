"""A minimal writer for the cpio "newc" format (SVR4 portable ASCII, magic ``070701``),
the format the Linux kernel unpacks as an initramfs (``Documentation/driver-api/
early-userspace/buffer-format.rst``). The standard library has no cpio writer.

Each entry is a 110-byte ASCII header (magic + 13 eight-digit hex fields), the NUL-terminated
name padded to a multiple of 4 bytes (header included), then the data padded to 4 bytes.
The archive ends with the entry ``TRAILER!!!``.
"""

from __future__ import annotations

import stat
from typing import BinaryIO

__all__ = ["CpioWriter"]


def _pad4(n: int) -> bytes:
    return b"\0" * ((4 - n % 4) % 4)


class CpioWriter:
    """Writes newc entries to a binary stream. Directories must be added before their
    contents (the kernel creates paths in archive order)."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._ino = 1
        self._names: set[str] = set()

    def _entry(self, name: str, mode: int, data: bytes = b"", nlink: int = 1) -> None:
        name = name.lstrip("/")
        if name in self._names:
            return
        self._names.add(name)
        raw = name.encode() + b"\0"
        fields = [self._ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(raw), 0]
        self._ino += 1
        hdr = b"070701" + b"".join(f"{v:08X}".encode() for v in fields)
        self._out.write(hdr + raw + _pad4(len(hdr) + len(raw)))
        self._out.write(data + _pad4(len(data)))

    def has(self, name: str) -> bool:
        return name.lstrip("/") in self._names

    def dir(self, name: str, mode: int = 0o755) -> None:
        self._entry(name, stat.S_IFDIR | mode, nlink=2)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name: str, target: str) -> None:
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def close(self) -> None:
        self._entry("TRAILER!!!", 0)
        self._out.flush()
