"""Reading input files (scenario and study TOML) within bounds.

An input file must be a regular file (not a FIFO, a device such as ``/dev/zero``, or a
folder) of at most :data:`MAX_INPUT_BYTES` bytes (``force`` lifts the size limit), holding
UTF-8 text. The checks are made on the opened file (``fstat``), and reading stops one byte
past the limit, so no input can make aqmlab read without end.
"""
from __future__ import annotations

import os
import stat

__all__ = ["MAX_INPUT_BYTES", "InputFileError", "read_input", "surrogate_error"]

#: the largest input file read without ``--force`` (16 MiB)
MAX_INPUT_BYTES = 16 * 1024 * 1024


class InputFileError(Exception):
    """An input file that cannot be used (the message names it and says why)."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_input(path: str | os.PathLike[str], what: str, force: bool = False) -> str:
    """The text of input file `path` (`what`: "scenario file", "study file")."""
    name = os.fspath(path)
    try:
        st = os.stat(name)  # before opening: opening a FIFO would wait for a writer
    except OSError as e:
        raise InputFileError(f"cannot read {what} {name!r}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputFileError(f"{what} {name!r} is {_kind(st.st_mode)}; give a regular TOML file")
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise InputFileError(f"cannot read {what} {name!r}: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())  # the file opened (it may have been replaced meanwhile)
        if not stat.S_ISREG(st.st_mode):
            raise InputFileError(f"{what} {name!r} is {_kind(st.st_mode)}; give a regular TOML file")
        limit = None if force else MAX_INPUT_BYTES
        try:
            data = fh.read() if limit is None else fh.read(limit + 1)
        except OSError as e:
            raise InputFileError(f"cannot read {what} {name!r}: {e.strerror or e}") from None
    if limit is not None and len(data) > limit:
        raise InputFileError(f"{what} {name!r} is larger than {limit // (1024 * 1024)} MiB; "
                             "use --force to read it anyway")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputFileError(f"{name}: not a TOML {what} (not UTF-8 text: byte {e.start} cannot be decoded)") from None


def surrogate_error(text: str) -> str | None:
    """Why `text` cannot be encoded as UTF-8 (a lone surrogate, which only Python strings
    can hold: ``"\\ud800"``, or a file name decoded with ``surrogateescape``), with its line
    and column; None if it can."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        line = text.count("\n", 0, e.start) + 1
        col = e.start - (text.rfind("\n", 0, e.start) + 1) + 1
        return (f"the text holds a lone surrogate U+{ord(text[e.start]):04X} (line {line}, column {col}), "
                "which is not a Unicode character; remove it or write the character it stands for")
    return None
